// A CUDA plugin with a planted out-of-bounds device write, for the GPU-only
// test CliSanitizer.APlantedOutOfBoundsWriteIsNamed: its SGEMM is correct, and
// then one thread writes one float past the end of its own copy of C. kc sees
// only the copied-back C (correct), so without compute-sanitizer it conforms;
// memcheck names the write.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "kc/kc_plugin.h"

namespace {

const kc_tensor* tensor(const kc_call* c, const char* name) {
  for (int32_t i = 0; i < c->num_tensors; ++i)
    if (std::strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return nullptr;
}

__global__ void sgemm_then_stray_write(int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                                       float* c, int ldc, long long c_elems) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < m && col < n) {
    float acc = 0.0f;
    for (int p = 0; p < k; ++p) acc = fmaf(a[row * lda + p], b[p * ldb + col], acc);
    c[row * ldc + col] = acc;
  }
  if (row == 0 && col == 0) c[c_elems] = 0.0f;  // the planted bug: one past the end
}

int32_t run(const kc_call* call, char*, size_t, void*) {
  const kc_tensor *a = tensor(call, "A"), *b = tensor(call, "B"), *c = tensor(call, "C");
  if (!a || !b || !c) return KC_UNSUPPORTED;
  for (int32_t i = 0; i < call->num_attrs; ++i) {
    const char *key = call->attrs[i].key, *v = call->attrs[i].value;
    if ((!std::strcmp(key, "trans_a") || !std::strcmp(key, "trans_b")) && v[0] != 'N') return KC_UNSUPPORTED;
    if (!std::strcmp(key, "alpha") && std::strtof(v, nullptr) != 1.0f) return KC_UNSUPPORTED;
    if (!std::strcmp(key, "beta") && std::strtof(v, nullptr) != 0.0f) return KC_UNSUPPORTED;
  }
  const int m = static_cast<int>(c->shape[0]), n = static_cast<int>(c->shape[1]), k = static_cast<int>(a->shape[1]);
  float *da, *db, *dc;
  cudaMalloc(&da, a->storage_elems * sizeof(float));
  cudaMalloc(&db, b->storage_elems * sizeof(float));
  cudaMalloc(&dc, c->storage_elems * sizeof(float));
  cudaMemcpy(da, a->data, a->storage_elems * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b->data, b->storage_elems * sizeof(float), cudaMemcpyHostToDevice);
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  sgemm_then_stray_write<<<grid, block>>>(m, n, k, da, static_cast<int>(a->strides[0]), db,
                                          static_cast<int>(b->strides[0]), dc, static_cast<int>(c->strides[0]),
                                          c->storage_elems);
  const cudaError_t e = cudaMemcpy(c->data, dc, c->storage_elems * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  if (e != cudaSuccess) std::abort();
  return KC_OK;
}

const kc_impl_desc kImpls[] = {{"oob.sgemm", "matmul", "FP32", "accumulator = FP32, determinism = BITWISE",
                                "SGEMM with one stray device write", run, nullptr}};
const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "oob", "1", 1, kImpls};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t v) {
  return v >= KC_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}
