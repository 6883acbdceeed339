/* A plugin built outside kc's tree against the installed kc_plugin.h: one
 * impl, a sequential FP32 dot product, declared as what it is. */
#include <stdio.h>
#include <string.h>

#include "kc/kc_plugin.h"

static const kc_tensor* find_tensor(const kc_call* c, const char* name) {
  for (int32_t i = 0; i < c->num_tensors; ++i)
    if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
  return NULL;
}

static int32_t run_dot(const kc_call* c, char* message, size_t message_size, void* user_data) {
  (void)user_data;
  const kc_tensor* x = find_tensor(c, "x");
  const kc_tensor* y = find_tensor(c, "y");
  const kc_tensor* out = find_tensor(c, "out");
  if (!x || !y || !out || x->rank != 1 || y->rank != 1 || x->shape[0] != y->shape[0] || x->dtype != KC_DTYPE_F32 ||
      y->dtype != KC_DTYPE_F32 || out->dtype != KC_DTYPE_F32) {
    if (message && message_size > 0) snprintf(message, message_size, "FP32 x, y of equal length and out only");
    return KC_UNSUPPORTED;
  }
  const float* px = (const float*)x->data;
  const float* py = (const float*)y->data;
  float acc = 0.0f;
  for (int64_t i = 0; i < x->shape[0]; ++i) acc += px[i * x->strides[0]] * py[i * y->strides[0]];
  *(float*)out->data = acc;
  return KC_OK;
}

static const kc_impl_desc kImpls[] = {
    {"consumer.dot_fp32", "dot", "FP32",
     "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE",
     "sequential FP32 dot product, built against an installed kc", run_dot, NULL},
};

static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "kc_consumer_plugin", "1.0",
                                  (int32_t)(sizeof kImpls / sizeof kImpls[0]), kImpls};

__attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version >= KC_PLUGIN_ABI_VERSION ? &kPlugin : NULL;
}
