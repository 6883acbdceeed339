// The small-shape GEMM contracts (KC-GEMM-04/05/06) against the real
// libraries, one config each: what kc reports where BLIS 0.9's haswell-family
// small-matrix kernels read past the end of C or A (docs/findings.md), and that
// the libraries without that over-read conform on the same config. The whole
// sweeps run in `kc grade`; tests/repro/blis_sgemm_sup_overread.c shows the
// over-read without kc.
#include <gtest/gtest.h>

#include <string>

#include "../../../backends/blas/blas_library.h"
#include "backend_test_util.h"
#include "kc/engine.h"
#include "kc/signature.h"

namespace kc {
namespace {

using backend_test::registry;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// Row-major M = 8, N = 2 is, to the column-major library, m = 2 rows of C:
// a column shorter than the 4-float load the kernel uses for beta C.
constexpr char kOverreadConfig[] =
    "dtype=FP32 K=5 M=8 N=2 alpha=1 beta=0.5 lda_pad=0 ldb_pad=0 ldc_pad=0 trans_a=N trans_b=N";

engine::CaseResult run_one(const std::string& file, const std::string& id, const std::string& impl,
                           const std::string& config) {
  engine::CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/" + file};
  request.contracts = {id};
  request.impls = {impl};
  request.config = config;
  const engine::CheckResult r = engine::run_check(request, registry());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.cases.size(), 1u) << impl;
  return r.cases.empty() ? engine::CaseResult{} : r.cases[0];
}

bool can_run(const char* subconfig) {
  const backends::BlisSubconfig* sc = backends::find_blis_subconfig(subconfig);
  return sc && backends::missing_cpu_features(*sc).empty();
}

// The guard page after C catches the over-read; the verdict names the tensor
// and the side, and the repro line points at the config.
TEST(BlasSmallShapes, BlisHaswellKernelsReadPastTheEndOfC) {
  if (kSanitized) GTEST_SKIP() << "sub-configuration impls are disabled in sanitizer builds";
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  if (!can_run("haswell")) GTEST_SKIP() << "this CPU cannot run BLIS's haswell sub-configuration";
  const engine::CaseResult c =
      run_one("contracts/blas/KC-GEMM-04.kc", "KC-GEMM-04", "blis.sgemm_arch_haswell", kOverreadConfig);
  EXPECT_EQ(c.verdict, engine::Verdict::kError) << c.reason;
  ASSERT_EQ(c.signatures.size(), 1u) << c.reason;
  EXPECT_EQ(c.signatures[0].name, sig::kGuardRead);
  EXPECT_EQ(c.signatures[0].to_string(), "GUARD_READ(C, after)");
  EXPECT_NE(c.reason.find("past the end of C"), std::string::npos) << c.reason;
  EXPECT_NE(c.repro.find("N=2"), std::string::npos) << c.repro;
}

// The same config on kernels without the over-read: the reference BLAS,
// OpenBLAS, and BLIS's skx and generic sub-configurations conform.
TEST(BlasSmallShapes, OtherKernelsConformOnTheSameConfig) {
  if (!registry().find_impl("refblas.sgemm")) GTEST_SKIP() << backend_test::backend_info("refblas").reason;
  std::vector<std::string> impls = {"refblas.sgemm"};
  if (registry().find_impl("openblas.sgemm")) impls.push_back("openblas.sgemm");
  if (!kSanitized && registry().find_impl("blis.sgemm")) {
    impls.push_back("blis.sgemm_arch_generic");
    if (can_run("skx")) impls.push_back("blis.sgemm_arch_skx");
  }
  for (const std::string& impl : impls) {
    const engine::CaseResult c = run_one("contracts/blas/KC-GEMM-04.kc", "KC-GEMM-04", impl, kOverreadConfig);
    EXPECT_EQ(c.verdict, engine::Verdict::kConforming) << impl << ": " << c.reason;
  }
}

// beta = 0 with NaN in C, on the shape that over-reads at beta != 0: BLIS
// takes its beta = 0 branch and neither reads C nor lets the NaN through.
TEST(BlasSmallShapes, BlisBetaZeroLeavesCUnread) {
  if (kSanitized) GTEST_SKIP() << "sub-configuration impls are disabled in sanitizer builds";
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  if (!can_run("haswell")) GTEST_SKIP() << "this CPU cannot run BLIS's haswell sub-configuration";
  const std::string config =
      "dtype=FP32 K=5 M=8 N=2 alpha=1 beta=0 lda_pad=0 ldb_pad=0 ldc_pad=0 trans_a=N trans_b=N";
  const engine::CaseResult c =
      run_one("contracts/blas/KC-GEMM-06.kc", "KC-GEMM-06", "blis.sgemm_arch_haswell", config);
  EXPECT_EQ(c.verdict, engine::Verdict::kConforming) << c.reason;
}

// The second over-read: row-major A (the library's B) read past its end when
// op(B) is transposed, M = 4, N >= 16 and K is not a multiple of 8, at any beta.
TEST(BlasSmallShapes, BlisHaswellKernelsReadPastTheEndOfA) {
  if (kSanitized) GTEST_SKIP() << "sub-configuration impls are disabled in sanitizer builds";
  if (!registry().find_impl("blis.sgemm")) GTEST_SKIP() << backend_test::backend_info("blis").reason;
  if (!can_run("haswell")) GTEST_SKIP() << "this CPU cannot run BLIS's haswell sub-configuration";
  const std::string config =
      "dtype=FP32 K=5 M=4 N=16 alpha=1 beta=0 lda_pad=0 ldb_pad=0 ldc_pad=0 trans_a=N trans_b=T";
  const engine::CaseResult c =
      run_one("contracts/blas/KC-GEMM-06.kc", "KC-GEMM-06", "blis.sgemm_arch_haswell", config);
  EXPECT_EQ(c.verdict, engine::Verdict::kError) << c.reason;
  ASSERT_EQ(c.signatures.size(), 1u) << c.reason;
  EXPECT_EQ(c.signatures[0].to_string(), "GUARD_READ(A, after)");
  const engine::CaseResult generic =
      run_one("contracts/blas/KC-GEMM-06.kc", "KC-GEMM-06", "blis.sgemm_arch_generic", config);
  EXPECT_EQ(generic.verdict, engine::Verdict::kConforming) << generic.reason;
}

}  // namespace
}  // namespace kc
