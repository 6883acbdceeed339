// kc — the cuda backend: cuBLAS sgemm in three math modes, cuDNN softmax, and
// in-project CUDA kernels (tiled matmul, atomic and tree sums, softmax, gather).
//
// This header needs no CUDA headers: kc_backends includes it on every machine.
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// The cuda backend. Every impl copies its tensors to device memory it owns,
/// surrounds each device buffer with guard canaries, pre-fills outputs with
/// NaN, checks every launch, and copies the outputs back.
///
/// probe() reports unavailable, with the reason, when kc was built without
/// CUDA ("built without CUDA") or when no device is present ("no CUDA device
/// (cudaGetDeviceCount: ...)"); impls() is then empty.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace kc::backends
