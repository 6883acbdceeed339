// kc — the openblas, blis and refblas backends: one BlasBackend over a BlasLibrarySpec.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// The OpenBLAS Fortran interface, loaded from KC_OPENBLAS_LIB or Debian's paths.
std::unique_ptr<Backend> make_openblas_backend();
/// BLIS's BLAS compatibility layer, loaded from KC_BLIS_LIB or Debian's paths.
std::unique_ptr<Backend> make_blis_backend();
/// The netlib reference BLAS, loaded from KC_REFBLAS_LIB or Debian's path.
std::unique_ptr<Backend> make_refblas_backend();

}  // namespace kc::backends
