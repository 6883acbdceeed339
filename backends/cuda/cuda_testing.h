// kc — test hooks into the cuda backend (used by tests/unit/cuda only).
#pragma once

#include <cstdint>

#include "kc/status.h"

namespace kc::backends::cuda_testing {

/// Number of CUDA devices; 0 when none or when the runtime reports an error.
int device_count();

/// Allocates a guarded device buffer of n floats, runs a kernel that writes
/// n + overrun floats from its start, and returns the guard check's Status:
/// OK for overrun <= 0, "GUARD_OVERWRITTEN(victim, after): ..." otherwise
/// (for 0 < overrun <= 1024, i.e. inside the 4 KiB band).
Status run_overflowing_write(std::int64_t n, std::int64_t overrun);

}  // namespace kc::backends::cuda_testing
