// kc — the compilers backend: the in-project reference kernels built under
// several toolchains and flag sets.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// Impls compilers.<variant>.<op> (backends/compilers/reference_kernels.cc,
/// docs/backends/compilers.md): one build per toolchain x flag set, each a
/// shared library of its own. Unavailable, with the reason, when none was built.
std::unique_ptr<Backend> make_compilers_backend();

}  // namespace kc::backends
