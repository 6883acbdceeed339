// kc — properties of scaled dot-product attention (src/ops/attention).
//
// Per-element rounding bound (the op's error model): |ôut_j - out_j| <= (f + u) m_j,
// m_j = sum_u p_u |v_uj| (2 + 4 A) from Op::magnitude, with f the contract's
// rounding factor (gamma(L, P) with the op's accumulation length L). A
// property comparing two calls of the impl allows the sum of both calls'
// bounds.
#include <algorithm>
#include <cmath>
#include <string>

#include "kc/obligation.h"
#include "kc/ops/attention.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

using ops::AttentionShape;

std::string at_text(std::int64_t b, std::int64_t h, std::int64_t t, std::int64_t j) {
  return "(batch " + std::to_string(b) + ", head " + std::to_string(h) + ", pos " + std::to_string(t) +
         ", dim " + std::to_string(j) + ")";
}

// attention.causal: with the causal mask on, position t depends on positions
// <= t only. The property replaces q, k and v at every position after t0 with
// other values of the same tensors (a random permutation of them, so the
// distribution stays what the contract asked for), re-runs the impl, and
// requires every output at positions <= t0 to stay within both calls'
// rounding bounds — once with t0 = 0 (only position 0 kept: a mask that lets
// t see t + 1 shows at once) and once with a random t0.
Result<Outcome> causal(const Context& ctx) {
  const AttentionShape s = ops::attention_shape(ctx.call);
  if (!s.causal) return invalid_argument("attention.causal judges causal calls: add `causal in {1}` to pre");
  Judge judge("|out'(t) - out(t)| for t <= t0 after changing positions > t0");
  if (s.seq < 2) return judge.outcome();
  KC_ASSIGN_OR_RETURN(std::vector<double> mag0, ctx.op.magnitude(ctx.call, "out"));
  const std::vector<double> out0 = ctx.call.t("out").to_doubles();
  for (const std::int64_t t0 : {std::int64_t{0}, ctx.rng.uniform_int(1, s.seq - 2 < 1 ? 1 : s.seq - 2)}) {
    if (t0 > s.seq - 2) continue;
    Call changed = ctx.fresh_inputs();
    for (const char* name : {"q", "k", "v"}) {
      Tensor& t = changed.t(name);
      const std::vector<double> orig = t.to_doubles();
      const std::int64_t nh = t.dim(1);
      for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t h = 0; h < nh; ++h)
          for (std::int64_t pos = t0 + 1; pos < s.seq; ++pos)
            for (std::int64_t i = 0; i < s.head_dim; ++i)
              t.set(s.at(b, nh, h, pos) + i, orig[static_cast<std::size_t>(
                                                  ctx.rng.uniform_int(0, static_cast<std::int64_t>(orig.size()) - 1))]);
    }
    KC_RETURN_IF_ERROR(detail::rerun(ctx, changed, "attention with positions > " + std::to_string(t0) + " changed"));
    KC_ASSIGN_OR_RETURN(std::vector<double> mag1, ctx.op.magnitude(changed, "out"));
    const std::vector<double> out1 = changed.t("out").to_doubles();
    for (std::int64_t b = 0; b < s.batch; ++b)
      for (std::int64_t h = 0; h < s.heads; ++h)
        for (std::int64_t t = 0; t <= t0; ++t)
          for (std::int64_t j = 0; j < s.head_dim; ++j) {
            const auto i = static_cast<std::size_t>(s.at(b, s.heads, h, t) + j);
            judge.check(out1[i] - out0[i], ctx.allowed(mag0[i] + mag1[i]),
                        Where{-1, -1, at_text(b, h, t, j) + " with positions > " + std::to_string(t0) + " changed"});
          }
  }
  return judge.outcome();
}

// attention.convex_hull: every output row is a convex combination of the
// attended value rows (the weights are >= 0 and sum to 1), so each coordinate
// lies within [min_u v_uj, max_u v_uj] over the attended positions u (all, or
// u <= t when causal), up to the rounding bound (f + u) m_j.
Result<Outcome> convex_hull(const Context& ctx) {
  const AttentionShape s = ops::attention_shape(ctx.call);
  KC_ASSIGN_OR_RETURN(std::vector<double> mag, ctx.op.magnitude(ctx.call, "out"));
  const std::vector<double> v = ctx.call.t("v").to_doubles();
  const std::vector<double> out = ctx.call.t("out").to_doubles();
  Judge judge("distance of out_j outside [min_u v_uj, max_u v_uj]");
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = s.kv_head(h);
      for (std::int64_t t = 0; t < s.seq; ++t) {
        const std::int64_t n = s.causal ? t + 1 : s.seq;
        for (std::int64_t j = 0; j < s.head_dim; ++j) {
          double lo = INFINITY, hi = -INFINITY;
          for (std::int64_t u = 0; u < n; ++u) {
            const double vv = v[static_cast<std::size_t>(s.at(b, s.kv_heads, g, u) + j)];
            lo = std::min(lo, vv);
            hi = std::max(hi, vv);
          }
          const auto i = static_cast<std::size_t>(s.at(b, s.heads, h, t) + j);
          const double o = out[i];
          const double outside = std::isnan(o) ? o : (o < lo ? lo - o : (o > hi ? o - hi : 0.0));
          judge.check(outside, ctx.allowed(mag[i]), Where{-1, -1, at_text(b, h, t, j)});
        }
      }
    }
  return judge.outcome();
}

// attention.gqa_equals_mha: grouped-query attention with kv_heads = g equals
// multi-head attention (kv_heads = heads) on k and v with every kv head
// repeated heads / g times, consecutively (query head h reads kv head
// h / (heads / g)). The property builds that multi-head call, runs the impl
// on it and compares within both calls' rounding bounds. With kv_heads =
// heads the two calls are the same and there is nothing to compare.
Result<Outcome> gqa_equals_mha(const Context& ctx) {
  const AttentionShape s = ops::attention_shape(ctx.call);
  Judge judge("|GQA out - MHA out on repeated kv heads|");
  if (s.kv_heads == s.heads) return judge.outcome();
  Config cfg = ctx.call.config;
  cfg.params["kv_heads"] = std::to_string(s.heads);
  KC_ASSIGN_OR_RETURN(Call mha, ctx.op.make_call(cfg));
  mha.t("q") = ctx.call.t("q");
  for (const char* name : {"k", "v"}) {
    const std::vector<double> src = ctx.call.t(name).to_doubles();
    Tensor& dst = mha.t(name);
    for (std::int64_t b = 0; b < s.batch; ++b)
      for (std::int64_t h = 0; h < s.heads; ++h)
        for (std::int64_t pos = 0; pos < s.seq; ++pos)
          for (std::int64_t i = 0; i < s.head_dim; ++i)
            dst.set(s.at(b, s.heads, h, pos) + i, src[static_cast<std::size_t>(s.at(b, s.kv_heads, s.kv_head(h), pos) + i)]);
  }
  KC_RETURN_IF_ERROR(detail::rerun(ctx, mha, "multi-head attention on repeated kv heads"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mag0, ctx.op.magnitude(ctx.call, "out"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mag1, ctx.op.magnitude(mha, "out"));
  const std::vector<double> a = ctx.call.t("out").to_doubles();
  const std::vector<double> b = mha.t("out").to_doubles();
  for (std::int64_t bb = 0; bb < s.batch; ++bb)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t t = 0; t < s.seq; ++t)
        for (std::int64_t j = 0; j < s.head_dim; ++j) {
          const auto i = static_cast<std::size_t>(s.at(bb, s.heads, h, t) + j);
          judge.check(a[i] - b[i], ctx.allowed(mag0[i] + mag1[i]), Where{-1, -1, at_text(bb, h, t, j)});
        }
  return judge.outcome();
}

}  // namespace

void add_attention_properties(std::vector<Property>& out) {
  out.push_back({"attention.causal", {"attention"},
                 "with causal = 1, outputs at positions <= t0 do not change when q, k, v after t0 change",
                 causal});
  out.push_back({"attention.convex_hull", {"attention"},
                 "each output coordinate lies within the range of the attended value rows' coordinate",
                 convex_hull});
  out.push_back({"attention.gqa_equals_mha", {"attention"},
                 "grouped-query attention equals multi-head attention on k, v with each kv head repeated",
                 gqa_equals_mha});
}

}  // namespace kc::obligation
