// kc — the ops the twelve contract classes need beyond the core set
// (docs/classes/): row statistics, fused matmul, unary elementwise functions,
// indexing, simulated collectives and a short training run.
#pragma once

#include "kc/op.h"
#include "kc/status.h"

// Tolerance-expression variables (Op::expr_vars) every op here provides:
//   L        its accumulation length, the n of gamma(n, P) in its error model, so a
//            contract writes `bound c * gamma(L, P)` for any of them
//   max|x|, sum|x|   over the op's main floating input (finite elements)
// and per family: stats N = n = cols, rows; fused M, N, K, max|A|, max|B|;
// elementwise N = n; indexing N = n, rows = bound, dim; collective K = ranks, N = n;
// mlp_train_step steps, lr, batch, K (= L), max|w| (trained), max|grad|, update_sum.
// plus, from the base Op::expr_vars, every integer config param by name.

namespace kc::ops {

/// Adds every contract-class op to `registry` from one explicit table:
/// mean, variance, norm2, log_sum_exp, fused_matmul, sequential_matmul,
/// relu, gelu_erf, gelu_tanh, silu, exp, log, tanh, erf, gather, index_select,
/// embedding, scatter_add, all_reduce, reduce_scatter, all_gather,
/// mlp_train_step. Fails on the first duplicate name.
Status register_class_ops(OpRegistry& registry);

}  // namespace kc::ops
