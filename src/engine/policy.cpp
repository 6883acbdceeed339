#include "engine/policy.h"

#include <cmath>
#include <cstdio>

#include "kc/metrics.h"
#include "kc/ops/elementwise.h"
#include "kc/signature.h"
#include "kc/vocabulary.h"

namespace kc::engine {

namespace {

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Outputs of the call after the impl ran, in oracle order.
std::vector<std::vector<double>> outputs_of(const PolicyInputs& in) {
  std::vector<std::vector<double>> out;
  for (const auto& name : in.oracle->output_names) out.push_back(in.outputs->t(name).to_doubles());
  return out;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;
}

/// The declared value of f(±inf) where the limit and the formula in IEEE
/// arithmetic differ (ops/elementwise/elementwise.h, inf_policy): "LIMIT",
/// "FORMULA", or empty when the impl declares neither.
std::string declared_inf_policy(const Declaration& decl) {
  const std::string v = decl.get(ops::kInfPolicyKey);
  if (iequals(v, ops::kInfPolicyLimit)) return ops::kInfPolicyLimit;
  if (iequals(v, ops::kInfPolicyFormula)) return ops::kInfPolicyFormula;
  return "";
}

PolicyOutcome judge_nan(const PolicyInputs& in) {
  PolicyOutcome o;
  const NanPolicy declared = in.decl->nan;
  const std::string declared_name(enum_name(nan_policy_table(), declared));
  const bool raised = in.status.code() == StatusCode::kKernelRaised;
  if (raised) {
    o.observed = "RAISE";
    o.elements = 1;
    o.pass = declared == NanPolicy::kRaise;
    if (!o.pass) {
      o.mismatches = 1;
      o.signatures.push_back({sig::kUnexpectedRaise, {}});
      o.notes.push_back("the kernel raised on NaN/Inf input (" + in.status.message() + ") but declares nan = " +
                        declared_name);
    }
    return o;
  }
  // Two references: the limit (the oracle's default) and the defining formula
  // evaluated in IEEE arithmetic. Where they differ (gelu/silu at -inf: 0 or
  // NaN) the impl's declared inf_policy says which one it promised; an impl
  // that declares neither is not judged there, and what it returned is noted.
  const std::string inf_policy = declared_inf_policy(*in.decl);
  OracleOptions formula_options = in.options;
  formula_options.with[ops::kInfPolicyKey] = ops::kInfPolicyFormula;
  OracleOptions limit_options = in.options;
  limit_options.with[ops::kInfPolicyKey] = ops::kInfPolicyLimit;
  auto limit_or = in.op->oracle(*in.inputs, limit_options);
  auto formula_or = in.op->oracle(*in.inputs, formula_options);
  const OracleResult* limit = limit_or.ok() ? &*limit_or : in.oracle;
  const OracleResult* formula = formula_or.ok() ? &*formula_or : in.oracle;
  const OracleResult* ref_or = inf_policy == ops::kInfPolicyFormula ? formula : limit;

  std::int64_t swallowed = 0, introduced = 0, inf_sign = 0, nan_out = 0;
  std::int64_t nan_to_inf = 0;  // of the swallowed: +-Inf where the reference is NaN (exp(NaN) = +Inf)
  std::int64_t policy_points = 0, unjudged = 0, unjudged_nan = 0;
  const auto got = outputs_of(in);
  for (std::size_t k = 0; k < got.size(); ++k) {
    const auto& ref = ref_or->outputs[k];
    for (std::size_t i = 0; i < got[k].size() && i < ref.size(); ++i) {
      const double g = got[k][i], r = ref[i];
      const bool differ = !same_value(limit->outputs[k][i], formula->outputs[k][i]);
      policy_points += differ;
      if (differ && inf_policy.empty()) {
        ++unjudged;
        unjudged_nan += std::isnan(g);
        continue;
      }
      ++o.elements;
      nan_out += std::isnan(g);
      if (std::isnan(r)) {
        swallowed += !std::isnan(g);
        nan_to_inf += std::isinf(g);
      } else if (std::isinf(r)) {
        if (std::isnan(g)) ++introduced;
        else if (std::isinf(g) && g != r) ++inf_sign;
        else if (!std::isinf(g)) ++swallowed;
      } else if (!std::isfinite(g)) {
        ++introduced;
      }
    }
  }
  const std::string reference =
      inf_policy.empty() ? std::string("the reference") : "the " + inf_policy + " reference (inf_policy = " + inf_policy + ")";
  if (unjudged > 0)
    o.notes.push_back(std::to_string(unjudged) + " outputs at inputs where the limit and the formula in IEEE arithmetic "
                      "differ (e.g. -inf * 0 = NaN against the limit 0) are not judged: " + in.decl->name +
                      " declares no inf_policy (LIMIT or FORMULA); it returned NaN for " + std::to_string(unjudged_nan) +
                      " of them");
  else if (policy_points > 0)
    o.notes.push_back(std::to_string(policy_points) + " outputs judged against the declared inf_policy = " + inf_policy);
  o.observed = (swallowed > 0 && introduced == 0) ? "MASK" : "IEEE_PROPAGATE";
  switch (declared) {
    case NanPolicy::kRaise:
      o.pass = false;
      o.mismatches = 1;
      o.signatures.push_back({sig::kMissingRaise, {}});
      o.notes.insert(o.notes.begin(), "NaN/Inf inputs were accepted silently by a kernel that declares nan = RAISE");
      break;
    case NanPolicy::kMask:
      o.mismatches = nan_out;
      o.pass = nan_out == 0;
      if (!o.pass) {
        o.signatures.push_back({sig::kNanIntroduced, {std::to_string(nan_out)}});
        o.notes.insert(o.notes.begin(), std::to_string(nan_out) + " NaN outputs from a kernel that declares nan = MASK");
      }
      break;
    case NanPolicy::kIeeePropagate: {
      o.mismatches = swallowed + introduced + inf_sign;
      o.pass = o.mismatches == 0;
      std::vector<std::string> found;
      if (swallowed) {
        o.signatures.push_back({sig::kNanSwallowed, {std::to_string(swallowed)}});
        // Say what the values are: exp(NaN) = +Inf is not a finite output.
        const std::int64_t finite = swallowed - nan_to_inf;
        std::string what = finite > 0 ? std::to_string(finite) + " outputs are finite" : std::string();
        if (nan_to_inf > 0)
          what += (what.empty() ? "" : " and ") + std::to_string(nan_to_inf) + " are +-Inf";
        found.push_back(what + " where " + reference + " is NaN or Inf (declared nan = IEEE_PROPAGATE)");
      }
      if (introduced) {
        o.signatures.push_back({sig::kNanIntroduced, {std::to_string(introduced)}});
        found.push_back(std::to_string(introduced) + " outputs are NaN or Inf where " + reference + " is finite");
      }
      if (inf_sign) {
        o.signatures.push_back({sig::kInfSign, {std::to_string(inf_sign)}});
        found.push_back(std::to_string(inf_sign) + " infinite outputs have the opposite sign to " + reference);
      }
      o.notes.insert(o.notes.begin(), found.begin(), found.end());
      break;
    }
  }
  return o;
}

/// Copy of the call with every subnormal (in its storage format) replaced by a signed zero.
Call flush_inputs(const Call& call) {
  Call c = call;
  for (std::size_t k = 0; k < c.tensors.size(); ++k) {
    if (c.roles[k] == Role::kOut) continue;
    Tensor& t = c.tensors[k];
    const auto& info = dtype_info(t.dtype());
    if (!info.is_float) continue;
    for (std::int64_t i = 0; i < t.storage_elems(); ++i) {
      const double v = t.load(i);
      if (v != 0 && std::fabs(v) < info.min_normal) t.store(i, std::signbit(v) ? -0.0 : 0.0);
    }
  }
  return c;
}

PolicyOutcome judge_denormal(const PolicyInputs& in) {
  PolicyOutcome o;
  const auto got = outputs_of(in);
  auto ftz_or = in.op->oracle(flush_inputs(*in.inputs), in.options);
  double d_ieee = 0, d_ftz = 0, spread = 0;
  std::int64_t subnormal_results = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const DType dt = in.outputs->t(in.oracle->output_names[k]).dtype();
    const double tiny = dtype_info(dt).min_normal;
    for (std::size_t i = 0; i < got[k].size(); ++i) {
      const double ieee = round_to(in.oracle->outputs[k][i], dt);
      double ftz = ftz_or.ok() ? round_to(ftz_or->outputs[k][i], dt) : ieee;
      if (std::fabs(ftz) < tiny) ftz = std::signbit(ftz) ? -0.0 : 0.0;  // flush subnormal results too
      subnormal_results += ieee != 0 && std::fabs(ieee) < tiny;
      const double g = got[k][i];
      ++o.elements;
      // Only elements where the two references differ say anything about
      // subnormal handling; elsewhere a kernel's ordinary rounding (a few ulp
      // of tanh or erf) would outweigh the subnormal-sized spread.
      if (ieee == ftz || (std::isnan(ieee) && std::isnan(ftz))) continue;
      // NaN matches NaN and an infinity itself (log of a flushed input is -inf).
      auto dist = [](double a, double b) {
        if (a == b || (std::isnan(a) && std::isnan(b))) return 0.0;
        if (std::isnan(a) || std::isnan(b)) return HUGE_VAL;
        return std::fabs(a - b);
      };
      d_ieee += dist(g, ieee);
      d_ftz += dist(g, ftz);
      spread += dist(ieee, ftz);
    }
  }
  const bool declared_ieee = in.decl->denormal == DenormalPolicy::kIeee;
  const std::string declared(enum_name(denormal_policy_table(), in.decl->denormal));
  if (spread == 0) {
    o.observed = "INCONCLUSIVE";
    o.notes.push_back("the probe produced no subnormal input or result that IEEE and FTZ/DAZ treat differently");
    return o;
  }
  // The observed class is the reference the output is clearly closer to.
  if (d_ftz < d_ieee && d_ftz <= 0.5 * spread) o.observed = "FTZ";
  else if (d_ieee < d_ftz && d_ieee <= 0.5 * spread) o.observed = "IEEE";
  else o.observed = "NEITHER";
  o.notes.push_back("distance to the IEEE reference " + fmt_g(d_ieee) + ", to the FTZ/DAZ reference " +
                    fmt_g(d_ftz) + " (they differ by " + fmt_g(spread) + "; " + std::to_string(subnormal_results) +
                    " subnormal results under IEEE)");
  if (o.observed == "IEEE") {
    o.pass = declared_ieee;
    if (!o.pass) o.signatures.push_back({sig::kIeeeObserved, {}});
  } else if (o.observed == "FTZ") {
    o.pass = !declared_ieee;
    if (!o.pass) o.signatures.push_back({sig::kFtzObserved, {}});
  } else {
    o.pass = false;
  }
  if (!o.pass) {
    o.mismatches = 1;
    o.notes.insert(o.notes.begin(), "subnormal handling observed: " + o.observed + "; declared denormal = " + declared);
  }
  return o;
}

PolicyOutcome judge_oob(const PolicyInputs& in) {
  PolicyOutcome o;
  const OobPolicy declared = in.decl->oob;
  OracleOptions opt = in.options;
  opt.oob = OobPolicy::kRaise;
  auto raise_or = in.op->oracle(*in.inputs, opt);
  if (!raise_or.ok() || !raise_or->raises) {
    o.observed = "INCONCLUSIVE";
    o.notes.push_back("no index was out of range in this input");
    return o;
  }
  o.elements = 1;
  const bool raised = in.status.code() == StatusCode::kKernelRaised;
  std::string shown;
  if (raised) {
    o.observed = "RAISE";
  } else {
    const auto got = outputs_of(in);
    for (OobPolicy p : {OobPolicy::kClamp, OobPolicy::kZero}) {
      opt.oob = p;
      auto ref = in.op->oracle(*in.inputs, opt);
      if (!ref.ok()) continue;
      bool all = true;
      for (std::size_t k = 0; k < got.size() && all; ++k)
        for (std::size_t i = 0; i < got[k].size() && all; ++i) all = same_value(got[k][i], ref->outputs[k][i]);
      if (all) {
        o.observed = std::string(enum_name(oob_policy_table(), p));
        break;
      }
      if (p == OobPolicy::kClamp && shown.empty()) {
        // Show the first element that differs from the clamped answer: what came back for an OOB index.
        for (std::size_t k = 0; k < got.size() && shown.empty(); ++k)
          for (std::size_t i = 0; i < got[k].size(); ++i) {
            if (same_value(got[k][i], ref->outputs[k][i])) continue;
            shown = "output '" + in.oracle->output_names[k] + "'[" + std::to_string(i) + "] = " + fmt_g(got[k][i]) +
                    " (CLAMP would give " + fmt_g(ref->outputs[k][i]) + ", ZERO 0)";
            break;
          }
      }
    }
    if (o.observed.empty()) o.observed = "NONE";
  }
  const std::string declared_name(enum_name(oob_policy_table(), declared));
  if (declared == OobPolicy::kUndefined) {
    o.notes.push_back("declared UNDEFINED: no promise; observed " + o.observed);
    return o;
  }
  o.pass = o.observed == declared_name;
  if (o.pass) return o;
  o.mismatches = 1;
  if (o.observed == "NONE") {
    o.signatures.push_back({sig::kOobUndeclared, {"matches none of RAISE/CLAMP/ZERO"}});
    o.notes.push_back("undeclared policy: out-of-range indices returned values that match none of RAISE, CLAMP, "
                      "ZERO (declared " + declared_name + "); " + shown);
  } else {
    o.signatures.push_back({sig::kOobPolicy, {o.observed}});
    o.notes.push_back("out-of-range indices behave as " + o.observed + " but the kernel declares oob = " + declared_name);
  }
  return o;
}

}  // namespace

Result<PolicyOutcome> judge_policy(const std::string& policy, const PolicyInputs& in) {
  if (policy == "nan") return judge_nan(in);
  if (policy == "denormal") return judge_denormal(in);
  if (policy == "oob") return judge_oob(in);
  if (policy == "unsupported") return judge_unsupported(in);
  if (policy == "path") return judge_path(in);
  std::string known;
  for (const auto& name : word_names(policy_table())) known += (known.empty() ? "" : " | ") + name;
  return invalid_argument("no judge for declared_policy '" + policy + "' (" + known + ")");
}

}  // namespace kc::engine
