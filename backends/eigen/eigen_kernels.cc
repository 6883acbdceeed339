// kc — Eigen kernels, one source built once per SIMD level (sse2, avx2,
// avx512, novec: backends/eigen/CMakeLists.txt), each build a plugin-ABI
// shared library of its own.
//
// Why one library per SIMD level: Eigen is templates. Compiled with different
// -m flags into one binary, each template instance (e.g. the GEMM kernel) is
// emitted in every object as a COMDAT, and the linker keeps one copy: the
// "SSE2" impl could silently run the AVX-512 copy (or crash on a CPU without
// it). Each level is therefore its own shared object, built with hidden
// visibility and loaded with dlopen(RTLD_LOCAL), so its instances never meet
// another level's (backends/variants/variant_backend.h).
//
// Declarations (every impl of every level; `declares` strings below), from the
// Eigen 3.4 documentation:
//  - accumulator = FP32: Eigen evaluates float expressions in float; its
//    reductions (redux) and GEMM accumulate in the scalar type (Eigen docs,
//    "Reductions, visitors and broadcasting"; GeneralBlockPanelKernel keeps
//    float accumulator registers).
//  - determinism = BITWISE: without -fopenmp Eigen runs single-threaded
//    ("Eigen and multi-threading": parallelism only with OpenMP or the Tensor
//    thread pool), and its blocking depends only on sizes and cache sizes, so
//    one build repeats its summation order exactly. Different SIMD levels use
//    different orders (packet width): they are different impls.
//  - nan = IEEE_PROPAGATE: arithmetic propagates NaN; the one place Eigen
//    documents otherwise is min/max, whose default NaN handling is
//    unspecified (3.4 release notes, "NaN propagation": PropagateFast). These
//    kernels ask for maxCoeff<PropagateNaN>() and write relu as a select, so
//    NaN propagates by construction.
//  - denormal = IEEE: Eigen does not touch MXCSR (no FTZ/DAZ) and documents no
//    flushing. (Its vectorized plog clamps inputs to the smallest normal
//    before taking the logarithm - GenericPacketMathFunctions.h, plog_impl_float -
//    which is undocumented behaviour that C-PRC-03 measures.)
//  - exp, log, erf, tanh: Array::exp() "returns an expression of the
//    coefficient-wise exponential", and the "Catalog of coefficient-wise math
//    functions" gives its scalar form as `using std::exp; exp(a[i]);`, for
//    which ISO C Annex F.10.3.1 fixes exp(-inf) = +0. No accuracy is documented
//    (ulp_bound is not declared: KC-EXP-01 does not apply). The sse2 and avx2
//    packet exp returns 2.94e-39 at -inf (tests/repro/eigen_exp_neg_inf.cpp),
//    so softmax's masked entries are not 0 (KC-SOFTMAX-MASKED, docs/audit.md).
//
// FP16 and BF16 (the `_fp16` / `_bf16` impls): the same kernels over
// Eigen::half and Eigen::bfloat16 matrices and arrays mapped onto kc's 16-bit
// buffers. What Eigen 3.4's arithmetic on these types is, from its headers
// (/usr/include/eigen3/Eigen/src/Core/..., line numbers of 3.4.0) and measured
// (tests/repro/eigen_half_accumulator.cpp):
//  - every scalar operation converts to float, operates once and rounds the
//    result back to half / bfloat16: Half.h:404-431 (`half(float(a) +
//    float(b))`, the same for *, -, /, +=), BFloat16.h:161-187. The AVX packets
//    do the same per lane: padd/pmul<Packet8h> (arch/AVX/PacketMath.h:1100-1119)
//    and padd/pmul<Packet8bf> (:1447-1457) widen, operate in float and narrow.
//    SSE2 and novec have no half or bfloat16 packet (the SSE Packet4h is
//    compiled out, SSE/PacketMath.h:1288), so they run the scalar operators.
//  - a multiply-add is two roundings: pmadd is padd(pmul(a, b), c)
//    (GenericPacketMath.h:956-958) and the GEBP micro-kernel's madd is pmadd
//    or pmul then padd (products/GeneralBlockPanelKernel.h:512-523). So a
//    matrix product rounds every product and every partial sum to the storage
//    format: the accumulator is FP16 / BF16, declared as such. Measured with
//    the accumulator_bits probe (M = 32, N = 4): 11 bits (FP16) and 8 (BF16)
//    at K = 3 and 130 on sse2/avx2; novec at K = 130 sums in another order
//    and reads 17 / 14. 1 + 2^-10 times 1 + 3 2^-10 minus 1 gives 2^-8, not
//    the 2^-8 + 2^-18 an unrounded product gives.
//  - sum() (softmax's denominator) keeps packet partial sums in the storage
//    format and reduces the last packet in float (predux<Packet8h>,
//    AVX/PacketMath.h:1155-1159): FP16 / BF16 accumulator. 5000 ones sum to
//    2048 in half on sse2 and novec (sequential), to 5000 on avx2 (8 lanes).
//  - exp, log, tanh, erf evaluate in float and round once: scalar
//    `half(::expf(float(a)))` (Half.h:660, 671, 705; BFloat16.h:494, 500, 542;
//    erf: unsupported/.../SpecialFunctionsHalf.h:27-28, SpecialFunctionsBFloat16.h:27-28),
//    packets through F16_PACKET_FUNCTION / BF16_PACKET_FUNCTION
//    (Half.h:53-58; AVX/MathFunctions.h:176-209: float pexp, plog, ptanh
//    on the widened lanes, narrowed once).
//  - conversions round to nearest even, keep subnormals, and map NaN to a
//    quiet NaN (float_to_half_rtne, Half.h:523-600): IEEE denormals and NaN
//    propagation as for float.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include "variants/kernel_abi.h"

namespace {

using kc_variant::fail;
using Index = Eigen::Index;
template <typename T>
using RowMatT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using RowArrT = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using VecT = Eigen::Array<T, Eigen::Dynamic, 1>;
using RowMat = RowMatT<float>;
using RowArr = RowArrT<float>;
using StridedMat = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;
using ConstStridedMat = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using Vec = VecT<float>;
using StridedVec = Eigen::Map<Vec, 0, Eigen::InnerStride<>>;
using ConstStridedVec = Eigen::Map<const Vec, 0, Eigen::InnerStride<>>;

constexpr int32_t kBadArgs = KC_UNSUPPORTED;

/// The kc storage format of an Eigen scalar type. kc's FP16 / BF16 buffers
/// hold uint16 bit patterns (kc_plugin.h), the layout of Eigen::half and
/// Eigen::bfloat16 (one uint16 member `x`).
template <typename T>
struct Format;
template <>
struct Format<float> {
  static constexpr int32_t kDtype = KC_DTYPE_F32;
  static constexpr const char* kName = "FP32";
};
template <>
struct Format<Eigen::half> {
  static constexpr int32_t kDtype = KC_DTYPE_F16;
  static constexpr const char* kName = "FP16";
};
template <>
struct Format<Eigen::bfloat16> {
  static constexpr int32_t kDtype = KC_DTYPE_BF16;
  static constexpr const char* kName = "BF16";
};
static_assert(sizeof(Eigen::half) == 2 && sizeof(Eigen::bfloat16) == 2, "16-bit scalars map kc's uint16 buffers");

/// kc_variant::f32_matrix / f32_dense_matrix / f32_vector (the same layout
/// rules) for any format: the tensor when it has T's dtype and that layout.
template <typename T>
kc_tensor* typed(const kc_call* call, const char* name, int32_t rank) {
  kc_tensor* t = kc_variant::tensor(call, name);
  if (!t || t->dtype != Format<T>::kDtype || t->rank != rank || !t->data) return nullptr;
  return t;
}
template <typename T>
kc_tensor* matrix(const kc_call* call, const char* name) {
  kc_tensor* t = typed<T>(call, name, 2);
  if (!t) return nullptr;
  const int64_t rows = t->shape[0], cols = t->shape[1], ld = t->strides[0];
  if (rows > 1 && ld < cols) return nullptr;
  if (cols > 1 && t->strides[1] != 1) return nullptr;
  if (rows > 0 && cols > 0 && (rows - 1) * ld + cols > t->storage_elems) return nullptr;
  return t;
}
template <typename T>
kc_tensor* dense_matrix(const kc_call* call, const char* name) {
  kc_tensor* t = matrix<T>(call, name);
  if (!t || (t->shape[0] > 1 && t->strides[0] != t->shape[1])) return nullptr;
  return t;
}
template <typename T>
kc_tensor* vector(const kc_call* call, const char* name) {
  kc_tensor* t = typed<T>(call, name, 1);
  if (!t) return nullptr;
  const int64_t n = t->shape[0], inc = n > 1 ? t->strides[0] : 1;
  if (inc < 1 || (n > 0 && (n - 1) * inc + 1 > t->storage_elems)) return nullptr;
  return t;
}

template <typename T>
Eigen::Map<const RowMatT<T>, 0, Eigen::OuterStride<>> cmat(const kc_tensor* t) {
  return Eigen::Map<const RowMatT<T>, 0, Eigen::OuterStride<>>(
      static_cast<const T*>(t->data), t->shape[0], t->shape[1],
      Eigen::OuterStride<>(t->shape[0] > 1 ? t->strides[0] : t->shape[1]));
}
template <typename T>
Eigen::Map<RowMatT<T>, 0, Eigen::OuterStride<>> mat(kc_tensor* t) {
  return Eigen::Map<RowMatT<T>, 0, Eigen::OuterStride<>>(static_cast<T*>(t->data), t->shape[0], t->shape[1],
                                                         Eigen::OuterStride<>(t->shape[0] > 1 ? t->strides[0] : t->shape[1]));
}

// ---- matmul: row-major C = alpha op(A) op(B) + beta C with the reference-BLAS
// rules of src/ops/matmul: alpha == 0 reads neither A nor B; beta == 0 does not
// read C (a NaN there must not propagate). Eigen's own `C = alpha*A*B`
// overwrites without reading C (its GEMM path clears the destination first);
// `C *= beta` would read it, so the beta == 0 case is a separate expression.
// For FP16 / BF16 the scalars alpha and beta are of the storage type too (an
// Eigen expression of half matrices scales by a half); a value the format
// cannot hold exactly is refused rather than rounded unseen.
template <typename T, typename OpA, typename OpB, typename C>
void gemm(const OpA& a, const OpB& b, C& c, T alpha, T beta) {
  if (beta == T(0.0f)) {
    c.noalias() = alpha * (a * b);
  } else {
    c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

template <typename T>
int32_t run_matmul(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* ta = matrix<T>(call, "A");
  kc_tensor* tb = matrix<T>(call, "B");
  kc_tensor* tc = matrix<T>(call, "C");
  const int trans_a = kc_variant::attr_trans(call, "trans_a");
  const int trans_b = kc_variant::attr_trans(call, "trans_b");
  if (!ta || !tb || !tc || trans_a < 0 || trans_b < 0) {
    const std::string text =
        std::string("matmul needs ") + Format<T>::kName + " row-major A, B, C and trans_a/trans_b in {N, T}";
    return fail(kBadArgs, msg, size, text.c_str());
  }
  const Index m = tc->shape[0], n = tc->shape[1];
  const Index k = trans_a ? ta->shape[0] : ta->shape[1];
  if ((trans_a ? ta->shape[1] : ta->shape[0]) != m || (trans_b ? tb->shape[1] : tb->shape[0]) != k ||
      (trans_b ? tb->shape[0] : tb->shape[1]) != n)
    return fail(kBadArgs, msg, size, "matmul: A, B and C shapes do not agree");
  const double alpha_d = kc_variant::attr_double(call, "alpha", 1.0);
  const double beta_d = kc_variant::attr_double(call, "beta", 0.0);
  const T alpha = static_cast<T>(static_cast<float>(alpha_d));
  const T beta = static_cast<T>(static_cast<float>(beta_d));
  if constexpr (!std::is_same_v<T, float>) {
    if (static_cast<double>(static_cast<float>(alpha)) != alpha_d ||
        static_cast<double>(static_cast<float>(beta)) != beta_d)
      return fail(kBadArgs, msg, size, "matmul: alpha or beta is not exactly representable in the storage format");
  }
  auto c = mat<T>(tc);
  if (alpha == T(0.0f)) {
    if (beta == T(0.0f)) {
      c.setZero();
    } else {
      c *= beta;
    }
    return KC_OK;
  }
  const auto a = cmat<T>(ta);
  const auto b = cmat<T>(tb);
  if (!trans_a && !trans_b) gemm(a, b, c, alpha, beta);
  if (!trans_a && trans_b) gemm(a, b.transpose(), c, alpha, beta);
  if (trans_a && !trans_b) gemm(a.transpose(), b, c, alpha, beta);
  if (trans_a && trans_b) gemm(a.transpose(), b.transpose(), c, alpha, beta);
  return KC_OK;
}

// ---- sum: out = x.sum() (Eigen's redux: packet-wise partial sums, then a
// horizontal reduction, so the order depends on the packet width; sequential
// for a strided vector or without vectorization).
int32_t run_sum(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* x = kc_variant::f32_vector(call, "x");
  kc_tensor* out = kc_variant::f32_vector(call, "out");
  if (!x || !out || out->shape[0] != 1) return fail(kBadArgs, msg, size, "sum needs FP32 x {n} and out {1}");
  const float* data = static_cast<const float*>(x->data);
  const Index n = x->shape[0];
  float s = 0.0f;
  if (n > 0 && kc_variant::stride0(x) == 1) {
    // Unit stride known at compile time: the vectorized redux (packet partial sums).
    s = Eigen::Map<const Vec>(data, n).sum();
  } else if (n > 0) {
    // A run-time stride: Eigen cannot vectorize it and sums sequentially.
    s = ConstStridedVec(data, n, Eigen::InnerStride<>(kc_variant::stride0(x))).sum();
  }
  static_cast<float*>(out->data)[0] = s;
  return KC_OK;
}

// ---- row statistics of x {rows, cols} -> out {rows}.
enum class Stat { kMean, kVariance, kNorm2, kLogSumExp };

template <Stat S>
int32_t run_stat(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* x = kc_variant::f32_dense_matrix(call, "x");
  kc_tensor* out = kc_variant::f32_vector(call, "out");
  if (!x || !out || out->shape[0] != x->shape[0] || x->shape[1] < 1)
    return fail(kBadArgs, msg, size, "needs FP32 x {rows, cols >= 1} dense and out {rows}");
  const Eigen::Map<const RowArr> xs(static_cast<const float*>(x->data), x->shape[0], x->shape[1]);
  float* o = static_cast<float*>(out->data);
  const int64_t inc = kc_variant::stride0(out);
  for (Index r = 0; r < xs.rows(); ++r) {
    const auto row = xs.row(r);
    float v = 0;
    if constexpr (S == Stat::kMean) {
      v = row.mean();  // sum() / cols
    } else if constexpr (S == Stat::kVariance) {
      // Two-pass population variance (the stable algorithm the op's error
      // model covers); the `estimator` attribute is not distinguished.
      const float mean = row.mean();
      v = (row - mean).square().mean();
    } else if constexpr (S == Stat::kNorm2) {
      // MatrixBase::norm() = sqrt(squaredNorm()): unscaled (Eigen docs: use
      // stableNorm() to avoid under/overflow), so it overflows for |x| > ~1e19.
      v = row.matrix().norm();
    } else {
      const float m = row.template maxCoeff<Eigen::PropagateNaN>();
      v = m + std::log((row - m).exp().sum());
    }
    o[r * inc] = v;
  }
  return KC_OK;
}

// ---- softmax / log_softmax along the rows of x {rows, cols}, max-subtracted.
// For FP16 / BF16 every step is Eigen arithmetic on the storage type: x - max,
// exp, the row sum and the division each round to it (the file header).
template <bool Log, typename T = float>
int32_t run_softmax(const kc_call* call, char* msg, size_t size, void*) {
  kc_tensor* x = dense_matrix<T>(call, "x");
  kc_tensor* y = dense_matrix<T>(call, "y");
  if (!x || !y || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1]) {
    const std::string text = std::string("softmax needs ") + Format<T>::kName + " dense x and y of one shape";
    return fail(kBadArgs, msg, size, text.c_str());
  }
  const Eigen::Map<const RowArrT<T>> xs(static_cast<const T*>(x->data), x->shape[0], x->shape[1]);
  Eigen::Map<RowArrT<T>> ys(static_cast<T*>(y->data), y->shape[0], y->shape[1]);
  using std::log;  // and Eigen::half_impl::log / bfloat16_impl::log by argument lookup
  for (Index r = 0; r < xs.rows(); ++r) {
    const T m = xs.row(r).template maxCoeff<Eigen::PropagateNaN>();
    if constexpr (Log) {
      const T log_sum = log((xs.row(r) - m).exp().sum());
      ys.row(r) = (xs.row(r) - m) - log_sum;
    } else {
      ys.row(r) = (xs.row(r) - m).exp();
      const T s = ys.row(r).sum();
      ys.row(r) /= s;
    }
  }
  return KC_OK;
}

// ---- elementwise y = f(x) on x {n}, y {n}; Eigen's array functions (packet
// math where the build vectorizes: pexp, plog, ptanh, perf; std:: otherwise).
enum class Fn { kExp, kLog, kTanh, kErf, kGeluErf, kGeluTanh, kRelu, kSilu };

// FP16 / BF16: the four library functions only (each one float evaluation
// rounded once, the file header); the gelu/silu compositions and relu are
// kc's expressions, not Eigen's, and have no 16-bit impls.
template <Fn F, typename T = float>
int32_t run_unary(const kc_call* call, char* msg, size_t size, void*) {
  static_assert(std::is_same_v<T, float> || F == Fn::kExp || F == Fn::kLog || F == Fn::kTanh || F == Fn::kErf);
  kc_tensor* x = vector<T>(call, "x");
  kc_tensor* y = vector<T>(call, "y");
  if (!x || !y || x->shape[0] != y->shape[0] || kc_variant::stride0(x) != 1 || kc_variant::stride0(y) != 1) {
    const std::string text = std::string("needs ") + Format<T>::kName + " contiguous x {n} and y {n}";
    return fail(kBadArgs, msg, size, text.c_str());
  }
  const Eigen::Map<const VecT<T>> xs(static_cast<const T*>(x->data), x->shape[0]);
  Eigen::Map<VecT<T>> ys(static_cast<T*>(y->data), y->shape[0]);
  if constexpr (F == Fn::kExp) ys = xs.exp();
  if constexpr (F == Fn::kLog) ys = xs.log();
  if constexpr (F == Fn::kTanh) ys = xs.tanh();
  if constexpr (F == Fn::kErf) ys = xs.erf();
  if constexpr (std::is_same_v<T, float>) {
    // gelu and silu are x * g(x) with g(-inf) = 0: the textbook expression gives
    // -inf * 0 = NaN at x = -inf, where the functions' limit is 0, so -inf is
    // selected out explicitly (declared inf_policy = LIMIT).
    // gelu_erf as 0.5 x erfc(-x / sqrt 2), as ref's: 1 + erf(z) cancels for
    // z << 0, and Eigen's float erf, like any erf a few ulps from exact, may
    // return just past -1 (measured: -1.00000024 near z = -3.77), which made
    // 0.5 x (1 + erf) positive for x < 0 - a property of that expression, not a
    // broken Eigen promise (Eigen documents no accuracy for erf).
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    if constexpr (F == Fn::kGeluErf)
      ys = (xs == kNegInf).select(0.0f, 0.5f * xs * (-xs * float(M_SQRT1_2)).erfc());
    if constexpr (F == Fn::kGeluTanh) {
      constexpr float kC = 0.7978845608028654f;  // sqrt(2/pi)
      ys = (xs == kNegInf).select(0.0f, 0.5f * xs * (1.0f + (kC * (xs + 0.044715f * xs.cube())).tanh()));
    }
    // relu as a select, not max(x, 0): a NaN compares false and is passed through.
    if constexpr (F == Fn::kRelu) ys = (xs < 0.0f).select(0.0f, xs);
    if constexpr (F == Fn::kSilu) ys = (xs == kNegInf).select(0.0f, xs * xs.logistic());
  }
  return KC_OK;
}

#define KC_NAME(op) "eigen." KC_VARIANT_LABEL "." op
#define KC_ACC "accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE"
#define KC_ELEM "determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE"
// run_matmul returns before Eigen is called when alpha == 0, and gemm() uses
// `C = alpha A B` (C not read) when beta == 0: rules of kc's adapter, not of Eigen.
// alignment = any: run_matmul maps A, B and C with MapOptions 0, Unaligned,
// which the Eigen 3.4 Map class reference gives as the default (an aligned
// Map is opt-in: Aligned16 ... Aligned128).
#define KC_GEMM                                                                                      \
  KC_ACC ", alpha_zero = AB_NOT_READ, beta_zero = C_NOT_READ, alignment = any, source = Eigen 3.4 " \
         "Map class reference: MapOptions default Unaligned (run_matmul maps with MapOptions 0)"
// Extreme magnitudes (contracts/range), what these kernels' code does: mean,
// variance and norm2 sum values or squares in float unscaled (Eigen documents
// norm() as sqrt(squaredNorm()) and offers stableNorm()/blueNorm() as the
// scaled forms that avoid overflow and underflow); log_sum_exp, softmax and
// log_softmax subtract the row max, so exp only sees arguments <= 0.
#define KC_UNSCALED ", reduction_range = UNSCALED"
#define KC_MAXSUB ", reduction_range = SAFE"
// gelu/silu select -inf out (run_unary): the limit 0, kc's choice.
#define KC_GATED KC_ELEM ", inf_policy = LIMIT"

// FP16 / BF16: Eigen arithmetic on Eigen::half / Eigen::bfloat16 (the file
// header has the header lines and the measurements). Products, partial sums,
// the softmax denominator and every intermediate are rounded to the storage
// format, so the accumulator declared is the storage format itself; the
// functions are one float evaluation rounded once (no accumulator).
// `source = ...` holds no comma (the declares list is comma-separated).
#define KC_SRC16(what) ", source = Eigen 3.4.0 headers: " what
#define KC_ARITH16                                                                                 \
  "Half.h:404-431 and BFloat16.h:161-187 (float op then one rounding to the type); packets the " \
  "same per lane: AVX/PacketMath.h:1100-1119 and 1447-1457; AVX512/PacketMath.h:1572-1590 and 2073-2088"
#define KC_GEMM16(acc)                                                                                 \
  "accumulator = " acc ", determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE, "            \
  "alpha_zero = AB_NOT_READ, beta_zero = C_NOT_READ" KC_SRC16(                                        \
      KC_ARITH16 "; GenericPacketMath.h:956-958 (pmadd = padd(pmul)) and "                            \
                 "products/GeneralBlockPanelKernel.h:512-523: every product and partial sum rounded to " acc)
#define KC_SOFTMAX16(acc)                                                                          \
  "accumulator = " acc ", determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE" KC_MAXSUB \
      KC_SRC16(KC_ARITH16 "; AVX/PacketMath.h:1155-1159 (sum: packet partial sums in " acc         \
                          " and the last packet reduced in float)")
// Eigen documents no accuracy for its functions ("Catalog of coefficient-wise
// math functions" gives the scalar form only): accuracy = UNDOCUMENTED, so a
// result beyond a contract's ulp bound is measured, not judged. Measured
// (kc ladder, all 65,536 inputs): fp16 within 1 ulp everywhere; bf16 shares
// float's exponent range, and the packet exp and log of sse2/avx2 treat its
// subnormals as float's (exp below ln(FLT_MIN) floors at 2^-128; log of a
// subnormal reads the smallest normal).
#define KC_FN16                                                                                    \
  KC_ELEM ", accuracy = UNDOCUMENTED"                                                              \
  KC_SRC16("Half.h:53-58 and 660-705; BFloat16.h:494-542; AVX/MathFunctions.h:176-209; "         \
           "SpecialFunctionsHalf.h:27-28 (float evaluation rounded once)")
#define KC_ROWS16(T, suffix, FMT)                                                                             \
  {KC_NAME("matmul_" suffix), "matmul", FMT, KC_GEMM16(FMT),                                                \
   "Eigen GEMM over " #T " (every product and partial sum rounded to " FMT ")", run_matmul<T>, nullptr},      \
  {KC_NAME("softmax_" suffix), "softmax", FMT, KC_SOFTMAX16(FMT),                                           \
   "rows of " #T ": exp(x - maxCoeff<PropagateNaN>) / sum, each step rounded to " FMT,                      \
   run_softmax<false, T>, nullptr},                                                                          \
  {KC_NAME("exp_" suffix), "exp", FMT, KC_FN16, "Array<" #T ">::exp()", run_unary<Fn::kExp, T>, nullptr},    \
  {KC_NAME("log_" suffix), "log", FMT, KC_FN16, "Array<" #T ">::log()", run_unary<Fn::kLog, T>, nullptr},    \
  {KC_NAME("tanh_" suffix), "tanh", FMT, KC_FN16, "Array<" #T ">::tanh()", run_unary<Fn::kTanh, T>, nullptr}, \
  {KC_NAME("erf_" suffix), "erf", FMT, KC_FN16, "Array<" #T ">::erf()", run_unary<Fn::kErf, T>, nullptr}

const kc_impl_desc kImpls[] = {
    {KC_NAME("matmul"), "matmul", "FP32", KC_GEMM, "Eigen GEMM C = alpha op(A) op(B) + beta C (Map, OuterStride)",
     run_matmul<float>, nullptr},
    {KC_NAME("sum"), "sum", "FP32", KC_ACC, "Eigen redux: strided vector .sum()", run_sum, nullptr},
    {KC_NAME("mean"), "mean", "FP32", KC_ACC KC_UNSCALED, "row .mean()", run_stat<Stat::kMean>, nullptr},
    {KC_NAME("variance"), "variance", "FP32", KC_ACC KC_UNSCALED, "two-pass row variance ((x - mean)^2).mean()",
     run_stat<Stat::kVariance>, nullptr},
    {KC_NAME("norm2"), "norm2", "FP32", KC_ACC KC_UNSCALED, "row .norm() = sqrt(squaredNorm()), unscaled",
     run_stat<Stat::kNorm2>, nullptr},
    {KC_NAME("log_sum_exp"), "log_sum_exp", "FP32", KC_ACC KC_MAXSUB, "row max + log(sum(exp(x - max)))",
     run_stat<Stat::kLogSumExp>, nullptr},
    {KC_NAME("softmax"), "softmax", "FP32", KC_ACC KC_MAXSUB, "rows: exp(x - maxCoeff<PropagateNaN>) / sum",
     run_softmax<false>, nullptr},
    {KC_NAME("log_softmax"), "log_softmax", "FP32", KC_ACC KC_MAXSUB, "rows: x - max - log(sum(exp(x - max)))",
     run_softmax<true>, nullptr},
    {KC_NAME("exp"), "exp", "FP32", KC_ELEM, "Array::exp()", run_unary<Fn::kExp>, nullptr},
    {KC_NAME("log"), "log", "FP32", KC_ELEM, "Array::log()", run_unary<Fn::kLog>, nullptr},
    {KC_NAME("tanh"), "tanh", "FP32", KC_ELEM, "Array::tanh()", run_unary<Fn::kTanh>, nullptr},
    {KC_NAME("erf"), "erf", "FP32", KC_ELEM, "Array::erf() (unsupported/SpecialFunctions)", run_unary<Fn::kErf>,
     nullptr},
    {KC_NAME("gelu_erf"), "gelu_erf", "FP32", KC_GATED, "0.5 x erfc(-x / sqrt 2) as an Array expression",
     run_unary<Fn::kGeluErf>, nullptr},
    {KC_NAME("gelu_tanh"), "gelu_tanh", "FP32", KC_GATED, "0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))",
     run_unary<Fn::kGeluTanh>, nullptr},
    {KC_NAME("relu"), "relu", "FP32", KC_ELEM, "(x < 0).select(0, x)", run_unary<Fn::kRelu>, nullptr},
    {KC_NAME("silu"), "silu", "FP32", KC_GATED, "x * Array::logistic()", run_unary<Fn::kSilu>, nullptr},
    KC_ROWS16(Eigen::half, "fp16", "FP16"),
    KC_ROWS16(Eigen::bfloat16, "bf16", "BF16"),
};

#define KC_STR2(x) #x
#define KC_STR(x) KC_STR2(x)

const kc_plugin kPlugin = {
    KC_PLUGIN_ABI_VERSION,
    "eigen",
    "Eigen " KC_STR(EIGEN_WORLD_VERSION) "." KC_STR(EIGEN_MAJOR_VERSION) "." KC_STR(EIGEN_MINOR_VERSION),
    static_cast<int32_t>(sizeof(kImpls) / sizeof(kImpls[0])),
    kImpls,
};

}  // namespace

KC_VARIANT_EXPORT const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  return host_abi_version == KC_PLUGIN_ABI_VERSION ? &kPlugin : nullptr;
}

/// What this build of Eigen vectorizes with, for `kc backends` (checked by the
/// loader against the label: a build that silently fell back is an error).
KC_VARIANT_EXPORT const char* kc_variant_simd() { return Eigen::SimdInstructionSetsInUse(); }
