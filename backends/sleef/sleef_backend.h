// kc — the sleef backend: SLEEF 3.5's elementwise functions (exp, log, tanh,
// erf) in single and double precision, one impl per function, accuracy
// class, ISA variant and precision (docs/backends/sleef.md).
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// Impls sleef.<fn>_<u10|u35>_<isa> for isa in {purec, purecfma, sse2, sse4,
/// avx2128, avx, avx2, avx512f, avx512fnofma, fma4}, FP32; the same names
/// with the suffix _fp64 for the double entry points. Unavailable, with the
/// reason, when kc was built without SLEEF (Debian: libsleef-dev). An ISA
/// this CPU lacks (cpuid) is listed and its cases are skipped with the
/// reason; its code is never called.
std::unique_ptr<Backend> make_sleef_backend();

}  // namespace kc::backends
