// kc — numeric formats and their host emulation.
//
// Every format kc reasons about, with the constants tolerances are derived
// from. Low-precision formats are emulated on the host: round_to() rounds a
// double to the nearest representable value of the format (ties to even),
// with the format's overflow rule.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kc {

enum class DType : std::uint8_t {
  kF64,
  kF32,
  kTF32,     ///< fp32 storage, 10 explicit mantissa bits (NVIDIA TensorFloat-32)
  kBF16,
  kF16,
  kFP8E4M3,  ///< OCP FP8 E4M3FN: no inf, max 448
  kFP8E5M2,  ///< OCP FP8 E5M2: IEEE-like, max 57344
  kI32,
  kI64,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;        ///< canonical contract spelling: "FP32"
  std::string_view short_name;  ///< lower-case spelling used in signatures: "fp32"
  int storage_bytes;            ///< bytes per element in a Tensor
  int mantissa_bits;            ///< explicit fraction bits (p - 1); 0 for integers
  int exponent_bits;            ///< 0 for integers
  int exponent_bias;
  bool is_float;
  bool has_inf;
  double max_finite;
  double min_normal;
};

std::span<const DTypeInfo> all_dtypes();
const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }

/// Accepts the canonical name and common aliases (fp32, float32, f32, float,
/// half, bfloat16, tf32, e4m3, ...), case-insensitively.
std::optional<DType> parse_dtype(std::string_view text);

/// Machine epsilon: the gap between 1 and the next representable number, 2^-(mantissa_bits).
double eps(DType t);
/// Unit roundoff u = eps / 2 (round-to-nearest).
double unit_roundoff(DType t);
/// Higham's underflow unit lambda (Accuracy and Stability, 2nd ed., §2.1, (2.8)):
/// half the smallest subnormal; with gradual underflow fl(x op y) = (x op y)(1 + d) + e,
/// |e| <= lambda, for op in {*, /}, and sums of subnormals are exact. 0 for integers.
double underflow_unit(DType t);
/// Higham's gamma_n = n u / (1 - n u); +inf when n u >= 1.
double gamma(double n, DType t);

enum class Overflow {
  kFormatDefault,  ///< IEEE formats go to +-inf; E4M3FN goes to NaN
  kSaturate,       ///< clamp to +-max_finite (the "satfinite" conversion)
};

/// Rounds x to the nearest value of format t (ties to even), including
/// gradual underflow to the format's subnormals. NaN stays NaN. Integer
/// formats round to nearest integer and saturate.
double round_to(double x, DType t, Overflow overflow = Overflow::kFormatDefault);

/// Bit patterns of the 16- and 8-bit storage formats.
std::uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(std::uint16_t bits);
std::uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(std::uint16_t bits);
std::uint8_t to_fp8_bits(double x, DType t, Overflow overflow = Overflow::kFormatDefault);
double fp8_bits_to_double(std::uint8_t bits, DType t);

}  // namespace kc
