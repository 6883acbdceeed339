// kc — helpers for kernel sources built as plugin-ABI variant libraries
// (backends/eigen/eigen_kernels.cc, backends/compilers/reference_kernels.cc).
//
// Header-only and free of kc's C++ libraries: a variant library links nothing
// of kc, only speaks include/kc/kc_plugin.h. Everything here is `static inline`
// so each variant gets its own private copy (the variants are built with
// -fvisibility=hidden and loaded RTLD_LOCAL; see backends/variants/variant_backend.h).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kc/kc_plugin.h"

/// The one symbol a variant library exports.
#define KC_VARIANT_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef KC_VARIANT_LABEL
#error "KC_VARIANT_LABEL (the variant's label, e.g. \"sse2\") must be defined by the build"
#endif

namespace kc_variant {

/// Writes a message for KC_RAISED / KC_UNSUPPORTED.
static inline int32_t fail(int32_t status, char* message, size_t size, const char* text) {
  if (message && size > 0) std::snprintf(message, size, "%s", text);
  return status;
}

static inline kc_tensor* tensor(const kc_call* call, const char* name) {
  for (int32_t i = 0; i < call->num_tensors; ++i)
    if (std::strcmp(call->tensors[i].name, name) == 0) return &call->tensors[i];
  return nullptr;
}

static inline const char* attr(const kc_call* call, const char* key) {
  for (int32_t i = 0; i < call->num_attrs; ++i)
    if (std::strcmp(call->attrs[i].key, key) == 0) return call->attrs[i].value;
  return nullptr;
}

static inline double attr_double(const kc_call* call, const char* key, double fallback) {
  const char* v = attr(call, key);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return end && *end == '\0' ? d : fallback;
}

/// "N" -> false, "T" -> true; anything else -> -1.
static inline int attr_trans(const kc_call* call, const char* key) {
  const char* v = attr(call, key);
  if (!v || std::strcmp(v, "N") == 0 || std::strcmp(v, "n") == 0) return 0;
  if (std::strcmp(v, "T") == 0 || std::strcmp(v, "t") == 0) return 1;
  return -1;
}

/// An FP32 tensor of the given rank, or nullptr.
static inline kc_tensor* f32(const kc_call* call, const char* name, int32_t rank) {
  kc_tensor* t = tensor(call, name);
  if (!t || t->dtype != KC_DTYPE_F32 || t->rank != rank || !t->data) return nullptr;
  return t;
}

/// A rank-2 FP32 tensor with unit column stride (row-major, leading dimension
/// strides[0] >= shape[1]) whose storage holds every element.
static inline kc_tensor* f32_matrix(const kc_call* call, const char* name) {
  kc_tensor* t = f32(call, name, 2);
  if (!t) return nullptr;
  const int64_t rows = t->shape[0], cols = t->shape[1], ld = t->strides[0];
  if (rows > 1 && ld < cols) return nullptr;
  if (cols > 1 && t->strides[1] != 1) return nullptr;
  if (rows > 0 && cols > 0 && (rows - 1) * ld + cols > t->storage_elems) return nullptr;
  return t;
}

/// A rank-2 FP32 tensor stored densely (strides {cols, 1}).
static inline kc_tensor* f32_dense_matrix(const kc_call* call, const char* name) {
  kc_tensor* t = f32_matrix(call, name);
  if (!t || (t->shape[0] > 1 && t->strides[0] != t->shape[1])) return nullptr;
  return t;
}

/// A rank-1 FP32 tensor with stride >= 1 whose storage holds every element.
static inline kc_tensor* f32_vector(const kc_call* call, const char* name) {
  kc_tensor* t = f32(call, name, 1);
  if (!t) return nullptr;
  const int64_t n = t->shape[0], inc = n > 1 ? t->strides[0] : 1;
  if (inc < 1 || (n > 0 && (n - 1) * inc + 1 > t->storage_elems)) return nullptr;
  return t;
}

static inline int64_t stride0(const kc_tensor* t) { return t->shape[0] > 1 ? t->strides[0] : 1; }

}  // namespace kc_variant
