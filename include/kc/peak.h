// kc — physical floors on kernel time (docs/judge.md: timing is sanity-checked
// against the device peak). A host kernel reported faster than the floor did
// not do the work: it returned a cached or stale result, or its timing is
// wrong. That is a violation (TIMING_IMPLAUSIBLE), not a speed-up.
#pragma once

#include <string>

#include "kc/op.h"

namespace kc {

/// Generous upper bounds on what this host can do, over all hardware threads.
struct HostPeak {
  double multiply_adds_per_s = 0;  ///< fp32 multiply-adds per second
  double bytes_per_s = 0;          ///< bytes written per second
  std::string basis;               ///< how the bounds were derived, for reports
};

/// Measured once per process (a ~20 ms benchmark on first use), then cached.
const HostPeak& host_peak();

struct TimeFloor {
  double seconds = 0;  ///< 0 when the problem is too small to judge (< 1 us)
  std::string basis;   ///< "8388608 multiply-adds at <= 4.1e+11/s"
};

/// The least time an honest host kernel needs for `call`: the larger of
/// (bytes of pure outputs, every one of which must be written: they arrive
/// poisoned) / bandwidth bound, and (multiply-adds the op cannot skip on dense
/// random inputs) / multiply-add bound. Multiply-adds come from the op's work
/// model (Op::multiply_adds), which counts them only where the count is a true
/// lower bound (matmul: M*N*K when alpha != 0).
TimeFloor time_floor(const Call& call, const HostPeak& peak);

}  // namespace kc
