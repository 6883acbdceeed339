/* Two FP32 dots that copy x into a workspace of their own before summing: a
 * clean one, and one that also loads the float just past the workspace's end
 * (a library reading past its own packing buffer). The answer is right either
 * way and the over-read touches the heap, not kc's guarded tensors, so only a
 * memory checker sees it (kc --isolate valgrind). */
#include <stdlib.h>
#include <string.h>

#include "kc/kc_plugin.h"

static int32_t dot(const kc_call* call, int overread) {
  if (call->num_tensors != 3) return KC_UNSUPPORTED;
  const kc_tensor* x = &call->tensors[0];
  const kc_tensor* y = &call->tensors[1];
  const int64_t n = x->shape[0];
  float* work = (float*)malloc((size_t)n * sizeof(float));
  if (!work) return KC_RAISED;
  for (int64_t i = 0; i < n; ++i) work[i] = ((const float*)x->data)[i * x->strides[0]];
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += work[i] * ((const float*)y->data)[i * y->strides[0]];
  if (overread) {
    volatile float past_end = work[n]; /* one element beyond the block */
    (void)past_end;
  }
  free(work);
  *(float*)call->tensors[2].data = sum;
  return KC_OK;
}

static int32_t run_clean(const kc_call* call, char* message, size_t message_size, void* user_data) {
  (void)message;
  (void)message_size;
  (void)user_data;
  return dot(call, 0);
}

static int32_t run_overread(const kc_call* call, char* message, size_t message_size, void* user_data) {
  (void)message;
  (void)message_size;
  (void)user_data;
  return dot(call, 1);
}

static const kc_impl_desc kImpls[] = {
    {"workspace.dot_clean", "dot", "FP32", "accumulator = FP32", "a dot through a heap workspace", run_clean, 0},
    {"workspace.dot_overread", "dot", "FP32", "accumulator = FP32",
     "a dot through a heap workspace that also loads one float past it", run_overread, 0},
};
static const kc_plugin kPlugin = {KC_PLUGIN_ABI_VERSION, "workspace", "1", 2, kImpls};

const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version >= KC_PLUGIN_ABI_VERSION ? &kPlugin : 0;
}
