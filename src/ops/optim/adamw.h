// kc — one AdamW optimizer step (docs/transformer-training.md).
//
// adamw_step: param, m, v {n} (kInOut, updated in place), grad {n} (kIn);
// params step (t >= 1), lr, beta1, beta2, eps, weight_decay. The semantics are
// torch.optim.AdamW's (decoupled weight decay, Loshchilov & Hutter 2019):
//   param <- param - lr * weight_decay * param
//   m <- beta1 m + (1 - beta1) g;   v <- beta2 v + (1 - beta2) g²
//   m̂ = m / (1 - beta1^t);         v̂ = v / (1 - beta2^t)
//   param <- param - lr * m̂ / (sqrt(v̂) + eps)
// The scalar hyper-parameters are values of the call's precision P, like the
// tensors: the oracle rounds them to P first and evaluates everything else in
// long double, so it computes exactly the function of what the kernel is given.
//
// Oracle options (`reference higher_precision FP64 with k = v`):
//   weight_decay = decoupled (default) | coupled   (coupled: Adam with L2,
//                  g <- g + weight_decay * param, no separate decay)
//   bias_correction = on (default) | off
// The signature classifier names a failure by the option that explains it.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_adamw_op();

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of adamw_step (ops/optim/properties.cpp).
void add_adamw_properties(std::vector<Property>& out);

}  // namespace kc::obligation
