// kc — `ref` kernels for the transformer ops: plain fp32 loops in natural
// order, the readable baseline for contracts/transformer/. Each follows its
// op's definition in src/ops/ (the formula, the NaN behaviour, the error
// model's operation order).
#include <cmath>
#include <string>
#include <vector>

#include "kc/ops/attention.h"
#include "kc/ops/rope.h"
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

// ---------------------------------------------------------------- attention

// Direct attention per query row, fp32 throughout: the scores of every
// attended key, their max, exp(s - max), the sum, then out = sum_u (e_u / S) v_u.
// Query head h reads kv head h / (heads / kv_heads) (grouped-query attention).
Status run_attention(Call& call) {
  const ops::AttentionShape s = ops::attention_shape(call);
  const float* q = call.t("q").data<float>();
  const float* k = call.t("k").data<float>();
  const float* v = call.t("v").data<float>();
  float* out = call.t("out").data<float>();
  const auto scale = static_cast<float>(s.scale);
  std::vector<float> p(static_cast<std::size_t>(s.seq));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = s.kv_head(h);
      for (std::int64_t t = 0; t < s.seq; ++t) {
        const float* qt = q + s.at(b, s.heads, h, t);
        const std::int64_t n = s.causal ? t + 1 : s.seq;
        float m = -INFINITY;
        for (std::int64_t u = 0; u < n; ++u) {
          const float* ku = k + s.at(b, s.kv_heads, g, u);
          float dot = 0.0f;
          for (std::int64_t i = 0; i < s.head_dim; ++i) dot += qt[i] * ku[i];
          p[u] = dot * scale;
          m = std::isnan(p[u]) || std::isnan(m) ? NAN : std::max(m, p[u]);
        }
        float sum = 0.0f;
        for (std::int64_t u = 0; u < n; ++u) {
          p[u] = std::exp(p[u] - m);
          sum += p[u];
        }
        float* ot = out + s.at(b, s.heads, h, t);
        for (std::int64_t j = 0; j < s.head_dim; ++j) {
          float acc = 0.0f;
          for (std::int64_t u = 0; u < n; ++u) acc += (p[u] / sum) * v[s.at(b, s.kv_heads, g, u) + j];
          ot[j] = acc;
        }
      }
    }
  return ok_status();
}

// ---------------------------------------------------------------- rope

// fp32 rotation of each declared pair: inv_freq = powf(base, -2i/dim), the
// angle pos * inv_freq, then the 2x2 rotation (the op's error model's order).
Status run_rope(Call& call) {
  const ops::RopeLayout l = ops::rope_layout(call);
  const float* x = call.t("x").data<float>();
  float* y = call.t("y").data<float>();
  const auto base = static_cast<float>(l.base);
  for (std::int64_t r = 0; r < l.seq; ++r)
    for (std::int64_t i = 0; i < l.dim / 2; ++i) {
      const auto [a, b] = l.pair(i);
      const float inv_freq = std::pow(base, -2.0f * static_cast<float>(i) / static_cast<float>(l.dim));
      const float t = static_cast<float>(l.offset + r) * inv_freq;
      const float c = std::cos(t), s = std::sin(t);
      const float xa = x[r * l.dim + a], xb = x[r * l.dim + b];
      y[r * l.dim + a] = xa * c - xb * s;
      y[r * l.dim + b] = xa * s + xb * c;
    }
  return ok_status();
}

// ---------------------------------------------------------------- activations

/// sigmoid in two branches so exp never overflows.
float sigmoidf(float x) {
  if (x >= 0) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

template <typename F>
Status unary(Call& call, F f) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (std::int64_t i = 0; i < x.numel(); ++i) yp[i] = f(xp[i]);
  return ok_status();
}

// gelu(x) = x Phi(x) = 0.5 x erfc(-x / sqrt 2): erfc, not 1 + erf, so there is
// no cancellation for x << 0 (1 + erf(-3) already loses 4 digits in fp32).
Status run_gelu_erf(Call& call) {
  return unary(call, [](float x) { return std::isinf(x) ? (x > 0 ? x : 0.0f) : 0.5f * x * std::erfc(-x * 0.70710678f); });
}

// gelu_tanh(x) = 0.5 x (1 + tanh(w)) = x sigmoid(2 w), w = sqrt(2/pi) (x + 0.044715 x^3):
// the sigmoid form avoids the cancellation in 1 + tanh(w) for x << 0.
Status run_gelu_tanh(Call& call) {
  return unary(call, [](float x) {
    if (std::isinf(x)) return x > 0 ? x : 0.0f;
    const float w = 0.7978845608f * (x + 0.044715f * x * x * x);
    return x * sigmoidf(2.0f * w);
  });
}

Status run_silu(Call& call) {
  return unary(call, [](float x) { return std::isinf(x) ? (x > 0 ? x : 0.0f) : x * sigmoidf(x); });
}

// y = silu(gate) * up, fp32, two-branch sigmoid.
Status run_swiglu(Call& call) {
  const float* g = call.t("gate").data<float>();
  const float* u = call.t("up").data<float>();
  float* y = call.t("y").data<float>();
  const std::int64_t n = call.t("y").numel();
  for (std::int64_t i = 0; i < n; ++i) y[i] = (std::isinf(g[i]) ? (g[i] > 0 ? g[i] : 0.0f) : g[i] * sigmoidf(g[i])) * u[i];
  return ok_status();
}

}  // namespace

std::vector<std::shared_ptr<const Impl>> ref_transformer_impls() {
  // The one table of transformer ref impls, in `kc list impls` order.
  return {
      make_ref_impl("layernorm", "two-pass fp32 layernorm (mean, biased variance of centred values)", run_layernorm),
      make_ref_impl("rmsnorm", "fp32 rmsnorm (sum of squares in natural order)", run_rmsnorm),
      make_ref_impl("attention", "direct fp32 attention per query row (scores, max, exp, sum, weighted v)",
                    run_attention),
      make_ref_impl("rope", "fp32 rotation of each declared pair (half or interleaved)", run_rope),
      make_ref_impl("gelu_erf", "0.5 x erfcf(-x / sqrt 2) in fp32", run_gelu_erf),
      make_ref_impl("gelu_tanh", "x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) in fp32", run_gelu_tanh),
      make_ref_impl("silu", "x sigmoid(x) in fp32, two-branch sigmoid", run_silu),
      make_ref_impl("swiglu", "silu(gate) * up in fp32", run_swiglu),
  };
}

}  // namespace kc::backends
