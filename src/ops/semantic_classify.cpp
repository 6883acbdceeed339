// kc — the semantic classifier the training ops share (ops/semantic_classify.h).
//
// Two detectors, both by re-running the op's oracle on the failing call's
// inputs and asking whether that explains the output within the same
// per-element allowance the verdict used:
//  - a documented alternative semantics (an oracle option the op honours,
//    e.g. adamw_step `weight_decay = coupled`) names the defect;
//  - a hyper-parameter set to its default (the op's params table) instead of
//    the call's value: the kernel ignored it (HYPERPARAMETER_IGNORED(beta2)).
// Each op lists its own variants and hyper-parameters in its folder.
#include "ops/semantic_classify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kc/signature.h"

namespace kc::ops {
namespace {

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

/// max ratio of the observation against the oracle output of `call` under `options`; < 0 if none.
double explained_by(const Op& op, const Call& call, const OracleOptions& options, const Observation& obs) {
  auto oracle = op.oracle(call, options);
  if (!oracle.ok()) return -1;
  for (std::size_t o = 0; o < oracle->output_names.size(); ++o)
    if (oracle->output_names[o] == obs.output) return max_ratio(obs.got, oracle->outputs[o], obs.allowed);
  return -1;
}

}  // namespace

void classify_semantics(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                        std::span<const SemanticVariant> variants, std::span<const char* const> hypers,
                        std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  const double base = max_ratio(obs.got, obs.ref, obs.allowed);
  for (const SemanticVariant& v : variants) {
    OracleOptions alt = options;
    alt.with[v.key] = v.value;
    const double r = explained_by(op, inputs, alt, obs);
    if (r >= 0 && r <= 1) {
      sigs->push_back({v.signature, {}});
      notes->push_back(std::string(v.meaning) + " (max ratio " + fmt_g(r) + " against " + v.key + " = " + v.value +
                       ", " + fmt_g(base) + " against the contract's reference)");
      return;
    }
  }
  for (const char* p : hypers) {
    std::string fallback;
    for (const auto& param : op.params())
      if (param.name == p) fallback = param.default_value;
    const std::string have = inputs.config.get(p);
    if (fallback.empty() || have.empty() || have == fallback) continue;
    Call other = inputs;
    other.config.params[p] = fallback;
    const double r = explained_by(op, other, options, obs);
    if (r >= 0 && r <= 1) {
      sigs->push_back({sig::kHyperparameterIgnored, {p}});
      notes->push_back("the output matches " + std::string(p) + " = " + fallback + " (max ratio " + fmt_g(r) +
                       ") although the call sets " + p + " = " + have + ": the kernel does not read " + p);
      return;
    }
  }
}

}  // namespace kc::ops
