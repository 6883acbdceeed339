// Tests of the residual metrics (src/measure/metrics.cpp).
#include "kc/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

TEST(UlpDistance, ZerosNaNAndInfinities) {
  EXPECT_EQ(ulp_distance(0.0, -0.0, DType::kF32), 0);
  EXPECT_EQ(ulp_distance(kNaN, kNaN, DType::kF32), 0);
  EXPECT_EQ(ulp_distance(kNaN, 1.0, DType::kF32), kInf);
  EXPECT_EQ(ulp_distance(1.0, kNaN, DType::kF16), kInf);
  EXPECT_EQ(ulp_distance(kInf, kInf, DType::kF32), 0);
  EXPECT_EQ(ulp_distance(-kInf, -kInf, DType::kF16), 0);
  EXPECT_EQ(ulp_distance(kInf, -kInf, DType::kF32), kInf);
  EXPECT_EQ(ulp_distance(kInf, 65504, DType::kF16), kInf);
}

TEST(UlpDistance, NeighboursAndBinadeEdges) {
  EXPECT_EQ(ulp_distance(1.0, 1 + 0x1p-23, DType::kF32), 1);
  EXPECT_EQ(ulp_distance(1.0, 1 - 0x1p-24, DType::kF32), 1);  // spacing halves below 1
  EXPECT_EQ(ulp_distance(1 - 0x1p-24, 1 + 0x1p-23, DType::kF32), 2);
  EXPECT_EQ(ulp_distance(1.0, 1 + 0x1p-10, DType::kF16), 1);
  EXPECT_EQ(ulp_distance(1.0, 2.0, DType::kF16), 1024);
  EXPECT_EQ(ulp_distance(1.0, 1 + 0x1p-52, DType::kF64), 1);
  EXPECT_EQ(ulp_distance(1.0, 2.0, DType::kBF16), 128);
}

TEST(UlpDistance, SubnormalsAndAcrossZero) {
  // fp16: smallest subnormal 2^-24, min normal 2^-14 = 1024 subnormal steps.
  EXPECT_EQ(ulp_distance(0.0, 0x1p-24, DType::kF16), 1);
  EXPECT_EQ(ulp_distance(0.0, 0x1p-14, DType::kF16), 1024);
  EXPECT_EQ(ulp_distance(0x1p-14 - 0x1p-24, 0x1p-14, DType::kF16), 1);  // subnormal boundary
  EXPECT_EQ(ulp_distance(0x1p-14, 0x1p-14 + 0x1p-24, DType::kF16), 1);  // same spacing above
  EXPECT_EQ(ulp_distance(-0x1p-24, 0x1p-24, DType::kF16), 2);            // across zero
  EXPECT_EQ(ulp_distance(-0x1p-149, 0x1p-149, DType::kF32), 2);
  EXPECT_EQ(ulp_distance(-1.0, 1.0, DType::kF16), 2.0 * ulp_distance(0.0, 1.0, DType::kF16));
  EXPECT_EQ(ulp_distance(-0x1p-1074, 0x1p-1074, DType::kF64), 2);
  // fp8 e4m3: 8 subnormal steps below 2^-6, then 8 per binade.
  EXPECT_EQ(ulp_distance(0.0, 0x1p-6, DType::kFP8E4M3), 8);
  EXPECT_EQ(ulp_distance(448.0, 416.0, DType::kFP8E4M3), 1);
}

TEST(RelativeError, ZeroReferenceAndFloor) {
  EXPECT_EQ(relative_error(1.1, 1.0), std::fabs(1.1 - 1.0));
  EXPECT_EQ(relative_error(0.0, 0.0), 0);
  EXPECT_EQ(relative_error(1e-30, 0.0), kInf);
  EXPECT_EQ(relative_error(kNaN, kNaN), 0);
  EXPECT_EQ(relative_error(kNaN, 1.0), kInf);
  EXPECT_DOUBLE_EQ(relative_error_floor(1e-30, 0.0, 1e-20), 1e-10);
  EXPECT_DOUBLE_EQ(relative_error_floor(3.0, 2.0, 1e-20), 0.5);
}

TEST(BoundRatios, RatioAndZeroAllowance) {
  const std::vector<double> got = {1.0, 2.5, 3.0, kNaN, 5.0};
  const std::vector<double> ref = {1.0, 2.0, 3.0, 4.0, 5.0};
  const std::vector<double> allowed = {0.0, 1.0, 0.0, 1.0, 1.0};
  const auto r = bound_ratios(got, ref, allowed);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], 0);      // exact with zero allowance
  EXPECT_EQ(r[1], 0.5);
  EXPECT_EQ(r[2], 0);
  EXPECT_EQ(r[3], kInf);   // NaN against a number
  EXPECT_EQ(r[4], 0);
  const auto r2 = bound_ratios(std::vector<double>{1.5}, std::vector<double>{1.0}, std::vector<double>{0.0});
  EXPECT_EQ(r2[0], kInf);  // any error against zero allowance
}

TEST(Summarize, P99MaxMeanAndWorstIndex) {
  std::vector<double> v(200);
  for (int i = 0; i < 200; ++i) v[i] = i;  // 0..199
  v[17] = 1000;                              // unique worst
  const ResidualStats s = summarize(v);
  EXPECT_EQ(s.count, 200);
  EXPECT_EQ(s.max, 1000);
  EXPECT_EQ(s.worst_index, 17);
  // Nearest rank: ceil(0.99 * 200) = 198th smallest. Sorted values are 0..199
  // without 17 plus 1000: the 198th smallest is 198.
  EXPECT_EQ(s.p99, 198);
  EXPECT_EQ(s.nonfinite, 0);
  double sum = 0;
  for (double x : v) sum += x;
  EXPECT_DOUBLE_EQ(s.mean, sum / 200);
}

TEST(Summarize, FirstWorstAndNonfinite) {
  const std::vector<double> v = {1, 5, 2, 5, kNaN, 0};
  const ResidualStats s = summarize(v);
  EXPECT_EQ(s.max, kInf);  // NaN ranks as the worst
  EXPECT_EQ(s.worst_index, 4);
  EXPECT_EQ(s.nonfinite, 1);
  EXPECT_DOUBLE_EQ(s.mean, 13.0 / 5);
  const ResidualStats t = summarize(std::vector<double>{1, 5, 2, 5});
  EXPECT_EQ(t.worst_index, 1);
  EXPECT_EQ(summarize(std::vector<double>{}).worst_index, -1);
}

TEST(Normwise, FrobeniusRatio) {
  EXPECT_DOUBLE_EQ(normwise_error(std::vector<double>{3, 4}, std::vector<double>{0, 0}), kInf);
  EXPECT_EQ(normwise_error(std::vector<double>{0, 0}, std::vector<double>{0, 0}), 0);
  EXPECT_DOUBLE_EQ(normwise_error(std::vector<double>{3, 4 + 1}, std::vector<double>{3, 4}), 1.0 / 5);
  // No overflow for values near fp32 max squared.
  EXPECT_DOUBLE_EQ(normwise_error(std::vector<double>{2e300}, std::vector<double>{1e300}), 1.0);
}

TEST(ErrorVectors, NaNConventions) {
  const auto a = abs_errors(std::vector<double>{kNaN, kNaN, 1, kInf}, std::vector<double>{kNaN, 1, 1.5, kInf});
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(a[1], kInf);
  EXPECT_EQ(a[2], 0.5);
  EXPECT_EQ(a[3], 0);
  const auto u = ulp_errors(std::vector<double>{1 + 0x1p-10}, std::vector<double>{1}, DType::kF16);
  EXPECT_EQ(u[0], 1);
  const auto r = rel_errors(std::vector<double>{1.5, 1e-9}, std::vector<double>{1, 0}, 1e-6);
  EXPECT_EQ(r[0], 0.5);
  EXPECT_DOUBLE_EQ(r[1], 1e-3);
}

TEST(BitwiseEqual, SignsAndNaNs) {
  EXPECT_TRUE(bitwise_equal(1.0, 1.0, DType::kF32));
  EXPECT_FALSE(bitwise_equal(0.0, -0.0, DType::kF32));
  EXPECT_FALSE(bitwise_equal(0.0, -0.0, DType::kF16));
  EXPECT_TRUE(bitwise_equal(kNaN, kNaN, DType::kF32));
  EXPECT_FALSE(bitwise_equal(1.0, 1 + 0x1p-23, DType::kF32));
  EXPECT_TRUE(bitwise_equal(1.0, 1 + 0x1p-30, DType::kF16));  // same after rounding to fp16
  EXPECT_FALSE(bitwise_equal(1.0, 1 + 0x1p-52, DType::kF64));
}

}  // namespace
}  // namespace kc
