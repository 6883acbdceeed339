// kc — complex BLAS ops: cdot, cscal, csscal, ciamax, cgemv, cgemm (the c and z routines).
//
// kc has no complex dtype: a complex operand is a real tensor of the
// component precision (FP32 for the c routines, FP64 for z) holding
// interleaved (re, im) pairs, exactly as BLAS stores COMPLEX arrays. Its last
// dimension is 2 and has stride 1: a length-n vector with increment inc is a
// tensor of shape (n, 2), strides (2 inc, 1); a row-major M x N matrix with
// leading dimension ld (in complex elements) has shape (M, N, 2), strides
// (2 ld, 2, 1). Outputs are compared component by component.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// kScalReal: csscal/zdscal, a complex x scaled by a real alpha.
enum class ComplexKind { kDot, kScal, kScalReal, kIamax, kGemv, kGemm };

/// One complex BLAS op (see the file comment for the storage convention).
std::unique_ptr<Op> make_complex_op(ComplexKind kind);

}  // namespace kc::ops
