// gemv (BLAS level 2) on openblas, blis and refblas, s and d: KC-GEMV-01 (the
// dot-product bound, N and T, strided, beta 0 and 0.75) on every library, the
// row-major to column-major mapping checked on a non-square A by a direct
// call, and beta = 0 never reading y (sgemv.f: "Y need not be set").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/op.h"

namespace kc {
namespace {

using backend_test::describe;
using backend_test::registry;

class BlasGemvTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_NE(registry().find_backend(GetParam()), nullptr);
    const BackendInfo info = backend_test::backend_info(GetParam());
    if (!info.available) GTEST_SKIP() << info.reason;
  }
};

TEST_P(BlasGemvTest, ConformsToTheDotProductBound) {
  // sgemv and dgemv by name: ".?gemv" also matches the complex cgemv/zgemv.
  for (const char* routine : {".sgemv", ".dgemv"}) {
    const auto cases = backend_test::smoke_check("contracts/blas/KC-GEMV-01.kc", "KC-GEMV-01", GetParam() + routine);
    ASSERT_EQ(cases.size(), 1u) << routine;
    backend_test::expect_conforming(cases[0]);
  }
}

// The declared beta = 0 rule, y filled with NaN (KC-GEMV-02).
TEST_P(BlasGemvTest, BetaZeroDoesNotReadY) {
  // sgemv and dgemv by name: ".?gemv" also matches the complex cgemv/zgemv.
  for (const char* routine : {".sgemv", ".dgemv"}) {
    const auto cases = backend_test::smoke_check("contracts/blas/KC-GEMV-02.kc", "KC-GEMV-02", GetParam() + routine);
    ASSERT_EQ(cases.size(), 1u) << routine;
    backend_test::expect_conforming(cases[0]);
  }
}

// A 3 x 2 row-major A, both transposes, with y at stride 2 and beta = 0 over a
// NaN-filled y: exact small integers, so every library must match bit for bit.
TEST_P(BlasGemvTest, NonSquareRowMajorBothWaysWithoutReadingY) {
  for (const char* trans : {"N", "T"}) {
    for (DType dt : {DType::kF32, DType::kF64}) {
      const bool t = std::string(trans) == "T";
      Config config;
      config.dtype = dt;
      config.params = {{"M", "3"}, {"N", "2"}, {"trans", trans}, {"incy", "2"}, {"alpha", "2"}, {"beta", "0"}};
      auto made = builtin_ops().find("gemv")->make_call(config);
      ASSERT_TRUE(made.ok());
      Call call = std::move(made).value();
      const double a[3][2] = {{1, 2}, {3, 4}, {5, 6}};
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) call.t("A").store(i * call.t("A").strides()[0] + j, a[i][j]);
      const int nx = t ? 3 : 2, ny = t ? 2 : 3;
      for (int k = 0; k < nx; ++k) call.t("x").set(k, k + 1);
      for (std::int64_t k = 0; k < call.t("y").storage_elems(); ++k)
        call.t("y").store(k, std::numeric_limits<double>::quiet_NaN());
      const std::string name = GetParam() + (dt == DType::kF32 ? ".sgemv" : ".dgemv");
      auto impl = registry().find_impl(name);
      ASSERT_NE(impl, nullptr) << name;
      ASSERT_TRUE(impl->run(call).ok()) << name;
      for (int i = 0; i < ny; ++i) {
        double want = 0;
        for (int k = 0; k < nx; ++k) want += (t ? a[k][i] : a[i][k]) * (k + 1);
        EXPECT_EQ(call.t("y").at(i), 2 * want) << name << " trans " << trans << " y[" << i << "]";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, BlasGemvTest, ::testing::Values("openblas", "blis", "refblas"),
                         [](const auto& info) { return info.param; });

// The trio separates: the fp16-operand kernel passes a visible test but not
// the bound, the plain loop conforms.
TEST(BlasGemvCalibration, BadIsCaughtGoodConforms) {
  const auto bad = backend_test::smoke_check("contracts/blas/KC-GEMV-01.kc", "KC-GEMV-01", "calib.gemv_fp16_x");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].verdict, engine::Verdict::kViolation) << describe(bad[0]);
  const auto good = backend_test::smoke_check("contracts/blas/KC-GEMV-01.kc", "KC-GEMV-01", "calib.gemv_loop");
  ASSERT_EQ(good.size(), 1u);
  backend_test::expect_conforming(good[0]);
}

TEST(BlasGemvCalibration, ReadingYAtBetaZeroIsCaught) {
  const auto bad = backend_test::smoke_check("contracts/blas/KC-GEMV-02.kc", "KC-GEMV-02", "calib.gemv_beta_reads_y");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].verdict, engine::Verdict::kViolation) << describe(bad[0]);
  bool nan_introduced = false;
  for (const auto& sg : bad[0].signatures) nan_introduced = nan_introduced || sg.name == "NAN_INTRODUCED";
  EXPECT_TRUE(nan_introduced) << describe(bad[0]);
}

}  // namespace
}  // namespace kc
