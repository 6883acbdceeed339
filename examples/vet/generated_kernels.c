/* examples/vet/generated_kernels.c — the kind of file a code-generating model
 * hands back with "2.3x faster than the baseline". Two kernels:
 *
 *   gen.sgemm_tiled16  a 16x16x16 register-tiled SGEMM. It was only ever
 *                      benchmarked on multiples of 16, and its loops run over
 *                      whole tiles only: remainder rows, columns and K-slices
 *                      are silently dropped.
 *   gen.relu_fast      ReLU written as fmaxf(x, 0), which is branch-free and
 *                      fast and turns NaN into 0 (C99 fmaxf returns the
 *                      non-NaN operand), while declaring nan = IEEE_PROPAGATE.
 *
 * Both pass a quick "random inputs, shapes 64x64, allclose" test.
 * `kc vet examples/vet/generated_kernels.c` builds this file against the
 * plugin ABI and grades both against the standard suite; see
 * docs/vetting-a-generated-kernel.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc/kc_plugin.h"

#define TILE 16

static const kc_tensor* tensor(const kc_call* c, const char* name) {
  for (int32_t i = 0; i < c->num_tensors; ++i)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

static const char* attr(const kc_call* c, const char* key, const char* fallback) {
  for (int32_t i = 0; i < c->num_attrs; ++i)
    if (strcmp(c->attrs[i].key, key) == 0) return c->attrs[i].value;
  return fallback;
}

static int32_t unsupported(char* msg, size_t size, const char* why) {
  snprintf(msg, size, "%s", why);
  return KC_UNSUPPORTED;
}

static int32_t sgemm_tiled16(const kc_call* c, char* msg, size_t size, void* user) {
  (void)user;
  const kc_tensor *a = tensor(c, "A"), *b = tensor(c, "B"), *ct = tensor(c, "C");
  if (!a || !b || !ct || a->dtype != KC_DTYPE_F32) return unsupported(msg, size, "FP32 A, B, C only");
  if (attr(c, "trans_a", "N")[0] != 'N' || attr(c, "trans_b", "N")[0] != 'N')
    return unsupported(msg, size, "no transposes");
  if (strtof(attr(c, "alpha", "1"), NULL) != 1.0f || strtof(attr(c, "beta", "0"), NULL) != 0.0f)
    return unsupported(msg, size, "alpha = 1, beta = 0 only");
  const int64_t m = ct->shape[0], n = ct->shape[1], k = a->shape[1];
  const int64_t lda = a->strides[0], ldb = b->strides[0], ldc = ct->strides[0];
  const float *pa = (const float*)a->data, *pb = (const float*)b->data;
  float* pc = (float*)ct->data;
  /* The generated loop nest: whole tiles only. */
  for (int64_t i0 = 0; i0 + TILE <= m; i0 += TILE)
    for (int64_t j0 = 0; j0 + TILE <= n; j0 += TILE) {
      float acc[TILE][TILE] = {{0}};
      for (int64_t p0 = 0; p0 + TILE <= k; p0 += TILE)
        for (int i = 0; i < TILE; ++i)
          for (int p = 0; p < TILE; ++p) {
            const float av = pa[(i0 + i) * lda + p0 + p];
            for (int j = 0; j < TILE; ++j) acc[i][j] += av * pb[(p0 + p) * ldb + j0 + j];
          }
      for (int i = 0; i < TILE; ++i)
        for (int j = 0; j < TILE; ++j) pc[(i0 + i) * ldc + j0 + j] = acc[i][j];
    }
  return KC_OK;
}

static int32_t relu_fast(const kc_call* c, char* msg, size_t size, void* user) {
  (void)user;
  const kc_tensor *x = tensor(c, "x"), *y = tensor(c, "y");
  if (!x || !y || x->dtype != KC_DTYPE_F32) return unsupported(msg, size, "FP32 x, y only");
  const float* px = (const float*)x->data;
  float* py = (float*)y->data;
  for (int64_t i = 0; i < x->shape[0]; ++i) py[i * y->strides[0]] = fmaxf(px[i * x->strides[0]], 0.0f);
  return KC_OK;
}

static const kc_impl_desc kImpls[] = {
    {"gen.sgemm_tiled16", "matmul", "FP32",
     "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, shape_class = any",
     "generated 16x16x16 tiled SGEMM", sgemm_tiled16, NULL},
    {"gen.relu_fast", "relu", "FP32", "determinism = BITWISE, nan = IEEE_PROPAGATE",
     "generated branch-free ReLU", relu_fast, NULL},
};

static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "generated", "0.1", 2, kImpls};

__attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version >= KC_PLUGIN_ABI_VERSION ? &kPlugin : NULL;
}
