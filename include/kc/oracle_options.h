// kc — whether an op's oracle honours a contract's `reference higher_precision
// P with key = value, ...` (kc/op.h, Op::oracle_options). An option the op
// does not declare would be silently ignored by its oracle, so such a clause is
// descriptive at `kc lint` and the engine judges the case under_specified; a
// precision P other than FP64 is the same (the oracles compute in FP64 or
// wider and round nothing to P).
#pragma once

#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/op.h"

namespace kc::engine {

/// What in `c`'s reference clause `op`'s oracle does not honour, for a
/// higher_precision reference: a precision other than FP64, or the first
/// `with` key the op does not declare or value it does not accept, with the
/// op's known keys (values) and the nearest. Empty when it honours all of it.
/// `word` (optional) gets the offending word as written.
std::string unhonoured_reference(const Contract& c, const Op& op, std::string* word = nullptr);

/// For `kc lint`: marks the reference clause of each contract that one of its
/// scope's ops does not honour as descriptive (its gap, at the word in the
/// file). `files` is parallel to `contracts` (empty: the clause's own file).
void mark_unhonoured_references(std::vector<Contract>* contracts, const std::vector<std::string>& files);

/// `kc list oracle-options`: one row per op and option (op, key, values, meaning).
std::vector<std::vector<std::string>> oracle_option_rows();

}  // namespace kc::engine
