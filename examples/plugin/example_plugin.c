/* kc example plugin: three impls behind the kc plugin C ABI (kc_plugin.h only).
 *
 *   example.matmul_fp32    row-major C = alpha op(A) op(B) + beta C, FP32 accumulation.
 *   example.matmul_fp16acc the same loops, but every partial sum is rounded to
 *                          IEEE binary16 while it *declares* an FP32 accumulator:
 *                          a deliberately false declaration for kc to catch.
 *   example.dot_fp32       out = sum x_i y_i, FP32 accumulation in index order.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc/kc_plugin.h"

#if defined(__GNUC__)
#define KC_EXAMPLE_EXPORT __attribute__((visibility("default")))
#else
#define KC_EXAMPLE_EXPORT
#endif

/* ---- fp16 rounding: x -> nearest binary16 (ties to even) -> back to float. */

#if defined(__FLT16_MAX__)
/* GCC >= 12 / Clang on x86-64 provide _Float16 with IEEE conversions (overflow
 * to +-inf, gradual underflow). */
static float round_to_fp16(float x) { return (float)(_Float16)x; }
#else
/* Bit-exact emulation of float -> binary16 -> float. */
static float round_to_fp16(float x) {
  if (isnan(x) || isinf(x)) return x;
  const float ax = fabsf(x);
  /* Values at or above 65520 = 65504 + half an ulp(2^15..2^16) = 32/2 round to inf. */
  if (ax >= 65520.0f) return copysignf(INFINITY, x);
  int e;
  frexpf(ax, &e); /* ax = f * 2^e, f in [0.5, 1) */
  /* binary16 has 11 significant bits; below 2^-14 the spacing is fixed at 2^-24. */
  int exp_unit = e - 11;
  if (exp_unit < -24) exp_unit = -24;
  const float unit = ldexpf(1.0f, exp_unit);
  /* nearbyintf rounds half to even in the default rounding mode. The division
   * by a power of two is exact, so this is a single correct rounding. */
  return copysignf(nearbyintf(ax / unit) * unit, x);
}
#endif

/* ---- call helpers */

static const kc_tensor* find_tensor(const kc_call* c, const char* name) {
  for (int32_t i = 0; i < c->num_tensors; ++i)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

static const char* find_attr(const kc_call* c, const char* key, const char* fallback) {
  for (int32_t i = 0; i < c->num_attrs; ++i)
    if (strcmp(c->attrs[i].key, key) == 0) return c->attrs[i].value;
  return fallback;
}

static int32_t fail(char* message, size_t size, int32_t status, const char* text) {
  if (message && size > 0) snprintf(message, size, "%s", text);
  return status;
}

/* The leading dimension of a row-major matrix tensor (strides in elements). */
static int64_t leading_dim(const kc_tensor* t) {
  return t->strides[0] > t->shape[1] ? t->strides[0] : t->shape[1];
}

typedef float (*accumulate_fn)(float acc, float product);

static float accumulate_fp32(float acc, float product) { return acc + product; }
static float accumulate_fp16(float acc, float product) { return round_to_fp16(acc + product); }

/* Row-major matmul with a pluggable accumulation step. user_data selects it. */
static int32_t run_matmul(const kc_call* c, char* message, size_t message_size, void* user_data) {
  const accumulate_fn accumulate = (accumulate_fn)user_data;
  const kc_tensor* a = find_tensor(c, "A");
  const kc_tensor* b = find_tensor(c, "B");
  const kc_tensor* ct = find_tensor(c, "C");
  if (!a || !b || !ct || a->rank != 2 || b->rank != 2 || ct->rank != 2)
    return fail(message, message_size, KC_UNSUPPORTED, "needs rank-2 A, B, C");
  if (a->dtype != KC_DTYPE_F32 || b->dtype != KC_DTYPE_F32 || ct->dtype != KC_DTYPE_F32)
    return fail(message, message_size, KC_UNSUPPORTED, "FP32 only");
  if (a->strides[1] != 1 || b->strides[1] != 1 || ct->strides[1] != 1)
    return fail(message, message_size, KC_UNSUPPORTED, "unit column stride only");
  const int trans_a = find_attr(c, "trans_a", "N")[0] == 'T';
  const int trans_b = find_attr(c, "trans_b", "N")[0] == 'T';
  const float alpha = strtof(find_attr(c, "alpha", "1"), NULL);
  const float beta = strtof(find_attr(c, "beta", "0"), NULL);
  const int64_t m = ct->shape[0], n = ct->shape[1];
  const int64_t k = trans_a ? a->shape[0] : a->shape[1];
  if ((trans_a ? a->shape[1] : a->shape[0]) != m || (trans_b ? b->shape[1] : b->shape[0]) != k ||
      (trans_b ? b->shape[0] : b->shape[1]) != n)
    return fail(message, message_size, KC_UNSUPPORTED, "A, B, C shapes disagree");
  const int64_t lda = leading_dim(a), ldb = leading_dim(b), ldc = leading_dim(ct);
  const float* pa = (const float*)a->data;
  const float* pb = (const float*)b->data;
  float* pc = (float*)ct->data;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      /* alpha == 0: A and B are not read (reference BLAS), so NaN there does not leak. */
      for (int64_t p = 0; alpha != 0.0f && p < k; ++p) {
        const float av = trans_a ? pa[p * lda + i] : pa[i * lda + p];
        const float bv = trans_b ? pb[j * ldb + p] : pb[p * ldb + j];
        acc = accumulate(acc, av * bv);
      }
      float* cij = &pc[i * ldc + j];
      /* beta == 0: C is output only and never read (so NaN in C does not leak). */
      *cij = beta == 0.0f ? alpha * acc : alpha * acc + beta * *cij;
    }
  }
  return KC_OK;
}

static int32_t run_dot(const kc_call* c, char* message, size_t message_size, void* user_data) {
  (void)user_data;
  const kc_tensor* x = find_tensor(c, "x");
  const kc_tensor* y = find_tensor(c, "y");
  const kc_tensor* out = find_tensor(c, "out");
  if (!x || !y || !out || x->rank != 1 || y->rank != 1 || x->shape[0] != y->shape[0])
    return fail(message, message_size, KC_UNSUPPORTED, "needs x, y of equal length and out");
  if (x->dtype != KC_DTYPE_F32 || y->dtype != KC_DTYPE_F32 || out->dtype != KC_DTYPE_F32)
    return fail(message, message_size, KC_UNSUPPORTED, "FP32 only");
  const float* px = (const float*)x->data;
  const float* py = (const float*)y->data;
  float acc = 0.0f;
  for (int64_t i = 0; i < x->shape[0]; ++i) acc += px[i * x->strides[0]] * py[i * y->strides[0]];
  *(float*)out->data = acc;
  return KC_OK;
}

static const char kMatmulDeclares[] =
    "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE";

static const kc_impl_desc kImpls[] = {
    {"example.matmul_fp32", "matmul", "FP32", kMatmulDeclares,
     "row-major triple loop, FP32 accumulation", run_matmul, (void*)accumulate_fp32},
    /* The declaration below is false on purpose: this impl accumulates in fp16. */
    {"example.matmul_fp16acc", "matmul", "FP32", kMatmulDeclares,
     "row-major triple loop that rounds every partial sum to fp16 (declares FP32)", run_matmul,
     (void*)accumulate_fp16},
    {"example.dot_fp32", "dot", "FP32", kMatmulDeclares, "sequential FP32 dot product", run_dot,
     NULL},
};

static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "kc_example_plugin", "1.0",
                                  (int32_t)(sizeof kImpls / sizeof kImpls[0]), kImpls};

KC_EXAMPLE_EXPORT const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version == KC_PLUGIN_ABI_VERSION ? &kPlugin : NULL;
}
