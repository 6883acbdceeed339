// Tests of host tensors and the seeded generator (src/core/tensor.cpp, rng.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "kc/rng.h"
#include "kc/tensor.h"

namespace kc {
namespace {

TEST(Tensor, ContiguousShapeStridesAndRoundTrip) {
  Tensor t(DType::kF32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.storage_elems(), 6);
  EXPECT_EQ(t.strides(), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.shape_string(), "(2, 3)");
  for (int i = 0; i < 6; ++i) t.set(i, i + 0.5);
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}));
  const std::int64_t idx[] = {1, 2};
  EXPECT_EQ(t.offset(idx), 5);
}

TEST(Tensor, PaddedLeadingDimension) {
  Tensor t(DType::kF64, {3, 2}, {5, 1});
  EXPECT_EQ(t.storage_elems(), 2 * 5 + 2);
  EXPECT_EQ(t.offset_of_flat(3), 5 + 1);
  t.fill_storage(-7);
  t.set(3, 9);
  EXPECT_EQ(t.load(6), 9);
  EXPECT_EQ(t.load(2), -7);  // padding untouched by set
  EXPECT_EQ(t.at(3), 9);
}

TEST(Tensor, StoresRoundOnceIntoNarrowFormats) {
  Tensor h(DType::kF16, {1});
  h.store(0, 1 + 0x1p-11 + 0x1p-40);  // correct rounding goes up (no double rounding)
  EXPECT_EQ(h.load(0), 1 + 0x1p-10);
  Tensor b(DType::kBF16, {1});
  b.store(0, 1 + 0x1p-9);
  EXPECT_EQ(b.load(0), 1.0);
  Tensor e(DType::kFP8E4M3, {2});
  e.store(0, 500);
  EXPECT_TRUE(std::isnan(e.load(0)));
  e.store(1, 0.3);
  EXPECT_EQ(e.load(1), 0.3125);
  Tensor tf(DType::kTF32, {1});
  tf.store(0, 1 + 0x1p-12);
  EXPECT_EQ(tf.load(0), 1.0);
  Tensor i(DType::kI64, {1});
  i.store(0, 41.6);
  EXPECT_EQ(i.data<std::int64_t>()[0], 42);
}

TEST(Tensor, HashSeesEveryByte) {
  Tensor a(DType::kF32, {4});
  Tensor b(DType::kF32, {4});
  EXPECT_EQ(a.hash(), b.hash());
  b.set(3, -0.0);
  EXPECT_NE(a.hash(), b.hash());
  a.fill_bytes(0xff);
  EXPECT_TRUE(std::isnan(a.at(0)));
}

TEST(Tensor, DefaultIsEmptyAndRankZeroIsAScalar) {
  EXPECT_EQ(Tensor().numel(), 0);
  Tensor s(DType::kF32, std::vector<std::int64_t>{});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.storage_elems(), 1);
  s.set(0, 2.5);
  EXPECT_EQ(s.at(0), 2.5);
}

TEST(Tensor, FromDoubles) {
  const std::vector<double> v = {1, 2, 3, 4};
  Tensor t = Tensor::from_doubles(DType::kF16, {2, 2}, v);
  EXPECT_EQ(t.to_doubles(), v);
  EXPECT_EQ(t.dtype(), DType::kF16);
}

TEST(Rng, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 16; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(7, 3), derive_seed(7, 3));
}

TEST(Rng, DistributionsInRangeAndRoughlyRight) {
  Rng r(1);
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  std::set<std::int64_t> seen;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const auto k = r.uniform_int(-2, 2);
    ASSERT_GE(k, -2);
    ASSERT_LE(k, 2);
    seen.insert(k);
    const double z = r.normal();
    sum += z;
    sum_sq += z * z;
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.05);
  EXPECT_EQ(r.uniform_int(3, 3), 3);
}

}  // namespace
}  // namespace kc
