// compute-sanitizer behind --compute-sanitizer (kc/sanitizer.h): the log
// parser over sample reports in the tool's format, the verdict it produces,
// and a GPU-only run that skips where no GPU or binary is present.
#include "kc/sanitizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kc::sanitizer {
namespace {

// A memcheck report of three out-of-bounds writes (the shape of the tool's
// output: every line prefixed "=========", details indented, one summary).
constexpr const char* kMemcheck = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at kc_overflowing_fill(float *, long, long)+0x90 in /src/backends/cuda/kernels.cu:212
=========     by thread (232,0,0) in block (3,0,0)
=========     Address 0x7f3a2c001000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a2c000000 of size 4096 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1a3] in libcuda.so.1
=========         Host Frame: kc::backends::cuda::launch_overflowing_fill(float*, long, long) [0x1234] in kc
=========
========= Invalid __global__ write of size 4 bytes
=========     at kc_overflowing_fill(float *, long, long)+0x90 in /src/backends/cuda/kernels.cu:212
=========     by thread (233,0,0) in block (3,0,0)
=========     Address 0x7f3a2c001004 is out of bounds
=========
========= Invalid __global__ write of size 4 bytes
=========     at kc_overflowing_fill(float *, long, long)+0x90 in /src/backends/cuda/kernels.cu:212
=========     by thread (234,0,0) in block (3,0,0)
=========
========= ERROR SUMMARY: 3 errors
)";

TEST(SanitizerReport, MemcheckFindingsAndCount) {
  const Report r = parse_report(kMemcheck);
  EXPECT_TRUE(r.summary_seen);
  EXPECT_EQ(r.errors, 3);
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0],
            "Invalid __global__ write of size 4 bytes; at kc_overflowing_fill(float *, long, long)+0x90 in "
            "/src/backends/cuda/kernels.cu:212; by thread (232,0,0) in block (3,0,0); Address 0x7f3a2c001000 is out "
            "of bounds");
  EXPECT_EQ(parse_report(kMemcheck, 1).findings.size(), 1u);
}

TEST(SanitizerReport, CleanRunHasNoFindings) {
  const Report r = parse_report("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(r.summary_seen);
  EXPECT_EQ(r.errors, 0);
  EXPECT_TRUE(r.findings.empty());
}

TEST(SanitizerReport, InitcheckAndRacecheckAndSeveralProcesses) {
  // --target-processes all: each process prints its own summary; they add up.
  const std::string text = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at kc_sum_partials(int, const float *, int, float *)+0x1b0 in kernels.cu:88
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f00a0000200
=========
========= ERROR SUMMARY: 1 error
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at kc_sum_tree(const float *, float *, int)+0x2f0 in kernels.cu:140
=========     and Read access at kc_sum_tree(const float *, float *, int)+0x310 in kernels.cu:142 [1024 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
========= ERROR SUMMARY: 1 error
)";
  const Report r = parse_report(text);
  EXPECT_EQ(r.errors, 2);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].rfind("Uninitialized __global__ memory read of size 4 bytes; at kc_sum_partials", 0), 0u)
      << r.findings[0];
  EXPECT_EQ(r.findings[1].rfind("Error: Race reported between Write access", 0), 0u) << r.findings[1];
}

TEST(SanitizerReport, TextWithoutASummaryIsNotClean) {
  const Report r = parse_report("kc: something else\n");
  EXPECT_FALSE(r.summary_seen);
  EXPECT_EQ(r.errors, 0);
}

TEST(SanitizerVerdict, ErrorsMakeAnErrorVerdictWithANamedSignature) {
  engine::CaseResult c;
  c.verdict = engine::Verdict::kConforming;
  c.reason = "within bound";
  apply(parse_report(kMemcheck), Tool::kMemcheck, c);
  EXPECT_EQ(c.verdict, engine::Verdict::kError);
  ASSERT_FALSE(c.signatures.empty());
  EXPECT_EQ(c.signatures.front().to_string(), "SANITIZER(memcheck, 3 errors)");
  EXPECT_NE(c.reason.find("Invalid __global__ write of size 4 bytes"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("without the sanitizer: within bound"), std::string::npos) << c.reason;
  EXPECT_EQ(c.evidence.notes.size(), 3u);

  engine::CaseResult clean;
  clean.verdict = engine::Verdict::kConforming;
  apply(parse_report("========= ERROR SUMMARY: 0 errors\n"), Tool::kMemcheck, clean);
  EXPECT_EQ(clean.verdict, engine::Verdict::kConforming);
  EXPECT_TRUE(clean.signatures.empty());
}

TEST(SanitizerTool, NamesRoundTripAndOthersAreRejected) {
  for (const char* n : {"memcheck", "initcheck", "racecheck"}) {
    ASSERT_TRUE(parse_tool(n).has_value()) << n;
    EXPECT_STREQ(tool_name(*parse_tool(n)), n);
  }
  EXPECT_FALSE(parse_tool("synccheck").has_value());
  EXPECT_FALSE(parse_tool("").has_value());
}

// The runner, with a stand-in for the binary (a shell script that writes a
// canned report to the --log-file path, %p replaced by its pid, and exits
// with the --error-exitcode value): arguments, log collection, deadline.
std::string fake_sanitizer(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path);
  out << "#!/bin/sh\n"
         "log=''\nwhile [ $# -gt 0 ]; do\n"
         "  case \"$1\" in --log-file) log=\"$2\"; shift 2;; --tool|--target-processes|--error-exitcode|--print-limit) "
         "shift 2;; *) break;; esac\ndone\n"
         "log=$(echo \"$log\" | sed \"s/%p/$$/\")\n"
      << body;
  out.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(SanitizerRun, CollectsTheLogAndItsErrors) {
  const std::string bin = fake_sanitizer("fake-sanitizer-errors",
                                         "printf '%s' \"$KC_FAKE_REPORT\" > \"$log\"\n\"$@\" > /dev/null\nexit 86\n");
  setenv("KC_FAKE_REPORT", kMemcheck, 1);
  auto r = run(bin, Tool::kMemcheck, {"/bin/true"}, 30);
  unsetenv("KC_FAKE_REPORT");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->errors, 3);
  EXPECT_EQ(r->findings.size(), 3u);
}

TEST(SanitizerRun, AHangingRunIsKilledAtItsDeadline) {
  const std::string bin = fake_sanitizer("fake-sanitizer-hang", "sleep 60\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run(bin, Tool::kRacecheck, {"/bin/true"}, 1);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().to_string();
  EXPECT_LT(s, 10.0);
}

// GPU only: an in-bounds cuda kernel through kc, run under memcheck.
TEST(SanitizerRun, MemcheckRunsAGpuCaseCleanly) {
  if (auto why = unavailable_reason()) GTEST_SKIP() << *why;
  const std::string kc = std::string(KC_BINARY_DIR) + "/bin/kc";
  auto r = run(*find_binary(), Tool::kMemcheck,
               {kc, "check", std::string(KC_SOURCE_DIR) + "/contracts/classes/C-PRC-01.kc", "--impl", "cuda.matmul_tiled"},
               600);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->summary_seen);
  EXPECT_EQ(r->errors, 0) << "an in-bounds kernel has no memcheck errors";
}

}  // namespace
}  // namespace kc::sanitizer
