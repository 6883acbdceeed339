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

  Declaration asum = calib_decl("calib.asum_skip_nonfinite", "asum",
                                "seeded bug: asum declaring nan = IEEE_PROPAGATE that skips non-finite terms (a "
                                "\"NaN-safe\" sum): NaN and Inf never reach the result");
  asum.dtypes = {DType::kF32, DType::kF64};
  asum.accumulator.reset();
  add(out, std::move(asum), asum_skip_nonfinite);
}

}  // namespace kc::calibration
