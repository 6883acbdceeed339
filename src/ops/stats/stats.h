// kc — row statistics: mean, variance, norm2, log_sum_exp (C-PRC-02, C-ORD-01).
//
// x {rows, cols} -> out {rows}, along the last axis. The oracles are stable
// algorithms in long double (two-pass variance, max-subtracted log-sum-exp),
// so they do not share the cancellation the contracts hunt for.
#pragma once

#include <memory>

#include "kc/op.h"

namespace kc::ops {

enum class StatKind { kMean, kVariance, kNorm2, kLogSumExp };

/// The op computing one row statistic; registered as mean, variance, norm2, log_sum_exp.
std::unique_ptr<Op> make_stats_op(StatKind kind);

}  // namespace kc::ops
