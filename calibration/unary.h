// kc — shared plumbing of the calibration elementwise kernels: y = f(x) over
// a unary op's x {n} -> y {n}, in FP32 arithmetic whatever the storage
// format (16-bit inputs widen exactly; the result rounds once on store).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "calibration/calibration_backend.h"

namespace kc::calibration {

template <typename F>
Status unary_kernel(Call& call, F f) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  for (std::int64_t i = 0; i < x.numel(); ++i) y.set(i, f(static_cast<float>(x.at(i))));
  return ok_status();
}

/// A declaration that also takes FP16 and BF16 storage.
inline Declaration sixteen_bit(Declaration d) {
  d.dtypes = {DType::kF32, DType::kF16, DType::kBF16};
  return d;
}

/// The logistic function in two branches, so exp never overflows.
inline float sigmoidf(float x) {
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

/// silu(x) = x sigmoid(x); +-inf give +inf and 0, as the op states.
inline float siluf(float x) { return std::isinf(x) ? (x > 0 ? x : 0.0f) : x * sigmoidf(x); }

/// Schraudolph's exp (Neural Computation 11, 1999), FP32 form: the bits of
/// 2^(x / ln 2) built by one multiply-add into the exponent field, linear in
/// between; relative error within about +-4% (exp(0) = 0.956). For x <= 0.
inline float fast_exp(float x) {
  if (std::isnan(x)) return x;
  if (x < -87.0f) return 0.0f;
  return std::bit_cast<float>(static_cast<std::int32_t>(12102203.0f * x + 1064986823.0f));  // 2^23/ln2, 127 * 2^23 - 366393
}

}  // namespace kc::calibration
