// kc — gradient accumulation (docs/transformer-training.md).
//
// grad_accum: W {features, outputs}, X {batch, features}, Y {batch, outputs}
// -> G {features, outputs}, the gradient of the mean squared error of the
// linear model X W against Y, L = (1 / (B O)) Σ (X W - Y)², computed as
// `micro_batches` = A micro-batches of B / A rows each: every micro-batch's
// mean-loss gradient g_j = (2 / (b O)) X_jᵀ (X_j W - Y_j), then
// G = (1 / A) Σ_j g_j (the `loss / accumulation_steps` recipe). In exact
// arithmetic G is the full-batch gradient for every A; the oracle is that
// full-batch gradient in long double. Oracle option average = on | off
// (off: Σ_j g_j, the ACCUMULATION_NOT_AVERAGED signature).
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_grad_accum_op();

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of grad_accum (ops/train/properties.cpp).
void add_grad_accum_properties(std::vector<Property>& out);

}  // namespace kc::obligation
