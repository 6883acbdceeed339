#include "cuda_status.h"

#include <string>

namespace kc::backends::cuda {

namespace {

// Errors after which the CUDA context is unusable: every later call in the
// process fails too (CUDA Runtime API, "Error Handling": sticky errors).
bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status cuda_status(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return ok_status();
  std::string msg =
      std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  if (err == cudaErrorMemoryAllocation) return {StatusCode::kResourceExhausted, msg};
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) return unavailable(msg);
  if (is_sticky(err)) return {StatusCode::kCrashed, msg + " (the CUDA context is lost)"};
  return internal_error(msg);
}

Status cublas_status(cublasStatus_t st, std::string_view what) {
  if (st == CUBLAS_STATUS_SUCCESS) return ok_status();
  std::string msg =
      std::string(what) + ": " + cublasGetStatusName(st) + ": " + cublasGetStatusString(st);
  switch (st) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return {StatusCode::kResourceExhausted, msg};
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return unimplemented(msg);
    case CUBLAS_STATUS_INVALID_VALUE:
      return invalid_argument(msg);
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return unavailable(msg);
    default:
      return internal_error(msg);
  }
}

#if KC_CUDA_HAVE_CUDNN
Status cudnn_status(cudnnStatus_t st, std::string_view what) {
  if (st == CUDNN_STATUS_SUCCESS) return ok_status();
  std::string msg = std::string(what) + ": " + cudnnGetErrorString(st);
  // cuDNN 9 keeps a more specific message per thread (cudnnGetLastErrorString).
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') msg += " (" + std::string(detail) + ")";
  // cuDNN 9 status codes are grouped by thousands: 1xxx not initialized, 2xxx
  // bad parameter, 3xxx not supported, 4xxx internal, 5xxx execution failed.
  if (st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    return {StatusCode::kResourceExhausted, msg};
  }
  switch (static_cast<int>(st) / 1000) {
    case 1:
      return unavailable(msg);
    case 2:
      return invalid_argument(msg);
    case 3:
      return unimplemented(msg);
    default:
      return internal_error(msg);
  }
}
#endif

Status check_launch(std::string_view what) {
  KC_RETURN_IF_ERROR(cuda_status(cudaGetLastError(), std::string(what) + " (launch)"));
  return cuda_status(cudaDeviceSynchronize(), std::string(what) + " (while running)");
}

}  // namespace kc::backends::cuda
