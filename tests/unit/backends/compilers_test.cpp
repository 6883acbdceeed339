// The compilers backend: one reference-kernel source built by g++ and clang++
// under several flag sets. Each op conforms through the engine where the
// flags keep IEEE semantics, and the differences the compiler documentation
// predicts are the ones kc measures (docs/backends/compilers.md).
#include <gtest/gtest.h>

#include <cstring>

#include "../../../backends/variants/variant_backend.h"
#include "backend_test_util.h"

namespace kc::backend_test {
namespace {

// Builds whose flags keep the source's IEEE semantics (no fast-math, no FMA
// contraction): every one computes the same operations in the same order.
const char* const kValueSafe[] = {"gcc_O0", "gcc_O2", "gcc_O3_v3_contract_off", "clang_O0", "clang_O2"};
// Builds that fuse a*b+c into an FMA.
const char* const kContractFast[] = {"gcc_O3_v3_contract_fast", "clang_O3_v3_contract_fast"};

class CompilersBackend : public BackendTest {
 protected:
  CompilersBackend() : BackendTest("compilers") {}
  /// Whether `label` was built and loads on this CPU (clang may be absent, v3 needs AVX2).
  static bool runs(const std::string& label) {
    auto impl = registry().find_impl("compilers." + label + ".sum");
    return impl && impl->can_implement(make_call("sum", {{"n", "8"}})).ok();
  }
};

TEST_F(CompilersBackend, ReportsToolchainVersionsAndFlags) {
  const BackendInfo i = backend_info("compilers");
  EXPECT_NE(i.version.find("g++ "), std::string::npos) << i.version;
  std::printf("[ info     ] %s — %s\n", i.version.c_str(), i.reason.c_str());
  auto impl = registry().find_impl("compilers.gcc_Ofast.relu");
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->declaration().extra.at("flags"), "-Ofast");
  EXPECT_EQ(impl->declaration().extra.at("compiler"), "g++");
  EXPECT_NE(impl->declaration().source.find("crtfastmath"), std::string::npos);
}

// Smoke conformance of every op on every value-safe build, through the engine.
struct OpContract {
  const char* op;
  const char* file;
  const char* contract;
};

class CompilersOpConformance : public CompilersBackend, public ::testing::WithParamInterface<OpContract> {};

TEST_P(CompilersOpConformance, ConformsOnValueSafeBuilds) {
  const OpContract& p = GetParam();
  for (const char* label : kValueSafe) {
    if (!runs(label)) continue;
    // The -O0 builds carry no matmul (backends/compilers/CMakeLists.txt).
    if (std::string(p.op) == "matmul" && std::string(label).find("_O0") != std::string::npos) continue;
    const auto cases = smoke_check(p.file, p.contract, std::string("compilers.") + label + "." + p.op);
    ASSERT_EQ(cases.size(), 1u) << label;
    EXPECT_EQ(cases[0].verdict, engine::Verdict::kConforming) << describe(cases[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CompilersOpConformance,
                         ::testing::Values(OpContract{"matmul", "contracts/blas/KC-GEMM-01.kc", "KC-GEMM-01"},
                                           OpContract{"sum", "contracts/blas/KC-RED-01.kc", "KC-RED-01"},
                                           OpContract{"softmax", "contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01"},
                                           OpContract{"relu", "contracts/classes/C-EXC-01.kc", "C-EXC-01"},
                                           OpContract{"gelu_erf", "contracts/classes/C-EXC-01.kc", "C-EXC-01"},
                                           OpContract{"scal", "contracts/blas/KC-SCAL-01.kc", "KC-SCAL-01"}),
                         [](const ::testing::TestParamInfo<OpContract>& i) { return std::string(i.param.op); });

// Prediction (GCC manual, -ffast-math: "-ffinite-math-only ... assume that
// arguments and results are not NaNs or +-Infs"): the NaN-passing select of
// relu may become maxss, which returns its second operand (0) for a NaN. kc
// names it: C-EXC-01 violation NAN_SWALLOWED. The value-safe build conforms.
TEST_F(CompilersBackend, FastMathReluSwallowsNaN) {
  const auto safe = smoke_check("contracts/classes/C-EXC-01.kc", "C-EXC-01", "compilers.gcc_O2.relu");
  ASSERT_EQ(safe.size(), 1u);
  EXPECT_EQ(safe[0].verdict, engine::Verdict::kConforming) << describe(safe[0]);
  const auto fast = smoke_check("contracts/classes/C-EXC-01.kc", "C-EXC-01", "compilers.gcc_Ofast.relu");
  ASSERT_EQ(fast.size(), 1u);
  EXPECT_EQ(fast[0].verdict, engine::Verdict::kViolation) << describe(fast[0]);
  ASSERT_FALSE(fast[0].signatures.empty()) << describe(fast[0]);
  EXPECT_EQ(fast[0].signatures.front().name, "NAN_SWALLOWED") << describe(fast[0]);
  EXPECT_FALSE(fast[0].repro.empty());
}

// Prediction (GCC manual, "Options for Linking" / -ffast-math: crtfastmath.o
// "sets the FTZ and DAZ bits" at startup; measured here: GCC 12 and Clang 14
// both link it into -shared libraries): loading a fast-math build sets
// FTZ|DAZ, so its scal flushes subnormals: C-PRC-03 FTZ_OBSERVED, while the
// -O2 build keeps IEEE gradual underflow.
TEST_F(CompilersBackend, FastMathLibrarySetsFtzDazAtLoad) {
  auto fast = registry().find_impl("compilers.gcc_Ofast.scal");
  ASSERT_NE(fast, nullptr);
  const auto mxcsr = backends::variant_load_mxcsr(*fast);
  ASSERT_TRUE(mxcsr.has_value()) << "loading the -Ofast build did not change MXCSR";
  EXPECT_TRUE(*mxcsr & (1u << 15)) << "FTZ";
  EXPECT_TRUE(*mxcsr & (1u << 6)) << "DAZ";
  auto safe = registry().find_impl("compilers.gcc_O2.scal");
  ASSERT_NE(safe, nullptr);
  EXPECT_FALSE(backends::variant_load_mxcsr(*safe).has_value());

  const auto ieee = smoke_check("contracts/classes/C-PRC-03.kc", "C-PRC-03", "compilers.gcc_O2.scal");
  ASSERT_EQ(ieee.size(), 1u);
  EXPECT_EQ(ieee[0].verdict, engine::Verdict::kConforming) << describe(ieee[0]);
  const auto ftz = smoke_check("contracts/classes/C-PRC-03.kc", "C-PRC-03", "compilers.gcc_Ofast.scal");
  ASSERT_EQ(ftz.size(), 1u);
  EXPECT_EQ(ftz[0].verdict, engine::Verdict::kViolation) << describe(ftz[0]);
  ASSERT_FALSE(ftz[0].signatures.empty()) << describe(ftz[0]);
  EXPECT_EQ(ftz[0].signatures.front().name, "FTZ_OBSERVED") << describe(ftz[0]);
}

// Prediction (IEEE 754 + the source's fixed order): builds without contraction
// or reassociation perform the same roundings in the same order, so they agree
// bit for bit, whatever the compiler or -O level; FMA contraction
// (-ffp-contract=fast with -march=x86-64-v3) changes the matmul's bits, and
// -ffast-math's reassociation changes the sum's. Both stay within their
// error bounds (the contracts above).
TEST_F(CompilersBackend, OnlyContractionAndReassociationChangeTheBits) {
  const Call mm = make_call("matmul", {{"M", "17"}, {"N", "19"}, {"K", "257"}});
  const Call sm = make_call("sum", {{"n", "4099"}});
  const auto mm_ref = run_bits("compilers.gcc_O2.matmul", mm, "C");
  const auto sm_ref = run_bits("compilers.gcc_O0.sum", sm, "out");
  for (const char* label : kValueSafe) {
    if (!runs(label)) continue;
    const std::string mm_impl = std::string("compilers.") + label + ".matmul";
    if (registry().find_impl(mm_impl)) {
      EXPECT_EQ(run_bits(mm_impl, mm, "C"), mm_ref) << label;
    }
    EXPECT_EQ(run_bits(std::string("compilers.") + label + ".sum", sm, "out"), sm_ref) << label;
  }
  for (const char* label : kContractFast) {
    if (!runs(label)) continue;
    EXPECT_NE(run_bits(std::string("compilers.") + label + ".matmul", mm, "C"), mm_ref) << label;
  }
  // -fassociative-math permits, but does not require, reassociation: GCC
  // -Ofast (-O3) vectorizes the sum into 4 partial sums (addps); measured
  // here, GCC -O2 -ffast-math (the -O2 "very cheap" vectorizer cost model) and
  // Clang 14 -Ofast keep the sequential order for this strided-capable loop.
  if (runs("gcc_Ofast")) {
    EXPECT_NE(run_bits("compilers.gcc_Ofast.sum", sm, "out"), sm_ref) << "gcc_Ofast";
  }
}

}  // namespace
}  // namespace kc::backend_test
