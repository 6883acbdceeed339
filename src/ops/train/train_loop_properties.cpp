// kc — training-stability properties of train_loop (docs/training-stability.md):
// a run stays finite, every parameter gets a gradient, the optimizer state
// starts at zero, the configured hyper-parameters reach the optimizer. The
// last three re-run the impl for one step (t = 1) on the call's inputs, where
// AdamW's state and update are checked against the impl's own outputs: no
// gradient oracle enters those bounds, only the rounding of the step itself.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "kc/dtype.h"
#include "kc/obligation.h"
#include "ops/obligation_util.h"
#include "ops/train/train_loop.h"

namespace kc::obligation {
namespace {

using LD = long double;

using detail::fmt_g;

/// A one-step call (t = 1) on the call's own inputs, params as the call's
/// but for `overrides`: the shapes follow steps, so the call is made anew.
Result<Call> one_step(const Context& ctx, const std::map<std::string, std::string>& overrides = {}) {
  Config cfg = ctx.call.config;
  cfg.params["steps"] = "1";
  for (const auto& [k, v] : overrides) cfg.params[k] = v;
  KC_ASSIGN_OR_RETURN(Call c, ctx.op.make_call(cfg));
  const Call given = ctx.fresh_inputs();
  for (const char* name : {"X", "target", "theta"}) c.t(name) = given.t(name);
  return c;
}

std::string element(const ops::TrainLoopShape& sh, std::int64_t i) {
  for (const ops::ParamSegment& s : ops::train_loop_segments(sh))
    if (i >= s.offset && i < s.offset + s.size) return s.name + "[" + std::to_string(i - s.offset) + "]";
  return std::to_string(i);
}

// train_loop.finite: from a finite batch and a finite random init, every
// loss of the run, every parameter after it and the optimizer state stay
// finite (the model's ops are all finite on finite inputs when computed
// stably: rmsnorm divides by sqrt(mean(x²) + 1e-6) > 0, the log-sum-exp with
// its max subtracted is at most log(classes) above the max, AdamW's update
// is bounded by lr per unit of |m̂| / sqrt(v̂)). Exact: no tolerance.
Result<Outcome> finite(const Context& ctx) {
  const ops::TrainLoopShape sh = ops::train_loop_shape(ctx.call);
  Judge judge("non-finite value");
  bool any = false;
  for (const char* name : {"loss", "theta_out", "m", "v"}) {
    const std::vector<double> y = ctx.call.t(name).to_doubles();
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (std::isfinite(y[i])) continue;
      const std::string at = std::string(name) == "loss" ? "step " + std::to_string(i + 1)
                                                         : element(sh, static_cast<std::int64_t>(i));
      judge.fail(Where{-1, -1, "(" + std::string(name) + " " + at + ")"},
                 std::string(name) + " " + at + " is " + fmt_g(y[i]) + " after a run from a finite init");
      any = true;
      break;  // the first non-finite element of each output says enough
    }
  }
  if (!any) judge.pass();
  return judge.outcome();
}

// train_loop.every_parameter_gets_gradient: one step from the call's inputs.
// AdamW's first moment after step 1 from zero is m = (1 - beta1) g, so the
// gradient each element received is visible in m. A parameter segment (the
// norm gain, W_gate, W_up, W_out) whose m is 0 everywhere got no gradient.
// The exact gradient (long double, the op's) must be nonzero on the segment
// for the obligation to apply; exact-zero segments are skipped.
Result<Outcome> every_parameter_gets_gradient(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(Call c, one_step(ctx));
  const Call before = c;
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, "train_loop for one step"));
  const std::vector<double> m = c.t("m").to_doubles();
  const std::vector<double> g = ops::train_loop_gradient(before);
  Judge judge("segments with no gradient");
  for (const ops::ParamSegment& s : ops::train_loop_segments(ops::train_loop_shape(before))) {
    double exact = 0;
    std::int64_t nonzero = 0;
    for (std::int64_t i = s.offset; i < s.offset + s.size; ++i) {
      exact = std::max(exact, std::fabs(g[static_cast<std::size_t>(i)]));
      nonzero += m[static_cast<std::size_t>(i)] != 0;
    }
    if (exact == 0 || nonzero > 0) {
      judge.pass();
      continue;
    }
    judge.fail(Where{-1, -1, "(" + s.name + ")"},
               s.name + ": all " + std::to_string(s.size) + " first moments are 0 after step 1 (no gradient reached it), "
               "where the exact gradient reaches |g| = " + fmt_g(exact));
  }
  return judge.outcome();
}

// train_loop.zero_initial_state: the impl runs one step with its state
// buffers m and v pre-filled, as reused memory holds whatever it held: with
// the engine's poison (a NaN) where the engine runs the impl, else with
// m = 0.5, v = 0.25 (set here first). From zero state, m' = (1 - b1) g and
// v' = (1 - b2) g² for the gradient g the impl computed, whatever it is, so
//   R = (1 - b1)² v' - (1 - b2) m'² = 0,
// and a state that started anywhere else leaves R away from 0 (NaN from the
// poison). 1 - b is exact (b in [0.5, 1), Sterbenz); m' carries up to two
// roundings and v' up to three in any order of the update (b·0 adds nothing),
// so |R| <= γ(7) X with X = (1 - b2)(1 - b1)² g², and the magnitude
// M = (1 - b1)² |v'| + (1 - b2) m'² >= 2 X (1 - γ(4)): `bound gamma(6, P)`
// allows (γ(6) + u) M >= 14 u X. Gradual underflow: g² or (1 - b1) g may
// land on the subnormal grid, an absolute lambda = u min_normal(P) per product:
// R moves by (1 - b1)² 2 lambda + (1 - b2)(2 |m'| lambda + lambda²) at most.
Result<Outcome> zero_initial_state(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(Call c, one_step(ctx));
  for (std::int64_t i = 0; i < c.t("m").numel(); ++i) {
    c.t("m").set(i, 0.5);
    c.t("v").set(i, 0.25);
  }
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, "train_loop for one step, state buffers pre-filled"));
  const ops::TrainLoopHyper h = ops::train_loop_hyper(c);
  const LD a = 1 - static_cast<LD>(h.beta1), b = 1 - static_cast<LD>(h.beta2);
  const LD lambda = underflow_unit(c.config.dtype);
  const std::vector<double> m = c.t("m").to_doubles(), v = c.t("v").to_doubles();
  const ops::TrainLoopShape sh = ops::train_loop_shape(c);
  Judge judge("|(1 - b1)² v - (1 - b2) m²| after step 1");
  for (std::size_t i = 0; i < m.size(); ++i) {
    const LD mi = m[i], vi = v[i];
    const LD r = a * a * vi - b * mi * mi;
    const LD mag = a * a * std::fabs(vi) + b * mi * mi;
    const LD slack = a * a * 2 * lambda + b * (2 * std::fabs(mi) * lambda + lambda * lambda);
    judge.check(static_cast<double>(r), ctx.allowed(static_cast<double>(mag), static_cast<double>(slack)),
                Where{-1, -1, "(" + element(sh, static_cast<std::int64_t>(i)) + ": m = " + fmt_g(m[i]) + ", v = " +
                                  fmt_g(v[i]) + ")"});
  }
  return judge.outcome();
}

// train_loop.hyperparameters_reach_optimizer: one step (t = 1) from the
// call's inputs; with the impl's own m' and v', AdamW with the configured
// lr, beta1, beta2, eps, weight_decay and warmup_steps gives
//   p' = p (1 - lr_1 wd) - lr_1 (m' / (1 - b1)) / (sqrt(v' / (1 - b2)) + eps),
//   lr_1 = lr / warmup_steps when warmup_steps > 1, else lr.
// A hyper-parameter the loop does not take from the config moves p' off
// this (a beta shows through the bias correction of m' and v' that the impl
// itself wrote). Bound, as KC-ADAMW-01's at t = 1: the decay's three
// roundings of |p| (1 + lr_1 wd); the update's seven, two for warmup, the
// corrections' u (2 kappa + 1) with kappa = b / (1 - b), and one for an m or
// v used before it was stored: under gamma(16 + 2 kappa1 + kappa2) times
// M = |p| (1 + lr_1 wd) + lr_1 |m'| / (bc1 (sqrt(v' / bc2) + eps)) + min_normal(P)
// (the last: the decay's product or the update on the subnormal grid).
Result<Outcome> hyperparameters_reach_optimizer(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(Call c, one_step(ctx));
  const Call before = c;
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, "train_loop for one step"));
  const ops::TrainLoopHyper h = ops::train_loop_hyper(c);
  LD lr = h.lr;
  if (h.warmup_steps > 1) lr = lr / static_cast<LD>(h.warmup_steps);
  const LD bc1 = 1 - static_cast<LD>(h.beta1), bc2 = 1 - static_cast<LD>(h.beta2);
  const LD wd = h.weight_decay, eps = h.eps;
  const LD tiny = dtype_info(c.config.dtype).min_normal;
  const std::vector<double> p0 = before.t("theta").to_doubles(), p1 = c.t("theta_out").to_doubles();
  const std::vector<double> m = c.t("m").to_doubles(), v = c.t("v").to_doubles();
  const ops::TrainLoopShape sh = ops::train_loop_shape(c);
  Judge judge("|p' - AdamW(p, m', v'; config)| at t = 1");
  for (std::size_t i = 0; i < p0.size(); ++i) {
    const LD den = std::sqrt(std::max<LD>(0, v[i]) / bc2) + eps;
    const LD upd = lr * (static_cast<LD>(m[i]) / bc1) / den;
    const LD want = p0[i] * (1 - lr * wd) - upd;
    const LD mag = std::fabs(static_cast<LD>(p0[i])) * (1 + lr * wd) + std::fabs(upd) + tiny;
    judge.check(static_cast<double>(p1[i] - want), ctx.allowed(static_cast<double>(mag)),
                Where{-1, -1, "(" + element(sh, static_cast<std::int64_t>(i)) + ", lr " + fmt_g(h.lr) + ", wd " +
                                  fmt_g(h.weight_decay) + ", eps " + fmt_g(h.eps) + ", betas " + fmt_g(h.beta1) + "/" +
                                  fmt_g(h.beta2) + ", warmup " + std::to_string(h.warmup_steps) + ")"});
  }
  return judge.outcome();
}

}  // namespace

void add_train_loop_properties(std::vector<Property>& out) {
  out.push_back({"train_loop.finite", {"train_loop"},
                 "every loss of the run, the parameters after it and AdamW's m and v are finite", finite});
  out.push_back({"train_loop.every_parameter_gets_gradient", {"train_loop"},
                 "after one step every parameter segment has a nonzero first moment (it received a gradient)",
                 every_parameter_gets_gradient});
  out.push_back({"train_loop.zero_initial_state", {"train_loop"},
                 "from poisoned state buffers, step 1 gives (1 - b1)² v = (1 - b2) m²: AdamW starts from zero",
                 zero_initial_state});
  out.push_back({"train_loop.hyperparameters_reach_optimizer", {"train_loop"},
                 "step 1 moves every parameter as AdamW with the configured lr, betas, eps, weight_decay and warmup",
                 hyperparameters_reach_optimizer});
}

}  // namespace kc::obligation
