// kc — the matmul op: row-major C = alpha op(A) op(B) + beta C.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

/// The `matmul` op (signature, params, fill/probes, FP64 oracle, error model).
std::unique_ptr<Op> make_matmul_op();

}  // namespace kc::ops

namespace kc::obligation {

/// matmul's algebraic properties (matmul.linearity, matmul.transpose;
/// ops/matmul/properties.cpp).
void add_matmul_properties(std::vector<Property>& out);

}  // namespace kc::obligation
