// kc — the gemv op: row-major y = alpha op(A) x + beta y (BLAS level 2).
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// Matrix-vector product with the reference-BLAS beta = 0 rule (y not read).
std::unique_ptr<Op> make_gemv_op();

}  // namespace kc::ops
