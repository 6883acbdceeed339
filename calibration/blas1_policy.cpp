// kc — the trios of the level-1 rule contracts (contracts/blas/KC-SCAL-02/03,
// KC-IAMAX-02/03, KC-NRM2-01..03): scal, iamax and nrm2 kernels in FP32 and
// FP64 that declare the rule the libraries differ on (scal_alpha_zero,
// iamax_nan, nrm2_range) and keep it, or break it where a visible test with
// finite, moderate inputs cannot see:
//   calib.scal_multiply           x := alpha x, the IEEE product (MULTIPLY)
//   calib.scal_zero_shortcut      MULTIPLY declared, an alpha = 0 fast path stores zeros
//   calib.scal_zero_fill          zeros at alpha = 0, the product otherwise (ZERO_FILL)
//   calib.scal_nan_alpha_as_zero  ZERO_FILL declared, but the zero test !(a < 0 || a > 0) takes NaN for 0
//   calib.iamax_greater_than      reference isamax scan (GREATER_THAN)
//   calib.iamax_not_le            GREATER_THAN declared, scan written !(|x_i| <= max): a later NaN wins
//   calib.iamax_first_nan         first NaN, else the reference scan (FIRST_NAN)
//   calib.iamax_gt_as_first_nan   FIRST_NAN declared, plain > scan: a later NaN never wins
//   calib.nrm2_blue               Blue's three-accumulator norm with Inf/NaN handling (SAFE)
//   calib.nrm2_naive              SAFE declared, sqrt(sum x_i^2) in the working precision
//   calib.nrm2_scale_ssq          SAFE declared, one-pass scale/ssq update: Inf / Inf = NaN
//   calib.nrm2_no_sqrt            baseline: the sum of squares, square root forgotten
//   calib.asum_skip_nonfinite     nan = IEEE_PROPAGATE declared, but non-finite |x_i| are skipped ("NaN-safe" sum)
// and those of the increment contracts (KC-INC-01..06), which take the signed
// incx/incy from the call's params (the tensor's stride is |inc|) and declare
// increments = BLAS:
//   calib.nrm2_quick_return_inc   Blue's norm returning 0 at incx <= 0 (the pre-3.10 reference rule)
//   calib.dot_blas                dot walking each vector as BLAS does (a negative increment from the far end)
//   calib.dot_stride_only         dot walking both vectors from their start whatever the sign
//   calib.dot_no_y                baseline: sum x_i (y never read)
//   calib.asum_quick_return       0 at incx <= 0 (nonpositive_inc = QUICK_RETURN)
//   calib.asum_walk               the walked elements' sum at incx <= 0 (WALK)
//   calib.asum_walk_as_quick      QUICK_RETURN declared, walks at incx <= 0
//   calib.asum_quick_as_walk      WALK declared, returns 0 at incx <= 0
//   calib.asum_signed             baseline: sum x_i (the fabs forgotten)
//   calib.scal_quick_return       x unchanged at incx <= 0 (QUICK_RETURN)
//   calib.scal_walk_as_quick      QUICK_RETURN declared, scales the walked elements at incx <= 0
//   calib.scal_walk               x(1) scaled n times at incx = 0, elementwise otherwise (WALK)
//   calib.scal_walk_once          WALK declared, x(1) scaled once at incx = 0 (a stride-0 vector taken as one element)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

/// Runs `fn.template operator()<T>()` for the call's x dtype (FP32 or FP64).
template <typename Fn>
Status by_dtype(const Call& call, Fn&& fn) {
  switch (call.t("x").dtype()) {
    case DType::kF32:
      return fn.template operator()<float>();
    case DType::kF64:
      return fn.template operator()<double>();
    default:
      return unimplemented("level-1 calibration kernels take FP32 or FP64");
  }
}

// ---------------------------------------------------------------- scal

enum class ScalRule {
  kMultiply,       // x_i := alpha x_i always
  kZeroShortcut,   // if (alpha == 0) x := 0, else the product
  kZeroFill,       // the same as kZeroShortcut, declared ZERO_FILL
  kNanAlphaZero,   // zero test !(alpha < 0 || alpha > 0): true for NaN too
};

Status scal_kernel(Call& call, ScalRule rule) {
  return by_dtype(call, [&]<typename T>() {
    Tensor& tx = call.t("x");
    T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = tx.strides()[0];
    const T alpha = static_cast<T>(call.get_double("alpha", 1.5));
    bool zero = false;
    switch (rule) {
      case ScalRule::kMultiply:
        break;
      case ScalRule::kZeroShortcut:
      case ScalRule::kZeroFill:
        zero = alpha == 0;
        break;
      case ScalRule::kNanAlphaZero:
        zero = !(alpha < 0 || alpha > 0);
        break;
    }
    for (std::int64_t i = 0; i < n; ++i) x[i * inc] = zero ? T(0) : alpha * x[i * inc];
    return ok_status();
  });
}

// ---------------------------------------------------------------- iamax

enum class IamaxRule {
  kGreaterThan,  // if (|x_i| > max): a NaN at x_0 wins, a later one never
  kNotLessEqual, // if (!(|x_i| <= max)): a later NaN is taken (and kept: nothing beats it)
  kFirstNan,     // the first NaN if any, else kGreaterThan
};

Status iamax_kernel(Call& call, IamaxRule rule) {
  return by_dtype(call, [&]<typename T>() {
    const Tensor& tx = call.t("x");
    const T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = tx.strides()[0];
    std::int64_t best = n > 0 ? 0 : -1;
    if (rule == IamaxRule::kFirstNan) {
      for (std::int64_t i = 0; i < n; ++i)
        if (std::isnan(x[i * inc])) {
          call.t("out").data<std::int64_t>()[0] = i;
          return ok_status();
        }
    }
    T dmax = n > 0 ? std::fabs(x[0]) : T(0);
    for (std::int64_t i = 1; i < n; ++i) {
      const T a = std::fabs(x[i * inc]);
      const bool take = rule == IamaxRule::kNotLessEqual ? !(a <= dmax) : a > dmax;
      if (take) {
        best = i;
        dmax = a;
      }
    }
    call.t("out").data<std::int64_t>()[0] = best;
    return ok_status();
  });
}

// ---------------------------------------------------------------- nrm2

/// Blue's algorithm (Blue 1978; the form of reference snrm2.f90 since 3.10,
/// Anderson's TOMS Algorithm 978), written for T. Three sums: squares of small
/// values scaled up by ssml, of medium values as they are, of big values
/// scaled down by sbig. All four constants are powers of two, so scaling is
/// exact. A NaN reaches the medium sum (every comparison with it is false); an
/// infinity the big one.
template <typename T>
T blue_norm(const T* x, std::int64_t n, std::int64_t inc) {
  using L = std::numeric_limits<T>;
  const int emin = L::min_exponent, emax = L::max_exponent, t = L::digits;
  const T tsml = std::ldexp(T(1), static_cast<int>(std::ceil((emin - 1) * 0.5)));
  const T tbig = std::ldexp(T(1), static_cast<int>(std::floor((emax - t + 1) * 0.5)));
  const T ssml = std::ldexp(T(1), -static_cast<int>(std::floor((emin - t) * 0.5)));
  const T sbig = std::ldexp(T(1), -static_cast<int>(std::ceil((emax + t - 1) * 0.5)));
  T asml = 0, amed = 0, abig = 0;
  bool notbig = true;
  for (std::int64_t i = 0; i < n; ++i) {
    const T ax = std::fabs(x[i * inc]);
    if (ax > tbig) {
      abig += (ax * sbig) * (ax * sbig);
      notbig = false;
    } else if (ax < tsml) {
      if (notbig) asml += (ax * ssml) * (ax * ssml);
    } else {
      amed += ax * ax;
    }
  }
  const bool med_counts = amed > 0 || std::isnan(amed);
  if (abig > 0) {
    if (med_counts) abig += (amed * sbig) * sbig;
    return std::sqrt(abig) / sbig;
  }
  if (asml > 0) {
    if (!med_counts) return std::sqrt(asml) / ssml;
    const T rmed = std::sqrt(amed), rsml = std::sqrt(asml) / ssml;
    const T ymin = rsml > rmed ? rmed : rsml, ymax = rsml > rmed ? rsml : rmed;
    const T r = ymin / ymax;
    return ymax * std::sqrt(1 + r * r);
  }
  return std::sqrt(amed);
}

/// The one-pass scale/ssq update of the pre-3.10 reference snrm2.f (and of
/// LAPACK's old slassq): when |x_i| exceeds the scale, ssq is rescaled by
/// (scale / |x_i|)^2. A second infinity divides Inf by Inf: NaN.
template <typename T>
T scale_ssq_norm(const T* x, std::int64_t n, std::int64_t inc) {
  T scale = 0, ssq = 1;
  for (std::int64_t i = 0; i < n; ++i) {
    const T v = x[i * inc];
    if (v == 0) continue;
    const T a = std::fabs(v);
    if (scale < a) {
      const T r = scale / a;
      ssq = 1 + ssq * r * r;
      scale = a;
    } else {
      const T r = a / scale;
      ssq += r * r;
    }
  }
  return scale * std::sqrt(ssq);
}

enum class Nrm2Rule { kBlue, kNaive, kScaleSsq, kNoSqrt };

Status nrm2_kernel(Call& call, Nrm2Rule rule) {
  return by_dtype(call, [&]<typename T>() {
    const Tensor& tx = call.t("x");
    const T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = tx.strides()[0];
    T r = 0;
    switch (rule) {
      case Nrm2Rule::kBlue:
        r = blue_norm(x, n, inc);
        break;
      case Nrm2Rule::kScaleSsq:
        r = scale_ssq_norm(x, n, inc);
        break;
      case Nrm2Rule::kNaive: {
        T s = 0;
        for (std::int64_t i = 0; i < n; ++i) s += x[i * inc] * x[i * inc];
        r = std::sqrt(s);
        break;
      }
      case Nrm2Rule::kNoSqrt:
        for (std::int64_t i = 0; i < n; ++i) r += x[i * inc] * x[i * inc];
        break;
    }
    call.t("out").data<T>()[0] = r;
    return ok_status();
  });
}

// ---------------------------------------------------------------- asum

/// sum |x_i| that leaves out the non-finite terms, a "NaN-safe" accumulation:
/// NaN and Inf never reach the result.
Status asum_skip_nonfinite(Call& call) {
  return by_dtype(call, [&]<typename T>() {
    const Tensor& tx = call.t("x");
    const T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = tx.strides()[0];
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (std::isfinite(x[i * inc])) s += std::fabs(x[i * inc]);
    call.t("out").data<T>()[0] = s;
    return ok_status();
  });
}

// ---------------------------------------------------------------- increments

/// The call's signed increment `key` (incx, incy); without it, the stride.
std::int64_t signed_inc(const Call& call, const char* key, const Tensor& t) {
  return call.get_int(key, t.strides()[0]);
}

/// Storage offset of x(i + 1) as the Fortran BLAS walks n elements at inc:
/// from the far end when inc < 0, X(1) every time when inc = 0.
std::int64_t blas_offset(std::int64_t i, std::int64_t n, std::int64_t inc) {
  return inc < 0 ? (n - 1 - i) * -inc : i * inc;
}

Status nrm2_quick_return_inc(Call& call) {
  if (signed_inc(call, "incx", call.t("x")) > 0) return nrm2_kernel(call, Nrm2Rule::kBlue);
  return by_dtype(call, [&]<typename T>() {
    call.t("out").data<T>()[0] = T(0);
    return ok_status();
  });
}

enum class DotRule { kBlas, kStrideOnly, kNoY };

Status dot_kernel(Call& call, DotRule rule) {
  return by_dtype(call, [&]<typename T>() {
    const Tensor &tx = call.t("x"), &ty = call.t("y");
    const T* x = tx.data<T>();
    const T* y = ty.data<T>();
    const std::int64_t n = tx.dim(0);
    std::int64_t incx = signed_inc(call, "incx", tx), incy = signed_inc(call, "incy", ty);
    if (rule == DotRule::kStrideOnly) {
      incx = incx < 0 ? -incx : incx;
      incy = incy < 0 ? -incy : incy;
    }
    T s = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const T xi = x[blas_offset(i, n, incx)];
      s += rule == DotRule::kNoY ? xi : xi * y[blas_offset(i, n, incy)];
    }
    call.t("out").data<T>()[0] = s;
    return ok_status();
  });
}

enum class AsumRule { kQuickReturn, kWalk, kSigned };

Status asum_kernel(Call& call, AsumRule rule) {
  return by_dtype(call, [&]<typename T>() {
    const Tensor& tx = call.t("x");
    const T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = signed_inc(call, "incx", tx);
    T s = 0;
    if (inc > 0 || rule != AsumRule::kQuickReturn) {
      for (std::int64_t i = 0; i < n; ++i) {
        const T v = x[blas_offset(i, n, inc)];
        s += rule == AsumRule::kSigned ? v : std::fabs(v);
      }
    }
    call.t("out").data<T>()[0] = s;
    return ok_status();
  });
}

enum class ScalIncRule {
  kQuickReturn,  // x unchanged at inc <= 0
  kWalk,         // elementwise at inc < 0; X(1) scaled n times at inc = 0
  kWalkOnce,     // as kWalk, but X(1) scaled once at inc = 0 (a stride-0 vector taken for one element)
};

Status scal_inc_kernel(Call& call, ScalIncRule rule) {
  return by_dtype(call, [&]<typename T>() {
    Tensor& tx = call.t("x");
    T* x = tx.data<T>();
    const std::int64_t n = tx.dim(0), inc = signed_inc(call, "incx", tx);
    const T alpha = static_cast<T>(call.get_double("alpha", 1.5));
    if (inc <= 0 && rule == ScalIncRule::kQuickReturn) return ok_status();
    const std::int64_t times = inc == 0 && rule == ScalIncRule::kWalkOnce ? std::min<std::int64_t>(n, 1) : n;
    for (std::int64_t i = 0; i < times; ++i) {
      T& v = x[blas_offset(i, n, inc)];
      v = alpha * v;
    }
    return ok_status();
  });
}

/// A calibration declaration for FP32 and FP64, with one declared rule.
Declaration level1_decl(std::string name, std::string op, std::string key, std::string value,
                        std::string description) {
  Declaration d = calib_decl(std::move(name), std::move(op), std::move(description));
  d.dtypes = {DType::kF32, DType::kF64};
  d.accumulator.reset();
  d.extra[std::move(key)] = std::move(value);
  return d;
}

}  // namespace

void add_blas1_policy_impls(ImplList& out) {
  auto scal = [&](const char* name, const char* rule, ScalRule r, const char* what) {
    add(out, level1_decl(name, "scal", "scal_alpha_zero", rule, what),
        [r](Call& call) { return scal_kernel(call, r); });
  };
  scal("calib.scal_multiply", "MULTIPLY", ScalRule::kMultiply,
       "x := alpha x, the IEEE product at every alpha (0 * NaN = NaN); declares scal_alpha_zero = MULTIPLY");
  scal("calib.scal_zero_shortcut", "MULTIPLY", ScalRule::kZeroShortcut,
       "seeded bug: declares scal_alpha_zero = MULTIPLY (the reference rule) but an alpha = 0 fast path stores "
       "zeros, so NaN and Inf in x are lost");
  scal("calib.scal_zero_fill", "ZERO_FILL", ScalRule::kZeroFill,
       "x := 0 at alpha = 0, alpha x otherwise; declares scal_alpha_zero = ZERO_FILL");
  scal("calib.scal_nan_alpha_as_zero", "ZERO_FILL", ScalRule::kNanAlphaZero,
       "seeded bug: ZERO_FILL whose zero test !(alpha < 0 || alpha > 0) is true for a NaN alpha: x := 0 "
       "where alpha x is NaN");

  auto iamax = [&](const char* name, const char* rule, IamaxRule r, const char* what) {
    Declaration d = level1_decl(name, "iamax", "iamax_nan", rule, what);
    add(out, std::move(d), [r](Call& call) { return iamax_kernel(call, r); });
  };
  iamax("calib.iamax_greater_than", "GREATER_THAN", IamaxRule::kGreaterThan,
        "reference isamax scan if (|x_i| > max); declares iamax_nan = GREATER_THAN");
  iamax("calib.iamax_not_le", "GREATER_THAN", IamaxRule::kNotLessEqual,
        "seeded bug: declares iamax_nan = GREATER_THAN but scans with !(|x_i| <= max), which takes a NaN "
        "anywhere");
  iamax("calib.iamax_first_nan", "FIRST_NAN", IamaxRule::kFirstNan,
        "the first NaN, else the reference scan; declares iamax_nan = FIRST_NAN");
  iamax("calib.iamax_gt_as_first_nan", "FIRST_NAN", IamaxRule::kGreaterThan,
        "seeded bug: declares iamax_nan = FIRST_NAN but scans with |x_i| > max, which never takes a NaN after "
        "x_0");

  auto nrm2 = [&](const char* name, Nrm2Rule r, const char* what) {
    Declaration d = level1_decl(name, "nrm2", "nrm2_range", "SAFE", what);
    // The norm does not depend on the order: walking |incx| from the start
    // (a stride-0 vector repeats x(1)) is what BLAS computes for any sign.
    d.extra["increments"] = "BLAS";
    add(out, std::move(d), [r](Call& call) { return nrm2_kernel(call, r); });
  };
  nrm2("calib.nrm2_blue", Nrm2Rule::kBlue,
       "Blue's three-accumulator nrm2 (reference snrm2.f90 form) in the working precision; declares "
       "nrm2_range = SAFE");
  nrm2("calib.nrm2_naive", Nrm2Rule::kNaive,
       "seeded bug: declares nrm2_range = SAFE but computes sqrt(sum x_i^2) unscaled: the squares overflow or "
       "underflow");
  nrm2("calib.nrm2_scale_ssq", Nrm2Rule::kScaleSsq,
       "seeded bug: declares nrm2_range = SAFE but updates one scale/ssq pair: a second infinity gives "
       "Inf / Inf = NaN");
  nrm2("calib.nrm2_no_sqrt", Nrm2Rule::kNoSqrt, "baseline: nrm2 returning sum x_i^2 (the square root forgotten)");

  // The increment trios: every impl below reads the signed increment.
  auto blas_inc = [&](Declaration d, FnImpl::Kernel k) {
    d.extra["increments"] = "BLAS";
    add(out, std::move(d), std::move(k));
  };
  blas_inc(level1_decl("calib.nrm2_quick_return_inc", "nrm2", "nrm2_range", "SAFE",
                       "seeded bug: Blue's nrm2 (SAFE) declaring increments = BLAS that returns 0 for incx <= 0, the "
                       "pre-3.10 reference rule (reference dnrm2.f90 documents incx < 0 and counts x(1) n times at "
                       "incx = 0)"),
           nrm2_quick_return_inc);
  auto dot = [&](const char* name, DotRule r, const char* what) {
    Declaration d = calib_decl(name, "dot", what);
    d.dtypes = {DType::kF32, DType::kF64};
    d.accumulator.reset();
    blas_inc(std::move(d), [r](Call& call) { return dot_kernel(call, r); });
  };
  dot("calib.dot_blas", DotRule::kBlas,
      "dot walking x and y as the Fortran BLAS does (a negative increment from the far end, 0 on the spot); "
      "declares increments = BLAS");
  dot("calib.dot_stride_only", DotRule::kStrideOnly,
      "seeded bug: declares increments = BLAS but walks both vectors from their start whatever the sign: right "
      "when the signs agree, x paired with y reversed when they differ");
  dot("calib.dot_no_y", DotRule::kNoY, "baseline: dot returning sum x_i (y never read)");
  auto asum_inc = [&](const char* name, const char* rule, AsumRule r, const char* what) {
    blas_inc(level1_decl(name, "asum", "nonpositive_inc", rule, what), [r](Call& call) { return asum_kernel(call, r); });
  };
  asum_inc("calib.asum_quick_return", "QUICK_RETURN", AsumRule::kQuickReturn,
           "asum returning 0 at incx <= 0 (reference dasum.f); declares nonpositive_inc = QUICK_RETURN");
  asum_inc("calib.asum_walk", "WALK", AsumRule::kWalk,
           "asum over the walked elements at incx <= 0 (from the far end, x(1) n times at 0); declares "
           "nonpositive_inc = WALK");
  asum_inc("calib.asum_walk_as_quick", "QUICK_RETURN", AsumRule::kWalk,
           "seeded bug: declares nonpositive_inc = QUICK_RETURN (the reference's code) but sums the walked "
           "elements at incx <= 0");
  asum_inc("calib.asum_quick_as_walk", "WALK", AsumRule::kQuickReturn,
           "seeded bug: declares nonpositive_inc = WALK but returns 0 at incx <= 0");
  asum_inc("calib.asum_signed", "WALK", AsumRule::kSigned, "baseline: asum returning sum x_i (the fabs forgotten)");
  auto scal_inc = [&](const char* name, const char* rule, ScalIncRule r, const char* what) {
    blas_inc(level1_decl(name, "scal", "nonpositive_inc", rule, what),
             [r](Call& call) { return scal_inc_kernel(call, r); });
  };
  scal_inc("calib.scal_quick_return", "QUICK_RETURN", ScalIncRule::kQuickReturn,
           "scal leaving x unchanged at incx <= 0 (reference dscal.f); declares nonpositive_inc = QUICK_RETURN");
  scal_inc("calib.scal_walk_as_quick", "QUICK_RETURN", ScalIncRule::kWalk,
           "seeded bug: declares nonpositive_inc = QUICK_RETURN (the reference's code) but scales the walked "
           "elements at incx <= 0");
  scal_inc("calib.scal_walk", "WALK", ScalIncRule::kWalk,
           "scal walking incx <= 0: elementwise for incx < 0, x(1) scaled n times at incx = 0; declares "
           "nonpositive_inc = WALK");
  scal_inc("calib.scal_walk_once", "WALK", ScalIncRule::kWalkOnce,
           "seeded bug: declares nonpositive_inc = WALK but scales x(1) once at incx = 0 (the stride-0 vector "
           "taken for one element)");

  Declaration asum = calib_decl("calib.asum_skip_nonfinite", "asum",
                                "seeded bug: asum declaring nan = IEEE_PROPAGATE that skips non-finite terms (a "
                                "\"NaN-safe\" sum): NaN and Inf never reach the result");
  asum.dtypes = {DType::kF32, DType::kF64};
  asum.accumulator.reset();
  add(out, std::move(asum), asum_skip_nonfinite);
}

}  // namespace kc::calibration
