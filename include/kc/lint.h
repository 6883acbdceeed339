// kc — lint checks that need the engine's tables: names a contract's
// `reference` clause uses that only the engine and the ops hold (algebraic
// properties, kc/obligation.h; stable algorithms and specs, kc/oracles.h).
// The language front ends check every other name (kc/vocabulary.h).
#pragma once

#include <string>
#include <vector>

#include "kc/lang.h"
#include "kc/model.h"

namespace kc::engine {

/// One error per `reference algebraic FAMILY.PROPERTY`, `stable_algorithm NAME`
/// or `spec NAME` whose name kc does not hold, or holds for none of the
/// contract's ops (the contract could never be judged): at the name, with the
/// line, and the nearest known name. `files` is parallel to `contracts`.
std::vector<lang::Diagnostic> check_reference_names(const std::vector<Contract>& contracts,
                                                    const std::vector<std::string>& files);

/// One warning per contract whose `compute`/`observe` metric is not what the
/// engine measures under its tolerance and postcondition (`compute max ulp`
/// under `tolerance relative 1e-5` is judged as a relative error, whatever
/// the clause says): at the metric, with the metrics that fit. Also one per
/// `pass if` the engine does not decide by: a comparison other than <=, a
/// bound other than 1 for a unit metric (judged as a ratio to its tolerance),
/// other than 0 for a count.
std::vector<lang::Diagnostic> check_metric_units(const std::vector<Contract>& contracts,
                                                 const std::vector<std::string>& files);

}  // namespace kc::engine
