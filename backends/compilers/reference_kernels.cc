// kc — the in-project reference kernels, one plain C++ source built under
// several toolchains and flag sets (backends/compilers/CMakeLists.txt), each
// build a plugin-ABI shared library of its own (backends/variants).
//
// The source is written to keep IEEE 754 semantics when compiled as written
// (ISO C++, no contraction, default rounding, gradual underflow):
//  - every loop accumulates in float, in index order (one fixed order);
//  - relu is `x < 0 ? 0 : x`, which passes a NaN through (NaN < 0 is false);
//  - nothing calls fesetenv or touches MXCSR.
// Those are the declarations every build carries (`kDeclares` below): the
// promise of the source. The flags under test may break it, and the compiler
// documentation says which (docs/backends/compilers.md): -ffast-math implies
// -ffinite-math-only (the optimiser may assume no NaN/Inf, e.g. turn the relu
// select into maxss, which returns its second operand for a NaN),
// -fassociative-math (the sum is reassociated into vector partial sums), and,
// when linked, crtfastmath.o, whose constructor sets FTZ|DAZ in MXCSR when the
// library is loaded. -ffp-contract=fast with FMA hardware fuses a*b+c and
// changes the bits of the matmul. kc measures whether each build keeps the promise;
// tests/repro/fastmath_nan_relu.c and fastmath_ftz.c show the two ways -Ofast
// breaks it (NaN dropped, FTZ/DAZ set at load) without kc (docs/audit.md).
#include <cmath>
#include <cstdint>

#include "variants/kernel_abi.h"

namespace {

using kc_variant::fail;

// ---- matmul: row-major C = alpha op(A) op(B) + beta C, reference-BLAS alpha
// and beta rules (alpha == 0: A and B are not read; beta == 0: C is not read).
// The i-j-p loop with a scalar float accumulator is sgemm.f's inner product
// order, transposed to row-major. (Unused where KC_KERNELS_NO_MATMUL leaves
// the impl out, hence maybe_unused.)
[[maybe_unused]] int32_t run_matmul(const kc_call* call, char* msg, size_t size, void*) {
  const kc_tensor* ta = kc_variant::f32_matrix(call, "A");
  const kc_tensor* tb = kc_variant::f32_matrix(call, "B");
  kc_tensor* tc = kc_variant::f32_matrix(call, "C");
  const int trans_a = kc_variant::attr_trans(call, "trans_a");
  const int trans_b = kc_variant::attr_trans(call, "trans_b");
  if (!ta || !tb || !tc || trans_a < 0 || trans_b < 0)
    return fail(KC_UNSUPPORTED, msg, size, "matmul needs FP32 row-major A, B, C and trans flags N or T");
  const int64_t m = tc->shape[0], n = tc->shape[1];
  const int64_t k = trans_a ? ta->shape[0] : ta->shape[1];
  if ((trans_a ? ta->shape[1] : ta->shape[0]) != m || (trans_b ? tb->shape[1] : tb->shape[0]) != k ||
      (trans_b ? tb->shape[0] : tb->shape[1]) != n)
    return fail(KC_UNSUPPORTED, msg, size, "matmul: A, B and C shapes do not agree");
  const float alpha = static_cast<float>(kc_variant::attr_double(call, "alpha", 1.0));
  const float beta = static_cast<float>(kc_variant::attr_double(call, "beta", 0.0));
  const float* a = static_cast<const float*>(ta->data);
  const float* b = static_cast<const float*>(tb->data);
  float* c = static_cast<float*>(tc->data);
  const int64_t lda = kc_variant::stride0(ta), ldb = kc_variant::stride0(tb), ldc = kc_variant::stride0(tc);
  // Element strides of op(A) along i and p, of op(B) along p and j.
  const int64_t a_i = trans_a ? 1 : lda, a_p = trans_a ? lda : 1;
  const int64_t b_p = trans_b ? 1 : ldb, b_j = trans_b ? ldb : 1;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0f) {
        for (int64_t p = 0; p < k; ++p) acc += a[i * a_i + p * a_p] * b[p * b_p + j * b_j];
        acc *= alpha;
      }
      float& cij = c[i * ldc + j];
      cij = beta == 0.0f ? acc : acc + beta * cij;
    }
  }
  return KC_OK;
}

// ---- sum: sequential, index order, float accumulator.
int32_t run_sum(const kc_call* call, char* msg, size_t size, void*) {
  const kc_tensor* x = kc_variant::f32_vector(call, "x");
  kc_tensor* out = kc_variant::f32_vector(call, "out");
  if (!x || !out || out->shape[0] != 1) return fail(KC_UNSUPPORTED, msg, size, "sum needs FP32 x {n}, out {1}");
  const float* v = static_cast<const float*>(x->data);
  const int64_t n = x->shape[0], inc = kc_variant::stride0(x);
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += v[i * inc];
  static_cast<float*>(out->data)[0] = acc;
  return KC_OK;
}

// ---- softmax along rows of x {rows, cols}: max subtraction, then normalise.
// The max is taken with `v > m || v != v` so a NaN wins (and then propagates).
int32_t run_softmax(const kc_call* call, char* msg, size_t size, void*) {
  const kc_tensor* tx = kc_variant::f32_dense_matrix(call, "x");
  kc_tensor* ty = kc_variant::f32_dense_matrix(call, "y");
  if (!tx || !ty || tx->shape[0] != ty->shape[0] || tx->shape[1] != ty->shape[1])
    return fail(KC_UNSUPPORTED, msg, size, "softmax needs FP32 dense x and y of one shape");
  const int64_t rows = tx->shape[0], cols = tx->shape[1];
  const float* x = static_cast<const float*>(tx->data);
  float* y = static_cast<float*>(ty->data);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j)
      if (xr[j] > m || xr[j] != xr[j]) m = xr[j];
    float s = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      yr[j] = std::exp(xr[j] - m);
      s += yr[j];
    }
    for (int64_t j = 0; j < cols; ++j) yr[j] /= s;
  }
  return KC_OK;
}

// ---- elementwise on x {n} -> y {n}.
template <typename F>
int32_t unary(const kc_call* call, char* msg, size_t size, F f) {
  const kc_tensor* tx = kc_variant::f32_vector(call, "x");
  kc_tensor* ty = kc_variant::f32_vector(call, "y");
  if (!tx || !ty || tx->shape[0] != ty->shape[0])
    return fail(KC_UNSUPPORTED, msg, size, "needs FP32 x {n} and y {n}");
  const float* x = static_cast<const float*>(tx->data);
  float* y = static_cast<float*>(ty->data);
  const int64_t n = tx->shape[0], ix = kc_variant::stride0(tx), iy = kc_variant::stride0(ty);
  for (int64_t i = 0; i < n; ++i) y[i * iy] = f(x[i * ix]);
  return KC_OK;
}

int32_t run_relu(const kc_call* call, char* msg, size_t size, void*) {
  return unary(call, msg, size, [](float v) { return v < 0.0f ? 0.0f : v; });
}

int32_t run_gelu_erf(const kc_call* call, char* msg, size_t size, void*) {
  // x = -inf is selected out: the expression would give -inf * 0 = NaN where
  // gelu's limit (and the op's definition) is 0. A finite-math build may fold
  // the comparison away (it may assume x is never infinite).
  return unary(call, msg, size, [](float v) {
    return v == -INFINITY ? 0.0f : 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
  });
}

// ---- scal: x = alpha x in place on a strided vector.
int32_t run_scal(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* tx = kc_variant::f32_vector(call, "x");
  if (!tx) return fail(KC_UNSUPPORTED, msg, size, "scal needs FP32 x {n}");
  const float alpha = static_cast<float>(kc_variant::attr_double(call, "alpha", 1.0));
  float* x = static_cast<float*>(tx->data);
  const int64_t n = tx->shape[0], inc = kc_variant::stride0(tx);
  for (int64_t i = 0; i < n; ++i) x[i * inc] *= alpha;
  return KC_OK;
}

#define KC_NAME(op) "compilers." KC_VARIANT_LABEL "." op
#define KC_ACC "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE"
#define KC_ELEM "determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE"
// run_matmul skips the products when alpha == 0 and never reads C when beta == 0.
#define KC_GEMM KC_ACC ", alpha_zero = AB_NOT_READ, beta_zero = C_NOT_READ"

const kc_impl_desc kImpls[] = {
#ifndef KC_KERNELS_NO_MATMUL  // left out of some builds to bound grade time (CMakeLists.txt)
    {KC_NAME("matmul"), "matmul", "FP32", KC_GEMM, "i-j-p triple loop, float accumulator", run_matmul, nullptr},
#endif
    {KC_NAME("sum"), "sum", "FP32", KC_ACC, "sequential float sum in index order", run_sum, nullptr},
    {KC_NAME("softmax"), "softmax", "FP32", KC_ACC, "max-subtracted softmax, three passes per row", run_softmax,
     nullptr},
    {KC_NAME("relu"), "relu", "FP32", KC_ELEM, "x < 0 ? 0 : x (NaN passes through)", run_relu, nullptr},
    {KC_NAME("gelu_erf"), "gelu_erf", "FP32", KC_ELEM ", inf_policy = LIMIT", "0.5 x (1 + erff(x / sqrt 2))", run_gelu_erf, nullptr},
    {KC_NAME("scal"), "scal", "FP32", KC_ELEM, "x *= alpha, strided", run_scal, nullptr},
};

#define KC_STR2(x) #x
#define KC_STR(x) KC_STR2(x)

// The toolchain that built this library, from its own predefined macros.
#if defined(__clang__)
#define KC_TOOLCHAIN "clang++ " __clang_version__
#elif defined(__GNUC__)
#define KC_TOOLCHAIN "g++ " __VERSION__
#else
#define KC_TOOLCHAIN "unknown compiler"
#endif

const kc_plugin kPlugin = {
    KC_PLUGIN_ABI_VERSION, "compilers", KC_TOOLCHAIN, static_cast<int32_t>(sizeof(kImpls) / sizeof(kImpls[0])),
    kImpls,
};

}  // namespace

KC_VARIANT_EXPORT const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version == KC_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}
