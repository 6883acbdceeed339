#include "opencl_testing.h"

#include "cl_buffer.h"
#include "cl_runtime.h"
#include "kernels.h"

namespace kc::backends::opencl_testing {

Status run_overflowing_write(std::int64_t n, std::int64_t overrun) {
  using namespace kc::backends::opencl;
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(GuardedBuffer buf, GuardedBuffer::allocate(static_cast<std::size_t>(n) * sizeof(float), "victim"));
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(overflow_source(), "", "kc_overflowing_fill"));
  const int total = static_cast<int>(n + overrun);
  cl_mem m = buf.mem();
  KC_RETURN_IF_ERROR(set_arg(k, 0, total));
  KC_RETURN_IF_ERROR(set_arg(k, 1, m));
  KC_RETURN_IF_ERROR(launch(k, {static_cast<std::size_t>(total > 0 ? total : 0)}, {}, "kc_overflowing_fill"));
  return buf.check_guards();
}

}  // namespace kc::backends::opencl_testing
