// kc — properties of the training ops (docs/transformer-training.md):
// cross_entropy, kd_loss, adamw_step (and, below, slerp, pruning and
// gradient accumulation).
//
// f is the contract's rounding factor (its `bound E`) and u the output
// format's unit roundoff; each property starts from the op's per-element error
// bound |ŷ - y| <= (f + u) m (the op's magnitude m, src/ops/...) and says how
// the identity combines those bounds. Reference values a property computes
// itself are in long double from the call's inputs: they add no rounding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/obligation/families.h"
#include "engine/obligation/util.h"
#include "kc/dtype.h"
#include "ops/merge/merge.h"

namespace kc::obligation {
namespace {

using LD = long double;

using detail::fmt_g;

/// The op's magnitude of `output` for `call`, or the Status why not.
Result<std::vector<double>> mag_of(const Context& ctx, const Call& call, const std::string& output) {
  return ctx.op.magnitude(call, output);
}

// ---------------------------------------------------------------- cross_entropy

// cross_entropy.nonnegative: loss_i = logsumexp(z_i) - z_t >= 0, since the
// log-sum-exp dominates every term. A computed loss may dip below 0 by its
// rounding, (f + u) m_i with the op's loss magnitude m_i.
Result<Outcome> xent_nonnegative(const Context& ctx) {
  KC_ASSIGN_OR_RETURN(std::vector<double> m, mag_of(ctx, ctx.call, "loss"));
  const std::vector<double> loss = ctx.call.t("loss").to_doubles();
  Judge judge("max(0, -loss_i)");
  for (std::size_t i = 0; i < loss.size(); ++i)
    judge.check(std::isnan(loss[i]) ? loss[i] : std::max(0.0, -loss[i]), ctx.allowed(m[i]),
                Where{static_cast<std::int64_t>(i), -1, {}});
  return judge.outcome();
}

// cross_entropy.gradient_identity: dz = softmax(z) - onehot(t) implies two
// identities between the outputs alone: each gradient row sums to 0 (the
// softmax sums to 1), and the softmax at the target equals exp(-loss), so
// dz_t + 1 = exp(-loss). With the op's bounds |Δdz_j| <= (f + u)(p_j + [j = t])
// and |Δloss| <= (f + u) M: the row sum is off by <= (f + u) Σ_j (p_j + [j = t])
// = 2 (f + u); exp(-loss) by <= exp(-loss) (f + u) M (first order, with p_j
// read from the output as dz_j + [j = t]).
Result<Outcome> xent_gradient_identity(const Context& ctx) {
  const detail::Rows dz = detail::rows_of(ctx.call.t("dz"));
  const std::vector<double> loss = ctx.call.t("loss").to_doubles();
  const std::vector<double> target = ctx.call.t("target").to_doubles();
  KC_ASSIGN_OR_RETURN(std::vector<double> m, mag_of(ctx, ctx.call, "loss"));
  Judge judge("|sum_j dz_j| and |dz_t + 1 - exp(-loss)|");
  for (std::int64_t r = 0; r < dz.rows; ++r) {
    const auto t = static_cast<std::int64_t>(target[static_cast<std::size_t>(r)]);
    LD sum = 0, mag = 0;
    for (std::int64_t c = 0; c < dz.cols; ++c) {
      sum += dz.at(r, c);
      mag += std::fabs(dz.at(r, c) + (c == t ? 1 : 0)) + (c == t ? 1 : 0);
    }
    judge.check(static_cast<double>(sum), ctx.allowed(static_cast<double>(mag)), Where{r, -1, "(row " + std::to_string(r) + ", sum)"});
    const LD pt = static_cast<LD>(dz.at(r, t)) + 1;
    const LD e = std::exp(-static_cast<LD>(loss[static_cast<std::size_t>(r)]));
    judge.check(static_cast<double>(pt - e),
                ctx.allowed(static_cast<double>(std::fabs(pt) + 1 + e * m[static_cast<std::size_t>(r)])),
                Where{r, t, "(row " + std::to_string(r) + ", target " + std::to_string(t) + ")"});
  }
  return judge.outcome();
}

// ---------------------------------------------------------------- kd_loss

/// Re-runs kd_loss on `c` and returns its loss.
Result<std::vector<double>> kd_run(const Context& ctx, Call& c, const std::string& why) {
  KC_RETURN_IF_ERROR(detail::rerun(ctx, c, why));
  return c.t("loss").to_doubles();
}

// kd_loss.kl_nonnegative: at alpha = 1 the loss is T² KL(p_t || p_s) >= 0
// (Gibbs). It may dip below 0 by its rounding, (f + u) m with the op's
// magnitude at alpha = 1.
Result<Outcome> kd_kl_nonnegative(const Context& ctx) {
  Call c = ctx.fresh_inputs();
  c.config.params["alpha"] = "1";
  KC_ASSIGN_OR_RETURN(std::vector<double> loss, kd_run(ctx, c, "kd_loss at alpha = 1"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m, mag_of(ctx, c, "loss"));
  Judge judge("max(0, -T² KL)");
  for (std::size_t i = 0; i < loss.size(); ++i)
    judge.check(std::isnan(loss[i]) ? loss[i] : std::max(0.0, -loss[i]), ctx.allowed(m[i]),
                Where{static_cast<std::int64_t>(i), -1, {}});
  return judge.outcome();
}

// kd_loss.t2_scaling: softmax(z / T) is unchanged by (z, T) -> (2 z, 2 T), so
// KL is too, and at alpha = 1 the loss T² KL grows by exactly 4. Doubling is
// exact in binary formats (absent overflow), so the two runs see the same
// probabilities; each adds its rounding: |L(2z, 2T) - 4 L(z, T)| <=
// (f + u)(m(2z, 2T) + 4 m(z, T)). A kernel without T² returns L(2z, 2T) = L(z, T).
Result<Outcome> kd_t2_scaling(const Context& ctx) {
  Call base = ctx.fresh_inputs();
  base.config.params["alpha"] = "1";
  Call twice = base;
  for (const char* name : {"zs", "zt"}) {
    Tensor& z = twice.t(name);
    for (std::int64_t i = 0; i < z.numel(); ++i) z.set(i, 2 * z.at(i));
  }
  const double temp = ctx.call.get_double("T", 1);
  twice.config.params["T"] = fmt_g(2 * temp);
  if (std::fabs(twice.get_double("T", 0) - 2 * temp) > 0) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", 2 * temp);
    twice.config.params["T"] = buf;
  }
  KC_ASSIGN_OR_RETURN(std::vector<double> l1, kd_run(ctx, base, "kd_loss at alpha = 1"));
  KC_ASSIGN_OR_RETURN(std::vector<double> l2, kd_run(ctx, twice, "kd_loss at (2 z, 2 T)"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, mag_of(ctx, base, "loss"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m2, mag_of(ctx, twice, "loss"));
  Judge judge("|L(2z, 2T) - 4 L(z, T)|");
  for (std::size_t i = 0; i < l1.size(); ++i)
    judge.check(l2[i] - 4 * l1[i], ctx.allowed(m2[i] + 4 * m1[i]),
                Where{-1, -1, "(row " + std::to_string(i) + ", T = " + fmt_g(temp) + " -> " + fmt_g(2 * temp) + ")"});
  return judge.outcome();
}

// kd_loss.alpha_interpolation: the loss is affine in alpha, L(a) = a L(1) +
// (1 - a) L(0), for the call's alpha a. Three runs, each within (f + u) m:
// |L(a) - a L(1) - (1 - a) L(0)| <= (f + u)(m(a) + a m(1) + (1 - a) m(0)),
// the combination taken in long double.
Result<Outcome> kd_alpha_interpolation(const Context& ctx) {
  const LD a = ctx.call.get_double("alpha", 0.5);
  Call one = ctx.fresh_inputs(), zero = ctx.fresh_inputs();
  one.config.params["alpha"] = "1";
  zero.config.params["alpha"] = "0";
  KC_ASSIGN_OR_RETURN(std::vector<double> l1, kd_run(ctx, one, "kd_loss at alpha = 1"));
  KC_ASSIGN_OR_RETURN(std::vector<double> l0, kd_run(ctx, zero, "kd_loss at alpha = 0"));
  KC_ASSIGN_OR_RETURN(std::vector<double> ma, mag_of(ctx, ctx.call, "loss"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m1, mag_of(ctx, one, "loss"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m0, mag_of(ctx, zero, "loss"));
  const std::vector<double> la = ctx.call.t("loss").to_doubles();
  Judge judge("|L(a) - a L(1) - (1 - a) L(0)|");
  for (std::size_t i = 0; i < la.size(); ++i) {
    const LD residual = la[i] - a * l1[i] - (1 - a) * l0[i];
    judge.check(static_cast<double>(residual),
                ctx.allowed(static_cast<double>(ma[i] + a * m1[i] + (1 - a) * m0[i])),
                Where{static_cast<std::int64_t>(i), -1, {}});
  }
  return judge.outcome();
}

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
    judge.check(static_cast<double>(p1[i] - want), fac * mp[i] + ctx.absolute + under, Where{-1, -1, "(param " + std::to_string(i) + ")"});
    judge.check(static_cast<double>(m1[i] - (1 - b1) * gi), fac * mm[i] + ctx.absolute + under, Where{-1, -1, "(m " + std::to_string(i) + ")"});
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

// ---------------------------------------------------------------- grad_accum

// grad_accum.matches_full_batch: the gradient accumulated over A micro-batches
// equals one FP32 pass over the whole batch (the impl re-run at A = 1). Each
// is within its own bound of the exact gradient (the op's error model):
// gamma(B / A + A + F + 2) m for the call, gamma(B + F + 3) m for one pass, so
// |G_A - G_1| <= (gamma(B / A + A + F + 2) + gamma(B + F + 3) + 2u) m, plus
// both runs' gradual underflow (Op::underflow_allowance; m carries E's).
Result<Outcome> accum_matches_full_batch(const Context& ctx) {
  Call one = ctx.fresh_inputs();
  one.config.params["micro_batches"] = "1";
  KC_RETURN_IF_ERROR(detail::rerun(ctx, one, "grad_accum with micro_batches = 1"));
  KC_ASSIGN_OR_RETURN(std::vector<double> m, ctx.op.magnitude(ctx.call, "G"));
  const DType p = ctx.call.config.dtype;
  const double fa = gamma(ctx.op.accumulation_length(ctx.call), p);
  const double f1 = gamma(ctx.op.accumulation_length(one), p);
  const double u = unit_roundoff(p);
  const std::vector<double> ga = ctx.call.t("G").to_doubles(), g1 = one.t("G").to_doubles();
  const double under = ctx.underflow_of(ctx.call) + ctx.underflow_of(one);
  Judge judge("|G(accumulated) - G(one pass)|");
  const std::int64_t cols = ctx.call.t("G").dim(1);
  for (std::size_t i = 0; i < ga.size(); ++i)
    judge.check(ga[i] - g1[i], (fa + f1 + 2 * u) * m[i] + ctx.absolute + under,
                Where{static_cast<std::int64_t>(i) / cols, static_cast<std::int64_t>(i) % cols, {}});
  return judge.outcome();
}

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
  judge.check(static_cast<double>(std::sqrt(ny) - r),
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
      judge.check(y[i] - want[i], ctx.allowed(m[i], ctx.underflow_of(before)), Where{-1, -1, std::string("(t = ") + t + ", " + std::to_string(i) + ")"});
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
  const auto k = std::min(
      w.cols, static_cast<std::int64_t>(std::floor(ctx.call.get_double("sparsity", 0.5) * static_cast<double>(w.cols))));
  Judge judge("zeros in the row");
  for (std::int64_t r = 0; r < w.rows; ++r) {
    std::int64_t positive = 0, z0 = 0, n0 = 0, zy = 0;
    bool nan = false;
    for (std::int64_t c = 0; c < w.cols; ++c) {
      const double s = score[static_cast<std::size_t>(r * w.cols + c)];
      nan = nan || std::isnan(s);
      if (s > 0) ++positive;
      else if (w.at(r, c) == 0) ++z0;
      else ++n0;
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

void add_train_properties(std::vector<Property>& out) {
  out.push_back({"cross_entropy.nonnegative", {"cross_entropy"}, "every per-row loss is >= 0", xent_nonnegative});
  out.push_back({"cross_entropy.gradient_identity", {"cross_entropy"},
                 "each gradient row sums to 0 and dz_t + 1 = exp(-loss) (dz = softmax - onehot)",
                 xent_gradient_identity});
  out.push_back({"kd_loss.kl_nonnegative", {"kd_loss"}, "at alpha = 1 the loss T² KL is >= 0", kd_kl_nonnegative});
  out.push_back({"kd_loss.t2_scaling", {"kd_loss"}, "at alpha = 1, L(2 z, 2 T) = 4 L(z, T): the KL term carries T²",
                 kd_t2_scaling});
  out.push_back({"kd_loss.alpha_interpolation", {"kd_loss"}, "L(a) = a L(1) + (1 - a) L(0)", kd_alpha_interpolation});
  out.push_back({"adamw.decoupled_decay", {"adamw_step"},
                 "with g = m = v = 0 the step is the decay alone: p' = p (1 - lr wd), m' = v' = 0",
                 adamw_decoupled_decay});
  out.push_back({"adamw.zero_moment_first_step", {"adamw_step"},
                 "at t = 1 from m = v = 0: m' = (1 - b1) g, v' = (1 - b2) g², p' = p (1 - lr wd) - lr g / (|g| + eps)",
                 adamw_first_step});
  out.push_back({"adamw.hyperparameters_reach_update", {"adamw_step"},
                 "changing any of lr, beta1, beta2, eps, weight_decay moves the outputs as the oracle says they move",
                 adamw_hyper_reach});
  out.push_back({"grad_accum.matches_full_batch", {"grad_accum"},
                 "G accumulated over A micro-batches equals one pass over the batch within both rounding bounds",
                 accum_matches_full_batch});
  out.push_back({"slerp.on_sphere", {"slerp"}, "||y|| = ||a|| for a, b of one norm (not nearly parallel)",
                 slerp_on_sphere});
  out.push_back({"slerp.endpoints", {"slerp"}, "y(t = 0) = a and y(t = 1) = b", slerp_endpoints});
  out.push_back({"prune.exact_sparsity", {"prune_magnitude", "prune_wanda"},
                 "every row prunes exactly floor(sparsity cols) entries, its lowest scores (W's zeros first)",
                 prune_exact_sparsity});
  out.push_back({"prune.kept_unchanged", {"prune_magnitude", "prune_wanda"},
                 "every output entry is 0 or the weight bit for bit", prune_kept_unchanged});
  add_train_loop_properties(out);
}

}  // namespace kc::obligation
