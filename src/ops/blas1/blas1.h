// kc — the level-1 BLAS ops: dot, asum, nrm2, scal, iamax.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

enum class Blas1Kind { kDot, kAsum, kNrm2, kScal, kIamax };

/// One level-1 BLAS op; vectors are strided by the incx/incy params.
std::unique_ptr<Op> make_blas1_op(Blas1Kind kind);

}  // namespace kc::ops
