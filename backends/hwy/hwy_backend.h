// kc — the hwy backend: Highway's contrib/math Exp, Log and Tanh built once
// per SIMD target (backends/hwy/hwy_kernels.cc, docs/backends/hwy.md).
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// Impls hwy.<target>.<fn> for fn in {exp, log, tanh} and target in {scalar,
/// sse4, avx2, avx3}. Unavailable, with the reason, when kc was built without
/// Highway (Debian: libhwy-dev); a target this CPU cannot run is listed and
/// its cases are skipped (its library is never loaded).
std::unique_ptr<Backend> make_hwy_backend();

}  // namespace kc::backends
