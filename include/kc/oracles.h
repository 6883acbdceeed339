// kc — named oracles: what `reference stable_algorithm NAME` and
// `reference spec NAME` select (docs/judge.md, "Named references").
//
// One table: each row is a name, an op it applies to, and the function that
// computes that op's reference under the name. A stable algorithm is the named
// algorithm evaluated in FP64, operation by operation (the oracle carries the
// algorithm's own FP64 rounding, not the exact value); a spec is what the
// named document defines (IEEE754-2019: the correctly rounded result, via
// MPFR, with the standard's special values exact). The engine resolves a
// contract's clause here, `kc lint` can check names here, and each op folder
// owns the functions (src/ops/<op>/stable.cpp, src/ops/elementwise/spec.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/model.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc {

using OracleFn = Result<OracleResult> (*)(const Call& call, const OracleOptions& options);

struct NamedOracle {
  Reference::Kind kind = Reference::Kind::kStableAlgorithm;  ///< kStableAlgorithm or kSpec
  std::string_view name;  ///< canonical name: "kahan_sum", "IEEE754-2019"
  std::string_view op;    ///< the op this row applies to
  std::string_view what;  ///< one line: what the reference computes
  /// The oracle. Null: the op's own oracle computes exactly what the spec
  /// defines (an exact semantics: byte identity, a ranking, the declared
  /// out-of-bounds behaviour), so the engine keeps it.
  OracleFn oracle = nullptr;
  /// Needs MPFR; in a build without it the case is not_applicable.
  bool needs_mpfr = false;
};

/// Every row, in a stable order (name, then op).
std::span<const NamedOracle> named_oracles();

/// The canonical names of one kind (each once, in table order).
std::vector<std::string> named_oracle_names(Reference::Kind kind);

/// The row for (kind, name, op); the name compares case-insensitively with
/// '-', '_' and spaces the same. Null when none.
const NamedOracle* find_named_oracle(Reference::Kind kind, std::string_view name, std::string_view op);

/// What a name the table does not hold for this op should say: "no
/// stable_algorithm 'kahan' (did you mean kahan_sum?)" or "stable_algorithm
/// kahan_sum applies to sum, not variance (for variance: two_pass_variance,
/// welford_variance)". Empty when the row exists.
std::string named_oracle_error(Reference::Kind kind, std::string_view name, std::string_view op);

/// A spec whose rules the declared_policy judges (NaN/Inf propagation,
/// gradual underflow) apply, whatever the op: IEEE754-2019.
bool is_policy_spec(std::string_view name);

/// Whether this build has MPFR (the correctly rounded spec oracles).
bool built_with_mpfr();

}  // namespace kc
