// kc — the hwy backend's kernels: Highway's contrib/math (hwy/contrib/math/
// math-inl.h, header-only) Exp, Log and Tanh on FP32, statically dispatched:
// this file is built once per SIMD target (backends/hwy/CMakeLists.txt), and
// each build's HWY_STATIC_TARGET is the best target its -m flags enable, so
// the `avx2` library runs Highway's AVX2 code and nothing else.
//
// Declarations, from the header's own comments (Highway 1.0.3):
//   Exp   "Max Error: ULP = 1", "Valid Range: float32[-FLT_MAX, +104]"
//   Log   "Max Error: ULP = 4", "Valid Range: float32(0, +FLT_MAX]"
//   Tanh  "Max Error: ULP = 4", "Valid Range: float32[-FLT_MAX, +FLT_MAX]"
// Highway has no Erf. The header states a valid range instead of special
// values: NaN, infinities, log(x <= 0) and exp(x > 104) are outside what
// Highway documents (measured: Exp(NaN) = +0, Log(0) = -105.36, Log(-1) a
// finite number; docs/backends/hwy.md). A kernel built on it has to handle
// them itself, and so does this one, as an integrator would: Highway runs on
// every lane, then each element outside the valid range gets the value C99
// Annex F gives it (NaN propagates; exp(+inf) = +inf, exp(-inf) = +0,
// exp(x > 104) = +inf; log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf;
// tanh(+-inf) = +-1). So the impls declare nan = IEEE_PROPAGATE truthfully,
// and ulp_domain = FINITE: Highway's documented bound covers the valid range
// only, which KC-ELEM-EDGE-F1/F7 and KC-ELEM-RANGE-1 check; the contracts
// over special values do not apply. Highway sets no MXCSR bits: denormal =
// IEEE.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "variants/kernel_abi.h"

namespace {

namespace hn = hwy::HWY_NAMESPACE;
using kc_variant::fail;

constexpr int32_t kBadArgs = KC_UNSUPPORTED;

enum class Fn { kExp, kLog, kTanh };

template <Fn F, class D, class V>
V apply(D d, V v) {
  if constexpr (F == Fn::kExp) return hn::Exp(d, v);
  if constexpr (F == Fn::kLog) return hn::Log(d, v);
  if constexpr (F == Fn::kTanh) return hn::Tanh(d, v);
}

/// The C99 Annex F value of f at x when x is outside Highway's documented
/// valid range for f; nothing when x is inside it.
template <Fn F>
bool outside_range(float x, float* y) {
  const float inf = __builtin_inff();
  if (x != x) {
    *y = x;  // NaN propagates
    return true;
  }
  if constexpr (F == Fn::kExp) {
    if (x == -inf) *y = 0.0f;
    else if (x > 104.0f) *y = inf;
    else return false;
    return true;
  }
  if constexpr (F == Fn::kLog) {
    if (x == 0.0f) *y = -inf;
    else if (x < 0.0f) *y = __builtin_nanf("");
    else if (x == inf) *y = inf;
    else return false;
    return true;
  }
  if constexpr (F == Fn::kTanh) {
    if (x == inf || x == -inf) {
      *y = x > 0 ? 1.0f : -1.0f;
      return true;
    }
    return false;
  }
  return false;
}

template <Fn F>
int32_t run_unary(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* x = kc_variant::f32_vector(call, "x");
  kc_tensor* y = kc_variant::f32_vector(call, "y");
  if (!x || !y || x->shape[0] != y->shape[0] || kc_variant::stride0(x) != 1 || kc_variant::stride0(y) != 1)
    return fail(kBadArgs, msg, size, "needs FP32 contiguous x {n} and y {n}");
  const float* in = static_cast<const float*>(x->data);
  float* out = static_cast<float*>(y->data);
  const int64_t n = x->shape[0];
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(apply<F>(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    // The remainder through a full vector padded with 1.0f (inside every
    // function's valid range), stored back element by element.
    HWY_ALIGN float bx[hn::MaxLanes(d)];
    HWY_ALIGN float by[hn::MaxLanes(d)];
    for (int64_t j = 0; j < lanes; ++j) bx[j] = i + j < n ? in[i + j] : 1.0f;
    hn::Store(apply<F>(d, hn::Load(d, bx)), d, by);
    std::memcpy(out + i, by, static_cast<size_t>(n - i) * sizeof(float));
  }
  for (int64_t k = 0; k < n; ++k) {
    float v = 0;
    if (outside_range<F>(in[k], &v)) out[k] = v;
  }
  return KC_OK;
}

#define KC_NAME(op) "hwy." KC_VARIANT_LABEL "." op
#define KC_DECL "determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE, ulp_domain = FINITE"

const kc_impl_desc kImpls[] = {
    {KC_NAME("exp"), "exp", "FP32", KC_DECL ", ulp_bound = 1",
     "Highway contrib/math Exp (Max Error: ULP = 1 on [-FLT_MAX, 104]; C99 values outside, by kc's adapter)", run_unary<Fn::kExp>, nullptr},
    {KC_NAME("log"), "log", "FP32", KC_DECL ", ulp_bound = 4",
     "Highway contrib/math Log (Max Error: ULP = 4 on (0, FLT_MAX]; C99 values outside, by kc's adapter)", run_unary<Fn::kLog>, nullptr},
    {KC_NAME("tanh"), "tanh", "FP32", KC_DECL ", ulp_bound = 4",
     "Highway contrib/math Tanh (Max Error: ULP = 4 on [-FLT_MAX, FLT_MAX]; C99 values outside, by kc's adapter)", run_unary<Fn::kTanh>,
     nullptr},
};

#define KC_STR2(x) #x
#define KC_STR(x) KC_STR2(x)

const kc_plugin kPlugin = {
    KC_PLUGIN_ABI_VERSION,
    "hwy",
    "Highway " KC_STR(HWY_MAJOR) "." KC_STR(HWY_MINOR) "." KC_STR(HWY_PATCH),
    static_cast<int32_t>(sizeof(kImpls) / sizeof(kImpls[0])),
    kImpls,
};

}  // namespace

KC_VARIANT_EXPORT const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version == KC_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}

/// The Highway target this build was compiled for (HWY_STATIC_TARGET), for
/// `kc backends`; the test checks it against the label.
KC_VARIANT_EXPORT const char* kc_variant_simd() { return hwy::TargetName(HWY_STATIC_TARGET); }
