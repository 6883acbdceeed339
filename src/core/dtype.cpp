// kc — the dtype table and host emulation of every format (see kc/dtype.h).
//
// Rounding is done in one step from double: the value is scaled by the
// quantum (the spacing of the target format at the value's binade, clamped to
// the subnormal spacing below min_normal) and rounded to an integer with
// ties-to-even. Scaling by a power of two is exact in double for every
// format here, and the scaled value is below 2^(p+1) so it is an exact
// double; the only rounding is therefore the one we ask for, and there is no
// double rounding (double -> float -> half would round twice).
#include "kc/dtype.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace kc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// max_finite = (2 - 2^-p) * 2^emax for IEEE-like formats; E4M3FN reserves only
// the all-ones pattern for NaN, so its top binade stops at 1.75 * 2^8 = 448.
const std::array<DTypeInfo, 9> kTable = {{
    {DType::kF64, "FP64", "fp64", 8, 52, 11, 1023, true, true,
     std::numeric_limits<double>::max(), 0x1p-1022},
    {DType::kF32, "FP32", "fp32", 4, 23, 8, 127, true, true, 0x1.fffffep127, 0x1p-126},
    {DType::kTF32, "TF32", "tf32", 4, 10, 8, 127, true, true, 0x1.ffcp127, 0x1p-126},
    {DType::kBF16, "BF16", "bf16", 2, 7, 8, 127, true, true, 0x1.fep127, 0x1p-126},
    {DType::kF16, "FP16", "fp16", 2, 10, 5, 15, true, true, 65504.0, 0x1p-14},
    {DType::kFP8E4M3, "FP8E4M3", "fp8e4m3", 1, 3, 4, 7, true, false, 448.0, 0x1p-6},
    {DType::kFP8E5M2, "FP8E5M2", "fp8e5m2", 1, 2, 5, 15, true, true, 57344.0, 0x1p-14},
    {DType::kI32, "I32", "i32", 4, 0, 0, 0, false, false, 2147483647.0, 1.0},
    {DType::kI64, "I64", "i64", 8, 0, 0, 0, false, false, 9223372036854775807.0, 1.0},
}};

std::string normalize(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '-' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

struct Alias {
  std::string_view spelling;  // normalized: lower case, no '_' or '-'
  DType dtype;
};

const Alias kAliases[] = {
    {"fp64", DType::kF64},         {"float64", DType::kF64},     {"f64", DType::kF64},
    {"double", DType::kF64},       {"fp32", DType::kF32},        {"float32", DType::kF32},
    {"f32", DType::kF32},          {"float", DType::kF32},       {"single", DType::kF32},
    {"tf32", DType::kTF32},        {"tensorfloat32", DType::kTF32},
    {"bf16", DType::kBF16},        {"bfloat16", DType::kBF16},
    {"fp16", DType::kF16},         {"float16", DType::kF16},     {"f16", DType::kF16},
    {"half", DType::kF16},         {"fp8e4m3", DType::kFP8E4M3}, {"fp8e4m3fn", DType::kFP8E4M3},
    {"e4m3", DType::kFP8E4M3},     {"e4m3fn", DType::kFP8E4M3},  {"float8e4m3fn", DType::kFP8E4M3},
    {"float8e4m3", DType::kFP8E4M3}, {"fp8e5m2", DType::kFP8E5M2}, {"e5m2", DType::kFP8E5M2},
    {"float8e5m2", DType::kFP8E5M2}, {"i32", DType::kI32},       {"int32", DType::kI32},
    {"int", DType::kI32},          {"i64", DType::kI64},         {"int64", DType::kI64},
    {"long", DType::kI64},
};

/// Round-to-nearest-even of a double to an integer-valued double, independent
/// of the current floating-point rounding mode.
double round_half_even(double v) {
  const double f = std::floor(v);
  const double diff = v - f;  // exact: v and f share the binade or f is 0
  if (diff < 0.5) return f;
  if (diff > 0.5) return f + 1;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

/// Rounds |a| (finite, > 0) to p explicit fraction bits with minimum exponent
/// emin, unbounded above. Returns the rounded magnitude.
double round_magnitude(double a, int p, int emin) {
  int e2 = 0;
  std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1): binade exponent is e2 - 1
  const int e = std::max(e2 - 1, emin);
  const int q = e - p;  // quantum 2^q: ulp in this binade, subnormal spacing below emin
  return std::ldexp(round_half_even(std::ldexp(a, -q)), q);
}

double overflow_value(bool negative, const DTypeInfo& info, Overflow overflow) {
  if (overflow == Overflow::kSaturate) return negative ? -info.max_finite : info.max_finite;
  if (!info.has_inf) return kNaN;  // E4M3FN: no inf encoding, overflow is NaN
  return negative ? -kInf : kInf;
}

/// Packs an exactly representable value into a 1-sign/E/M bit pattern.
std::uint32_t encode_bits(double v, const DTypeInfo& info) {
  const int p = info.mantissa_bits;
  const int eb = info.exponent_bits;
  const std::uint32_t sign = std::signbit(v) ? (1u << (p + eb)) : 0u;
  const std::uint32_t exp_all = (1u << eb) - 1;
  if (std::isnan(v)) {
    // Canonical quiet NaN: IEEE formats top mantissa bit; E4M3FN all ones.
    if (!info.has_inf) return sign | (exp_all << p) | ((1u << p) - 1);
    return sign | (exp_all << p) | (1u << (p - 1));
  }
  if (std::isinf(v)) return sign | (exp_all << p);
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int emin = 1 - info.exponent_bias;
  if (a < info.min_normal) {
    const auto m = static_cast<std::uint32_t>(std::ldexp(a, p - emin));
    return sign | m;
  }
  int e2 = 0;
  std::frexp(a, &e2);
  const int e = e2 - 1;
  const auto field = static_cast<std::uint32_t>(e + info.exponent_bias);
  const auto m = static_cast<std::uint32_t>(std::ldexp(a, p - e)) - (1u << p);
  return sign | (field << p) | m;
}

double decode_bits(std::uint32_t bits, const DTypeInfo& info) {
  const int p = info.mantissa_bits;
  const int eb = info.exponent_bits;
  const bool negative = (bits >> (p + eb)) & 1u;
  const std::uint32_t field = (bits >> p) & ((1u << eb) - 1);
  const std::uint32_t m = bits & ((1u << p) - 1);
  const std::uint32_t exp_all = (1u << eb) - 1;
  double a = 0;
  if (info.has_inf && field == exp_all) {
    a = m == 0 ? kInf : kNaN;
  } else if (!info.has_inf && field == exp_all && m == (1u << p) - 1) {
    a = kNaN;
  } else if (field == 0) {
    a = std::ldexp(static_cast<double>(m), 1 - info.exponent_bias - p);
  } else {
    a = std::ldexp(static_cast<double>(m + (1u << p)), static_cast<int>(field) - info.exponent_bias - p);
  }
  return negative ? -a : a;
}

}  // namespace

std::span<const DTypeInfo> all_dtypes() { return kTable; }

const DTypeInfo& dtype_info(DType t) {
  for (const auto& info : kTable)
    if (info.dtype == t) return info;
  return kTable[1];  // unreachable for valid enumerators
}

std::optional<DType> parse_dtype(std::string_view text) {
  const std::string key = normalize(text);
  for (const auto& a : kAliases)
    if (a.spelling == key) return a.dtype;
  return std::nullopt;
}

// Integer formats are exact under the operations kc models: eps = u = 0.
double eps(DType t) {
  const auto& info = dtype_info(t);
  if (!info.is_float) return 0;
  return std::ldexp(1.0, -info.mantissa_bits);
}

double unit_roundoff(DType t) { return eps(t) / 2; }

double underflow_unit(DType t) {
  const auto& info = dtype_info(t);
  return info.is_float ? 0.5 * std::ldexp(info.min_normal, -info.mantissa_bits) : 0.0;
}

double gamma(double n, DType t) {
  const double nu = n * unit_roundoff(t);
  if (nu >= 1) return kInf;
  return nu / (1 - nu);
}

double round_to(double x, DType t, Overflow overflow) {
  if (std::isnan(x)) return x;
  const auto& info = dtype_info(t);
  if (!info.is_float) {
    // Integers: nearest integer (ties to even), saturating at the type's range.
    const double lo = t == DType::kI32 ? -2147483648.0 : -9223372036854775808.0;
    // The largest I64 that is a double is 2^63 - 1024 (2^63 - 1 is not representable).
    const double hi = t == DType::kI32 ? 2147483647.0 : 9223372036854774784.0;
    if (x <= lo) return lo;
    if (x >= hi) return hi;
    return round_half_even(x);
  }
  if (t == DType::kF64) return x;
  if (std::isinf(x)) {
    // satfinite clamps infinities too (as PTX cvt.satfinite does); E4M3FN has no
    // infinity, so by default an infinite input becomes NaN.
    if (overflow == Overflow::kSaturate || !info.has_inf) return overflow_value(x < 0, info, overflow);
    return x;
  }
  if (x == 0) return x;
  const bool negative = x < 0;
  const int emin = 1 - info.exponent_bias;
  const double r = round_magnitude(std::fabs(x), info.mantissa_bits, emin);
  // IEEE 754 §7.4: overflow when the result rounded with unbounded exponent
  // exceeds max_finite; i.e. |x| >= max_finite + ulp/2 (the tie goes up because
  // max_finite has an odd significand). E4M3FN: |x| > 464 goes past 448.
  if (r > info.max_finite) return overflow_value(negative, info, overflow);
  return negative ? -r : r;
}

std::uint16_t f32_to_f16_bits(float x) {
  const auto& info = dtype_info(DType::kF16);
  if (std::isnan(x)) {
    // Keep sign and the top payload bits; force quiet.
    const auto b = std::bit_cast<std::uint32_t>(x);
    return static_cast<std::uint16_t>(((b >> 16) & 0x8000u) | 0x7e00u | ((b >> 13) & 0x3ffu));
  }
  return static_cast<std::uint16_t>(encode_bits(round_to(x, DType::kF16), info));
}

float f16_bits_to_f32(std::uint16_t bits) {
  if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0) {
    // NaN: carry sign and payload into the f32 pattern.
    const std::uint32_t b = (static_cast<std::uint32_t>(bits & 0x8000u) << 16) | 0x7f800000u |
                            (static_cast<std::uint32_t>(bits & 0x3ffu) << 13);
    return std::bit_cast<float>(b);
  }
  return static_cast<float>(decode_bits(bits, dtype_info(DType::kF16)));
}

std::uint16_t f32_to_bf16_bits(float x) {
  const auto b = std::bit_cast<std::uint32_t>(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((b >> 16) | 0x0040u);
  // bf16 is the top half of f32; round-to-nearest-even on the dropped 16 bits.
  // Rounding through round_to gives the same result; the bit form is explicit.
  const std::uint32_t lsb = (b >> 16) & 1u;
  return static_cast<std::uint16_t>((b + 0x7fffu + lsb) >> 16);
}

float bf16_bits_to_f32(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint8_t to_fp8_bits(double x, DType t, Overflow overflow) {
  const auto& info = dtype_info(t);
  if (t != DType::kFP8E4M3 && t != DType::kFP8E5M2) return 0;
  return static_cast<std::uint8_t>(encode_bits(round_to(x, t, overflow), info));
}

double fp8_bits_to_double(std::uint8_t bits, DType t) {
  if (t != DType::kFP8E4M3 && t != DType::kFP8E5M2) return kNaN;
  return decode_bits(bits, dtype_info(t));
}

}  // namespace kc
