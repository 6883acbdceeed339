// kc — row normalisations: layernorm and rmsnorm over the last axis.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

enum class NormKind {
  kLayerNorm,  ///< y = (x - mean) / sqrt(var + eps) * gamma + beta, var the biased (1/cols) variance
  kRmsNorm,    ///< y = x / sqrt(mean(x^2) + eps) * gamma
};

/// `layernorm` (x, gamma, beta -> y) or `rmsnorm` (x, gamma -> y) of x {rows, cols} along cols.
std::unique_ptr<Op> make_norm_op(NormKind kind);

/// Row statistics of one row in long double: mean, biased variance (two-pass)
/// and mean square. Shared by the oracle and the algebraic properties.
struct RowMoments {
  long double mean = 0, var = 0, mean_square = 0, mean_abs = 0;
};
RowMoments row_moments(const double* row, std::int64_t cols);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of layernorm and rmsnorm (ops/norm/properties.cpp).
void add_norm_properties(std::vector<Property>& out);

}  // namespace kc::obligation
