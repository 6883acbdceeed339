// kc — the trios of the complex BLAS contracts (contracts/blas/KC-CDOT-01/02,
// KC-CSCAL-01..03, KC-CSSCAL-01..03, KC-CIAMAX-01/02, KC-CGEMV-01..03, KC-CGEMM-01..03): complex
// kernels in FP32 (c) and FP64 (z) components over the ops' (re, im) storage
// (src/ops/complex/complex.h), each a plain loop in the working precision or
// that loop with one documented defect:
//   calib.cdot_loop              sum x_i y_i or conj(x_i) y_i, one complex accumulator
//   calib.cdot_fp16              the same with x and y loaded through fp16
//   calib.cdot_real_only         baseline: the imaginary part never computed (0)
//   calib.cdot_skip_nonfinite    nan = IEEE_PROPAGATE declared, non-finite products left out of the sum
//   calib.cscal_textbook         x := alpha x, textbook product, x kept at alpha = 1 (MULTIPLY)
//   calib.cscal_bf16_alpha       the same with alpha's parts rounded to bf16
//   calib.cscal_conj_alpha       baseline: x := conj(alpha) x
//   calib.cscal_zero_shortcut    MULTIPLY declared, an alpha = 0 fast path stores zeros
//   calib.cscal_zero_fill        zeros at alpha = 0, the product otherwise (ZERO_FILL)
//   calib.cscal_nan_alpha_as_zero ZERO_FILL declared, zero test !(a < 0 || a > 0) on each part: NaN counts as 0
//   calib.csscal_multiply / _bf16_alpha / _re_only (baseline) / _zero_shortcut / _zero_fill /
//   _nan_alpha_as_zero           the same rules for a real alpha (csscal/zdscal)
//   calib.ciamax_greater_than    reference icamax scan on |re| + |im| (GREATER_THAN)
//   calib.ciamax_not_le          GREATER_THAN declared, scan written !(v <= max): a later NaN wins
//   calib.ciamax_first_nan       first element with a NaN part, else the scan (FIRST_NAN)
//   calib.ciamax_gt_as_first_nan FIRST_NAN declared, plain > scan: a later NaN never wins
//   calib.ciamax_re_only         baseline: the largest |re| alone
//   calib.cgemv_loop / cgemm_loop              one complex accumulator per output
//   calib.cgemv_fp16 / cgemm_fp16              operands loaded through fp16
//   calib.cgemv_beta_only / cgemm_beta_only    baseline: the product forgotten, out = beta out
//   calib.cgemv_beta_reads_y / cgemm_beta_reads_c  beta = 0 rule declared, output read anyway
//   calib.cgemv_alpha_reads_ax / cgemm_alpha_reads_ab  alpha = 0 rule declared, product formed and scaled anyway
#include <cmath>
#include <cstdint>
#include <string>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

template <typename T>
struct C {
  T re = 0, im = 0;
};
template <typename T>
C<T> cmul(C<T> a, C<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/// Runs `fn.template operator()<T>()` for the dtype of tensor `name`.
template <typename Fn>
Status by_dtype(const Call& call, const char* name, Fn&& fn) {
  switch (call.t(name).dtype()) {
    case DType::kF32:
      return fn.template operator()<float>();
    case DType::kF64:
      return fn.template operator()<double>();
    default:
      return unimplemented("complex calibration kernels take FP32 or FP64 components");
  }
}

template <typename T>
T through_fp16(T v, bool on) {
  return on ? static_cast<T>(round_to(static_cast<double>(v), DType::kF16)) : v;
}

/// Element i of a (n, 2) vector, element (i, j) of a (rows, cols, 2) matrix.
template <typename T>
C<T> vload(const Tensor& t, std::int64_t i, bool fp16 = false) {
  const T* p = t.data<T>() + i * t.strides()[0];
  return {through_fp16(p[0], fp16), through_fp16(p[1], fp16)};
}
template <typename T>
void vstore(Tensor& t, std::int64_t i, C<T> v) {
  T* p = t.data<T>() + i * t.strides()[0];
  p[0] = v.re;
  p[1] = v.im;
}
template <typename T>
C<T> mload(const Tensor& t, std::int64_t i, std::int64_t j, bool fp16 = false) {
  const T* p = t.data<T>() + i * t.strides()[0] + j * t.strides()[1];
  return {through_fp16(p[0], fp16), through_fp16(p[1], fp16)};
}
template <typename T>
void mstore(Tensor& t, std::int64_t i, std::int64_t j, C<T> v) {
  T* p = t.data<T>() + i * t.strides()[0] + j * t.strides()[1];
  p[0] = v.re;
  p[1] = v.im;
}

template <typename T>
C<T> scalar(const Call& call, const std::string& name, double re_default) {
  return {static_cast<T>(call.get_double(name, re_default)), static_cast<T>(call.get_double(name + "_im", 0))};
}

/// op(M)_(i, k) for trans N, T or C.
template <typename T>
C<T> op_load(const Tensor& t, const std::string& trans, std::int64_t i, std::int64_t k, bool fp16) {
  if (trans == "N") return mload<T>(t, i, k, fp16);
  C<T> v = mload<T>(t, k, i, fp16);
  if (trans == "C") v.im = -v.im;
  return v;
}

// ---------------------------------------------------------------- cdot

enum class DotDefect { kNone, kFp16, kRealOnly, kSkipNonfinite };

Status cdot_kernel(Call& call, DotDefect defect) {
  return by_dtype(call, "x", [&]<typename T>() {
    const Tensor& x = call.t("x");
    const Tensor& y = call.t("y");
    const bool conj = call.get("conj", "U") == "C";
    const bool fp16 = defect == DotDefect::kFp16;
    C<T> acc;
    for (std::int64_t i = 0; i < x.dim(0); ++i) {
      C<T> xi = vload<T>(x, i, fp16);
      if (conj) xi.im = -xi.im;
      const C<T> p = cmul(xi, vload<T>(y, i, fp16));
      // A "NaN-safe" sum: terms with a non-finite part are left out.
      if (defect == DotDefect::kSkipNonfinite && !(std::isfinite(p.re) && std::isfinite(p.im))) continue;
      acc.re += p.re;
      acc.im += p.im;
    }
    if (defect == DotDefect::kRealOnly) acc.im = 0;
    call.t("out").data<T>()[0] = acc.re;
    call.t("out").data<T>()[1] = acc.im;
    return ok_status();
  });
}

// ---------------------------------------------------------------- cscal

enum class ScalRule { kTextbook, kBf16Alpha, kConjAlpha, kZeroShortcut, kZeroFill, kNanAlphaZero };

Status cscal_kernel(Call& call, ScalRule rule) {
  return by_dtype(call, "x", [&]<typename T>() {
    Tensor& x = call.t("x");
    C<T> alpha = scalar<T>(call, "alpha", 1.5);
    if (rule == ScalRule::kBf16Alpha) {
      alpha.re = static_cast<T>(round_to(static_cast<double>(alpha.re), DType::kBF16));
      alpha.im = static_cast<T>(round_to(static_cast<double>(alpha.im), DType::kBF16));
    }
    if (rule == ScalRule::kConjAlpha) alpha.im = -alpha.im;
    if (alpha.re == 1 && alpha.im == 0) return ok_status();  // cscal.f's CA = ONE quick return
    bool zero = false;
    if (rule == ScalRule::kZeroShortcut || rule == ScalRule::kZeroFill) zero = alpha.re == 0 && alpha.im == 0;
    if (rule == ScalRule::kNanAlphaZero)
      zero = !(alpha.re < 0 || alpha.re > 0) && !(alpha.im < 0 || alpha.im > 0);
    for (std::int64_t i = 0; i < x.dim(0); ++i) vstore<T>(x, i, zero ? C<T>{} : cmul(alpha, vload<T>(x, i)));
    return ok_status();
  });
}

// ---------------------------------------------------------------- csscal (real alpha)

Status csscal_kernel(Call& call, ScalRule rule) {
  return by_dtype(call, "x", [&]<typename T>() {
    Tensor& x = call.t("x");
    T alpha = static_cast<T>(call.get_double("alpha", 1.5));
    if (rule == ScalRule::kBf16Alpha) alpha = static_cast<T>(round_to(static_cast<double>(alpha), DType::kBF16));
    bool zero = false;
    if (rule == ScalRule::kZeroShortcut || rule == ScalRule::kZeroFill) zero = alpha == 0;
    if (rule == ScalRule::kNanAlphaZero) zero = !(alpha < 0 || alpha > 0);
    for (std::int64_t i = 0; i < x.dim(0); ++i) {
      const C<T> v = vload<T>(x, i);
      // kConjAlpha stands for the baseline here: the imaginary part left unscaled.
      vstore<T>(x, i, zero ? C<T>{} : C<T>{alpha * v.re, rule == ScalRule::kConjAlpha ? v.im : alpha * v.im});
    }
    return ok_status();
  });
}

// ---------------------------------------------------------------- ciamax

enum class IamaxRule { kGreaterThan, kNotLe, kFirstNan, kGtAsFirstNan, kReOnly };

Status ciamax_kernel(Call& call, IamaxRule rule) {
  return by_dtype(call, "x", [&]<typename T>() {
    const Tensor& x = call.t("x");
    const std::int64_t n = x.dim(0);
    auto cabs1 = [&](std::int64_t i) -> T {
      const C<T> v = vload<T>(x, i);
      return rule == IamaxRule::kReOnly ? std::fabs(v.re) : std::fabs(v.re) + std::fabs(v.im);
    };
    std::int64_t best = n > 0 ? 0 : -1;
    bool done = false;
    if (rule == IamaxRule::kFirstNan) {
      for (std::int64_t i = 0; i < n && !done; ++i)
        if (std::isnan(cabs1(i))) best = i, done = true;
    }
    if (!done && n > 0) {
      T smax = cabs1(0);
      for (std::int64_t i = 1; i < n; ++i) {
        const T v = cabs1(i);
        const bool take = rule == IamaxRule::kNotLe ? !(v <= smax) : v > smax;
        if (take) best = i, smax = v;
      }
    }
    call.t("out").data<std::int64_t>()[0] = best;
    return ok_status();
  });
}

// ---------------------------------------------------------------- cgemv, cgemm

enum class ProductDefect { kNone, kFp16, kBetaOnly, kBetaReadsOut, kAlphaReadsOperands };

/// out_ij = alpha sum_k L_ik R_kj + beta out_ij, out not read at beta = 0 (the
/// BLAS rule) unless the defect reads it; alpha = 0 reads neither operand.
Status product_kernel(Call& call, bool gemv, ProductDefect defect) {
  return by_dtype(call, "A", [&]<typename T>() {
    const Tensor& a = call.t("A");
    Tensor& out = call.t(gemv ? "y" : "C");
    const std::string ta = call.get(gemv ? "trans" : "trans_a", "N");
    const std::string tb = call.get("trans_b", "N");
    const std::int64_t rows = gemv ? out.dim(0) : out.dim(0), cols = gemv ? 1 : out.dim(1);
    std::int64_t inner = ta == "N" ? a.dim(1) : a.dim(0);
    if (defect == ProductDefect::kBetaOnly) inner = 0;
    const bool fp16 = defect == ProductDefect::kFp16;
    const C<T> alpha = scalar<T>(call, "alpha", 1), beta = scalar<T>(call, "beta", 0);
    const bool alpha_zero = alpha.re == 0 && alpha.im == 0 && defect != ProductDefect::kAlphaReadsOperands;
    const bool read_out = !(beta.re == 0 && beta.im == 0) || defect == ProductDefect::kBetaReadsOut;
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        C<T> acc;
        if (!alpha_zero) {
          for (std::int64_t k = 0; k < inner; ++k) {
            const C<T> l = op_load<T>(a, ta, i, k, fp16);
            const C<T> r = gemv ? vload<T>(call.t("x"), k, fp16) : op_load<T>(call.t("B"), tb, k, j, fp16);
            const C<T> p = cmul(l, r);
            acc.re += p.re;
            acc.im += p.im;
          }
          acc = cmul(alpha, acc);
        }
        if (read_out) {
          const C<T> c = gemv ? vload<T>(out, i, fp16) : mload<T>(out, i, j, fp16);
          const C<T> bc = cmul(beta, c);
          acc.re += bc.re;
          acc.im += bc.im;
        }
        if (gemv)
          vstore<T>(out, i, acc);
        else
          mstore<T>(out, i, j, acc);
      }
    }
    return ok_status();
  });
}

Declaration complex_decl(const char* name, const char* op, const char* what) {
  Declaration d = calib_decl(name, op, what);
  d.dtypes = {DType::kF32, DType::kF64};
  d.accumulator.reset();  // the working precision: FP32 or FP64 with the call
  return d;
}

}  // namespace

void add_complex_impls(ImplList& out) {
  auto dot = [&](const char* name, DotDefect defect, const char* what) {
    add(out, complex_decl(name, "cdot", what), [defect](Call& call) { return cdot_kernel(call, defect); });
  };
  dot("calib.cdot_loop", DotDefect::kNone, "complex dot (U or C), one complex accumulator in the working precision");
  dot("calib.cdot_fp16", DotDefect::kFp16,
      "seeded bug: complex dot with x and y loaded through fp16 (2^-11 per part: within a 1e-2 allclose, far beyond "
      "FP32 accumulation)");
  dot("calib.cdot_real_only", DotDefect::kRealOnly, "baseline: complex dot whose imaginary part is never computed");
  dot("calib.cdot_skip_nonfinite", DotDefect::kSkipNonfinite,
      "seeded bug: declares nan = IEEE_PROPAGATE but leaves products with a NaN or Inf part out of the sum");

  auto scal = [&](const char* name, ScalRule rule, const char* rule_name, const char* what) {
    Declaration d = complex_decl(name, "cscal", what);
    d.extra["scal_alpha_zero"] = rule_name;
    add(out, std::move(d), [rule](Call& call) { return cscal_kernel(call, rule); });
  };
  scal("calib.cscal_textbook", ScalRule::kTextbook, "MULTIPLY",
       "x = alpha x, the textbook complex product (x kept at alpha = 1, reference cscal.f)");
  scal("calib.cscal_bf16_alpha", ScalRule::kBf16Alpha, "MULTIPLY",
       "seeded bug: alpha's parts passed in bf16 (-0.7 becomes -0.69921875): 1e-3 off, no product within gamma_2");
  scal("calib.cscal_conj_alpha", ScalRule::kConjAlpha, "MULTIPLY", "baseline: x = conj(alpha) x");
  scal("calib.cscal_zero_shortcut", ScalRule::kZeroShortcut, "MULTIPLY",
       "seeded bug: declares scal_alpha_zero = MULTIPLY but an alpha = 0 fast path stores zeros (NaN, Inf lost)");
  scal("calib.cscal_zero_fill", ScalRule::kZeroFill, "ZERO_FILL",
       "zeros at alpha = 0 without reading x, the textbook product otherwise (ZERO_FILL)");
  scal("calib.cscal_nan_alpha_as_zero", ScalRule::kNanAlphaZero, "ZERO_FILL",
       "seeded bug: declares ZERO_FILL, zero test !(a < 0 || a > 0) on both parts takes a NaN alpha for 0");

  auto sscal = [&](const char* name, ScalRule rule, const char* rule_name, const char* what) {
    Declaration d = complex_decl(name, "csscal", what);
    d.extra["scal_alpha_zero"] = rule_name;
    add(out, std::move(d), [rule](Call& call) { return csscal_kernel(call, rule); });
  };
  sscal("calib.csscal_multiply", ScalRule::kTextbook, "MULTIPLY", "x = (alpha re, alpha im), real alpha (MULTIPLY)");
  sscal("calib.csscal_bf16_alpha", ScalRule::kBf16Alpha, "MULTIPLY",
        "seeded bug: the real alpha passed in bf16 (exact for 1.5, off for 0.1 and -1e-3)");
  sscal("calib.csscal_re_only", ScalRule::kConjAlpha, "MULTIPLY", "baseline: only the real parts scaled");
  sscal("calib.csscal_zero_shortcut", ScalRule::kZeroShortcut, "MULTIPLY",
        "seeded bug: declares scal_alpha_zero = MULTIPLY but an alpha = 0 fast path stores zeros");
  sscal("calib.csscal_zero_fill", ScalRule::kZeroFill, "ZERO_FILL", "zeros at alpha = 0, the products otherwise");
  sscal("calib.csscal_nan_alpha_as_zero", ScalRule::kNanAlphaZero, "ZERO_FILL",
        "seeded bug: declares ZERO_FILL, zero test !(a < 0 || a > 0) takes a NaN alpha for 0");

  auto iamax = [&](const char* name, IamaxRule rule, const char* rule_name, const char* what) {
    Declaration d = complex_decl(name, "ciamax", what);
    d.accumulator.reset();
    d.extra["iamax_nan"] = rule_name;
    add(out, std::move(d), [rule](Call& call) { return ciamax_kernel(call, rule); });
  };
  iamax("calib.ciamax_greater_than", IamaxRule::kGreaterThan, "GREATER_THAN",
        "first index of max |re| + |im|, reference icamax scan (a NaN at x_0 wins, a later one never)");
  iamax("calib.ciamax_not_le", IamaxRule::kNotLe, "GREATER_THAN",
        "seeded bug: declares GREATER_THAN, scans with !(v <= max): a later NaN is taken");
  iamax("calib.ciamax_first_nan", IamaxRule::kFirstNan, "FIRST_NAN",
        "the first element with a NaN part, else the reference scan (FIRST_NAN)");
  iamax("calib.ciamax_gt_as_first_nan", IamaxRule::kGtAsFirstNan, "FIRST_NAN",
        "seeded bug: declares FIRST_NAN, scans with v > max: a NaN after x_0 is never returned");
  iamax("calib.ciamax_re_only", IamaxRule::kReOnly, "GREATER_THAN", "baseline: the first index of max |re| alone");

  auto product = [&](const char* name, bool gemv, ProductDefect defect, const char* what) {
    Declaration d = complex_decl(name, gemv ? "cgemv" : "cgemm", what);
    d.extra["beta_zero"] = "C_NOT_READ";
    d.extra["alpha_zero"] = "AB_NOT_READ";
    add(out, std::move(d), [gemv, defect](Call& call) { return product_kernel(call, gemv, defect); });
  };
  product("calib.cgemv_loop", true, ProductDefect::kNone,
          "complex y = alpha op(A) x + beta y, one accumulator per y_i (beta = 0: y not read)");
  product("calib.cgemv_fp16", true, ProductDefect::kFp16, "seeded bug: complex gemv with A, x and y loaded through fp16");
  product("calib.cgemv_beta_only", true, ProductDefect::kBetaOnly, "baseline: complex gemv that forgets the product");
  product("calib.cgemv_beta_reads_y", true, ProductDefect::kBetaReadsOut,
          "seeded bug: declares beta_zero = C_NOT_READ, yet reads y at beta = 0 (0 * NaN = NaN)");
  product("calib.cgemv_alpha_reads_ax", true, ProductDefect::kAlphaReadsOperands,
          "seeded bug: declares alpha_zero = AB_NOT_READ, yet forms A x and scales it at alpha = 0 (0 * NaN = NaN)");
  product("calib.cgemm_loop", false, ProductDefect::kNone,
          "complex C = alpha op(A) op(B) + beta C, one accumulator per C_ij (beta = 0: C not read)");
  product("calib.cgemm_fp16", false, ProductDefect::kFp16,
          "seeded bug: complex gemm with A, B and C loaded through fp16");
  product("calib.cgemm_beta_only", false, ProductDefect::kBetaOnly, "baseline: complex gemm that forgets the product");
  product("calib.cgemm_beta_reads_c", false, ProductDefect::kBetaReadsOut,
          "seeded bug: declares beta_zero = C_NOT_READ, yet reads C at beta = 0 (0 * NaN = NaN)");
  product("calib.cgemm_alpha_reads_ab", false, ProductDefect::kAlphaReadsOperands,
          "seeded bug: declares alpha_zero = AB_NOT_READ, yet forms A B and scales it at alpha = 0 (0 * NaN = NaN)");
}

}  // namespace kc::calibration
