// Tests of the dtype table and host rounding (src/core/dtype.cpp).
#include "kc/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(DType, ParsesCanonicalNamesAndAliases) {
  EXPECT_EQ(parse_dtype("FP32"), DType::kF32);
  EXPECT_EQ(parse_dtype("float32"), DType::kF32);
  EXPECT_EQ(parse_dtype("Float"), DType::kF32);
  EXPECT_EQ(parse_dtype("half"), DType::kF16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("tf32"), DType::kTF32);
  EXPECT_EQ(parse_dtype("e4m3"), DType::kFP8E4M3);
  EXPECT_EQ(parse_dtype("FP8_E5M2"), DType::kFP8E5M2);
  EXPECT_EQ(parse_dtype("double"), DType::kF64);
  EXPECT_EQ(parse_dtype("int64"), DType::kI64);
  EXPECT_FALSE(parse_dtype("fp33").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  for (const auto& info : all_dtypes()) {
    EXPECT_EQ(parse_dtype(info.name), info.dtype) << info.name;
    EXPECT_EQ(parse_dtype(info.short_name), info.dtype) << info.short_name;
  }
}

TEST(DType, EpsUnitRoundoffGamma) {
  EXPECT_EQ(eps(DType::kF32), 0x1p-23);
  EXPECT_EQ(eps(DType::kF16), 0x1p-10);
  EXPECT_EQ(eps(DType::kBF16), 0x1p-7);
  EXPECT_EQ(eps(DType::kTF32), 0x1p-10);
  EXPECT_EQ(eps(DType::kFP8E4M3), 0x1p-3);
  EXPECT_EQ(unit_roundoff(DType::kF64), 0x1p-53);
  const double u = 0x1p-24;
  EXPECT_DOUBLE_EQ(gamma(100, DType::kF32), 100 * u / (1 - 100 * u));
  EXPECT_EQ(gamma(2048, DType::kF16), kInf);  // n u = 1
  EXPECT_EQ(gamma(4096, DType::kF16), kInf);
  EXPECT_LT(gamma(2047, DType::kF16), kInf);
}

TEST(DType, TableConstants) {
  EXPECT_EQ(dtype_info(DType::kF16).max_finite, 65504.0);
  EXPECT_EQ(dtype_info(DType::kFP8E4M3).max_finite, 448.0);
  EXPECT_EQ(dtype_info(DType::kFP8E5M2).max_finite, 57344.0);
  EXPECT_EQ(dtype_info(DType::kBF16).max_finite, static_cast<double>(0x1.fep127f));
  EXPECT_EQ(dtype_info(DType::kF32).max_finite, static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_FALSE(dtype_info(DType::kFP8E4M3).has_inf);
  EXPECT_TRUE(dtype_info(DType::kFP8E5M2).has_inf);
}

TEST(RoundTo, TiesToEvenInFp16) {
  // fp16 spacing at 1 is 2^-10: 1 + 2^-11 is a tie between 1 and 1 + 2^-10.
  EXPECT_EQ(round_to(1 + 0x1p-11, DType::kF16), 1.0);
  EXPECT_EQ(round_to(1 + 3 * 0x1p-11, DType::kF16), 1 + 2 * 0x1p-10);  // tie up to even
  EXPECT_EQ(round_to(1 + 0x1p-11 + 0x1p-30, DType::kF16), 1 + 0x1p-10);  // just above the tie
  EXPECT_EQ(round_to(-(1 + 0x1p-11), DType::kF16), -1.0);
  // 2049 is a tie between 2048 and 2050 (spacing 2 above 2048): even is 2048.
  EXPECT_EQ(round_to(2049, DType::kF16), 2048);
  EXPECT_EQ(round_to(2051, DType::kF16), 2052);
}

TEST(RoundTo, NoDoubleRounding) {
  // x lies just above the fp16 tie 1 + 2^-11 by 2^-40: correct rounding goes
  // up. Rounding to fp32 first would land exactly on the tie (the 2^-40 is
  // lost), and the tie would then round down to 1.
  const double x = 1 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(round_to(x, DType::kF16), 1 + 0x1p-10);
  EXPECT_EQ(static_cast<double>(static_cast<float>(x)), 1 + 0x1p-11);  // the trap, for the record
  // Same for bf16 (7 fraction bits): tie at 1 + 2^-8.
  EXPECT_EQ(round_to(1 + 0x1p-8 + 0x1p-40, DType::kBF16), 1 + 0x1p-7);
}

TEST(RoundTo, Fp16Subnormals) {
  const double tiny = 0x1p-24;  // smallest fp16 subnormal
  EXPECT_EQ(round_to(tiny, DType::kF16), tiny);
  EXPECT_EQ(round_to(3 * tiny, DType::kF16), 3 * tiny);
  EXPECT_EQ(round_to(0.5 * tiny, DType::kF16), 0.0);              // tie to even (0)
  EXPECT_TRUE(std::signbit(round_to(-0.5 * tiny, DType::kF16)));  // -0 keeps its sign
  EXPECT_EQ(round_to(0.75 * tiny, DType::kF16), tiny);
  EXPECT_EQ(round_to(1.5 * tiny, DType::kF16), 2 * tiny);  // tie between 1 and 2: even is 2
  EXPECT_EQ(round_to(2.5 * tiny, DType::kF16), 2 * tiny);
  // Just below min_normal 2^-14: spacing is still 2^-24.
  EXPECT_EQ(round_to(0x1p-14 - 0x1p-25, DType::kF16), 0x1p-14);  // tie: 1023 odd -> 1024
  EXPECT_EQ(round_to(0x1p-14 - 0x1p-24 - 0x1p-26, DType::kF16), 0x1p-14 - 0x1p-24);
}

TEST(RoundTo, Fp32SubnormalsMatchHardware) {
  for (double x : {0x1p-149, 0x1.8p-149, 0x1.4p-140, 0x1.fffffep-127, 0x1.0000017p-130, 1e-45, 3e-44}) {
    EXPECT_EQ(round_to(x, DType::kF32), static_cast<double>(static_cast<float>(x))) << x;
  }
  EXPECT_EQ(round_to(0x1p-150, DType::kF32), 0.0);          // tie to even: 0
  EXPECT_EQ(round_to(0x1.8p-150, DType::kF32), 0x1p-149);  // above the tie
}

TEST(RoundTo, OverflowToInfFollowsIeee) {
  // fp16: max 65504, ulp there 32; 65504 + 16 is the tie and goes to inf.
  EXPECT_EQ(round_to(65504 + 15.99, DType::kF16), 65504);
  EXPECT_EQ(round_to(65520, DType::kF16), kInf);
  EXPECT_EQ(round_to(-65520, DType::kF16), -kInf);
  EXPECT_EQ(round_to(1e6, DType::kF16), kInf);
  EXPECT_EQ(round_to(1e6, DType::kF16, Overflow::kSaturate), 65504);
  EXPECT_EQ(round_to(-1e6, DType::kF16, Overflow::kSaturate), -65504);
  EXPECT_EQ(round_to(-kInf, DType::kF16, Overflow::kSaturate), -65504);
  EXPECT_EQ(round_to(kInf, DType::kF16), kInf);
  // fp32 overflow threshold: max + half ulp = 2^128 - 2^103.
  EXPECT_EQ(round_to(0x1p128 - 0x1p103, DType::kF32), kInf);
  EXPECT_EQ(round_to(0x1p128 - 0x1p103 - 0x1p80, DType::kF32), static_cast<double>(std::numeric_limits<float>::max()));
}

TEST(RoundTo, Fp8E4M3MaxAndNaNOverflow) {
  const DType t = DType::kFP8E4M3;
  EXPECT_EQ(round_to(448, t), 448);
  EXPECT_EQ(round_to(464, t), 448);  // tie between 448 (even) and 480
  EXPECT_TRUE(std::isnan(round_to(465, t)));
  EXPECT_TRUE(std::isnan(round_to(1000, t)));
  EXPECT_TRUE(std::isnan(round_to(kInf, t)));
  EXPECT_EQ(round_to(1000, t, Overflow::kSaturate), 448);
  EXPECT_EQ(round_to(-1000, t, Overflow::kSaturate), -448);
  EXPECT_EQ(round_to(-kInf, t, Overflow::kSaturate), -448);
  // Subnormals: spacing 2^-9; min normal 2^-6.
  EXPECT_EQ(round_to(0x1p-9, t), 0x1p-9);
  EXPECT_EQ(round_to(0x1p-10, t), 0.0);
  EXPECT_EQ(round_to(0x1.8p-9, t), 0x1p-8);
  EXPECT_EQ(round_to(1.0625, t), 1.0);  // tie between 1 and 1.125
  EXPECT_EQ(round_to(1.1875, t), 1.25);
}

TEST(RoundTo, Fp8E5M2) {
  const DType t = DType::kFP8E5M2;
  EXPECT_EQ(round_to(57344, t), 57344);
  EXPECT_EQ(round_to(61439, t), 57344);
  EXPECT_EQ(round_to(61440, t), kInf);  // max + half ulp (ulp 8192)
  EXPECT_EQ(round_to(61440, t, Overflow::kSaturate), 57344);
  EXPECT_EQ(round_to(0x1p-16, t), 0x1p-16);  // smallest subnormal
  EXPECT_EQ(round_to(1.125, t), 1.0);        // tie between 1 and 1.25
}

TEST(RoundTo, Tf32AndBf16AndIntegers) {
  EXPECT_EQ(round_to(1 + 0x1p-11, DType::kTF32), 1.0);
  EXPECT_EQ(round_to(1 + 0x1p-11 + 0x1p-20, DType::kTF32), 1 + 0x1p-10);
  EXPECT_EQ(round_to(1 + 0x1p-13, DType::kBF16), 1.0);
  // bf16 overflow threshold: 0x1.fep127 + half ulp = 0x1.ffp127 (about 3.3962e38).
  EXPECT_EQ(round_to(3.4e38, DType::kBF16), kInf);
  EXPECT_EQ(round_to(3.39e38, DType::kBF16), 0x1.fep127);
  EXPECT_EQ(round_to(2.5, DType::kI32), 2);
  EXPECT_EQ(round_to(3.5, DType::kI32), 4);
  EXPECT_EQ(round_to(1e12, DType::kI32), 2147483647.0);
  EXPECT_TRUE(std::isnan(round_to(std::nan(""), DType::kF16)));
  EXPECT_EQ(round_to(0.1, DType::kF64), 0.1);
}

TEST(Bits, Fp16RoundTrip) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(0x1p-14f), 0x0400);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  const std::uint16_t nan = f32_to_f16_bits(std::nanf(""));
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = f16_bits_to_f32(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16_bits(f), b) << std::hex << b;
  }
}

TEST(Bits, Bf16RoundTripAndRounding) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is a tie: rounds to even (1.0); 1 + 3*2^-8 rounds up.
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::nanf("")))));
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_f32(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16_bits(f), b);
    ASSERT_EQ(round_to(f, DType::kBF16), static_cast<double>(f));
  }
}

TEST(Bits, Fp8AllPatternsRoundTrip) {
  for (DType t : {DType::kFP8E4M3, DType::kFP8E5M2}) {
    int nans = 0;
    for (int b = 0; b < 256; ++b) {
      const double v = fp8_bits_to_double(static_cast<std::uint8_t>(b), t);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      EXPECT_EQ(round_to(v, t), v);
      EXPECT_EQ(to_fp8_bits(v, t), b) << "dtype " << dtype_name(t) << " bits " << b;
    }
    EXPECT_EQ(nans, t == DType::kFP8E4M3 ? 2 : 6);
  }
  EXPECT_EQ(fp8_bits_to_double(0x7e, DType::kFP8E4M3), 448.0);
  EXPECT_EQ(fp8_bits_to_double(0x7c, DType::kFP8E5M2), kInf);
  EXPECT_EQ(fp8_bits_to_double(0x7b, DType::kFP8E5M2), 57344.0);
  EXPECT_EQ(to_fp8_bits(1000, DType::kFP8E4M3), 0x7f);  // NaN pattern
  EXPECT_EQ(to_fp8_bits(1000, DType::kFP8E4M3, Overflow::kSaturate), 0x7e);
  EXPECT_EQ(to_fp8_bits(-1000, DType::kFP8E4M3, Overflow::kSaturate), 0xfe);
}

}  // namespace
}  // namespace kc
