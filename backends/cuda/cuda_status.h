// kc — vendor error codes (cudaError_t, cublasStatus_t, cudnnStatus_t) become
// a Status here, at the backend boundary, with the vendor's name and message kept.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>

#include "kc/status.h"

#if KC_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace kc::backends::cuda {

/// OK for cudaSuccess; otherwise "<what>: cudaErrorX: <cudaGetErrorString>".
/// Allocation failures are kResourceExhausted; errors that kill the context
/// (illegal address, launch failure, device assert) are kCrashed; the rest kInternal.
Status cuda_status(cudaError_t err, std::string_view what);

/// OK for CUBLAS_STATUS_SUCCESS; otherwise the cuBLAS status name and string.
Status cublas_status(cublasStatus_t st, std::string_view what);

#if KC_CUDA_HAVE_CUDNN
/// OK for CUDNN_STATUS_SUCCESS; otherwise cudnnGetErrorString and the last error message.
Status cudnn_status(cudnnStatus_t st, std::string_view what);
#endif

/// After a kernel launch: cudaGetLastError (launch configuration errors), then
/// cudaDeviceSynchronize (errors raised while the kernel ran).
Status check_launch(std::string_view what);

}  // namespace kc::backends::cuda

#define KC_CUDA_RETURN_IF_ERROR(call) \
  KC_RETURN_IF_ERROR(::kc::backends::cuda::cuda_status((call), #call))
#define KC_CUBLAS_RETURN_IF_ERROR(call) \
  KC_RETURN_IF_ERROR(::kc::backends::cuda::cublas_status((call), #call))
#define KC_CUDNN_RETURN_IF_ERROR(call) \
  KC_RETURN_IF_ERROR(::kc::backends::cuda::cudnn_status((call), #call))
