// kc — properties of grad_accum (docs/transformer-training.md).
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
#include "ops/train/grad_accum.h"

namespace kc::obligation {
namespace {

using detail::fmt_g;

// ---------------------------------------------------------------- grad_accum

// grad_accum.matches_full_batch: the gradient accumulated over A micro-batches
// equals one FP32 pass over the whole batch (the impl re-run at A = 1). Each
// is within its own bound of the exact gradient (the op's error model):
// gamma(B / A + A + F + 2) m for the call, gamma(B + F + 3) m for one pass, so
// |G_A - G_1| <= (gamma(B / A + A + F + 2) + gamma(B + F + 3) + 2u) m, plus
// both runs' gradual underflow (Op::underflow_allowance; m carries E's).
Result<Outcome> accum_matches_full_batch(const Context& ctx) {
  Call one = ctx.fresh_inputs();
  one.config.params.insert_or_assign("micro_batches", std::string(1, '1'));
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

}  // namespace

void add_grad_accum_properties(std::vector<Property>& out) {
  out.push_back({"grad_accum.matches_full_batch",
                 {"grad_accum"},
                 "G accumulated over A micro-batches equals one pass over the batch within both rounding bounds",
                 accum_matches_full_batch});
}

}  // namespace kc::obligation
