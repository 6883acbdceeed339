// kc — the in-project OpenCL C kernels (sources; built at run time).
#pragma once

#include <string>

namespace kc::backends::opencl {

/// Tiled matmul, row-major C = alpha op(A) op(B) + beta C. Built with -DTS=<tile>
/// -DWPT=<rows per work-item>: work-group TS x (TS / WPT), each work-item
/// accumulating WPT outputs of one column, FP32, fma over k in increasing order.
/// Kernel: kc_matmul_tiled(M, N, K, trans_a, trans_b, alpha, A, lda, B, ldb, beta, C, ldc).
const std::string& matmul_source();

/// Reductions, softmax, gather and elementwise kernels (one program):
///   kc_sum_partials / kc_sum_final   fixed-grid tree sum (SUM_GROUPS groups of SUM_LS)
///   kc_sum_atomic                    per-group tree sums added with a compare-exchange loop
///   kc_softmax_rows(rows, cols, x, ldx, y, ldy, log)  one work-group per row
///   kc_gather(n, dim, rows, table, ldt, index, inc, out, ldo, bad)
///   kc_<fn>(n, x, y) for fn in relu, exp, log, tanh, erf, gelu_erf
const std::string& common_source();

/// Geometry baked into common_source().
inline constexpr int kSumLocal = 256;   ///< SUM_LS: work-items per reduction group
inline constexpr int kSumGroups = 64;   ///< SUM_GROUPS: groups of the fixed-grid tree sum
inline constexpr int kSoftmaxLocal = 64;

/// A kernel that writes n + overrun floats from the start of its buffer
/// (kc_overflowing_fill(n_total, y)): the canary tests' deliberate overrun.
const std::string& overflow_source();

}  // namespace kc::backends::opencl
