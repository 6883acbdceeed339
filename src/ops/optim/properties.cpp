// kc — properties of adamw_step (docs/transformer-training.md).
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
#include "ops/obligation_util.h"
#include "ops/optim/adamw.h"

namespace kc::obligation {
namespace {

using LD = long double;

using detail::fmt_g;

// ---------------------------------------------------------------- adamw_step

/// A hyper-parameter as the kernel gets it: a value of the call's precision.
LD hyper(const Call& c, const char* key, double fallback) {
  return static_cast<LD>(round_to(c.get_double(key, fallback), c.config.dtype));
}

void zero(Tensor& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.0);
}

// adamw.decoupled_decay: with g = 0 and m = v = 0 the moments stay 0 and the
// Adam update is lr * 0 / (0 + eps) = 0, so AdamW's step is the decay alone,
// p' = p (1 - lr wd), at every step t. Coupled (L2) decay instead feeds
// wd p through the moments and moves p by ~lr per element. The decay is three
// roundings of |p| (1 + lr wd) (the op's magnitude with Δmag = 0, which
// carries gradual underflow's term: a subnormal p (1 - lr wd) rounds to the
// subnormal grid), plus the run's underflow allowance.
Result<Outcome> adamw_decoupled_decay(const Context& ctx) {
  Call c = ctx.fresh_inputs();
  zero(c.t("grad"));
  zero(c.t("m"));
  zero(c.t("v"));
  const Call before = c;
  KC_ASSIGN_OR_RETURN(std::vector<double> mp, ctx.op.magnitude(before, "param"));
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, "adamw_step with g = m = v = 0"));
  const LD lr = hyper(c, "lr", 1e-3), wd = hyper(c, "weight_decay", 0.01);
  const Call inputs = ctx.fresh_inputs();  // param is in/out: its input value
  const std::vector<double> pin = inputs.t("param").to_doubles();
  const std::vector<double> p1 = c.t("param").to_doubles(), m1 = c.t("m").to_doubles(), v1 = c.t("v").to_doubles();
  Judge judge("|p' - p (1 - lr wd)|, |m'|, |v'|");
  for (std::size_t i = 0; i < p1.size(); ++i) {
    const LD want = pin[i] * (1 - lr * wd);
    judge.check(static_cast<double>(p1[i] - want), ctx.allowed(mp[i], ctx.underflow_of(before)),
                Where{-1, -1, "(param " + std::to_string(i) + ")"});
    judge.check(m1[i], 0, Where{-1, -1, "(m " + std::to_string(i) + ")"});
    judge.check(v1[i], 0, Where{-1, -1, "(v " + std::to_string(i) + ")"});
  }
  return judge.outcome();
}

// adamw.zero_moment_first_step: Adam starts from m = v = 0; at t = 1 the bias
// corrections 1 - beta^1 turn m' = (1 - beta1) g and v' = (1 - beta2) g² back
// into m̂ = g and v̂ = g², so the step is p' = p (1 - lr wd) - lr g / (|g| + eps):
// every element moves by lr |g| / (|g| + eps), whatever |g| is. Bounds: the op's
// magnitudes at t = 1 (kappa = beta / (1 - beta) is in f for the contract's
// step values; here t = 1 is forced, so the property evaluates the op's error
// model at t = 1 through ctx.op.magnitude of the transformed call).
Result<Outcome> adamw_first_step(const Context& ctx) {
  Call c = ctx.fresh_inputs();
  c.config.params["step"] = "1";
  zero(c.t("m"));
  zero(c.t("v"));
  const Call before = c;
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, "adamw_step at t = 1 from m = v = 0"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mp, ctx.op.magnitude(before, "param"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mm, ctx.op.magnitude(before, "m"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mv, ctx.op.magnitude(before, "v"));
  const LD lr = hyper(c, "lr", 1e-3), wd = hyper(c, "weight_decay", 0.01), eps = hyper(c, "eps", 1e-8);
  const LD b1 = hyper(c, "beta1", 0.9), b2 = hyper(c, "beta2", 0.999);
  const std::vector<double> p0 = before.t("param").to_doubles(), g = before.t("grad").to_doubles();
  const std::vector<double> p1 = c.t("param").to_doubles(), m1 = c.t("m").to_doubles(), v1 = c.t("v").to_doubles();
  // The contract's factor may have been evaluated at another t; the bound at
  // t = 1 has kappa1 = b1 / (1 - b1), kappa2 = b2 / (1 - b2).
  const double f1 = gamma(static_cast<double>(16 + 2 * b1 / (1 - b1) + b2 / (1 - b2)), c.config.dtype);
  const double u = unit_roundoff(c.config.dtype);
  const double fac = std::max(ctx.factor, f1) + u;
  const double under = ctx.underflow_of(before);
  Judge judge("|p' - p (1 - lr wd) + lr g / (|g| + eps)|, |m' - (1 - beta1) g|, |v' - (1 - beta2) g²|");
  for (std::size_t i = 0; i < p1.size(); ++i) {
    const LD gi = g[i];
    const LD want = p0[i] * (1 - lr * wd) - lr * gi / (std::fabs(gi) + eps);
    judge.check(static_cast<double>(p1[i] - want), fac * mp[i] + ctx.absolute + under,
                Where{-1, -1, "(param " + std::to_string(i) + ")"});
    judge.check(static_cast<double>(m1[i] - (1 - b1) * gi), fac * mm[i] + ctx.absolute + under,
                Where{-1, -1, "(m " + std::to_string(i) + ")"});
    judge.check(static_cast<double>(v1[i] - (1 - b2) * gi * gi), fac * mv[i] + ctx.absolute + under,
                Where{-1, -1, "(v " + std::to_string(i) + ")"});
  }
  return judge.outcome();
}

// adamw.hyperparameters_reach_update: each of lr, beta1, beta2, eps and
// weight_decay is changed in turn (lr x 2, beta -> (1 + beta) / 2, eps ->
// 1e-3, weight_decay x 2 + 0.01) and the impl re-run on the same tensors.
// Where the op's oracle says the outputs move by D (max over param, m, v of
// |ref(h') - ref(h)|) well above what rounding allows for both runs (R = the
// sum of their allowances at that element), the impl's outputs must move by at
// least D - R there: a kernel that ignores h moves by 0. Reported per
// hyper-parameter as the shortfall (D - R) - |impl move|, allowed 0.
Result<Outcome> adamw_hyper_reach(const Context& ctx) {
  struct Change {
    const char* key;
    double fallback;
    double (*to)(double);
  };
  static const Change kChanges[] = {
      {"lr", 1e-3, [](double v) { return 2 * v; }},
      {"beta1", 0.9, [](double v) { return (1 + v) / 2; }},
      {"beta2", 0.999, [](double v) { return (1 + v) / 2; }},
      {"eps", 1e-8, [](double v) { return v < 1e-3 ? 1e-3 : v / 10; }},
      {"weight_decay", 0.01, [](double v) { return 2 * v + 0.01; }},
  };
  const Call inputs = ctx.fresh_inputs();
  OracleOptions none;
  KC_ASSIGN_OR_RETURN(OracleResult ref0, ctx.op.oracle(inputs, none));
  Judge judge("shortfall of |impl(h') - impl(h)| below the oracle's move");
  for (const Change& ch : kChanges) {
    Call c = ctx.fresh_inputs();
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", ch.to(ctx.call.get_double(ch.key, ch.fallback)));
    c.config.params[ch.key] = buf;
    const Call changed_inputs = c;
    KC_ASSIGN_OR_RETURN(OracleResult ref1, ctx.op.oracle(changed_inputs, none));
    KC_RETURN_IF_ERROR(detail::rerun(ctx, c, std::string("adamw_step with ") + ch.key + " = " + buf));
    // The element where the oracle moves most relative to what rounding allows.
    double best_margin = 0, impl_move = 0, need = 0;
    std::string where;
    for (std::size_t o = 0; o < ref0.output_names.size(); ++o) {
      const std::string& name = ref0.output_names[o];
      KC_ASSIGN_OR_RETURN(std::vector<double> m0, ctx.op.magnitude(inputs, name));
      KC_ASSIGN_OR_RETURN(std::vector<double> m1, ctx.op.magnitude(changed_inputs, name));
      const std::vector<double> a = ctx.call.t(name).to_doubles(), b = c.t(name).to_doubles();
      for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(ref1.outputs[o][i] - ref0.outputs[o][i]);
        const double r = ctx.allowed(m0[i] + m1[i], ctx.underflow_of(inputs) + ctx.underflow_of(changed_inputs)) +
                         ctx.rounding * (std::fabs(ref0.outputs[o][i]) + std::fabs(ref1.outputs[o][i]));
        if (d - r > best_margin) {
          best_margin = d - r;
          need = d - r;
          impl_move = std::fabs(b[i] - a[i]);
          where = std::string("(") + ch.key + " -> " + buf + ", " + name + " " + std::to_string(i) + ")";
        }
      }
    }
    if (where.empty()) continue;  // this change moves nothing beyond rounding here
    judge.check(std::max(0.0, need - impl_move), 0, Where{-1, -1, where});
  }
  return judge.outcome();
}

}  // namespace

void add_adamw_properties(std::vector<Property>& out) {
  out.push_back({"adamw.decoupled_decay",
                 {"adamw_step"},
                 "with g = m = v = 0 the step is the decay alone: p' = p (1 - lr wd), m' = v' = 0",
                 adamw_decoupled_decay});
  out.push_back({"adamw.zero_moment_first_step",
                 {"adamw_step"},
                 "at t = 1 from m = v = 0: m' = (1 - b1) g, v' = (1 - b2) g², p' = p (1 - lr wd) - lr g / (|g| + eps)",
                 adamw_first_step});
  out.push_back({"adamw.hyperparameters_reach_update",
                 {"adamw_step"},
                 "changing any of lr, beta1, beta2, eps, weight_decay moves the outputs as the oracle says they move",
                 adamw_hyper_reach});
}

}  // namespace kc::obligation
