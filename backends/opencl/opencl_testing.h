// kc — test hooks into the opencl backend (used by tests/unit/opencl only).
#pragma once

#include <cstdint>

#include "kc/status.h"

namespace kc::backends::opencl_testing {

/// Allocates a guarded device buffer of n floats, runs a kernel that writes
/// n + overrun floats from its start, and returns the band check's Status:
/// OK for overrun <= 0, GUARD_OVERWRITTEN(victim, after) otherwise (for
/// 0 < overrun <= 1024, inside the 4 KiB band). Initialises OpenCL in the
/// calling process.
Status run_overflowing_write(std::int64_t n, std::int64_t overrun);

/// CLBlastSscal (alpha 3) of n elements 2.0 placed at element offset `placed`
/// of a device buffer (canary before and after, as the clblast.*_offset impls
/// place their vectors), called with x_offset `passed`. OK when the canary
/// is intact and every element came back 6; GUARD_OVERWRITTEN(x, before) when
/// passed < placed, (x, after) when passed > placed; kUnimplemented without
/// CLBlast. Initialises OpenCL in the calling process.
Status run_clblast_scal_at(std::int64_t n, std::int64_t placed, std::int64_t passed);

}  // namespace kc::backends::opencl_testing
