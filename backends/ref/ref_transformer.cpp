// kc — `ref` kernels for the transformer ops: plain fp32 loops in natural
// order, the readable baseline for contracts/transformer/. Each follows its
// op's definition in src/ops/ (the formula, the NaN behaviour, the error
// model's operation order).
#include <cmath>
#include <string>
#include <vector>

#include "ref_backend.h"

namespace kc::backends {
namespace {

// ---------------------------------------------------------------- norms

// Two-pass layernorm in fp32: mean, then the biased variance of the centred
// values (no E[x^2] - E[x]^2 cancellation), then y = (x - mean) * r * gamma + beta
// with r = 1 / sqrt(var + eps): the operation order of the op's error model.
Status run_layernorm(Call& call) {
  Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1), ldx = tx.strides()[0];
  Tensor& ty = call.t("y");
  const std::int64_t ldy = ty.strides()[0];
  const float* x = tx.data<float>();
  const float* g = call.t("gamma").data<float>();
  const float* b = call.t("beta").data<float>();
  float* y = ty.data<float>();
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    float* yr = y + r * ldy;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += xr[c];
    const float mean = sum / static_cast<float>(cols);
    float ss = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) ss += (xr[c] - mean) * (xr[c] - mean);
    const float var = ss / static_cast<float>(cols);
    const float rs = 1.0f / std::sqrt(var + eps);
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rs * g[c] + b[c];
  }
  return ok_status();
}

// y = x * r * gamma with r = 1 / sqrt(mean(x^2) + eps), fp32 accumulation.
Status run_rmsnorm(Call& call) {
  Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1), ldx = tx.strides()[0];
  Tensor& ty = call.t("y");
  const std::int64_t ldy = ty.strides()[0];
  const float* x = tx.data<float>();
  const float* g = call.t("gamma").data<float>();
  float* y = ty.data<float>();
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    float* yr = y + r * ldy;
    float ss = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) ss += xr[c] * xr[c];
    const float rs = 1.0f / std::sqrt(ss / static_cast<float>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * rs * g[c];
  }
  return ok_status();
}

}  // namespace

std::vector<std::shared_ptr<const Impl>> ref_transformer_impls() {
  // The one table of transformer ref impls, in `kc list impls` order.
  return {
      make_ref_impl("layernorm", "two-pass fp32 layernorm (mean, biased variance of centred values)", run_layernorm),
      make_ref_impl("rmsnorm", "fp32 rmsnorm (sum of squares in natural order)", run_rmsnorm),
  };
}

}  // namespace kc::backends
