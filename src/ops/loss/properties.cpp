// kc — properties of the losses, cross_entropy and kd_loss
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
#include "ops/loss/loss.h"
#include "ops/obligation_util.h"

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

}  // namespace

void add_loss_properties(std::vector<Property>& out) {
  out.push_back({"cross_entropy.nonnegative", {"cross_entropy"}, "every per-row loss is >= 0", xent_nonnegative});
  out.push_back({"cross_entropy.gradient_identity", {"cross_entropy"},
                 "each gradient row sums to 0 and dz_t + 1 = exp(-loss) (dz = softmax - onehot)",
                 xent_gradient_identity});
  out.push_back({"kd_loss.kl_nonnegative", {"kd_loss"}, "at alpha = 1 the loss T² KL is >= 0", kd_kl_nonnegative});
  out.push_back({"kd_loss.t2_scaling", {"kd_loss"}, "at alpha = 1, L(2 z, 2 T) = 4 L(z, T): the KL term carries T²",
                 kd_t2_scaling});
  out.push_back({"kd_loss.alpha_interpolation", {"kd_loss"}, "L(a) = a L(1) + (1 - a) L(0)", kd_alpha_interpolation});
}

}  // namespace kc::obligation
