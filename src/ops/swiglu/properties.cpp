// kc — properties of swiglu, y = silu(g) up (src/ops/swiglu).
//
// Each starts from the op's per-element bound |ŷ - y| <= (f + u) m (the op's
// magnitude m, which carries the gate's gradual underflow through up) and
// adds each run's underflow of the final product (Op::underflow_allowance).
#include <algorithm>
#include <cmath>
#include <string>

#include "kc/dtype.h"
#include "kc/obligation.h"
#include "kc/ops/elementwise.h"
#include "ops/obligation_util.h"
#include "ops/swiglu/swiglu.h"

namespace kc::obligation {
namespace {

/// swiglu's per-element magnitude from the op's error model.
Result<std::vector<double>> swiglu_magnitude(const Context& ctx, const Call& c) { return ctx.op.magnitude(c, "y"); }

// swiglu.linear_in_up: y = silu(g) up is linear in up: swiglu(g, a up) =
// a swiglu(g, up) for a = 8 and a = -1/2 (powers of two up to sign: a up is
// exact in the format, but for a = -1/2 on a subnormal up with its last bit
// set, which rounds: the stored up' = a up + d, and d, exact in FP64, is
// predicted as silu(g) d, in long double). Both calls' bounds:
// (f + u)(m' + |a| m) (the op's magnitude carries the gate's underflow
// through up), plus each run's underflow of the final product: U' + |a| U.
Result<Outcome> swiglu_linear_in_up(const Context& ctx) {
  const std::vector<double> g = ctx.call.t("gate").to_doubles(), up = ctx.call.t("up").to_doubles(),
                            y = ctx.call.t("y").to_doubles();
  KC_ASSIGN_OR_RETURN(std::vector<double> m0, swiglu_magnitude(ctx, ctx.call));
  Judge judge("|swiglu(g, a up') - a swiglu(g, up) - silu(g) (up' - a up)|");
  for (const double a : {8.0, -0.5}) {
    Call scaled = ctx.fresh_inputs();
    for (std::int64_t i = 0; i < scaled.t("up").numel(); ++i)
      scaled.t("up").set(i, a * up[static_cast<std::size_t>(i)]);
    const std::vector<double> up_stored = scaled.t("up").to_doubles();
    KC_RETURN_IF_ERROR(detail::rerun(ctx, scaled, "swiglu(g, a up)"));
    KC_ASSIGN_OR_RETURN(std::vector<double> m1, swiglu_magnitude(ctx, scaled));
    const std::vector<double> ys = scaled.t("y").to_doubles();
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double d = up_stored[i] - a * up[i];  // 0 but for a rounded subnormal
      const long double predicted = d == 0 ? 0.0L : ops::eval_unary(ops::UnaryFn::kSilu, g[i]) * d;
      judge.check(static_cast<double>(ys[i] - static_cast<long double>(a) * y[i] - predicted),
                  ctx.allowed(m1[i] + std::fabs(a) * m0[i],
                              ctx.underflow_of(scaled) + std::fabs(a) * ctx.underflow_of(ctx.call)),
                  Where{-1, -1, std::string("[").append(std::to_string(i)).append("] a = ").append(std::to_string(a))});
    }
  }
  return judge.outcome();
}

// swiglu.odd_gate: silu(g) - silu(-g) = g, so swiglu(g, up) - swiglu(-g, up)
// = g up: the gate and its mirror add up to the identity gate. The product g
// up is taken in long double (exact); both calls' bounds add, with both runs'
// underflow.
Result<Outcome> swiglu_odd_gate(const Context& ctx) {
  const std::vector<double> g = ctx.call.t("gate").to_doubles(), up = ctx.call.t("up").to_doubles(),
                            y = ctx.call.t("y").to_doubles();
  Call neg = ctx.fresh_inputs();
  for (std::int64_t i = 0; i < neg.t("gate").numel(); ++i) neg.t("gate").set(i, -g[static_cast<std::size_t>(i)]);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, neg, "swiglu(-g, up)"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m0, swiglu_magnitude(ctx, ctx.call));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, swiglu_magnitude(ctx, neg));
  const std::vector<double> yn = neg.t("y").to_doubles();
  Judge judge("|swiglu(g, up) - swiglu(-g, up) - g up|");
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(g[i]) || !std::isfinite(up[i])) continue;
    const long double r = static_cast<long double>(y[i]) - yn[i] - static_cast<long double>(g[i]) * up[i];
    judge.check(static_cast<double>(r), ctx.allowed(m0[i] + m1[i], ctx.underflow_of(ctx.call) + ctx.underflow_of(neg)),
                Where{-1, -1, std::string("[").append(std::to_string(i)).append("]")});
  }
  return judge.outcome();
}

}  // namespace

void add_swiglu_properties(std::vector<Property>& out) {
  out.push_back(
      {"swiglu.linear_in_up", {"swiglu"}, "swiglu(g, a up) = a swiglu(g, up) for a = 8, -1/2", swiglu_linear_in_up});
  out.push_back({"swiglu.odd_gate",
                 {"swiglu"},
                 "swiglu(g, up) - swiglu(-g, up) = g up (silu(x) - silu(-x) = x)",
                 swiglu_odd_gate});
}

}  // namespace kc::obligation
