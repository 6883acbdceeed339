// End-to-end: the capability contracts (contracts/capability) separate their
// calibration trios, name the violation with the declaration it breaks (a
// shape class, an alignment, the CPU features a kernel executes), and
// report oneDNN's strict kernel under a bf16 request as a fallback with its
// reason (where the oneDNN backend is built).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_util.h"

namespace {

using kc_cli_test::CommandRun;
using kc_cli_test::run_kc;

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CapabilityCli, EveryCapabilityContractSeparatesItsTrio) {
  const CommandRun r = run_kc("calibrate " + src("contracts/capability"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("24 of 24 calibration states right"), std::string::npos) << r.out;
}

TEST(CapabilityCli, AQuietWrongResultOutsideTheClassIsNamedWithTheKeyItBreaks) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-SHAPE-01.kc") +
                              " --impl calib.cap_tile16_silent --impl calib.cap_tile16_raise");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-SHAPE-01 × calib.cap_tile16_silent: CAPABILITY_VIOLATION(shape_class)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("K = 33 is not a multiple of 16"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("violation KC-CAP-SHAPE-01 × calib.cap_tile16_raise"), std::string::npos) << r.out;
}

// misalign_<tensor> places an operand off the declared alignment inside its
// guarded buffer: a kernel whose aligned loads read it from the boundary below
// is named with the placement; one that raises, takes its declared fallback or
// claims any alignment (Eigen's unaligned Map) and computes right conforms.
TEST(CapabilityCli, AMisalignedOperandReadQuietlyIsNamedWithItsPlacement) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-ALIGN-01.kc") +
                              " --impl calib.cap_align16_silent --impl calib.cap_align16_raise"
                              " --impl calib.cap_align16_fallback --impl calib.cap_align_any");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-ALIGN-01 × calib.cap_align16_silent: CAPABILITY_VIOLATION(alignment)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("A starts 4 bytes past a 64-byte boundary (4-byte aligned), where alignment = 16 needs 16"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("3 conforming, 1 violation"), std::string::npos) << r.out;
  // The repro line carries the placement.
  EXPECT_NE(r.out.find("misalign_A="), std::string::npos) << r.out;
}

// A kernel killed by SIGILL on a CPU with every feature it declares executed
// an instruction its declaration does not name; one killed by SIGILL on a CPU
// without a declared feature should have raised as it declares. Both are
// CAPABILITY_VIOLATION(device_capability); the raising twin conforms.
TEST(CapabilityCli, AnIllegalInstructionBreaksTheDeclaredDeviceCapability) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-DEVICE-01.kc") +
                              " --impl calib.cap_device_ud2 --impl calib.cap_device_sse2"
                              " --impl calib.cap_device_amx_raise --impl calib.cap_device_amx_ud2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-DEVICE-01 × calib.cap_device_ud2: CAPABILITY_VIOLATION(device_capability)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("killed by SIGILL (an instruction the CPU does not execute) on a CPU with every feature"),
            std::string::npos)
      << r.out;
  // Only K = 256 takes the long-K path: the repro line names that config.
  EXPECT_NE(r.out.find("K=256"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("× calib.cap_device_sse2:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("× calib.cap_device_amx_raise:"), std::string::npos) << r.out;
  const bool amx = read_file("/proc/cpuinfo").find(" amx_tile") != std::string::npos;
  if (amx) {
    EXPECT_NE(r.out.find("3 conforming, 1 violation"), std::string::npos) << r.out;
  } else {
    EXPECT_NE(
        r.out.find("violation KC-CAP-DEVICE-01 × calib.cap_device_amx_ud2: CAPABILITY_VIOLATION(device_capability)"),
        std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("this CPU lacks AMX-TILE"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2 conforming, 2 violation"), std::string::npos) << r.out;
  }
}

// workspace_bytes gives the call a guarded workspace tensor: a kernel that
// squeezes its sums into a short one is named with the bytes given and
// needed; one that writes past it is caught by the workspace's guards; one
// that raises or takes its declared fallback conforms.
TEST(CapabilityCli, AShortWorkspaceIsRaisedOnOrCaughtWhenMisused) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-WORKSPACE-01.kc") +
                              " --impl calib.cap_ws_wraps --impl calib.cap_ws_raise"
                              " --impl calib.cap_ws_overruns --impl calib.cap_ws_fallback");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-WORKSPACE-01 × calib.cap_ws_wraps: CAPABILITY_VIOLATION(workspace)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the call gives 64 bytes of workspace, where workspace = 4 * M * N needs 1024"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("error KC-CAP-WORKSPACE-01 × calib.cap_ws_overruns: GUARD_OVERWRITTEN(workspace, after)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 conforming, 1 violation, 0 not_applicable, 0 skipped, 1 error"), std::string::npos)
      << r.out;
}

TEST(CapabilityCli, AMisroutedSupportedShapeIsASilentFallbackWithItsReason) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-PATH-01.kc") +
                              " --impl calib.cap_tile16_misrouted");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("SILENT_FALLBACK(scalar)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reason: M = 16, N = 16, K = 16 failed the 16-tile kernel's dispatch test"), std::string::npos)
      << r.out;
}

// A kernel that reports no path: kc infers it from the arithmetic probe's
// reading of the outputs, in both directions (a bf16 request served in strict
// FP32; a strict FP32 declaration served in TF32), and the served request conforms.
TEST(CapabilityCli, APathNoKernelReportsIsInferredFromTheNumbers) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-PATH-02.kc") +
                              " --impl calib.cap_bf16_request_strict --impl calib.cap_bf16_request_served"
                              " --impl calib.cap_fp32_request_tf32 --impl calib.cap_fp32_request_strict");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-PATH-02 × calib.cap_bf16_request_strict: SILENT_FALLBACK(FP32 arithmetic "
                       "(inferred))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-PATH-02 × calib.cap_fp32_request_tf32: SILENT_FALLBACK(tf32 arithmetic "
                       "(inferred))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 conforming, 2 violation"), std::string::npos) << r.out;
}

// A kernel that reports no path and switches to a generic one past the tile
// boundary: right numbers on both sides, the path change seen only in the time
// per unit of work (`time latency across K + 1 beyond 2`).
TEST(CapabilityCli, APathChangeNoKernelReportsIsInferredFromItsLatency) {
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-PATH-03.kc") +
                              " --impl calib.cap_latency_hidden_path --impl calib.cap_latency_one_path");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-PATH-03 × calib.cap_latency_hidden_path: SILENT_FALLBACK(latency "
                       "(inferred))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 conforming, 1 violation"), std::string::npos) << r.out;
}

// oneDNN 2.6.3 selects its strict f32 brgemm kernel for an f32 matmul with
// fpmath_mode bf16 (tests/repro/onednn_fpmath_bf16_path.cpp prints it): the
// bf16 request was not served, and kc says so, naming the kernel and why.
TEST(CapabilityCli, OnednnStrictKernelUnderABf16RequestIsReportedAsAFallback) {
  const CommandRun b = run_kc("backends");
  if (b.out.find("onednn       available") == std::string::npos) GTEST_SKIP() << "oneDNN is not built here";
  const CommandRun impls = run_kc("list impls");
  if (impls.out.find("onednn.matmul_bf16 ") == std::string::npos)
    GTEST_SKIP() << "no onednn.matmul_bf16 here (oneDNN 2.x builds its bf16 kernels for avx512_core and up)";
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-PATH-01.kc") +
                              " --impl onednn.matmul_fpmath_bf16 --impl onednn.matmul_bf16");
  if (r.out.find("SILENT_FALLBACK") == std::string::npos) {
    // A CPU and oneDNN that serve the request with a bf16 kernel conform.
    EXPECT_EQ(r.code, 0) << r.out;
    GTEST_SKIP() << "oneDNN served the bf16 request with a bf16 kernel here: " << r.out;
  }
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-PATH-01 × onednn.matmul_fpmath_bf16: SILENT_FALLBACK("), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fpmath_mode bf16 allows f32 inputs to be rounded to bf16 but does not require it"),
            std::string::npos)
      << r.out;
  // bf16 data selects a bf16 kernel: the declared path.
  EXPECT_EQ(r.out.find("violation KC-CAP-PATH-01 × onednn.matmul_bf16"), std::string::npos) << r.out;
}

// A DYNAMIC_ARCH OpenBLAS reports openblas_get_corename() for every call; the
// core-type impls declare the core they force, so the path contract holds
// each to it (a core the CPU cannot run is refused: not applicable).
TEST(CapabilityCli, OpenblasCoreTypesRunTheCoreTheyDeclare) {
  const CommandRun b = run_kc("list impls");
  if (b.out.find("openblas.sgemm_core_haswell") == std::string::npos) GTEST_SKIP() << "no DYNAMIC_ARCH OpenBLAS here";
  const CommandRun r = run_kc("check " + src("contracts/capability/KC-CAP-PATH-01.kc") +
                              " --impl openblas.sgemm_core_prescott --impl openblas.sgemm_core_haswell");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 conforming, 0 violation"), std::string::npos) << r.out;
}

}  // namespace
