// kc — the `ref` backend's unary elementwise kernels (relu, exp, log, tanh,
// erf) for FP32, FP16 and BF16 storage.
#pragma once

#include <memory>
#include <vector>

#include "kc/backend.h"

namespace kc::backends {

/// One impl per unary elementwise op: `ref.<fn>`. 16-bit inputs are widened
/// to fp32, f is evaluated in fp32 with glibc's float functions, and the result
/// is rounded once (to nearest even) into the output format.
std::vector<std::shared_ptr<const Impl>> make_ref_elementwise_impls();

}  // namespace kc::backends
