// kc — the fused ops' own signature classifier (Op::classifiers, stage
// kSemantics): the activation the output matches instead of the configured one.
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/signature.h"
#include "ops/fused/fused.h"

namespace kc::ops {

void classify_alternatives(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                           std::vector<Signature>* sigs, std::vector<std::string>* notes) {
  // Semantic parameters whose silent substitution is a known failure, and the
  // signature that names it.
  struct Alternative {
    const char* param;
    std::vector<const char*> values;
    const char* signature;
  };
  static const std::vector<Alternative> kAlternatives = {
      {"activation", {"gelu_erf", "gelu_tanh", "silu", "relu", "identity"}, sig::kFusionDivergence},
  };
  for (const auto& alt : kAlternatives) {
    auto it = inputs.config.params.find(alt.param);
    if (it == inputs.config.params.end()) continue;
    for (const char* v : alt.values) {
      if (it->second == v) continue;
      Call other = inputs;
      other.config.params[alt.param] = v;
      auto oracle = op.oracle(other, options);
      if (!oracle.ok()) continue;
      for (std::size_t o = 0; o < oracle->output_names.size(); ++o) {
        if (oracle->output_names[o] != obs.output) continue;
        const double score = max_ratio(obs.got, oracle->outputs[o], obs.allowed);
        if (score <= 1) {
          sigs->push_back({alt.signature, {v}});
          notes->push_back(std::string("the output matches ") + alt.param + " = " + v + " (max ratio " +
                           format_number(score) + ") although the call asks for " + alt.param + " = " + it->second);
          return;
        }
      }
    }
  }
}

}  // namespace kc::ops
