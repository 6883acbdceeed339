// The output poison: a NaN no computed NaN equals in every float format, a
// finite sentinel, and the device backends' rule of mirroring the host's fill.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kc/poison.h"

namespace kc {
namespace {

TEST(Poison, IsANanWithBitsNoComputedNanHasInEveryFloatFormat) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kFP8E5M2, DType::kFP8E4M3}) {
    Tensor x(t, {4});
    fill_logical(x.raw(), x);
    EXPECT_TRUE(std::isnan(x.at(0))) << dtype_name(t);
    // A NaN computed and stored in the format has other bits.
    Tensor computed(t, {1});
    volatile double zero = 0;
    computed.set(0, zero / zero);
    const auto size = static_cast<std::size_t>(dtype_info(t).storage_bytes);
    EXPECT_NE(std::memcmp(computed.raw(), x.raw(), size), 0) << dtype_name(t);
    EXPECT_EQ(logical_fill(x), Fill::kPoison) << dtype_name(t);
    EXPECT_FALSE(logical_fill(computed).has_value()) << dtype_name(t);
  }
}

TEST(Poison, TheSentinelIsFiniteAndExactEverywhere) {
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kFP8E5M2, DType::kFP8E4M3}) {
    Tensor x(t, {3});
    fill_logical(x.raw(), x, Fill::kSentinel);
    EXPECT_EQ(x.at(2), -0.3125) << dtype_name(t);
    EXPECT_EQ(logical_fill(x), Fill::kSentinel) << dtype_name(t);
  }
}

TEST(Poison, PaddingKeepsItsBytes) {
  Tensor c(DType::kF32, {2, 3}, {5, 1});  // leading dimension 5: two padding floats a row
  c.fill_storage(7.0);
  fill_logical(c.raw(), c);
  EXPECT_EQ(c.data<float>()[3], 7.0f);
  EXPECT_EQ(c.data<float>()[4], 7.0f);
  EXPECT_TRUE(std::isnan(c.at(5)));
  EXPECT_EQ(logical_fill(c), Fill::kPoison);
}

}  // namespace
}  // namespace kc
