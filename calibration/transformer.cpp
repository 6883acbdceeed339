// kc — seeded bugs for the transformer-kernel contracts (contracts/transformer/)
// and the FlashAttention-3 replay (contracts/incidents/INC-FA3.kc).
//
// Each bad kernel computes for real and carries one documented defect that
// a visible allclose-style test on the default shapes can miss; the contract
// that names the right obligation catches it with its signature
// (tests/unit/engine/transformer_test.cpp, fa3_test.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "calibration/calibration_backend.h"
#include "kc/ops/attention.h"
#include "kc/ops/rope.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- layernorm

/// How a layernorm kernel differs from the op (two-pass, biased variance,
/// y = (x - mean) / sqrt(var + eps) * gamma + beta).
enum class NormDefect {
  kNone,
  // Bessel's correction (torch.var's default unbiased = True) where the op,
  // like nn.LayerNorm, divides by n: off by sqrt(n / (n - 1)), 0.07% at
  // n = 768, so a visible test at the usual widths passes; norm.standardized
  // sees the output rows' variance miss var/(var + eps) by (n - 1)/n.
  kUnbiased,
  // The variance as E[x²] - mean² in one pass: exact in real arithmetic,
  // catastrophic in FP32 once the mean dwarfs the spread (mean 1e3, spread 3:
  // E[x²] ~ 1e6 carries an absolute rounding of ~0.1 per term against var 9).
  kOnePass,
  // eps outside the square root, 1 / (sqrt(var) + eps): harmless at var ~ 1,
  // 5% at var = 1e-4 (normal(0, 0.01) rows), where scale invariance shows it.
  kEpsOutsideSqrt,
  // Computed in fp16 (an autocast region): the inputs convert to half first,
  // and |x| > 65504 turns to inf, inf - inf to NaN.
  kFp16Compute,
  // The variance held in fp16 (x and the rest FP32): a sum of squares past
  // 65504 becomes inf, the scale 1/sqrt(inf) = 0, and y = beta.
  kFp16Var,
  // eps hard-coded to 1e-3 (Keras' LayerNormalization default) whatever the
  // call's eps: 5e-4 of the scale at var ~ 1; a normalised row no longer
  // normalises to itself under the call's eps.
  kKerasEps,
  // gamma and beta never applied (the baseline).
  kNoAffine,
};

Status layernorm_kernel(Call& call, NormDefect defect) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  const float* g = call.t("gamma").data<float>();
  const float* b = call.t("beta").data<float>();
  Tensor& ty = call.t("y");
  const auto eps = defect == NormDefect::kKerasEps ? 1e-3f : static_cast<float>(call.get_double("eps", 1e-5));
  const bool half = defect == NormDefect::kFp16Compute;
  auto h = [half](float v) { return half ? static_cast<float>(round_to(v, DType::kF16)) : v; };
  std::vector<float> xr(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) xr[static_cast<std::size_t>(c)] = h(static_cast<float>(tx.at(r * cols + c)));
    float sum = 0.0f, sq = 0.0f;
    for (const float v : xr) {
      sum += v;
      sq += v * v;
    }
    const float mean = h(sum / static_cast<float>(cols));
    float ss = 0.0f;
    for (const float v : xr) ss += (v - mean) * (v - mean);
    float var = ss / static_cast<float>(cols);
    if (defect == NormDefect::kUnbiased) var = ss / static_cast<float>(std::max<std::int64_t>(cols - 1, 1));
    if (defect == NormDefect::kOnePass) var = sq / static_cast<float>(cols) - mean * mean;
    if (defect == NormDefect::kFp16Var) var = static_cast<float>(round_to(var, DType::kF16));
    const float rs = defect == NormDefect::kEpsOutsideSqrt ? 1.0f / (std::sqrt(var) + eps)
                                                           : h(1.0f / std::sqrt(h(var) + eps));
    for (std::int64_t c = 0; c < cols; ++c)
      ty.set(r * cols + c, defect == NormDefect::kNoAffine ? (xr[static_cast<std::size_t>(c)] - mean) * rs
                                                           : h((xr[static_cast<std::size_t>(c)] - mean) * rs * g[c] + b[c]));
  }
  return ok_status();
}

/// rmsnorm, y = x / sqrt(mean(x²) + eps) * gamma, with the mean square held
/// in bf16 (a bf16 reduction buffer): 2^-9 of the statistic, 2^-10 of every
/// output, at every width, cols = 1 included.
Status rmsnorm_bf16_ms(Call& call) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  const float* g = call.t("gamma").data<float>();
  Tensor& ty = call.t("y");
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  for (std::int64_t r = 0; r < rows; ++r) {
    float ss = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) ss += static_cast<float>(tx.at(r * cols + c) * tx.at(r * cols + c));
    const auto ms = static_cast<float>(round_to(ss / static_cast<float>(cols), DType::kBF16));
    const float rs = 1.0f / std::sqrt(ms + eps);
    for (std::int64_t c = 0; c < cols; ++c) ty.set(r * cols + c, static_cast<float>(tx.at(r * cols + c)) * rs * g[c]);
  }
  return ok_status();
}

// ---------------------------------------------------------------- rope

/// How a RoPE kernel differs from the op.
struct RopeVariant {
  // Rotates (2i, 2i + 1) — RoFormer's interleaved layout — when the call asks
  // for rotate_half's (i, i + dim/2), and the other way round: the classic
  // mix-up when porting weights between the two conventions. Every row's norm
  // and every relative-position dot product are still preserved (it is a
  // rotation too), so rope.relative_position passes it; rope.pair_norm, which
  // checks the norm of each declared pair, does not.
  bool swap_pairing = false;
  // The pairing flag ignored: always rotate_half's (i, i + dim/2).
  bool always_half = false;
  // Position ids in bf16 (cast to the model dtype): exact up to 256, then
  // rounded to 8 significant bits (1063 -> 1064).
  bool bf16_positions = false;
  // cos and sin tables stored in bf16: each 2x2 rotation is off orthogonal by
  // ~2^-9, so norms and dot products drift with the absolute position.
  bool bf16_tables = false;
};

Status rope_kernel(Call& call, const RopeVariant& var) {
  ops::RopeLayout l = ops::rope_layout(call);
  if (var.swap_pairing) l.interleaved = !l.interleaved;
  if (var.always_half) l.interleaved = false;
  auto bf16 = [](float v) { return static_cast<float>(round_to(v, DType::kBF16)); };
  const float* x = call.t("x").data<float>();
  float* y = call.t("y").data<float>();
  for (std::int64_t r = 0; r < l.seq; ++r) {
    float pos = static_cast<float>(l.offset + r);
    if (var.bf16_positions) pos = bf16(pos);
    for (std::int64_t i = 0; i < l.dim / 2; ++i) {
      const auto [a, b] = l.pair(i);
      const float inv_freq =
          std::pow(static_cast<float>(l.base), -2.0f * static_cast<float>(i) / static_cast<float>(l.dim));
      const float t = pos * inv_freq;
      float c = std::cos(t), s = std::sin(t);
      if (var.bf16_tables) c = bf16(c), s = bf16(s);
      const float xa = x[r * l.dim + a], xb = x[r * l.dim + b];
      y[r * l.dim + a] = xa * c - xb * s;
      y[r * l.dim + b] = xa * s + xb * c;
    }
  }
  return ok_status();
}

// ---------------------------------------------------------------- attention

/// How an attention kernel differs from the op's definition.
struct AttentionVariant {
  std::int64_t mask_slack = 0;        ///< causal mask admits u <= t + mask_slack (0 is right)
  std::int64_t block = 0;             ///< > 0: tiled online softmax over key blocks of this size
  std::vector<std::int64_t> supported = {};  ///< head dims the kernel was built for (empty: any)
  bool raise_unsupported = true;      ///< unsupported head dim: raise (right) or reuse the nearest smaller kernel
  bool unscaled = false;              ///< scores q.k without the 1/sqrt(head_dim) scale
  bool kv_head_modulo = false;        ///< query head h reads kv head h mod kv_heads (repeat, not repeat_interleave)
  bool normalise_all_keys = false;    ///< causal: the softmax sum runs over every key, masked ones included
  bool bf16_probs = false;            ///< the normalised weights rounded to bf16 before the P V product
  bool atomic_pv = false;             ///< P V split over key chunks on threads, added into out atomically
};

/// out += P V with the keys split into chunks, one thread each, every thread
/// adding its partial products into a shared std::atomic<float> per output
/// element (the CPU spelling of a split-KV kernel's atomicAdd combine). The
/// additions land in whatever order the threads interleave; FP32 addition is
/// not associative, so the output bits depend on thread scheduling.
/// `weights` holds softmax(scores) per (batch, head, query, key).
void atomic_pv(const ops::AttentionShape& s, const std::vector<float>& weights, const float* v, float* out) {
  constexpr std::int64_t kThreads = 4;
  const auto total = static_cast<std::size_t>(s.batch * s.heads * s.seq * s.head_dim);
  std::vector<std::atomic<float>> acc(total);
  for (auto& a : acc) a.store(0.0f);
  std::atomic<std::int64_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (std::int64_t th = 0; th < kThreads; ++th)
    pool.emplace_back([&, th] {
      ready.fetch_add(1);
      while (!go.load()) {
        // Busy-wait: the threads leave the gate together.
      }
      const std::int64_t u0 = s.seq * th / kThreads, u1 = s.seq * (th + 1) / kThreads;
      std::size_t o = 0;
      for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t h = 0; h < s.heads; ++h)
          for (std::int64_t t = 0; t < s.seq; ++t) {
            const float* w = weights.data() + ((b * s.heads + h) * s.seq + t) * s.seq;
            for (std::int64_t j = 0; j < s.head_dim; ++j, ++o) {
              float part = 0.0f;
              for (std::int64_t u = u0; u < u1; ++u) part += w[u] * v[s.at(b, s.kv_heads, s.kv_head(h), u) + j];
              acc[o].fetch_add(part);
            }
          }
    });
  while (ready.load() < kThreads) std::this_thread::yield();
  go.store(true);
  for (auto& th : pool) th.join();
  std::size_t o = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t t = 0; t < s.seq; ++t)
        for (std::int64_t j = 0; j < s.head_dim; ++j, ++o) out[s.at(b, s.heads, h, t) + j] = acc[o].load();
}

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
  const auto scale = var.unscaled ? 1.0f : static_cast<float>(s.scale);
  std::vector<float> p(static_cast<std::size_t>(s.seq)), acc(static_cast<std::size_t>(s.head_dim));
  std::vector<float> weights;  // softmax rows for atomic_pv
  if (var.atomic_pv) weights.assign(static_cast<std::size_t>(s.batch * s.heads * s.seq * s.seq), 0.0f);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = var.kv_head_modulo ? h % s.kv_heads : s.kv_head(h);
      for (std::int64_t t = 0; t < s.seq; ++t) {
        const float* qt = q + s.at(b, s.heads, h, t);
        const std::int64_t n = s.causal ? std::min(s.seq, t + 1 + var.mask_slack) : s.seq;
        // Keys the softmax's max and sum run over: the attended ones, or all.
        const std::int64_t n_sum = var.normalise_all_keys ? s.seq : n;
        for (std::int64_t u = 0; u < n_sum; ++u) {
          const float* ku = k + s.at(b, s.kv_heads, g, u);
          float dot = 0.0f;
          for (std::int64_t i = 0; i < score_dim; ++i) dot += qt[i] * ku[i];
          p[u] = dot * scale;
        }
        float* ot = out + s.at(b, s.heads, h, t);
        if (var.block <= 0) {  // direct: max, exp, sum, weighted sum
          float m = -INFINITY;
          for (std::int64_t u = 0; u < n_sum; ++u) m = std::max(m, p[u]);
          float sum = 0.0f;
          for (std::int64_t u = 0; u < n_sum; ++u) sum += (p[u] = std::exp(p[u] - m));
          for (std::int64_t u = 0; u < n; ++u) {
            p[u] /= sum;
            if (var.bf16_probs) p[u] = static_cast<float>(round_to(p[u], DType::kBF16));
          }
          if (var.atomic_pv) {
            std::copy(p.begin(), p.begin() + n, weights.begin() + ((b * s.heads + h) * s.seq + t) * s.seq);
            continue;
          }
          for (std::int64_t j = 0; j < s.head_dim; ++j) {
            float a = 0.0f;
            for (std::int64_t u = 0; u < n; ++u) a += p[u] * v[s.at(b, s.kv_heads, g, u) + j];
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
  if (var.atomic_pv) atomic_pv(s, weights, v, out);
  return ok_status();
}

void add_attention(ImplList& out, std::string name, std::string description, AttentionVariant var) {
  add(out, calib_decl(std::move(name), "attention", std::move(description)),
      [var](Call& call) { return attention_kernel(call, var); });
}

}  // namespace

void add_transformer_impls(ImplList& out) {
  auto layernorm = [&](const char* name, const char* description, NormDefect defect) {
    add(out, calib_decl(name, "layernorm", description), [defect](Call& call) { return layernorm_kernel(call, defect); });
  };
  layernorm("calib.layernorm_unbiased",
            "seeded bug: layernorm dividing the variance by n - 1 (unbiased) where the op divides by n",
            NormDefect::kUnbiased);
  layernorm("calib.layernorm_one_pass", "seeded bug: layernorm with the one-pass variance E[x²] - mean² in FP32",
            NormDefect::kOnePass);
  layernorm("calib.layernorm_eps_outside", "seeded bug: layernorm with 1 / (sqrt(var) + eps), eps outside the root",
            NormDefect::kEpsOutsideSqrt);
  layernorm("calib.layernorm_fp16", "seeded bug: layernorm computed in fp16 (an autocast region), declared FP32",
            NormDefect::kFp16Compute);
  layernorm("calib.layernorm_fp16_var", "seeded bug: layernorm keeping its variance in fp16 (inf past 65504)",
            NormDefect::kFp16Var);
  layernorm("calib.layernorm_keras_eps", "seeded bug: layernorm with eps hard-coded to 1e-3 (Keras' default)",
            NormDefect::kKerasEps);
  add(out, calib_decl("calib.rmsnorm_bf16_ms", "rmsnorm", "seeded bug: rmsnorm keeping its mean square in bf16"),
      rmsnorm_bf16_ms);
  layernorm("calib.layernorm_no_affine", "baseline: layernorm that never applies gamma and beta",
            NormDefect::kNoAffine);

  auto rope = [&](const char* name, const char* description, RopeVariant var) {
    add(out, calib_decl(name, "rope", description), [var](Call& call) { return rope_kernel(call, var); });
  };
  rope("calib.rope_swapped_pairing",
       "seeded bug: RoPE rotating interleaved pairs (2i, 2i+1) where the call asks for rotate_half's (i, i + dim/2), "
       "and the other way round",
       RopeVariant{.swap_pairing = true});
  rope("calib.rope_always_half", "seeded bug: RoPE ignoring the pairing flag: always rotate_half's (i, i + dim/2)",
       RopeVariant{.always_half = true});
  rope("calib.rope_bf16_positions", "seeded bug: RoPE with position ids cast to bf16 (exact to 256, 1063 -> 1064)",
       RopeVariant{.bf16_positions = true});
  rope("calib.rope_bf16_tables", "seeded bug: RoPE with its cos/sin tables stored in bf16",
       RopeVariant{.bf16_tables = true});

  AttentionVariant off_by_one;
  off_by_one.mask_slack = 1;
  add_attention(out, "calib.attention_mask_off_by_one",
                "seeded bug: causal attention whose mask admits position t + 1 (u <= t + 1 for u <= t)",
                off_by_one);
  add_attention(out, "calib.attention_unscaled", "baseline: attention without the 1/sqrt(head_dim) score scale",
                AttentionVariant{.unscaled = true});
  add_attention(out, "calib.attention_kv_head_modulo",
                "seeded bug: grouped-query attention mapping query head h to kv head h mod kv_heads "
                "(repeat where repeat_interleave is meant)",
                AttentionVariant{.kv_head_modulo = true});
  add_attention(out, "calib.attention_causal_full_sum",
                "seeded bug: causal attention whose softmax denominator sums every key, masked ones included",
                AttentionVariant{.normalise_all_keys = true});
  add_attention(out, "calib.attention_bf16_probs",
                "seeded bug: attention rounding the softmax weights P to bf16 before the P V product",
                AttentionVariant{.bf16_probs = true});
  add_attention(out, "calib.attention_atomic_pv",
                "seeded bug: split-KV attention adding the 4 key chunks' P V into out with float atomics; "
                "declared BITWISE",
                AttentionVariant{.atomic_pv = true});

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
