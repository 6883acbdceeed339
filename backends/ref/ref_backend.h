// kc — the `ref` backend: straightforward in-project kernels, one per op.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// Plain, readable fp32 kernels with fp32 accumulation in natural order.
std::unique_ptr<Backend> make_ref_backend();

}  // namespace kc::backends
