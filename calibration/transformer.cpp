// kc — seeded bugs for the transformer-kernel contracts (contracts/transformer/)
// and the FlashAttention-3 replay (contracts/incidents/INC-FA3.kc).
//
// Each bad kernel computes for real and carries one documented defect that
// a visible allclose-style test on the default shapes can miss; the contract
// that names the right obligation catches it with its signature
// (tests/unit/engine/transformer_test.cpp, fa3_test.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibration_backend.h"
#include "ops/attention/attention.h"
#include "ops/rope/rope.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- layernorm

// Layernorm with the variance divided by n - 1 (Bessel's correction, as
// torch.var's default unbiased = True) where the op — like nn.LayerNorm —
// divides by n. Off by the factor sqrt(n / (n - 1)): 0.07% at n = 768, so a
// visible test at the usual widths passes; norm.standardized sees the
// output rows' variance miss var/(var + eps) by (n - 1)/n.
Status layernorm_unbiased(Call& call) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  const float* x = tx.data<float>();
  const float* g = call.t("gamma").data<float>();
  const float* b = call.t("beta").data<float>();
  float* y = call.t("y").data<float>();
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += xr[c];
    const float mean = sum / static_cast<float>(cols);
    float ss = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) ss += (xr[c] - mean) * (xr[c] - mean);
    const float var = ss / static_cast<float>(std::max<std::int64_t>(cols - 1, 1));  // the defect
    const float rs = 1.0f / std::sqrt(var + eps);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = (xr[c] - mean) * rs * g[c] + b[c];
  }
  return ok_status();
}

// ---------------------------------------------------------------- rope

// RoPE with the other pairing: rotates (2i, 2i + 1) — RoFormer's interleaved
// layout — when the call asks for rotate_half's (i, i + dim/2), the classic
// mix-up when porting weights between the two conventions. Every row's norm
// and every relative-position dot product are still preserved (it is a
// rotation too), so rope.relative_position passes it; rope.pair_norm, which
// checks the norm of each declared pair, does not.
Status rope_swapped_pairing(Call& call) {
  ops::RopeLayout l = ops::rope_layout(call);
  l.interleaved = !l.interleaved;  // the defect
  const float* x = call.t("x").data<float>();
  float* y = call.t("y").data<float>();
  for (std::int64_t r = 0; r < l.seq; ++r)
    for (std::int64_t i = 0; i < l.dim / 2; ++i) {
      const auto [a, b] = l.pair(i);
      const float inv_freq =
          std::pow(static_cast<float>(l.base), -2.0f * static_cast<float>(i) / static_cast<float>(l.dim));
      const float t = static_cast<float>(l.offset + r) * inv_freq;
      const float c = std::cos(t), s = std::sin(t);
      const float xa = x[r * l.dim + a], xb = x[r * l.dim + b];
      y[r * l.dim + a] = xa * c - xb * s;
      y[r * l.dim + b] = xa * s + xb * c;
    }
  return ok_status();
}

// ---------------------------------------------------------------- attention

/// How an attention kernel differs from the op's definition.
struct AttentionVariant {
  std::int64_t mask_slack = 0;        ///< causal mask admits u <= t + mask_slack (0 is right)
  std::int64_t block = 0;             ///< > 0: tiled online softmax over key blocks of this size
  std::vector<std::int64_t> supported;  ///< head dims the kernel was built for (empty: any)
  bool raise_unsupported = true;      ///< unsupported head dim: raise (right) or reuse the nearest smaller kernel
};

/// fp32 attention per query row, direct or with an online softmax.
Status attention_kernel(Call& call, const AttentionVariant& var) {
  const ops::AttentionShape s = ops::attention_shape(call);
  std::int64_t score_dim = s.head_dim;  // dimensions the score dot product reads
  if (!var.supported.empty() &&
      std::find(var.supported.begin(), var.supported.end(), s.head_dim) == var.supported.end()) {
    std::string list;
    for (auto d : var.supported) list += (list.empty() ? "" : ", ") + std::to_string(d);
    if (var.raise_unsupported)
      return kernel_raised("attention: head_dim " + std::to_string(s.head_dim) + " is not supported (" + list + ")");
    // The defect: dispatch to the largest instantiated kernel not above
    // head_dim, whose tile reads that many dimensions of q and k.
    score_dim = 0;
    for (auto d : var.supported)
      if (d <= s.head_dim) score_dim = std::max(score_dim, d);
    if (score_dim == 0) return kernel_raised("attention: head_dim " + std::to_string(s.head_dim) + " below every kernel");
  }
  const float* q = call.t("q").data<float>();
  const float* k = call.t("k").data<float>();
  const float* v = call.t("v").data<float>();
  float* out = call.t("out").data<float>();
  const auto scale = static_cast<float>(s.scale);
  std::vector<float> p(static_cast<std::size_t>(s.seq)), acc(static_cast<std::size_t>(s.head_dim));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = s.kv_head(h);
      for (std::int64_t t = 0; t < s.seq; ++t) {
        const float* qt = q + s.at(b, s.heads, h, t);
        const std::int64_t n = s.causal ? std::min(s.seq, t + 1 + var.mask_slack) : s.seq;
        for (std::int64_t u = 0; u < n; ++u) {
          const float* ku = k + s.at(b, s.kv_heads, g, u);
          float dot = 0.0f;
          for (std::int64_t i = 0; i < score_dim; ++i) dot += qt[i] * ku[i];
          p[u] = dot * scale;
        }
        float* ot = out + s.at(b, s.heads, h, t);
        if (var.block <= 0) {  // direct: max, exp, sum, weighted sum
          float m = -INFINITY;
          for (std::int64_t u = 0; u < n; ++u) m = std::max(m, p[u]);
          float sum = 0.0f;
          for (std::int64_t u = 0; u < n; ++u) sum += (p[u] = std::exp(p[u] - m));
          for (std::int64_t j = 0; j < s.head_dim; ++j) {
            float a = 0.0f;
            for (std::int64_t u = 0; u < n; ++u) a += (p[u] / sum) * v[s.at(b, s.kv_heads, g, u) + j];
            ot[j] = a;
          }
          continue;
        }
        // Online softmax (Milakov & Gimelshein 2018; FlashAttention's inner
        // loop): a running max m, running sum l and unnormalised accumulator,
        // rescaled by exp(m_old - m_new) whenever a key block raises the max.
        float m = -INFINITY, l = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (std::int64_t u0 = 0; u0 < n; u0 += var.block) {
          const std::int64_t u1 = std::min(n, u0 + var.block);
          float bm = -INFINITY;
          for (std::int64_t u = u0; u < u1; ++u) bm = std::max(bm, p[u]);
          const float m_new = std::max(m, bm);
          const float c = std::exp(m - m_new);  // exp(-inf) = 0 on the first block
          l *= c;
          for (auto& a : acc) a *= c;
          for (std::int64_t u = u0; u < u1; ++u) {
            const float e = std::exp(p[u] - m_new);
            l += e;
            const float* vu = v + s.at(b, s.kv_heads, g, u);
            for (std::int64_t j = 0; j < s.head_dim; ++j) acc[j] += e * vu[j];
          }
          m = m_new;
        }
        for (std::int64_t j = 0; j < s.head_dim; ++j) ot[j] = acc[j] / l;
      }
    }
  return ok_status();
}

void add_attention(ImplList& out, std::string name, std::string description, AttentionVariant var) {
  add(out, calib_decl(std::move(name), "attention", std::move(description)),
      [var](Call& call) { return attention_kernel(call, var); });
}

}  // namespace

void add_transformer_impls(ImplList& out) {
  add(out,
      calib_decl("calib.layernorm_unbiased", "layernorm",
                 "seeded bug: layernorm dividing the variance by n - 1 (unbiased) where the op divides by n"),
      layernorm_unbiased);
  add(out,
      calib_decl("calib.rope_swapped_pairing", "rope",
                 "seeded bug: RoPE rotating interleaved pairs (2i, 2i+1) where the call asks for rotate_half's "
                 "(i, i + dim/2), and the other way round"),
      rope_swapped_pairing);
  AttentionVariant off_by_one;
  off_by_one.mask_slack = 1;
  add_attention(out, "calib.attention_mask_off_by_one",
                "seeded bug: causal attention whose mask admits position t + 1 (u <= t + 1 for u <= t)",
                off_by_one);

  // FlashAttention-3 replay (contracts/incidents/INC-FA3.kc, docs/incidents.md).
  // Head dims 64, 128 and 256: the instantiations FlashAttention-3's first
  // (beta) Hopper release shipped; other head dims were added later. The
  // mechanism, not the exact list, is what the replay reproduces.
  const std::vector<std::int64_t> fa3_dims = {64, 128, 256};
  AttentionVariant tiled;
  tiled.block = 16;
  tiled.supported = fa3_dims;
  add_attention(out, "incident.attention_tiled",
                "FA3 replay good: online-softmax attention over 16-key blocks; head dims 64/128/256, raises on others",
                tiled);
  AttentionVariant silent = tiled;
  silent.raise_unsupported = false;
  add_attention(out, "incident.attention_hdim_silent",
                "FA3 replay bad: the tiled kernel dispatching an unsupported head dim (96) to the 64 kernel, "
                "silently scoring on 64 of 96 dimensions instead of raising",
                silent);
}

}  // namespace kc::calibration
