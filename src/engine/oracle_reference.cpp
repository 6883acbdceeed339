// kc — named references in the engine (engine/oracle_reference.h).
#include "engine/oracle_reference.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "kc/oracles.h"
#include "kc/signature.h"

namespace kc::engine {
namespace {

bool named_kind(const Reference& r) {
  return r.kind == Reference::Kind::kStableAlgorithm || r.kind == Reference::Kind::kSpec;
}

std::string clause(const Reference& r) {
  return std::string(r.kind == Reference::Kind::kSpec ? "spec " : "stable_algorithm ") + r.name;
}

/// The row that answers this case's samples, or null (the op's own oracle,
/// or a policy judge applying the spec's rules).
const NamedOracle* answering_row(const CaseRun& c) {
  const Reference& r = c.contract.reference;
  if (!named_kind(r)) return nullptr;
  if (r.kind == Reference::Kind::kSpec && c.plan.policy_judge && is_policy_spec(r.name)) return nullptr;
  const NamedOracle* row = find_named_oracle(r.kind, r.name, c.op.name());
  return row && row->oracle ? row : nullptr;
}

/// "%.9g", with a zero's sign and an infinity's always written: +0, -0, +inf.
std::string value_text(double v) {
  if (v == 0) return std::signbit(v) ? "-0" : "+0";
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Step setup_named_reference(CaseRun& c) {
  const Reference& r = c.contract.reference;
  if (!named_kind(r)) return Step::next();
  // `spec IEEE754-2019` under `declared_policy nan | denormal`: the policy
  // judge applies the standard's rules (NaN and infinity propagation,
  // gradual underflow) to whatever op it judges.
  if (r.kind == Reference::Kind::kSpec && c.plan.policy_judge && is_policy_spec(r.name)) return Step::next();
  const std::string op(c.op.name());
  const NamedOracle* row = find_named_oracle(r.kind, r.name, op);
  if (!row) return Step::end_case(Verdict::kUnderSpecified, "reference " + clause(r) + ": " +
                                                                named_oracle_error(r.kind, r.name, op));
  if (!row->oracle) return Step::next();  // the op's own oracle computes what the spec defines
  const Postcondition::Kind post = c.contract.post.kind;
  if ((post != Postcondition::Kind::kElementwiseClose && post != Postcondition::Kind::kClose) ||
      c.plan.policy_judge || c.plan.property || c.plan.invocations != 1)
    return Step::end_case(Verdict::kUnderSpecified,
                          "reference " + clause(r) + " gives outputs to compare with: the post clause must be "
                          "'output O satisfies elementwise_close(O, ref(O))' or 'close(O, ref(O))'");
  if (row->needs_mpfr && !built_with_mpfr())
    return Step::end_case(Verdict::kNotApplicable,
                          "reference " + clause(r) + " needs MPFR for the correctly rounded " + op +
                              ": kc was built without MPFR (scripts/install-deps.sh installs libmpfr-dev; then "
                              "re-run cmake)");
  return Step::next();
}

std::function<Result<OracleResult>(const Call&)> named_reference(const CaseRun& c, SampleCache* cache,
                                                                 const std::string& inputs_key) {
  const NamedOracle* row = answering_row(c);
  if (!row) return {};
  OracleOptions options = c.oracle_options;
  const std::string key = [&] {
    if (!cache || c.request.prepare_inputs) return std::string();
    OracleOptions keyed = options;
    keyed.with["reference"] = clause(c.contract.reference);
    return SampleCache::oracle_key(inputs_key, keyed);
  }();
  const OracleFn fn = row->oracle;
  return [fn, options, cache, key](const Call& call) -> Result<OracleResult> {
    if (!key.empty())
      if (std::optional<OracleResult> hit = cache->find_oracle(key)) return std::move(*hit);
    Result<OracleResult> computed = fn(call, options);
    if (computed.ok() && !key.empty()) cache->put_oracle(key, *computed);
    return computed;
  };
}

void judge_exact_elements(CaseRun& c, const Sample& s, std::size_t o, const std::vector<double>& got,
                          const std::vector<std::uint8_t>& unwritten, std::vector<double>* ratios) {
  if (o >= s.oracle->exact.size() || ratios->size() != got.size()) return;  // normwise: one ratio per output
  const std::vector<std::uint8_t>& exact = s.oracle->exact[o];
  const std::vector<double>& ref = s.oracle->outputs[o];
  auto tol = tolerance_at(c.contract.tolerance, s.call.config.dtype);
  const bool signed_zero = tol.ok() && (*tol)->signed_zeros;
  const std::string& name = s.oracle->output_names[o];
  std::int64_t missed = 0, first = -1, special = 0;
  for (std::size_t i = 0; i < exact.size() && i < got.size() && i < ref.size(); ++i) {
    if (!exact[i] || (i < unwritten.size() && unwritten[i])) continue;
    ++special;
    const bool same = (std::isnan(got[i]) && std::isnan(ref[i])) ||
                      (got[i] == ref[i] && (!signed_zero || std::signbit(got[i]) == std::signbit(ref[i])));
    if (same) continue;
    (*ratios)[i] = std::numeric_limits<double>::infinity();
    if (first < 0) first = static_cast<std::int64_t>(i);
    ++missed;
  }
  // Named once per case, from the first sample that misses one (the
  // failures of every sample are counted by the judge as usual).
  if (missed == 0) return;
  for (const Signature& sg : c.ev.signatures)
    if (sg.name == sig::kSpecialValue) return;
  const Tensor& out = s.call.t(name);
  std::string input;
  if (s.inputs.has("x") && s.inputs.t("x").numel() == static_cast<std::int64_t>(got.size()))
    input = " for x = " + value_text(s.inputs.t("x").at(first));
  c.ev.add_signature({sig::kSpecialValue, {std::to_string(missed)}});
  c.ev.note(std::to_string(missed) + " of " + std::to_string(special) + " special values of " + name +
            " differ from the exact values reference " + clause(c.contract.reference) +
            " fixes (no tolerance applies there), in the first sample that has any: " + name +
            position_of(out, first) + " = " + value_text(got[static_cast<std::size_t>(first)]) + input +
            ", the spec gives " + value_text(ref[static_cast<std::size_t>(first)]));
}

std::string close_named_reference(CaseRun& c) {
  const NamedOracle* row = answering_row(c);
  if (!row || !c.ev.any_run) return {};
  const std::string ref = clause(c.contract.reference);
  c.ev.result().evidence.method = c.contract.reference.kind == Reference::Kind::kSpec ? "spec" : "stable_algorithm";
  c.ev.note("oracle: " + ref + " for " + std::string(row->op) + " = " + std::string(row->what) + "; " + c.decl.name +
            " compared with it under `" + c.contract.tolerance_info.text + "`");
  return " [oracle: " + ref + "]";
}

}  // namespace kc::engine
