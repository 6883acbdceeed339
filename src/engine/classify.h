// kc — the signature classifier: names the pattern behind a failed comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::engine {

/// The observation every classifier reads, and the element ratio, are kc's
/// public types (kc/observation.h): an op's own classifiers (Op::classifiers)
/// live in its folder and read the same ones.
using kc::element_ratio;
using kc::max_ratio;
using kc::Observation;

/// Pure-pattern detectors over one observation (no re-execution). Each
/// appends a signature and a human-readable note when its pattern is present.
void classify_values(const Observation& obs, std::vector<Signature>* signatures,
                     std::vector<std::string>* notes);

/// Input-precision fingerprint: re-runs the oracle on the call's inputs
/// rounded to tf32, bf16 and fp16 and names the narrowest format that
/// explains the observation within the same tolerance.
void classify_fingerprint(const Op& op, const Call& inputs, const OracleOptions& options,
                          const Observation& obs, std::vector<Signature>* signatures,
                          std::vector<std::string>* notes);

/// Accumulator precision of a sum (ops with accumulation length >= 2, e.g.
/// matmul): names the coarsest format t (BF16, then FP16) such that every
/// output value is a t value, while most reference values are not, and every
/// element is within what a t accumulation allows, gamma(L, t) * magnitude +
/// u(t) |ref| + (L + 2) lambda(t). Both are needed: the grid alone could be
/// integer data, the bound alone a dropped term of a short sum.
void classify_accumulator_precision(const Op& op, const Call& inputs, const Observation& obs,
                                    std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Names the pattern behind a case's first failure: the classifiers above and
/// the op's own (Op::classifiers, in its folder), tried in one order (the
/// op's probe readings, the value patterns, then the re-running classifiers
/// from the cheapest, the op's semantic ones last); the first that names a
/// pattern wins.
void classify_failure(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                      std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Attributes failures to one config axis: failing configs share values of
/// a parameter that passing configs never have (schedule, ranks, loss scale,
/// shape sizes).
void classify_axes(const std::vector<Config>& configs, const std::vector<bool>& failed,
                   const std::vector<bool>& ran, std::vector<Signature>* signatures,
                   std::vector<std::string>* notes);

}  // namespace kc::engine
