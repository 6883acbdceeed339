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

/// `count` distinct logical positions out of `n`, drawn with rng.
std::vector<std::int64_t> pick_positions(std::int64_t n, std::int64_t count, Rng& rng);

/// Number of elements a density touches: round(density * n), at least one.
std::int64_t density_count(double density, std::int64_t n);

}  // namespace kc::ops::detail
