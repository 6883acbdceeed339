// kc — the SwiGLU gate: y = silu(gate) * up, elementwise.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

/// `swiglu`: gate {n}, up {n} -> y {n}, y = silu(gate) up (Shazeer 2020, "GLU Variants").
std::unique_ptr<Op> make_swiglu_op();

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of swiglu (ops/swiglu/properties.cpp).
void add_swiglu_properties(std::vector<Property>& out);

}  // namespace kc::obligation
