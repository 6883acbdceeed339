/* A C-ABI plugin whose matmul kernels say which path served each call
 * (kc_call::report_path, plugin ABI 2). Both declare a 16-tile kernel for
 * shapes that are multiples of 16 and a scalar fallback for the rest:
 *   pathdemo.sgemm_dispatch   dispatches as declared
 *   pathdemo.sgemm_misrouted  its dispatch test wants multiples of 32, so K = 16
 *                             and 48 silently take the scalar path
 * Both compute the same (right) product: only the reported path differs.
 *   pathdemo.sgemm_silent_slow  declares one path for every shape and reports
 *                             none, but where K is not a multiple of 16 it
 *                             computes the product four times over (a slow
 *                             fallback only its latency shows: kc latency) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kc/kc_plugin.h"

static uint32_t g_host_abi = 0;

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

static void say_path(const kc_call* c, const char* path, const char* reason) {
  if (g_host_abi >= 2 && c->report_path) c->report_path(c->host, path, reason);
}

static int32_t run(const kc_call* c, char* message, size_t message_size, void* user_data) {
  const int64_t tile_multiple = (int64_t)(intptr_t)user_data;
  const kc_tensor* a = find_tensor(c, "A");
  const kc_tensor* b = find_tensor(c, "B");
  const kc_tensor* ct = find_tensor(c, "C");
  if (!a || !b || !ct || a->rank != 2 || b->rank != 2 || ct->rank != 2 || a->dtype != KC_DTYPE_F32 ||
      b->dtype != KC_DTYPE_F32 || ct->dtype != KC_DTYPE_F32 || a->strides[1] != 1 || b->strides[1] != 1 ||
      ct->strides[1] != 1 || find_attr(c, "trans_a", "N")[0] == 'T' || find_attr(c, "trans_b", "N")[0] == 'T') {
    snprintf(message, message_size, "rank-2 FP32 A, B, C, no transposes, unit column strides");
    return KC_UNSUPPORTED;
  }
  const float alpha = strtof(find_attr(c, "alpha", "1"), NULL);
  const float beta = strtof(find_attr(c, "beta", "0"), NULL);
  const int64_t m = ct->shape[0], n = ct->shape[1], k = a->shape[1];
  if (a->shape[0] != m || b->shape[0] != k || b->shape[1] != n) {
    snprintf(message, message_size, "A, B, C shapes disagree");
    return KC_UNSUPPORTED;
  }
  /* tile_multiple < 0: the silent slow kernel (no report, 4x the work off the tile). */
  const int rounds = tile_multiple < 0 && k % 16 != 0 ? 4 : 1;
  if (tile_multiple < 0) {
    /* reports nothing */
  } else if (m % tile_multiple == 0 && n % tile_multiple == 0 && k % tile_multiple == 0) {
    say_path(c, "tile16", "");
  } else {
    char why[128];
    snprintf(why, sizeof why, "M = %lld, N = %lld, K = %lld are not all multiples of %lld", (long long)m,
             (long long)n, (long long)k, (long long)tile_multiple);
    say_path(c, "scalar", why);
  }
  const float* pa = (const float*)a->data;
  const float* pb = (const float*)b->data;
  float* pc = (float*)ct->data;
  for (int r = 0; r < rounds; ++r)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; alpha != 0.0f && p < k; ++p) acc += pa[i * a->strides[0] + p] * pb[p * b->strides[0] + j];
        if (r + 1 < rounds) {
          volatile float keep = acc; /* an earlier round's sum is computed, then dropped */
          (void)keep;
          continue;
        }
        float* cij = &pc[i * ct->strides[0] + j];
        *cij = beta == 0.0f ? alpha * acc : alpha * acc + beta * *cij;
      }
  return KC_OK;
}

static const char kDeclares[] =
    "accumulator = FP32, determinism = BITWISE, shape_class = multiple_of(16, M, N, K), unsupported = FALLBACK, "
    "path = tile16, fallback = scalar";

static const kc_impl_desc kImpls[] = {
    {"pathdemo.sgemm_dispatch", "matmul", "FP32", kDeclares,
     "16-tile kernel on multiples of 16, scalar fallback otherwise; reports its path", run, (void*)(intptr_t)16},
    {"pathdemo.sgemm_misrouted", "matmul", "FP32", kDeclares,
     "dispatch test wants multiples of 32: multiples of 16 silently take the scalar path", run,
     (void*)(intptr_t)32},
    {"pathdemo.sgemm_silent_slow", "matmul", "FP32", "accumulator = FP32, determinism = BITWISE, path = tile16",
     "one declared path; off multiples of 16 in K, four times the work, unreported", run, (void*)(intptr_t)-1},
};

static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "pathdemo", "1.0", 3, kImpls};

const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  g_host_abi = host_abi_version;
  return host_abi_version >= 1 ? &kPlugin : NULL;
}
