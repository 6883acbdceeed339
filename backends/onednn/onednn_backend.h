// kc — the onednn backend: oneDNN (DNNL) 2.6 CPU primitives as impls.
//
// This header needs no oneDNN headers: kc_backends includes it on every machine.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// The onednn backend: matmul (strict and bf16-allowed fpmath, max-ISA and
/// thread-count variants), inner product, fused matmul + bias + eltwise,
/// softmax, log_softmax, eltwise, reductions. probe() reports
/// "built without oneDNN" when kc was configured without the dnnl package.
std::unique_ptr<Backend> make_onednn_backend();

}  // namespace kc::backends
