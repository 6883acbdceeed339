// kc — the in-project CUDA kernels, as host-callable launchers.
//
// Each launcher only enqueues work on the default stream and returns the launch
// error; the caller checks it and synchronises (check_launch). Pointers are
// device pointers into GuardedBuffers; leading dimensions are in elements.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kc::backends::cuda {

/// Row-major C = alpha op(A) op(B) + beta C with 16x16 shared-memory tiles and
/// an FP32 accumulator summed in increasing k. beta == 0 does not read C (BLAS
/// convention: C need not be set on input).
cudaError_t launch_matmul_tiled(int m, int n, int k, bool trans_a, bool trans_b, float alpha,
                                const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                                float beta, float* c, std::int64_t ldc);

/// out[0] += sum of x[i * incx]: per-block shared-memory sums, then one
/// atomicAdd per block into out, in whatever order the blocks finish.
/// The caller zeroes out first.
cudaError_t launch_sum_atomic(std::int64_t n, const float* x, std::int64_t incx, float* out);

/// Blocks used by the tree sum: fixed, so the summation order is a function of n only.
inline constexpr int kTreeSumBlocks = 264;
/// out[0] = sum of x[i * incx] in a fixed order: each of kTreeSumBlocks blocks
/// sums a fixed strided subset and reduces it in shared memory with a fixed
/// tree; a second single-block launch reduces the partials the same way.
/// partials holds kTreeSumBlocks floats.
cudaError_t launch_sum_tree(std::int64_t n, const float* x, std::int64_t incx, float* partials,
                            float* out);

/// Row-wise softmax: y[r, :] = exp(x[r, :] - max_r) / sum(exp(x[r, :] - max_r)),
/// one block per row, expf (not the __expf intrinsic), FP32 sums in a fixed tree.
cudaError_t launch_softmax_rows(int rows, int cols, const float* x, std::int64_t ldx, float* y,
                                std::int64_t ldy);

/// out[i, :] = table[index[i], :]. An index outside [0, rows) writes nothing
/// for that row, sets *bad_flag = 1 and lowers *first_bad to the smallest such i.
/// The caller sets *bad_flag = 0 and *first_bad = UINT64_MAX first.
cudaError_t launch_gather(std::int64_t n, std::int64_t dim, std::int64_t rows, const float* table,
                          std::int64_t ld_table, const std::int64_t* index, std::int64_t inc_index,
                          float* out, std::int64_t ld_out, int* bad_flag,
                          unsigned long long* first_bad);

/// Test hook: writes n + overrun floats starting at p (value 1.0f). Used by the
/// unit tests to check that a write past a buffer's end trips its canary.
cudaError_t launch_overflowing_fill(float* p, std::int64_t n, std::int64_t overrun);

}  // namespace kc::backends::cuda
