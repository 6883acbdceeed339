// kc — properties of the model-merging ops, slerp and pruning
// (docs/transformer-training.md).
//
// f is the contract's rounding factor (its `bound E`) and u the output
// format's unit roundoff; each property starts from the op's per-element error
// bound |ŷ - y| <= (f + u) m (the op's magnitude m) and says how the identity
// combines those bounds. Reference values a property computes itself are in
// long double from the call's inputs: they add no rounding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "kc/dtype.h"
#include "kc/obligation.h"
#include "ops/merge/merge.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

using LD = long double;

using detail::fmt_g;

// ---------------------------------------------------------------- slerp

// slerp.on_sphere: for a and b of one norm r, slerp stays on the sphere:
// ||y||² = (c0² + c1² + 2 c0 c1 cos θ) r² = r² (sin² identity). The exact
// result's norm is computed in long double from the inputs (so the inputs'
// own norm mismatch, the fill's rounding, is an exact slack), and the
// computed y deviates by its rounding: | ||ŷ|| - ||y|| | <= ||ŷ - y|| <=
// (f + u) ||m|| + sqrt(n) U with the op's magnitudes m and U the run's
// gradual underflow per element (Op::underflow_allowance: c0 a_i or c1 b_i may
// round to the subnormal grid). Calls whose vectors are nearly
// parallel (|cos θ| > 0.9995) take the linear branch, which leaves the sphere
// by design: they are skipped.
Result<Outcome> slerp_on_sphere(const Context& ctx) {
  const std::vector<double> a = ctx.call.t("a").to_doubles(), b = ctx.call.t("b").to_doubles();
  const std::vector<double> y = ctx.call.t("y").to_doubles();
  KC_ASSIGN_OR_RETURN(std::vector<double> m, ctx.op.magnitude(ctx.call, "y"));
  KC_ASSIGN_OR_RETURN(OracleResult ref, ctx.op.oracle(ctx.call, OracleOptions{}));
  LD na = 0, nb = 0, dot = 0, ny = 0, nref = 0, nm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    na += static_cast<LD>(a[i]) * a[i];
    nb += static_cast<LD>(b[i]) * b[i];
    dot += static_cast<LD>(a[i]) * b[i];
    ny += static_cast<LD>(y[i]) * y[i];
    nref += static_cast<LD>(ref.outputs[0][i]) * ref.outputs[0][i];
    nm += static_cast<LD>(m[i]) * m[i];
  }
  Judge judge("| ||y|| - ||a|| |");
  if (na == 0 || nb == 0 || std::fabs(dot / std::sqrt(na * nb)) > 0.9995L) {
    judge.pass();
    return judge.outcome();
  }
  const LD r = std::sqrt(na);
  const double under = std::sqrt(static_cast<double>(a.size())) * ctx.underflow_of(ctx.call);
  judge.check(
      static_cast<double>(std::sqrt(ny) - r),
      ctx.allowed(static_cast<double>(std::sqrt(nm)), static_cast<double>(std::fabs(std::sqrt(nref) - r)) + under),
      Where{-1, -1, "(t = " + ctx.call.get("t", "0.5") + ")"});
  return judge.outcome();
}

// slerp.endpoints: t = 0 gives a and t = 1 gives b (the impl re-run at each
// end), within the op's bound there: |y_i - a_i| <= (f + u) m_i(t = 0) + U.
Result<Outcome> slerp_endpoints(const Context& ctx) {
  Judge judge("|y(0) - a|, |y(1) - b|");
  for (const char* t : {"0", "1"}) {
    Call c = ctx.fresh_inputs();
    c.config.params["t"] = t;
    const Call before = c;
    KC_RETURN_IF_ERROR(detail::rerun(ctx, c, std::string("slerp at t = ") + t));
    KC_ASSIGN_OR_RETURN(std::vector<double> m, ctx.op.magnitude(before, "y"));
    const std::vector<double> want = before.t(t[0] == '0' ? "a" : "b").to_doubles(), y = c.t("y").to_doubles();
    for (std::size_t i = 0; i < y.size(); ++i)
      judge.check(y[i] - want[i], ctx.allowed(m[i], ctx.underflow_of(before)),
                  Where{-1, -1, std::string("(t = ") + t + ", " + std::to_string(i) + ")"});
  }
  return judge.outcome();
}

// ---------------------------------------------------------------- pruning

// prune.exact_sparsity: the op zeroes the k = floor(s cols) entries of
// smallest score in each row and keeps the other cols - k (op summary,
// ops/merge): exactly k entries are pruned, whether or not W is 0 there.
// An entry of W that is 0 scores 0, the lowest, so it is pruned first and
// counts among the k (W = [1.4e-45, 0], k = 1: y = [1.4e-45, 0], one zero).
// Zeros of y are the k pruned entries plus the kept entries where W is 0.
// With P entries of positive score (which are nonzero in W: |W| sqrt(a) > 0
// needs W != 0), the kept set takes q = max(0, cols - k - P) entries of
// score 0; which ones is a tie (any order is the op's), so of the Z0 score-0
// entries with W = 0 and the N0 with W != 0 (WANDA: a 0 activation, or a
// score that rounds to 0) it holds between max(0, q - N0) and min(q, Z0)
// zeros: zeros(y) in [k + max(0, q - N0), k + min(q, Z0)]. For magnitude
// pruning N0 = 0 and q <= Z0, so zeros(y) = k + q = max(k, zeros(W)) exactly.
// Scores are the op's P-rounded ones (ops::prune_scores). A row whose W holds
// a NaN has no defined order; it is skipped. Exact, no tolerance.
Result<Outcome> prune_exact_sparsity(const Context& ctx) {
  const detail::Rows w = detail::rows_of(ctx.call.t("W")), y = detail::rows_of(ctx.call.t("y"));
  const std::vector<double> score = ops::prune_scores(ctx.call, ctx.op.name() == "prune_wanda");
  const auto k = std::min(w.cols, static_cast<std::int64_t>(
                                      std::floor(ctx.call.get_double("sparsity", 0.5) * static_cast<double>(w.cols))));
  Judge judge("zeros in the row");
  for (std::int64_t r = 0; r < w.rows; ++r) {
    std::int64_t positive = 0, z0 = 0, n0 = 0, zy = 0;
    bool nan = false;
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const double s = score[static_cast<std::size_t>(r * w.cols + c)];
      nan = nan || std::isnan(s);
      if (s > 0)
        ++positive;
      else if (w.at(r, c) == 0)
        ++z0;
      else
        ++n0;
      zy += y.at(r, c) == 0;
    }
    if (nan) continue;
    const std::int64_t q = std::max<std::int64_t>(0, w.cols - k - positive);
    const std::int64_t lo = k + std::max<std::int64_t>(0, q - n0), hi = k + std::min(q, z0);
    if (zy >= lo && zy <= hi) {
      judge.pass();
      continue;
    }
    std::string want = std::to_string(lo);
    if (hi > lo) want.append(" to ").append(std::to_string(hi));
    judge.fail(Where{r, -1, {}}, "row " + std::to_string(r) + " has " + std::to_string(zy) + " zeros, not " + want +
                                     " (k = " + std::to_string(k) + ")");
  }
  return judge.outcome();
}

// prune.kept_unchanged: every entry of y is either 0 or W's entry bit for bit
// (pruning selects; it never rescales or rounds a kept weight).
Result<Outcome> prune_kept_unchanged(const Context& ctx) {
  const Tensor& tw = ctx.call.t("W");
  const Tensor& ty = ctx.call.t("y");
  Judge judge("kept weight");
  const std::int64_t cols = tw.dim(1);
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < tw.numel(); ++i) {
    const double w = tw.at(i), y = ty.at(i);
    if (y == 0 || (std::memcmp(&w, &y, sizeof w) == 0)) continue;
    if (bad++ == 0)
      judge.fail(Where{i / cols, i % cols, {}}, "kept weight " + fmt_g(y) + " differs from W = " + fmt_g(w));
  }
  if (bad == 0) judge.pass();
  return judge.outcome();
}

}  // namespace

void add_merge_properties(std::vector<Property>& out) {
  out.push_back(
      {"slerp.on_sphere", {"slerp"}, "||y|| = ||a|| for a, b of one norm (not nearly parallel)", slerp_on_sphere});
  out.push_back({"slerp.endpoints", {"slerp"}, "y(t = 0) = a and y(t = 1) = b", slerp_endpoints});
  out.push_back({"prune.exact_sparsity",
                 {"prune_magnitude", "prune_wanda"},
                 "every row prunes exactly floor(sparsity cols) entries, its lowest scores (W's zeros first)",
                 prune_exact_sparsity});
  out.push_back({"prune.kept_unchanged",
                 {"prune_magnitude", "prune_wanda"},
                 "every output entry is 0 or the weight bit for bit",
                 prune_kept_unchanged});
}

}  // namespace kc::obligation
