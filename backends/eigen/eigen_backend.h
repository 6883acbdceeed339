// kc — the eigen backend: Eigen 3.4 kernels built once per SIMD level.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// Impls eigen.<level>.<op> for level in {sse2, avx2, avx512, novec}
/// (backends/eigen/eigen_kernels.cc, docs/backends/eigen.md). Unavailable,
/// with the reason, when kc was built without Eigen; a level this CPU cannot
/// run is listed and skipped.
std::unique_ptr<Backend> make_eigen_backend();

}  // namespace kc::backends
