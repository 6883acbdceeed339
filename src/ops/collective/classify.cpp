// kc — the collectives' own signature classifier (Op::classifiers, stage
// kPrecision): the wire precision of their messages.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kc/bound.h"
#include "kc/dtype.h"
#include "kc/model.h"
#include "kc/observation.h"
#include "kc/signature.h"
#include "ops/collective/collective.h"

namespace kc::ops {

void classify_wire_precision(const Op& op, const Call& inputs, const Observation& obs, std::vector<Signature>* sigs,
                             std::vector<std::string>* notes) {
  auto mag = op.magnitude(inputs, obs.output);
  if (!mag.ok() || mag->size() < obs.got.size() || obs.got.size() != obs.ref.size()) return;
  const double k = op.accumulation_length(inputs);
  for (DType t : {DType::kF16, DType::kBF16}) {
    const double g = gamma(k + 1, t), u = unit_roundoff(t);
    double worst = 0;  // max |got - ref| / (what a t wire allows)
    bool explained = true;
    for (std::size_t i = 0; i < obs.got.size() && explained; ++i) {
      const double allowed = g * (*mag)[i] + u * std::fabs(obs.ref[i]);
      const double r = element_ratio(obs.got[i], obs.ref[i], allowed);
      explained = r <= 1;
      worst = std::max(worst, r);
    }
    if (!explained) continue;
    const std::string wire(dtype_info(t).short_name);
    sigs->push_back({sig::kWirePrecision, {wire}});
    notes->push_back("every element of '" + obs.output + "' is within the error of " + wire +
                     " messages (gamma(K + 1, " + wire + ") * sum_r |x_r|, max ratio " + format_number(worst) +
                     ") but not of FP32 ones: values were compressed to " + wire + " on the wire");
    return;
  }
}

}  // namespace kc::ops
