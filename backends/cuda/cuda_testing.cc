#include "cuda_testing.h"

#include <cuda_runtime_api.h>

#include "cuda_status.h"
#include "device_buffer.h"
#include "kernels.h"

namespace kc::backends::cuda_testing {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

Status run_overflowing_write(std::int64_t n, std::int64_t overrun) {
  using namespace kc::backends::cuda;
  KC_ASSIGN_OR_RETURN(
      GuardedBuffer buf,
      GuardedBuffer::allocate(static_cast<std::size_t>(n) * sizeof(float), "victim"));
  KC_RETURN_IF_ERROR(buf.fill(0xFF));
  KC_CUDA_RETURN_IF_ERROR(launch_overflowing_fill(buf.as<float>(), n, overrun));
  KC_RETURN_IF_ERROR(check_launch("overflowing_fill"));
  return buf.check_guards();
}

}  // namespace kc::backends::cuda_testing
