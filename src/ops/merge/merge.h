// kc — model merging and pruning (docs/transformer-training.md).
//
// slerp: a, b {n} -> y {n}, param t. mergekit's SLERP: the angle from the
//   normalised vectors, d = clamp(â·b̂, -1, 1), θ = acos d;
//   y = sin((1 - t) θ) / sin θ a + sin(t θ) / sin θ b, and linear
//   interpolation (1 - t) a + t b where |d| > 0.9995 (nearly parallel).
//   The fill gives b the norm of a: the obligation "stays on the sphere" is
//   about vectors on one sphere. Oracle option interpolation = spherical |
//   linear (the LERP_NOT_SLERP signature).
// prune_magnitude: W {rows, cols} -> y, param sparsity s: in every row the
//   k = floor(s cols) entries of smallest |W| become 0 (ties: the lower column
//   first), the rest are W bit for bit.
// prune_wanda: W {rows, cols}, act_sq {cols} (Σ over calibration tokens of
//   x_j², Sun et al. 2023) -> y, param sparsity: the same per row with score
//   |W_ij| sqrt(act_sq_j), each operation rounded to P as the reference
//   implementation computes it in P (torch.abs(W) * torch.sqrt(scaler_row)),
//   so the ranking is exact. Oracle option score = wanda | magnitude.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_slerp_op();
std::unique_ptr<Op> make_prune_op(bool wanda);

/// The per-element scores a pruning call ranks, row-major: |W|, or for WANDA
/// |W| sqrt(act_sq) rounded to the call's precision as the kernel computes it.
std::vector<double> prune_scores(const Call& call, bool wanda_scores);
/// The mask of a pruning call (1 = kept), from its inputs: exact, shared by
/// the oracle and the properties.
std::vector<int> prune_mask(const Call& call, bool wanda_scores);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of slerp, prune_magnitude and prune_wanda (ops/merge/properties.cpp).
void add_merge_properties(std::vector<Property>& out);

}  // namespace kc::obligation
