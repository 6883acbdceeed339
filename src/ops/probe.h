// kc — the generic probe machinery behind Op::apply_probe, shared by the core
// ops (matmul, blas1, reduce, softmax). Internal to src/ops.
#pragma once

#include <string>
#include <vector>

#include "kc/op.h"

namespace kc::ops::detail {

/// Names of the kIn/kInOut tensors with a floating dtype, in signature order.
std::vector<std::string> float_input_names(const Call& call);

/// Applies one of the generic probes (nan, inf, neg_inf, nonfinite, subnormal, zero,
/// saturation, mantissa, offset) to the tensors named in `targets`.
/// `accumulation_length` scales the saturation probe: each of the L terms of
/// an accumulation gets ~4v/L so the accumulated result is ~4v.
/// Unknown probe names (and `oob`, which only indexing ops define) give
/// kInvalidArgument.
Status apply_generic_probe(Call& call, const Probe& probe, Rng& rng,
                           const std::vector<std::string>& targets, double accumulation_length);

/// The row shape the range probes (`overflow_range(f)`, `underflow_range`)
/// give a row op, chosen so the op's exact result stays representable while
/// a plain intermediate (a square, a sum, exp) leaves the format.
enum class RowRange {
  kNorm,      ///< random signs, |x| = u f max / sqrt(n): the squares overflow, sqrt(sum x^2) <= f max
  kSpread,    ///< random signs, |x| = u f max: exp(x) overflows, x - max(x) may reach -Inf
  kOffset,    ///< x = c + d, c = 4 sqrt(max): E[x^2] overflows, the variance <= (f sqrt(max))^2 does not
  kSameSign,  ///< x = u f max, one sign: the sum overflows, the mean does not
};

/// Applies `overflow_range(f)` or `underflow_range` to each target tensor
/// {rows, cols} (a vector counts as one row), row by row, in the given shape.
/// underflow_range only exists for kNorm (a variance or a mean of tiny
/// values is not a normal number, or cannot underflow): kInvalidArgument.
/// Other probe names: kInvalidArgument.
Status apply_row_range_probe(Call& call, const Probe& probe, Rng& rng, const std::vector<std::string>& targets,
                             RowRange shape);

/// True for the two range probe names.
bool is_range_probe(const std::string& name);

/// `count` distinct logical positions out of `n`, drawn with rng.
std::vector<std::int64_t> pick_positions(std::int64_t n, std::int64_t count, Rng& rng);

/// Number of elements a density touches: round(density * n), at least one.
std::int64_t density_count(double density, std::int64_t n);

}  // namespace kc::ops::detail
