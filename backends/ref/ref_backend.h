// kc — the `ref` backend: straightforward in-project kernels, one per op.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"

namespace kc::backends {

/// Plain, readable fp32 kernels with fp32 accumulation in natural order.
std::unique_ptr<Backend> make_ref_backend();

/// One ref impl over `op`: FP32, declared as every ref kernel is (ref_backend.cpp).
std::shared_ptr<const Impl> make_ref_impl(std::string op, std::string description, Status (*kernel)(Call&));

/// The transformer-kernel ref impls (ref_transformer.cpp): norms, attention, rope, activations.
std::vector<std::shared_ptr<const Impl>> ref_transformer_impls();

}  // namespace kc::backends
