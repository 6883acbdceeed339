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
/// The backend `library` (openblas, blis, refblas) over the build at `path`
/// (neither the default paths nor the environment variable), named
/// `library@label` when a label is given; nullptr for another library name.
std::unique_ptr<Backend> make_blas_backend_at(const std::string& library, const std::string& label,
                                              const std::string& path);

}  // namespace kc::backends
