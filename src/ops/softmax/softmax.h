// kc — softmax and log_softmax over the last axis.
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

/// `softmax` (log = false) or `log_softmax` (log = true) of x {rows, cols} along cols.
std::unique_ptr<Op> make_softmax_op(bool log);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of softmax and log_softmax (ops/softmax/properties.cpp).
void add_softmax_properties(std::vector<Property>& out);

}  // namespace kc::obligation
