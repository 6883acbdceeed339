// kc — properties of the gated activations gelu_erf, gelu_tanh and silu
// (src/ops/elementwise): all are x s(x) with a gate s in (0, 1) and
// s(x) + s(-x) = 1 (Phi, 0.5 (1 + tanh(odd)), sigmoid).
//
// Per-element rounding bound: an fp kernel evaluates f at x through a few
// roundings and libm calls; each relative perturbation of the argument by k u
// moves the result by k u |x f'(x)|, and the result itself rounds by k u |y|.
// So |ŷ - y| <= (f + u) m with m = |y| + |x f'(x)| (the condition number of f
// at x, made absolute; it matters where y is tiny, x << 0), and f the
// contract's factor, gamma(c, P) with c the roundings and libm ulps it counts.
// Gradual underflow adds an absolute term per run (Higham (2.8)): where x s(x)
// or an intermediate (x / 2, x / sqrt 2) is subnormal, the product rounds to
// the subnormal grid, |e| <= lambda = u min_normal(P), which no relative term
// covers (x = 5.25e-42: f(x) - f(-x) - x is off by one subnormal ulp, 2 lambda).
// Each check adds ctx.underflow_of(run) per value it combines: 3 lambda for a
// unary op (Op::underflow_allowance with L = 1).
#include <algorithm>
#include <cmath>
#include <string>

#include "kc/dtype.h"
#include "kc/obligation.h"
#include "kc/ops/elementwise.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

Result<ops::UnaryFn> fn_of(const Context& ctx) {
  auto fn = ops::parse_unary_fn(ctx.op.name());
  if (!fn) return invalid_argument("no activation named " + std::string(ctx.op.name()));
  return *fn;
}

/// m(x) = |y| + |x f'(x)|, plus the gate's underflow: the kernel's s(x) goes
/// through an intermediate that underflows for x << 0 (expf(z) below 1e-38 at
/// x < -10.9 for gelu_tanh; erfc; e / (1 + e)), so s carries an absolute
/// lambda = u min_normal(P) (Higham (2.8)) that y = x s(x) multiplies by |x|:
/// m adds min_normal(P) |x|, which the factor (>= u) turns into lambda |x|.
double magnitude(ops::UnaryFn fn, double x, double min_normal) {
  return static_cast<double>(std::fabs(ops::eval_unary(fn, x)) + std::fabs(x * ops::eval_unary_derivative(fn, x))) +
         min_normal * std::fabs(x);
}

/// The smallest normal of the call's output format (0 for integers).
double min_normal_of(const Context& ctx) {
  const DTypeInfo& info = dtype_info(ctx.call.t("y").dtype());
  return info.is_float ? info.min_normal : 0.0;
}

/// The global minimum of x s(x) and where it is (f'(x*) = 0), from the FP64
/// definitions: gelu_erf -0.16997 at -0.75179, gelu_tanh -0.17004 at -0.75186,
/// silu -0.27846 at -1.27846.
struct Minimum {
  double at, value;
};
Minimum minimum_of(ops::UnaryFn fn) {
  switch (fn) {
    case ops::UnaryFn::kGeluErf: return {-0.7517915246935645, -0.16997120747014057};
    case ops::UnaryFn::kGeluTanh: return {-0.7518628, -0.17004231};
    default: return {-1.2784645427610738, -0.2784645427610738};  // silu: x* = -1 - W(1/e), f(x*) = x* + 1
  }
}

// activation.odd_part: f(x) - f(-x) = x s(x) + x s(-x) = x. Exact negation of
// the input, one re-invocation, both calls' bounds: (f + u)(m(x) + m(-x)) plus
// both runs' underflow.
Result<Outcome> odd_part(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(ops::UnaryFn fn, fn_of(ctx));
  const double tiny = min_normal_of(ctx);
  const std::vector<double> x = ctx.call.t("x").to_doubles();
  const std::vector<double> y = ctx.call.t("y").to_doubles();
  Call neg = ctx.fresh_inputs();
  for (std::int64_t i = 0; i < neg.t("x").numel(); ++i) neg.t("x").set(i, -x[static_cast<std::size_t>(i)]);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, neg, "f(-x)"));
  const std::vector<double> yn = neg.t("y").to_doubles();
  const double under = ctx.underflow_of(ctx.call) + ctx.underflow_of(neg);
  Judge judge("|f(x) - f(-x) - x|");
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const long double r = static_cast<long double>(y[i]) - yn[i] - x[i];
    judge.check(static_cast<double>(r), ctx.allowed(magnitude(fn, x[i], tiny) + magnitude(fn, -x[i], tiny), under),
                Where{-1, -1, std::string("[").append(std::to_string(i)).append("] x = ").append(std::to_string(x[i]))});
  }
  return judge.outcome();
}

// activation.bound: the gate is in (0, 1), so y lies between 0 and x, and
// never below the function's global minimum (minimum_of). Distance outside
// [max(min(0, x), f_min), max(0, x)] against (f + u) m.
Result<Outcome> bound(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(ops::UnaryFn fn, fn_of(ctx));
  const double tiny = min_normal_of(ctx);
  const Minimum mn = minimum_of(fn);
  const std::vector<double> x = ctx.call.t("x").to_doubles();
  const std::vector<double> y = ctx.call.t("y").to_doubles();
  Judge judge("distance of y outside [max(min(0, x), f_min), max(0, x)]");
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const double lo = std::max(std::min(0.0, x[i]), mn.value), hi = std::max(0.0, x[i]);
    const double v = y[i];
    const double outside = std::isnan(v) ? v : (v < lo ? lo - v : (v > hi ? v - hi : 0.0));
    judge.check(outside, ctx.allowed(magnitude(fn, x[i], tiny), ctx.underflow_of(ctx.call)),
                Where{-1, -1, std::string("[").append(std::to_string(i)).append("]")});
  }
  return judge.outcome();
}

// activation.monotone: increasing right of the minimum x* (and decreasing
// left of it; the property checks the right side, where these activations
// pass signal). Over the inputs >= x*, sorted: each neighbouring pair
// y_k <= y_{k+1} within (f + u)(m_k + m_{k+1}).
Result<Outcome> monotone(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(ops::UnaryFn fn, fn_of(ctx));
  const double tiny = min_normal_of(ctx);
  const double from = minimum_of(fn).at;
  const std::vector<double> x = ctx.call.t("x").to_doubles();
  const std::vector<double> y = ctx.call.t("y").to_doubles();
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(x[i]) && x[i] >= from) idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  Judge judge("y_k - y_{k+1} for x_k < x_{k+1} right of the minimum");
  for (std::size_t k = 0; k + 1 < idx.size(); ++k) {
    const std::size_t a = idx[k], b = idx[k + 1];
    const double drop = std::isnan(y[a]) || std::isnan(y[b]) ? NAN : std::max(0.0, y[a] - y[b]);
    judge.check(drop, ctx.allowed(magnitude(fn, x[a], tiny) + magnitude(fn, x[b], tiny), 2 * ctx.underflow_of(ctx.call)),
                Where{-1, -1, "x = " + std::to_string(x[a]) + " -> " + std::to_string(x[b])});
  }
  return judge.outcome();
}

}  // namespace

void add_activation_properties(std::vector<Property>& out) {
  const std::vector<std::string> gated = {"gelu_erf", "gelu_tanh", "silu"};
  out.push_back({"activation.odd_part", gated, "f(x) - f(-x) = x (the gate satisfies s(x) + s(-x) = 1)", odd_part});
  out.push_back({"activation.bound", gated, "y between 0 and x and above the global minimum", bound});
  out.push_back({"activation.monotone", gated, "increasing right of the global minimum", monotone});
}

}  // namespace kc::obligation
