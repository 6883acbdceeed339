// kc — softmax and log_softmax over the last axis.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// `softmax` (log = false) or `log_softmax` (log = true) of x {rows, cols} along cols.
std::unique_ptr<Op> make_softmax_op(bool log);

}  // namespace kc::ops
