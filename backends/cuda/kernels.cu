// kc — the in-project CUDA kernels (see kernels.h).
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels.h"

namespace kc::backends::cuda {
namespace {

constexpr int kTile = 16;

__global__ void matmul_tiled_kernel(int m, int n, int k, bool trans_a, bool trans_b, float alpha,
                                    const float* __restrict__ a, long long lda,
                                    const float* __restrict__ b, long long ldb, float beta,
                                    float* __restrict__ c, long long ldc) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile + 1];  // +1: transposed loads without bank conflicts
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  // BLAS: "when alpha is zero then A and B are not referenced" (C := beta C),
  // so a NaN or Inf in A or B must not reach C: with alpha = 0 nothing is
  // loaded and acc stays 0 (KC-GEMM-03). The branch is uniform.
  const int k_used = alpha == 0.0f ? 0 : k;
  for (int k0 = 0; k0 < k_used; k0 += kTile) {
    // as[ty][tx] = op(A)(row, k0 + tx); bs[ty][tx] = op(B)(k0 + ty, col).
    const int ka = k0 + tx, kb = k0 + ty;
    float av = 0.0f, bv = 0.0f;
    if (row < m && ka < k)
      av = trans_a ? a[(long long)ka * lda + row] : a[(long long)row * lda + ka];
    if (kb < k && col < n)
      bv = trans_b ? b[(long long)col * ldb + kb] : b[(long long)kb * ldb + col];
    as[ty][tx] = av;
    bs[ty][tx] = bv;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < m && col < n) {
    float* cp = c + (long long)row * ldc + col;
    *cp = beta == 0.0f ? alpha * acc : alpha * acc + beta * *cp;
  }
}

constexpr int kSumThreads = 256;

// Shared-memory tree over kSumThreads values; returns the total in thread 0.
__device__ float block_tree_sum(float v) {
  __shared__ float s[kSumThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kSumThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  return s[0];
}

__global__ void sum_atomic_kernel(long long n, const float* __restrict__ x, long long incx,
                                  float* out) {
  float v = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    v += x[i * incx];
  const float total = block_tree_sum(v);
  if (threadIdx.x == 0) atomicAdd(out, total);
}

__global__ void sum_partials_kernel(long long n, const float* __restrict__ x, long long incx,
                                    float* __restrict__ partials) {
  float v = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    v += x[i * incx];
  const float total = block_tree_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void sum_final_kernel(int parts, const float* __restrict__ partials, float* out) {
  float v = 0.0f;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) v += partials[i];
  const float total = block_tree_sum(v);
  if (threadIdx.x == 0) *out = total;
}

constexpr int kSoftmaxThreads = 256;

__device__ float block_max(float v) {
  __shared__ float s[kSoftmaxThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kSoftmaxThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + stride]);
    __syncthreads();
  }
  const float r = s[0];
  __syncthreads();  // s is reused by the next reduction
  return r;
}

__device__ float block_sum(float v) {
  __shared__ float s[kSoftmaxThreads];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kSoftmaxThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  const float r = s[0];
  __syncthreads();
  return r;
}

__global__ void softmax_rows_kernel(int cols, const float* __restrict__ x, long long ldx,
                                    float* __restrict__ y, long long ldy) {
  const float* xr = x + (long long)blockIdx.x * ldx;
  float* yr = y + (long long)blockIdx.x * ldy;
  // fmaxf drops a NaN operand, but a NaN in the row still reaches every output
  // through the sum of exponentials below, so NaN propagates row-wide.
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, xr[j]);
  mx = block_max(mx);
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(xr[j] - mx);
  s = block_sum(s);
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - mx) / s;
}

__global__ void gather_kernel(long long n, long long dim, long long rows,
                              const float* __restrict__ table, long long ld_table,
                              const long long* __restrict__ index, long long inc_index,
                              float* __restrict__ out, long long ld_out, int* bad_flag,
                              unsigned long long* first_bad) {
  const long long i = blockIdx.y;
  const long long idx = index[i * inc_index];
  if (idx < 0 || idx >= rows) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      atomicExch(bad_flag, 1);
      atomicMin(first_bad, (unsigned long long)i);
    }
    return;
  }
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < dim;
       j += (long long)gridDim.x * blockDim.x)
    out[i * ld_out + j] = table[idx * ld_table + j];
}

__global__ void overflowing_fill_kernel(float* p, long long total) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x)
    p[i] = 1.0f;
}

unsigned grid_for(long long work, int threads, unsigned cap) {
  long long g = (work + threads - 1) / threads;
  if (g < 1) g = 1;
  return g > cap ? cap : static_cast<unsigned>(g);
}

}  // namespace

cudaError_t launch_matmul_tiled(int m, int n, int k, bool trans_a, bool trans_b, float alpha,
                                const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                                float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return cudaSuccess;
  dim3 block(kTile, kTile);
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  matmul_tiled_kernel<<<grid, block>>>(m, n, k, trans_a, trans_b, alpha, a, lda, b, ldb, beta, c,
                                       ldc);
  return cudaGetLastError();
}

cudaError_t launch_sum_atomic(std::int64_t n, const float* x, std::int64_t incx, float* out) {
  if (n == 0) return cudaSuccess;
  sum_atomic_kernel<<<grid_for(n, kSumThreads, 4096), kSumThreads>>>(n, x, incx, out);
  return cudaGetLastError();
}

cudaError_t launch_sum_tree(std::int64_t n, const float* x, std::int64_t incx, float* partials,
                            float* out) {
  sum_partials_kernel<<<kTreeSumBlocks, kSumThreads>>>(n, x, incx, partials);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  sum_final_kernel<<<1, kSumThreads>>>(kTreeSumBlocks, partials, out);
  return cudaGetLastError();
}

cudaError_t launch_softmax_rows(int rows, int cols, const float* x, std::int64_t ldx, float* y,
                                std::int64_t ldy) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  softmax_rows_kernel<<<rows, kSoftmaxThreads>>>(cols, x, ldx, y, ldy);
  return cudaGetLastError();
}

cudaError_t launch_gather(std::int64_t n, std::int64_t dim, std::int64_t rows, const float* table,
                          std::int64_t ld_table, const std::int64_t* index, std::int64_t inc_index,
                          float* out, std::int64_t ld_out, int* bad_flag,
                          unsigned long long* first_bad) {
  if (n == 0) return cudaSuccess;
  if (n > 65535) return cudaErrorInvalidConfiguration;  // gridDim.y limit; checked by the caller
  dim3 grid(grid_for(dim, 128, 64), static_cast<unsigned>(n));
  gather_kernel<<<grid, 128>>>(n, dim, rows, table, ld_table,
                               reinterpret_cast<const long long*>(index), inc_index, out, ld_out,
                               bad_flag, first_bad);
  return cudaGetLastError();
}

cudaError_t launch_overflowing_fill(float* p, std::int64_t n, std::int64_t overrun) {
  const long long total = n + overrun;
  if (total <= 0) return cudaSuccess;
  overflowing_fill_kernel<<<grid_for(total, 256, 1024), 256>>>(p, total);
  return cudaGetLastError();
}

}  // namespace kc::backends::cuda
