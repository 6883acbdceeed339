// The opencl backend: probe, smoke conformance per op through the engine,
// verdicts the OpenCL spec predicts, canary bands, and the kc_<op> convention
// for user .cl files. Every test that needs a device skips, with the probe's
// reason, where no OpenCL platform exists.
//
// This process never initialises OpenCL itself: the engine runs every kernel
// in a worker process (which initialises its own runtime after the fork), and
// the direct device test runs in a child (kc::run_in_child, kc/child.h). A runtime
// initialised here would be unusable in the workers forked later.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kc/backend.h"
#include "kc/canary.h"
#include "kc/child.h"
#include "kc/engine.h"
#include "opencl/cl_runtime.h"
#include "opencl/opencl_backend.h"
#include "opencl/opencl_testing.h"
#include "opencl/user_kernels.h"

namespace kc {
namespace {

using engine::CaseResult;
using engine::CheckRequest;
using engine::CheckResult;
using engine::Verdict;

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

const BackendInfo& opencl_info() {
  static const BackendInfo info = [] {
    auto b = backends::make_opencl_backend();
    return b->probe();
  }();
  return info;
}

#define KC_SKIP_WITHOUT_OPENCL()                                                     \
  do {                                                                               \
    if (!opencl_info().available) GTEST_SKIP() << "opencl: " << opencl_info().reason; \
  } while (0)

CheckResult check(const std::string& contract_file, const std::vector<std::string>& impls,
                  std::optional<std::int64_t> samples = std::nullopt) {
  CheckRequest r;
  r.paths = {src(contract_file)};
  r.impls = impls;
  r.samples = samples;
  r.limits.timeout_s = 120;
  return engine::run_check(r);
}

std::string describe(const CaseResult& c) {
  std::string s = c.contract_id + " x " + c.impl + ": " + std::string(engine::verdict_name(c.verdict)) + " (" +
                  c.reason + ")";
  for (const auto& sg : c.signatures) s += " " + sg.to_string();
  return s;
}

// --- The canary vocabulary (header-only, no device needed).

TEST(OpenclCanary, GuardStatusCarriesTheCpuWorkersSignature) {
  const Status s = canary::guard_overwritten("C", true, "bytes +0 to +3").with_context("opencl.matmul_tiled");
  const auto sig = canary::guard_signature(s);
  ASSERT_TRUE(sig.has_value()) << s.message();
  EXPECT_EQ(sig->to_string(), "GUARD_OVERWRITTEN(C, after)");
  EXPECT_FALSE(canary::guard_signature(internal_error("GUARD_OVERWRITTEN(C, after)")).has_value());
  std::vector<std::uint8_t> band = canary::band_pattern(false);
  EXPECT_TRUE(canary::check_band(band.data(), false, "x", 16).ok());
  band[canary::kBandBytes - 1] = 0;  // the byte just before the payload
  const Status bad = canary::check_band(band.data(), false, "x", 16);
  EXPECT_EQ(canary::guard_signature(bad)->to_string(), "GUARD_OVERWRITTEN(x, before)") << bad.message();
}

// --- Probe.

TEST(OpenclBackend, ProbeReportsPlatformDeviceVersionsAndBuildTime) {
  KC_SKIP_WITHOUT_OPENCL();
  const BackendInfo& info = opencl_info();
  EXPECT_NE(info.version.find("OpenCL"), std::string::npos) << info.version;
  EXPECT_NE(info.version.find("device "), std::string::npos) << info.version;
  EXPECT_NE(info.reason.find("clBuildProgram"), std::string::npos) << info.reason;
  // "CLBlast 1.5.3", or "CLBlast absent at build time" without the package.
  EXPECT_NE(info.version.find("CLBlast "), std::string::npos) << info.version;
}

TEST(OpenclBackend, EveryImplDeclaresItsBuildAndSource) {
  KC_SKIP_WITHOUT_OPENCL();
  auto b = backends::make_opencl_backend();
  const auto impls = b->impls();
  ASSERT_FALSE(impls.empty());
  int fastmath = 0, daz = 0;
  for (const auto& i : impls) {
    const Declaration& d = i->declaration();
    EXPECT_EQ(d.backend, "opencl") << d.name;
    EXPECT_FALSE(d.source.empty()) << d.name;
    if (d.name.ends_with("_fastmath")) {
      ++fastmath;
      EXPECT_EQ(d.get("build_options"), "-cl-fast-relaxed-math");
      EXPECT_NE(d.get("nan_promise"), "") << d.name;
    }
    if (d.name.ends_with("_daz")) {
      ++daz;
      EXPECT_EQ(d.get("denormal"), "FTZ_DAZ") << d.name;
    }
  }
  EXPECT_GT(fastmath, 0);
  EXPECT_EQ(fastmath, daz);
}

// --- Smoke conformance: each op the backend exposes, through the engine.

struct Smoke {
  const char* contract;
  const char* impl;
};

class OpenclSmoke : public ::testing::TestWithParam<Smoke> {};

TEST_P(OpenclSmoke, Conforms) {
  KC_SKIP_WITHOUT_OPENCL();
  const CheckResult r = check(GetParam().contract, {GetParam().impl}, 1);
  ASSERT_EQ(r.cases.size(), 1u) << GetParam().impl;
  EXPECT_EQ(r.cases[0].verdict, Verdict::kConforming) << describe(r.cases[0]);
}

INSTANTIATE_TEST_SUITE_P(
    PerOp, OpenclSmoke,
    ::testing::Values(Smoke{"contracts/blas/KC-GEMM-02.kc", "opencl.matmul_tiled"},
                      Smoke{"contracts/blas/KC-GEMM-01.kc", "clblast.sgemm"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "opencl.sum_tree"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "opencl.sum_atomic"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.sdot"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.snrm2"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.sasum"},
                      Smoke{"contracts/blas/KC-IAMAX-01.kc", "clblast.isamax"},
                      Smoke{"contracts/blas/KC-SCAL-01.kc", "clblast.sscal"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.sdot_offset"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.snrm2_offset"},
                      Smoke{"contracts/blas/KC-RED-01.kc", "clblast.sasum_offset"},
                      Smoke{"contracts/blas/KC-SCAL-01.kc", "clblast.sscal_offset"},
                      Smoke{"contracts/blas/KC-SOFTMAX-01.kc", "opencl.softmax"},
                      Smoke{"contracts/blas/KC-SOFTMAX-01.kc", "opencl.log_softmax"},
                      Smoke{"contracts/classes/C-EXC-02.kc", "opencl.gather"},
                      Smoke{"contracts/classes/C-EXC-01.kc", "opencl.relu"},
                      Smoke{"contracts/classes/C-EXC-01.kc", "opencl.exp"},
                      Smoke{"contracts/classes/C-EXC-01.kc", "opencl.tanh"},
                      Smoke{"contracts/classes/C-EXC-01.kc", "opencl.gelu_erf"}),
    [](const ::testing::TestParamInfo<Smoke>& p) {
      std::string n = std::string(p.param.impl) + "_" + p.param.contract;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// The built-ins' accuracy: OpenCL 1.2 §7.4 Table 7.1 gives the minimum
// accuracy of exp (3 ulp) and tanh (5 ulp) in the full profile; the default
// build must meet it on random inputs.
TEST(OpenclSmoke, BuiltinsMeetTheSpecsUlpBounds) {
  KC_SKIP_WITHOUT_OPENCL();
  const std::string dir = ::testing::TempDir() + "/kc_opencl_ulp";
  std::filesystem::create_directories(dir);
  for (const auto& [op, ulp] : {std::pair<std::string, int>{"exp", 3}, {"tanh", 5}}) {
    const std::string file = dir + "/" + op + ".kc";
    std::ofstream(file) << "contract OCL-ULP-" << op << " {\n"
                        << "  scope      " << op << "\n"
                        << "  pre        precision(x) in {FP32} and value_range(x) in [-20, 20] and n in {4096}\n"
                        << "  post       output y satisfies elementwise_close(y, ref(y))\n"
                        << "  tolerance  ulp " << ulp << "\n"
                        << "  reference  higher_precision FP64\n"
                        << "  measure    sample 2 random inputs per config; compute max ratio; pass if <= 1\n"
                        << "  violation  \"the built-in is less accurate than OpenCL 1.2 §7.4 allows\"\n"
                        << "}\n";
    CheckRequest r;
    r.paths = {file};
    r.impls = {"opencl." + op};
    const CheckResult res = engine::run_check(r);
    ASSERT_EQ(res.cases.size(), 1u) << op;
    EXPECT_EQ(res.cases[0].verdict, Verdict::kConforming) << describe(res.cases[0]);
  }
}

// --- Verdicts the documented semantics predict.

// The default build keeps subnormals (the device reports CL_FP_DENORM), and
// -cl-denorms-are-zero "may" flush them (OpenCL 1.2 §5.6.4.2): the default
// build conforms to its IEEE declaration under C-PRC-03.
TEST(OpenclVerdicts, DefaultBuildKeepsSubnormalsAsDeclared) {
  KC_SKIP_WITHOUT_OPENCL();
  const CheckResult r = check("contracts/classes/C-PRC-03.kc", {"opencl.exp", "opencl.relu"});
  ASSERT_EQ(r.cases.size(), 2u);
  for (const auto& c : r.cases) EXPECT_EQ(c.verdict, Verdict::kConforming) << describe(c);
}

/// An opencl impl under another declaration (what a mis-declared kernel looks like).
class Redeclared final : public Impl {
 public:
  Redeclared(std::shared_ptr<const Impl> inner, Declaration d) : inner_(std::move(inner)), decl_(std::move(d)) {}
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return inner_->run(call); }

 private:
  std::shared_ptr<const Impl> inner_;
  Declaration decl_;
};

CaseResult run_redeclared(const std::string& contract_file, const std::string& impl_name,
                          const std::function<void(Declaration&)>& edit) {
  const auto loaded = engine::load_contracts({src(contract_file)});
  EXPECT_EQ(loaded.contracts.size(), 1u);
  auto backend = backends::make_opencl_backend();
  const BackendInfo info = backend->probe();
  for (const auto& impl : backend->impls()) {
    if (impl->declaration().name != impl_name) continue;
    Declaration d = impl->declaration();
    d.name += "_redeclared";
    edit(d);
    const Redeclared r(impl, d);
    return engine::run_case(loaded.contracts[0], loaded.files[0], r, info, CheckRequest{});
  }
  ADD_FAILURE() << "no impl " << impl_name;
  return {};
}

// -cl-denorms-are-zero: "single precision denormalized numbers may be flushed
// to zero" (OpenCL 1.2 §5.6.4.2). PoCL takes the hint: the _daz build conforms
// to its FTZ_DAZ declaration, and the same kernel declared IEEE is caught by
// C-PRC-03 with FTZ_OBSERVED -- the fast-math denormal incident, on OpenCL.
TEST(OpenclVerdicts, DenormsAreZeroBuildFlushesAndIsCaughtWhenDeclaredIeee) {
  KC_SKIP_WITHOUT_OPENCL();
  const CheckResult r = check("contracts/classes/C-PRC-03.kc", {"opencl.relu_daz"});
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].verdict, Verdict::kConforming) << describe(r.cases[0]);
  const CaseResult as_ieee = run_redeclared("contracts/classes/C-PRC-03.kc", "opencl.relu_daz",
                                            [](Declaration& d) { d.denormal = DenormalPolicy::kIeee; });
  EXPECT_EQ(as_ieee.verdict, Verdict::kViolation) << describe(as_ieee);
  ASSERT_FALSE(as_ieee.signatures.empty()) << describe(as_ieee);
  EXPECT_EQ(as_ieee.signatures[0].name, "FTZ_OBSERVED") << describe(as_ieee);
}

// Work-groups add their partial sums into one accumulator in the order they
// finish (OpenCL 1.2 §3.2: no order between work-groups), so opencl.sum_atomic
// declares NONE. Declared BITWISE, a C-ORD-02-style check (repeated
// invocations, bitwise comparison) over 1024 work-groups catches it; the tree
// sum, whose order is fixed, passes the same check.
TEST(OpenclVerdicts, AtomicSumDeclaredBitwiseIsNondeterministic) {
  KC_SKIP_WITHOUT_OPENCL();
  // With one core PoCL runs the work-groups one after another, in order.
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread: work-groups run in order";
  const std::string dir = ::testing::TempDir() + "/kc_opencl_ord";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/ord.kc";
  std::ofstream(file) << "contract OCL-ORD-02 {\n"
                         "  scope      sum\n"
                         "  pre        precision(x) in {FP32} and declared determinism = BITWISE\n"
                         "             and value_range(x) normal(0, 1) and n in {262144}\n"
                         "  post       bitwise_identical across 100 invocations\n"
                         "  tolerance  none\n"
                         "  reference  algebraic determinism\n"
                         "  measure    sample 1 random inputs per config\n"
                         "  violation  \"atomic-add reduction declared BITWISE\" signature NONDETERMINISTIC\n"
                         "}\n";
  const auto loaded = engine::load_contracts({file});
  ASSERT_EQ(loaded.contracts.size(), 1u);
  ASSERT_TRUE(loaded.contracts[0].executable());
  auto backend = backends::make_opencl_backend();
  const BackendInfo info = backend->probe();
  auto run = [&](const std::string& name) {
    for (const auto& impl : backend->impls()) {
      if (impl->declaration().name != name) continue;
      Declaration d = impl->declaration();
      d.determinism = Determinism::kBitwise;
      const Redeclared r(impl, d);
      return engine::run_case(loaded.contracts[0], file, r, info, CheckRequest{});
    }
    ADD_FAILURE() << "no impl " << name;
    return CaseResult{};
  };
  const CaseResult atomic = run("opencl.sum_atomic");
  EXPECT_EQ(atomic.verdict, Verdict::kViolation) << describe(atomic);
  ASSERT_FALSE(atomic.signatures.empty()) << describe(atomic);
  EXPECT_EQ(atomic.signatures[0].name, "NONDETERMINISTIC") << describe(atomic);
  const CaseResult tree = run("opencl.sum_tree");
  EXPECT_EQ(tree.verdict, Verdict::kConforming) << describe(tree);
}

// --- Canary bands.

// A kernel that writes past the end of its device buffer is caught by the
// back band; one that stays inside is not. Runs in a child process, which
// initialises its own OpenCL runtime.
TEST(OpenclCanary, OverflowingKernelDamagesTheBackBand) {
  KC_SKIP_WITHOUT_OPENCL();
  auto r = run_in_child(
      []() -> Result<std::string> {
        const Status inside = backends::opencl_testing::run_overflowing_write(256, 0);
        const Status past = backends::opencl_testing::run_overflowing_write(256, 3);
        return std::string(inside.ok() ? "ok" : inside.message()) + "\n" + past.message() + "\n" +
               (canary::guard_signature(past) ? canary::guard_signature(past)->to_string() : "no signature");
      },
      120, "the OpenCL test child");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->substr(0, 3), "ok\n") << *r;
  EXPECT_NE(r->find("bytes +0 to +11 past the end of device buffer 'victim'"), std::string::npos) << *r;
  EXPECT_NE(r->find("GUARD_OVERWRITTEN(victim, after)"), std::string::npos) << *r;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string dir = ::testing::TempDir() + "/kc_opencl_user";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Through the engine: a user kernel writing one element past y is an error
// verdict with the signature the CPU worker gives a host kernel.
TEST(OpenclCanary, OutOfBoundsKernelIsAGuardOverwrittenVerdict) {
  KC_SKIP_WITHOUT_OPENCL();
  const std::string file = write_file("oob_relu.cl", R"(
__kernel void kc_relu(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i + 1] = x[i] > 0.0f ? x[i] : 0.0f;  // BUG: shifted by one
}
)");
  CheckRequest r;
  r.paths = {src("contracts/classes/C-EXC-01.kc")};
  r.opencl_sources = {file};
  r.backends = {"opencl_user"};
  const CheckResult res = engine::run_check(r);
  ASSERT_EQ(res.cases.size(), 1u);
  const CaseResult& c = res.cases[0];
  EXPECT_EQ(c.verdict, Verdict::kError) << describe(c);
  ASSERT_EQ(c.signatures.size(), 1u) << describe(c);
  EXPECT_EQ(c.signatures[0].to_string(), "GUARD_OVERWRITTEN(y, after)") << describe(c);
}

// --- The kc_<op> convention for user files.

TEST(OpenclVet, ConventionIsParsedWithDeclarationsAndOptions) {
  const std::string file = write_file("conv.cl", R"(
// kc-options: -cl-denorms-are-zero
// kc-declare kc_exp: denormal = FTZ_DAZ, nan = IEEE_PROPAGATE
__kernel void kc_exp(int n, __global const float* x, __global float* y) { }
__kernel void kc_matmul(int M, int N, int K, float alpha, __global const float* A, int lda,
                        __global const float* B, int ldb, float beta, __global float* C, int ldc) { }
)");
  auto parsed = backends::opencl::parse_user_source(file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->options, "-cl-denorms-are-zero");
  ASSERT_EQ(parsed->kernels.size(), 2u);
  EXPECT_EQ(parsed->kernels[0].decl.name, "conv.exp");
  EXPECT_EQ(parsed->kernels[0].decl.get("denormal"), "FTZ_DAZ");
  EXPECT_EQ(parsed->kernels[1].decl.op, "matmul");
  EXPECT_EQ(parsed->kernels[1].decl.get("accumulator"), "FP32");
}

TEST(OpenclVet, BadFilesAreClearErrors) {
  auto none = backends::opencl::parse_user_source(write_file("none.cl", "__kernel void helper(int n) {}\n"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("defines no kernel named kc_<op>"), std::string::npos);
  auto unknown = backends::opencl::parse_user_source(write_file("unknown.cl", "__kernel void kc_frobnicate(int n) {}\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("kc_frobnicate"), std::string::npos);
  auto bad_decl = backends::opencl::parse_user_source(
      write_file("bad_decl.cl", "// kc-declare kc_exp: nan = SOMETIMES\n__kernel void kc_exp(int n) {}\n"));
  ASSERT_FALSE(bad_decl.ok());
  EXPECT_NE(bad_decl.status().message().find("bad_decl.cl:1:"), std::string::npos) << bad_decl.status().message();
}

TEST(OpenclVet, ACompileErrorCarriesTheBuildLog) {
  KC_SKIP_WITHOUT_OPENCL();
  const std::string file = write_file("broken.cl", "__kernel void kc_exp(int n, __global float* y) { y[0] = nope; }\n");
  auto built = backends::build_opencl_source(file);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(built.status().message().find("nope"), std::string::npos) << built.status().message();
}

// --- Incident replays on OpenCL (contracts/incidents/, incident_impls.cc):
// each bad kernel is caught by the incident's contract with its own
// signature, listed by the contract; the good kernels conform.

CaseResult check_incident(const std::string& file, const std::string& contract, const std::string& impl) {
  CheckRequest r;
  r.paths = {src("contracts/incidents/" + file)};
  r.contracts = {contract};
  r.impls = {impl};
  r.limits.timeout_s = 120;
  const CheckResult res = engine::run_check(r);
  for (const auto& d : res.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : res.cases)
    if (c.impl == impl && c.contract_id == contract) return c;
  ADD_FAILURE() << impl << " was not run against " << file << " " << contract;
  return {};
}

struct OpenclIncident {
  const char* file;
  const char* contract;
  const char* impl;
  const char* signature;  ///< the first signature as printed; "" = conforms
};

class OpenclIncidentReplay : public ::testing::TestWithParam<OpenclIncident> {};

TEST_P(OpenclIncidentReplay, CaughtWithTheIncidentsSignature) {
  KC_SKIP_WITHOUT_OPENCL();
  const OpenclIncident& e = GetParam();
  const CaseResult r = check_incident(e.file, e.contract, e.impl);
  if (std::string(e.signature).empty()) {
    EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
    return;
  }
  EXPECT_EQ(r.verdict, Verdict::kViolation) << describe(r);
  ASSERT_FALSE(r.signatures.empty()) << describe(r);
  const std::string got = r.signatures.front().to_string();
  // CONSTANT_OUTPUT carries the value written: compare the name only.
  if (std::string(e.signature) == "CONSTANT_OUTPUT")
    EXPECT_EQ(r.signatures.front().name, e.signature) << describe(r);
  else
    EXPECT_EQ(got, e.signature) << describe(r);
  EXPECT_TRUE(r.signature_expected) << "the contract does not list " << got;
  EXPECT_FALSE(r.repro.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Incidents, OpenclIncidentReplay,
    ::testing::Values(
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-01", "opencl.incident.matmul_fp16_saturating",
                       "SATURATION(65504)"},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-01", "opencl.matmul_tiled", ""},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-02", "opencl.incident.matmul_tf32_inputs",
                       "PRECISION_FINGERPRINT(tf32)"},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-02", "opencl.incident.matmul_bf16_inputs",
                       "PRECISION_FINGERPRINT(bf16)"},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-02", "opencl.incident.matmul_fp16_inputs",
                       "PRECISION_FINGERPRINT(fp16)"},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-02", "opencl.matmul_tiled", ""},
        OpenclIncident{"INC-PRECISION-COERCION.kc", "INC-COERCE-02", "opencl.incident.matmul_honest", ""},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_no_write",
                       "OUTPUT_NOT_WRITTEN"},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_constant", "CONSTANT_OUTPUT"},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_mutates_input",
                       "INPUT_MUTATED"},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_tile16_only",
                       "TILE_REMAINDER(16)"},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_address_cache",
                       "STALE_OUTPUT"},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.matmul_tiled", ""},
        OpenclIncident{"INC-REWARD-HACK.kc", "INC-REWARD-01", "opencl.incident.matmul_honest", ""},
        OpenclIncident{"INC-OOB.kc", "INC-OOB-01", "opencl.incident.gather_wrap",
                       "OOB_UNDECLARED(matches none of RAISE/CLAMP/ZERO)"},
        OpenclIncident{"INC-OOB.kc", "INC-OOB-01", "opencl.gather", ""}),
    [](const ::testing::TestParamInfo<OpenclIncident>& p) {
      std::string n = std::string(p.param.impl) + "_" + p.param.contract;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// Broken on purpose: a check with no --impl filter leaves them out.
TEST(OpenclIncidentReplay, LeftOutUnlessNamed) {
  KC_SKIP_WITHOUT_OPENCL();
  CheckRequest r;
  r.paths = {src("contracts/incidents/INC-OOB.kc")};
  r.backends = {"opencl"};
  r.samples = 1;
  r.limits.timeout_s = 120;
  const CheckResult res = engine::run_check(r);
  bool good_ran = false;
  for (const auto& c : res.cases) {
    EXPECT_FALSE(c.impl.starts_with("opencl.incident.")) << c.impl << " ran without being named";
    good_ran = good_ran || c.impl == "opencl.gather";
  }
  EXPECT_TRUE(good_ran);
}

// --- CLBlast level 1: buffer offsets, 0-based index, declared rules.

bool have_clblast() {
  for (const auto& i : backends::make_opencl_backend()->impls())
    if (i->declaration().name == "clblast.sdot") return true;
  return false;
}

#define KC_SKIP_WITHOUT_CLBLAST()                                     \
  do {                                                                \
    KC_SKIP_WITHOUT_OPENCL();                                         \
    if (!have_clblast()) GTEST_SKIP() << "kc was built without CLBlast"; \
  } while (0)

const Declaration* find_decl(const std::vector<std::shared_ptr<const Impl>>& impls, const std::string& name) {
  for (const auto& i : impls)
    if (i->declaration().name == name) return &i->declaration();
  return nullptr;
}

// Each level-1 routine comes twice, the _offset twin declaring where it puts
// its buffers; the rules are the ones CLBlast's kernels support: sscal
// multiplies at alpha = 0, isamax's NaN rule is none of the reference's, snrm2
// does not scale, and no routine takes signed increments (size_t x_inc).
TEST(OpenclClblast, Level1DeclarationsStateOffsetsAndTheKernelsRules) {
  KC_SKIP_WITHOUT_CLBLAST();
  const auto impls = backends::make_opencl_backend()->impls();
  for (const char* r : {"sdot", "snrm2", "sasum", "sscal", "isamax"}) {
    const std::string base = std::string("clblast.") + r;
    const Declaration* d = find_decl(impls, base);
    const Declaration* o = find_decl(impls, base + "_offset");
    ASSERT_NE(d, nullptr) << base;
    ASSERT_NE(o, nullptr) << base << "_offset";
    EXPECT_EQ(d->get("buffer_offsets"), "") << base;
    EXPECT_NE(o->get("buffer_offsets").find("x 17"), std::string::npos) << o->get("buffer_offsets");
    for (const char* key : {"increments", "nonpositive_inc", "nrm2_range"}) {
      EXPECT_EQ(d->get(key), "") << base << " declares " << key;
      EXPECT_EQ(o->get(key), "") << base << "_offset declares " << key;
    }
    for (const char* key : {"scal_alpha_zero", "iamax_nan", "reduction_range"}) EXPECT_EQ(d->get(key), o->get(key));
  }
  EXPECT_EQ(find_decl(impls, "clblast.sdot_offset")->get("buffer_offsets"),
            "x 17, y 5, result 3 elements (canary before and after)");
  EXPECT_EQ(find_decl(impls, "clblast.sscal")->get("scal_alpha_zero"), "MULTIPLY");
  EXPECT_EQ(find_decl(impls, "clblast.isamax")->get("iamax_nan"), "UNSPECIFIED");
  EXPECT_EQ(find_decl(impls, "clblast.snrm2")->get("reduction_range"), "UNSCALED");
}

// The canary around a vector placed at an element offset: CLBlast given the
// offset the vector is at leaves it intact; given one less it scales the
// element before the vector (GUARD_OVERWRITTEN(x, before)), one more the
// element after it (x, after). Runs in a child, which initialises OpenCL.
TEST(OpenclClblast, OffsetCanaryCatchesAWrongOffset) {
  KC_SKIP_WITHOUT_CLBLAST();
  auto r = run_in_child(
      []() -> Result<std::string> {
        std::string out;
        for (auto [placed, passed] : std::initializer_list<std::pair<int, int>>{{17, 17}, {17, 16}, {17, 18}, {17, 0}}) {
          const Status s = backends::opencl_testing::run_clblast_scal_at(100, placed, passed);
          const auto sig = canary::guard_signature(s);
          out += std::to_string(passed) + ": " + (s.ok() ? "ok" : sig ? sig->to_string() : s.message()) + "\n";
        }
        return out;
      },
      120, "the OpenCL test child");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r,
            "17: ok\n16: GUARD_OVERWRITTEN(x, before)\n18: GUARD_OVERWRITTEN(x, after)\n"
            "0: GUARD_OVERWRITTEN(x, before)\n");
}

std::vector<CaseResult> check_text(const std::string& name, const std::string& text,
                                   const std::vector<std::string>& impls) {
  CheckRequest r;
  r.paths = {write_file(name, text)};
  r.impls = impls;
  r.limits.timeout_s = 120;
  return engine::run_check(r).cases;
}

// CLBlast 1.5.3's iSAMAX returns the buffer position of the maximum,
// id * x_inc + x_offset (src/kernels/level1/xamax.opencl), where doc/api.md
// and kc's iamax give the element index id (0-based): right at x_inc = 1 and
// offset 0, the position at x_inc = 3, the index plus 17 for the _offset
// twin. The test pins the defect and that kc passes CLBlast's value on as it
// is (no 1-based conversion, no correction).
TEST(OpenclClblast, IsamaxReturnsTheBufferPositionNotTheIndex) {
  KC_SKIP_WITHOUT_CLBLAST();
  for (const auto& [inc, impl, scale, shift] :
       std::initializer_list<std::tuple<int, const char*, double, double>>{
           {1, "clblast.isamax", 1, 0}, {3, "clblast.isamax", 3, 0}, {1, "clblast.isamax_offset", 1, 17},
           {3, "clblast.isamax_offset", 3, 17}}) {
    std::string text =
        "contract CLB-IAMAX {\n  scope iamax\n"
        "  pre precision(x) in {FP32} and value_range(x) normal(0, 1)\n"
        "      and n in {2, 8, 1001} and incx in {" + std::to_string(inc) + "}\n"
        "  post output out satisfies elementwise_close(out, ref(out))\n"
        "  tolerance none\n  reference higher_precision FP64\n"
        "  measure sample 3 random inputs per config\n  violation \"wrong index\"\n}\n";
    const auto r = check_text("clb_iamax.kc", text, {impl});
    ASSERT_EQ(r.size(), 1u) << impl;
    const CaseResult& c = r[0];
    if (scale == 1 && shift == 0) {
      EXPECT_EQ(c.verdict, Verdict::kConforming) << describe(c);
      continue;
    }
    EXPECT_EQ(c.verdict, Verdict::kViolation) << describe(c);
    ASSERT_TRUE(c.evidence.worst.has_value()) << describe(c);
    EXPECT_EQ(c.evidence.worst->value, scale * c.evidence.worst->reference + shift)
        << impl << " incx " << inc << ": " << describe(c);
  }
}

// The offset twins of the reductions and scal at positive increments (the
// standard contracts run unit increments only on impls without
// increments = BLAS): conforming, like the plain routines.
TEST(OpenclClblast, OffsetsHoldAtPositiveIncrements) {
  KC_SKIP_WITHOUT_CLBLAST();
  const std::string common =
      "  post       output out satisfies elementwise_close(out, ref(out))\n"
      "  reference  higher_precision FP64\n"
      "  violation  \"wrong\"\n}\n";
  const auto dot = check_text("clb_dot.kc",
                              "contract CLB-DOT {\n  scope dot\n"
                              "  pre precision(x, y) in {FP32} and value_range(x, y) normal(0, 1)\n"
                              "      and n in {1, 7, 1000} and incx in {1, 3} and incy in {1, 2}\n"
                              "  tolerance bound gamma(n + 1, P) * |x|\n"
                              "  measure sample 2 random inputs per config; compute max bound_ratio; pass if <= 1\n" +
                                  common,
                              {"clblast.sdot", "clblast.sdot_offset"});
  const auto red = check_text("clb_red.kc",
                              "contract CLB-RED {\n  scope asum, nrm2\n"
                              "  pre precision(x) in {FP32} and value_range(x) normal(0, 1)\n"
                              "      and n in {1, 7, 1000} and incx in {1, 3}\n"
                              "  tolerance bound gamma(n + 1, P) * |x|\n"
                              "  measure sample 2 random inputs per config; compute max bound_ratio; pass if <= 1\n" +
                                  common,
                              {"clblast.sasum", "clblast.sasum_offset", "clblast.snrm2", "clblast.snrm2_offset"});
  const auto scal = check_text("clb_scal.kc",
                               "contract CLB-SCAL {\n  scope scal\n"
                               "  pre precision(x) in {FP32} and value_range(x) normal(0, 1)\n"
                               "      and alpha in {0.1, -3} and n in {1, 5, 1000} and incx in {1, 3}\n"
                               "  post       output x satisfies elementwise_close(x, ref(x))\n"
                               "  tolerance ulp 0\n  reference  higher_precision FP64\n"
                               "  measure sample 2 random inputs per config; compute max ratio; pass if <= 1\n"
                               "  violation  \"wrong\"\n}\n",
                               {"clblast.sscal", "clblast.sscal_offset"});
  std::size_t n = 0;
  for (const auto* cases : {&dot, &red, &scal}) {
    for (const CaseResult& c : *cases) {
      ++n;
      EXPECT_EQ(c.verdict, Verdict::kConforming) << describe(c);
    }
  }
  EXPECT_EQ(n, 8u);
}

// The declared rules, judged: sscal (scal_alpha_zero = MULTIPLY) by
// KC-SCAL-02 at either offset; snrm2 declares no nrm2_range, isamax's
// UNSPECIFIED NaN rule no iamax_nan the contracts judge, no routine
// increments = BLAS: those contracts do not apply.
TEST(OpenclClblast, DeclaredRulesSelectTheirContracts) {
  KC_SKIP_WITHOUT_CLBLAST();
  const CheckResult scal = check("contracts/blas/KC-SCAL-02.kc", {"clblast.sscal", "clblast.sscal_offset"});
  ASSERT_EQ(scal.cases.size(), 2u);
  for (const auto& c : scal.cases) EXPECT_EQ(c.verdict, Verdict::kConforming) << describe(c);
  for (const char* f : {"KC-SCAL-03", "KC-NRM2-01", "KC-NRM2-03", "KC-IAMAX-02", "KC-IAMAX-03", "KC-INC-01",
                        "KC-INC-02", "KC-INC-03", "KC-INC-04"}) {
    const CheckResult r = check("contracts/blas/" + std::string(f) + ".kc",
                                {"clblast.sscal", "clblast.snrm2", "clblast.isamax", "clblast.sdot", "clblast.sasum"});
    for (const auto& c : r.cases) EXPECT_EQ(c.verdict, Verdict::kNotApplicable) << describe(c);
  }
}

}  // namespace
}  // namespace kc
