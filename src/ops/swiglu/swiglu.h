// kc — the SwiGLU gate: y = silu(gate) * up, elementwise.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// `swiglu`: gate {n}, up {n} -> y {n}, y = silu(gate) up (Shazeer 2020, "GLU Variants").
std::unique_ptr<Op> make_swiglu_op();

}  // namespace kc::ops
