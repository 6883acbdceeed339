// kc — the semantic classifier the training ops share: an alternative
// semantics the op documents (an oracle option) or a hyper-parameter left at
// its default that explains a failing output. Each op lists its own in its
// folder and runs this from Op::classifiers (stage kSemantics).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::ops {

/// One documented alternative semantics: the oracle option and value that
/// reproduce a known defect, the signature that names it, and the defect in words.
struct SemanticVariant {
  const char* key;
  const char* value;
  const char* signature;
  const char* meaning;
};

/// Tries `variants` in order (re-running the oracle with `with key = value`),
/// then each scalar hyper-parameter of `hypers` at its default instead of the
/// call's value (HYPERPARAMETER_IGNORED(name)); the first that explains the
/// output within the verdict's allowance is named.
void classify_semantics(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                        std::span<const SemanticVariant> variants, std::span<const char* const> hypers,
                        std::vector<Signature>* signatures, std::vector<std::string>* notes);

}  // namespace kc::ops
