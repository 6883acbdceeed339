// kc — tolerances as per-element allowed errors and ratios (docs/judge.md).
#include <cmath>
#include <limits>

#include "engine/case_run.h"
#include "kc/bound.h"
#include "kc/metrics.h"

namespace kc::engine {

/// Per-element allowed error for a tolerance in a given config.
Result<std::vector<double>> allowed_errors(const Tolerance& tol, const Op& op, const Call& call,
                                           const std::string& output, const std::vector<double>& ref) {
  ExprEnv env;
  env.vars = op.expr_vars(call);
  env.precision = call.config.dtype;
  env.accumulator = call.config.accumulator;
  const std::size_t n = ref.size();
  switch (tol.kind) {
    case Tolerance::Kind::kAbsolute: {
      KC_ASSIGN_OR_RETURN(double v, lang::eval_expr(tol.value, env));
      return std::vector<double>(n, v);
    }
    case Tolerance::Kind::kRelative: {
      KC_ASSIGN_OR_RETURN(double v, lang::eval_expr(tol.value, env));
      std::vector<double> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = v * std::fabs(ref[i]);
      return a;
    }
    case Tolerance::Kind::kElementwise: {
      KC_ASSIGN_OR_RETURN(double ab, lang::eval_expr(tol.abs, env));
      KC_ASSIGN_OR_RETURN(double re, lang::eval_expr(tol.rel, env));
      std::vector<double> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = ab + re * std::fabs(ref[i]);
      return a;
    }
    case Tolerance::Kind::kBound: {
      KC_ASSIGN_OR_RETURN(double factor, lang::eval_expr(tol.value, env));
      KC_ASSIGN_OR_RETURN(std::vector<double> mag, op.magnitude(call, output));
      // The bound |err| <= c * gamma * |A||B| assumes exact rounding of the
      // result into the output format: half an ulp of the reference is added,
      // so a correctly rounded result is never judged beyond the bound. So is
      // gradual underflow (Op::underflow_allowance, Higham (2.8)): each of the
      // L products (plus alpha/beta scalings) may add lambda = half the
      // smallest subnormal; without it a product of two subnormals (exactly 0
      // in FP32) breaks the bound. kc::verify's sampled rows use the same BoundAllowance.
      const BoundAllowance bound = bound_allowance(op, call, factor);
      for (std::size_t i = 0; i < mag.size() && i < n; ++i) mag[i] = bound.allowed(mag[i], ref[i]);
      mag.resize(n, 0);
      return mag;
    }
    case Tolerance::Kind::kPerPrecision: {
      KC_ASSIGN_OR_RETURN(const Tolerance* sub, tolerance_at(tol, call.config.dtype));
      return allowed_errors(*sub, op, call, output, ref);
    }
    case Tolerance::Kind::kNone:
      return std::vector<double>(n, 0.0);
    case Tolerance::Kind::kUlp:
    case Tolerance::Kind::kProse:
      break;
  }
  return invalid_argument("tolerance kind has no per-element form");
}

/// Ratios (metric / allowed) for one output; ULP tolerances compare ULP distances.
Result<std::vector<double>> output_ratios(const Tolerance& tol, const Op& op, const Call& call,
                                          const std::string& output, const std::vector<double>& got,
                                          const std::vector<double>& ref, std::vector<double>* allowed) {
  KC_ASSIGN_OR_RETURN(const Tolerance* t, tolerance_at(tol, call.config.dtype));
  std::vector<double> r(got.size());
  if (t->kind == Tolerance::Kind::kUlp) {
    ExprEnv env;
    env.vars = op.expr_vars(call);
    env.precision = call.config.dtype;
  env.accumulator = call.config.accumulator;
    KC_ASSIGN_OR_RETURN(double ulps, lang::eval_expr(t->value, env));
    const DType out_t = call.t(output).dtype();
    allowed->assign(got.size(), 0.0);
    for (std::size_t i = 0; i < got.size(); ++i) {
      // Reference rounded into the output format first: ULP distance is
      // measured between representable values.
      const double rounded = round_to(ref[i], out_t);
      const double d = ulp_distance(got[i], rounded, out_t);
      r[i] = d == 0 ? 0 : (ulps > 0 ? d / ulps : std::numeric_limits<double>::infinity());
      if (t->signed_zeros && got[i] == 0 && rounded == 0 && std::signbit(got[i]) != std::signbit(rounded))
        r[i] = std::numeric_limits<double>::infinity();  // `ulp E signed`: a zero of the wrong sign
      (*allowed)[i] = ulps * std::max(std::fabs(ref[i]) * eps(out_t), dtype_info(out_t).min_normal);
    }
    return r;
  }
  KC_ASSIGN_OR_RETURN(*allowed, allowed_errors(*t, op, call, output, ref));
  for (std::size_t i = 0; i < got.size(); ++i) r[i] = element_ratio(got[i], ref[i], (*allowed)[i]);
  return r;
}

Result<const Tolerance*> tolerance_at(const Tolerance& tol, DType dtype) {
  if (tol.kind != Tolerance::Kind::kPerPrecision) return &tol;
  for (const auto& [dt, sub] : tol.per_precision)
    if (dt == dtype) return &sub;
  return not_found("per_precision has no entry for " + std::string(dtype_name(dtype)));
}

const Tolerance* bound_tolerance(const Tolerance& tol, DType dtype) {
  auto t = tolerance_at(tol, dtype);
  return t.ok() && (*t)->kind == Tolerance::Kind::kBound ? *t : nullptr;
}

}  // namespace kc::engine
