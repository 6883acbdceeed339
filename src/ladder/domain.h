// kc — internal: what the ladder derives from a contract and an op: the value
// domain the precondition admits, the op's extent parameters, ordered bit
// images for bisection, and the kinds of enumerable (L4) domains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/op.h"

namespace kc::ladder::detail {

/// The input values a contract's precondition admits. normal(mu, s) is read
/// as [mu - 8s, mu + 8s] (a normal sample leaves it with probability 1e-15):
/// the contract's sampling distribution, not every real number.
struct ValueDomain {
  double lo = -1, hi = 1;
  bool finite_only = true;  ///< NaN and +-Inf are never in a value_range domain
  std::string text;         ///< "finite", "[-24, 24] (normal(0, 3) +- 8 sigma)"
  bool contains(double v) const;
};
/// The domain of the first value_range predicate, clipped to dtype's finite range.
ValueDomain value_domain(const Contract& contract, DType dtype);

/// Op parameters that are extents (sizes): integer default >= 2. Sizes are
/// what a boundary shape varies; flags, scales and strides keep their defaults.
std::vector<std::string> extent_params(const Op& op);

/// Monotone integer image of v's bit pattern in dtype (F64, F32, F16, BF16);
/// nullopt for other dtypes. from_ordered inverts it.
std::optional<std::int64_t> to_ordered(double v, DType dtype);
double from_ordered(std::int64_t k, DType dtype);

/// How an op's input space can be enumerated.
enum class EnumerableKind {
  kNone,
  kUnary,  ///< one input x {n}, one output: every value of the format, one per element
  kPairs,  ///< rows x cols with independent rows: every pair of values, one pair per row
};
EnumerableKind enumerable_kind(const Op& op);

/// Every value of a 16-bit format (F16 or BF16) in the domain, by bit pattern order.
std::vector<double> all_values_16(DType format, const ValueDomain& domain, std::int64_t* excluded);

}  // namespace kc::ladder::detail
