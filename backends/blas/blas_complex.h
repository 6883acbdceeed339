// kc — the complex routines (c and z) of the openblas, blis and refblas backends.
#pragma once

#include <memory>
#include <vector>

#include "blas_library.h"
#include "kc/backend.h"

namespace kc::backends {

/// The impls of `lib`'s complex routines: <lib>.cdotu/cdotc/zdotu/zdotc (op
/// cdot), icamax/izamax (ciamax), cscal/zscal (cscal), csscal/zdscal (csscal), cgemv/zgemv (cgemv),
/// cgemm/zgemm (cgemm). Operands follow the ops' storage convention
/// (src/ops/complex/complex.h): (re, im) pairs in FP32 (c) or FP64 (z) tensors.
std::vector<std::shared_ptr<const Impl>> complex_blas_impls(const std::shared_ptr<const BlasLibrary>& lib);

}  // namespace kc::backends
