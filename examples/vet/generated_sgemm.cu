/* examples/vet/generated_sgemm.cu — a generated CUDA SGEMM as `kc vet` sees it.
 *
 *   gen.cuda_sgemm_tiled16  16x16 shared-memory tiles; bounds-checked loads and
 *                           stores, so every shape is covered. FP32 fmaf over k
 *                           in order; alpha = 0 reads neither A nor B (BLAS).
 *   gen.cuda_sgemm_fast     the same kernel "optimised" by dropping the bounds
 *                           checks and the alpha = 0 branch: it launches whole
 *                           tiles only and rounds the grid down, so remainder
 *                           rows, columns and K-slices are never computed, and
 *                           a NaN in A reaches C even when alpha = 0. Fine on
 *                           the 1024x1024 benchmark.
 *
 * The plugin ABI hands kc's host buffers to `run`; each call copies them to the
 * device, runs, and copies C back. `kc vet examples/vet/generated_sgemm.cu`
 * builds it with nvcc and grades both impls (docs/vetting-a-generated-kernel.md).
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kc/kc_plugin.h"

namespace {

constexpr int kTile = 16;

const kc_tensor* tensor(const kc_call* c, const char* name) {
  for (int32_t i = 0; i < c->num_tensors; ++i)
    if (std::strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return nullptr;
}

const char* attr(const kc_call* c, const char* key, const char* fallback) {
  for (int32_t i = 0; i < c->num_attrs; ++i)
    if (std::strcmp(c->attrs[i].key, key) == 0) return c->attrs[i].value;
  return fallback;
}

int32_t say(char* msg, size_t size, int32_t status, const char* what, const char* detail) {
  std::snprintf(msg, size, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
  return status;
}

// C = alpha A B + beta C, row-major, leading dimensions in elements.
template <bool kChecked>
__global__ void sgemm_tiles(int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                            float beta, float* c, int ldc) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  // BLAS: with alpha = 0, A and B are not read (so their NaNs cannot reach C).
  const int tiles = kChecked ? (alpha == 0.0f ? 0 : (k + kTile - 1) / kTile) : k / kTile;
  for (int t = 0; t < tiles; ++t) {
    const int ka = t * kTile + threadIdx.x;
    const int kb = t * kTile + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = (!kChecked || (row < m && ka < k)) ? a[row * lda + ka] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (!kChecked || (kb < k && col < n)) ? b[kb * ldb + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc = fmaf(ta[threadIdx.y][p], tb[p][threadIdx.x], acc);
    __syncthreads();
  }
  if (kChecked && (row >= m || col >= n)) return;
  float* out = &c[row * ldc + col];
  *out = beta == 0.0f ? alpha * acc : alpha * acc + beta * *out;
}

template <bool kChecked>
int32_t run_sgemm(const kc_call* c, char* msg, size_t size, void*) {
  const kc_tensor *a = tensor(c, "A"), *b = tensor(c, "B"), *ct = tensor(c, "C");
  if (!a || !b || !ct || a->dtype != KC_DTYPE_F32 || b->dtype != KC_DTYPE_F32 || ct->dtype != KC_DTYPE_F32)
    return say(msg, size, KC_UNSUPPORTED, "FP32 A, B, C only", nullptr);
  if (attr(c, "trans_a", "N")[0] != 'N' || attr(c, "trans_b", "N")[0] != 'N')
    return say(msg, size, KC_UNSUPPORTED, "no transposes", nullptr);
  const int m = static_cast<int>(ct->shape[0]), n = static_cast<int>(ct->shape[1]);
  const int k = static_cast<int>(a->shape[1]);
  const float alpha = std::strtof(attr(c, "alpha", "1"), nullptr);
  const float beta = std::strtof(attr(c, "beta", "0"), nullptr);
  const size_t bytes_a = a->storage_elems * sizeof(float), bytes_b = b->storage_elems * sizeof(float);
  const size_t bytes_c = ct->storage_elems * sizeof(float);
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  cudaError_t e = cudaMalloc(&da, bytes_a ? bytes_a : 1);
  if (e == cudaSuccess) e = cudaMalloc(&db, bytes_b ? bytes_b : 1);
  if (e == cudaSuccess) e = cudaMalloc(&dc, bytes_c ? bytes_c : 1);
  if (e == cudaSuccess) e = cudaMemcpy(da, a->data, bytes_a, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(db, b->data, bytes_b, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(dc, ct->data, bytes_c, cudaMemcpyHostToDevice);
  if (e == cudaSuccess && m > 0 && n > 0) {
    const dim3 block(kTile, kTile);
    const dim3 grid = kChecked ? dim3((n + kTile - 1) / kTile, (m + kTile - 1) / kTile) : dim3(n / kTile, m / kTile);
    if (grid.x > 0 && grid.y > 0) {
      sgemm_tiles<kChecked><<<grid, block>>>(m, n, k, alpha, da, static_cast<int>(a->strides[0]), db,
                                             static_cast<int>(b->strides[0]), beta, dc,
                                             static_cast<int>(ct->strides[0]));
      e = cudaGetLastError();
      if (e == cudaSuccess) e = cudaDeviceSynchronize();
    }
  }
  if (e == cudaSuccess) e = cudaMemcpy(ct->data, dc, bytes_c, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  // A CUDA failure is neither a declared raise nor an unsupported call: abort,
  // and kc's worker records the crash with this message.
  if (e != cudaSuccess) {
    std::fprintf(stderr, "generated_sgemm: %s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
    std::abort();
  }
  return KC_OK;
}

const kc_impl_desc kImpls[] = {
    {"gen.cuda_sgemm_tiled16", "matmul", "FP32",
     "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, shape_class = any",
     "generated CUDA SGEMM, 16x16 shared-memory tiles, bounds-checked", run_sgemm<true>, nullptr},
    {"gen.cuda_sgemm_fast", "matmul", "FP32",
     "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, shape_class = any",
     "generated CUDA SGEMM without bounds checks (whole tiles only)", run_sgemm<false>, nullptr},
};

const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "generated_cuda", "0.1", 2, kImpls};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version >= KC_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}
