// kc — the `with` options several ops' oracles share (kc/op.h, OracleOption):
// the accumulator precision and the softmax stabilisation. Each op lists the
// options it honours in its oracle_options() table; the meanings and the
// arithmetic live here so that every op means the same by them.
#pragma once

#include <cmath>
#include <string>

#include "kc/op.h"

namespace kc::ops::detail {

inline constexpr char kAccumulatorKey[] = "accumulator";
inline constexpr char kStabilizationKey[] = "softmax_stabilization";
inline constexpr char kReductionOrderKey[] = "reduction_order";

/// `accumulator = FP64 | FP32`: the precision of the oracle's running sums.
inline OracleOption accumulator_option(const std::string& sums) {
  return {kAccumulatorKey,
          {"FP64", "FP32"},
          "the precision the oracle accumulates " + sums +
              " in: FP64 (the default) sums in long double (at least FP64), FP32 rounds the running sum to FP32 "
              "after every addition"};
}

/// `softmax_stabilization = max_subtraction | none`.
inline OracleOption stabilization_option() {
  return {kStabilizationKey,
          {"max_subtraction", "none"},
          "max_subtraction (the default): exp(x - max x), which never overflows; none: the naive exp(x), "
          "evaluated in FP64 (FP32 under accumulator = FP32), so it overflows to inf and the row to NaN where a "
          "naive kernel's does"};
}

/// `reduction_order = row_major | sequential`: the order the oracle's sums
/// take, which is the only one it has. Both values name it: one pass over the
/// reduced axis from its first element to its last (for a row-major tensor,
/// along the row), no blocking, no tree. Where the accumulator is FP64 the
/// order hardly shows; under `accumulator = FP32` it fixes every rounding.
inline OracleOption reduction_order_option(const std::string& sums) {
  return {kReductionOrderKey,
          {"row_major", "sequential"},
          "the order the oracle adds " + sums +
              " in: one pass in index order, first to last (row-major along the reduced axis), no blocking or "
              "tree; both values name that order, the only one the oracle has"};
}

inline std::string option_value(const OracleOptions& o, const std::string& key, const std::string& fallback) {
  auto it = o.with.find(key);
  return it == o.with.end() ? fallback : it->second;
}

/// Whether the contract asked for FP32 running sums.
inline bool fp32_accumulator(const OracleOptions& o) { return option_value(o, kAccumulatorKey, "FP64") == "FP32"; }

/// Whether the softmax subtracts the row max (the default).
inline bool max_subtraction(const OracleOptions& o) {
  return option_value(o, kStabilizationKey, "max_subtraction") != "none";
}

/// acc + term, rounded once to FP32 when `fp32`.
inline long double accumulate(long double acc, long double term, bool fp32) {
  return fp32 ? static_cast<long double>(static_cast<float>(acc + term)) : acc + term;
}

/// exp(x) as the naive softmax evaluates it: in FP32 or FP64.
inline long double naive_exp(long double x, bool fp32) {
  return fp32 ? static_cast<long double>(std::exp(static_cast<float>(x)))
              : static_cast<long double>(std::exp(static_cast<double>(x)));
}

}  // namespace kc::ops::detail
