// kc — the reduction op `sum`.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// `sum`: out = sum_i x_i over a strided vector x of length n.
std::unique_ptr<Op> make_sum_op();

}  // namespace kc::ops
