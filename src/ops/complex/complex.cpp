// kc — complex BLAS ops: cdot (cdotu/cdotc), cscal, csscal, ciamax, cgemv, cgemm.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
//
// Storage (complex.h): interleaved (re, im) pairs in a real tensor of the
// component precision, last dimension 2 with stride 1. The contract's dtype
// picks the routine family: FP32 the c routines, FP64 the z routines.
//
// Oracles evaluate the textbook complex formulas the reference Fortran uses
// (gfortran's default -fcx-fortran-rules: (a + bi)(c + di) = (ac - bd) +
// (ad + bc)i, no recovery of NaN results from infinite operands) in long
// double, so NaN and Inf propagate as the reference routines propagate them.
//
// Error model, one real component at a time. Every output component is a sum
// of real products of input components: Re(x_i y_i) = a c - b d, and for
// alpha op(A) x + beta y each term of Re and Im is a product of one component
// of alpha, of op(A)_ik and of x_k (four per k and component), plus two
// products of beta and y. However a kernel groups them (complex products
// first, split accumulators for ac and bd, alpha applied before or after the
// sum, FMA or not), each term reaches the output through at most m roundings,
// so |fl(s) - s| <= gamma_m sum |terms| (Higham, Accuracy and Stability, 2nd
// ed., §3.1, Lemma 3.1/3.3 applied to each term's chain of (1 + delta)
// factors). The op's magnitude is that sum of |terms| per component, and
// accumulation_length is m:
//   cdot  length n: 2n real products per component, any summation order: m = 2n.
//   cscal alpha x: Re = a_r x_r - a_i x_i, one product each and one subtraction: m = 2.
//   csscal (real alpha): Re = a x_r, one product: the correctly rounded
//     product, which contracts judge at ulp 0 (as real scal).
//   cgemv/cgemm with inner length K: the 2K products of the op(A) x sum per
//     component (m = 2K in any order), then alpha's complex product (a product
//     and an addition: 2), then the addition of beta y (1): m = 2K + 3. Applying
//     alpha to x first (reference cgemv.f, TEMP = ALPHA*X(J)) costs 2 + 2 + K;
//     beta y itself 2 + 1. 2K + 3 is the largest of these for K >= 1.
// This is the componentwise counterpart of Higham §3.6 (complex inner
// product within sqrt(2) gamma_(n+2) sum |x_i||y_i| in modulus, for complex
// multiplications followed by complex additions); the componentwise form also
// covers kernels that accumulate real products in one chain of 2n roundings.
#include "ops/complex/complex.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

struct Cx {
  long double re = 0, im = 0;
};

Cx mul(Cx a, Cx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
Cx add(Cx a, Cx b) { return {a.re + b.re, a.im + b.im}; }
Cx conj(Cx a) { return {a.re, -a.im}; }
bool is_zero(Cx a) { return a.re == 0 && a.im == 0; }
bool is_one(Cx a) { return a.re == 1 && a.im == 0; }

/// Component magnitudes of one complex product p q: the |terms| of its real
/// part (|p_r q_r| + |p_i q_i|) and of its imaginary part (|p_r q_i| + |p_i q_r|).
struct Mag {
  long double re = 0, im = 0;
};
/// |p q| as the size of one term: 0 when a factor is 0, also against an
/// infinite or NaN other factor (the term's IEEE value, 0 * Inf = NaN, is the
/// oracle's business; its size in the error bound is nothing).
long double term(long double p, long double q) { return p == 0 || q == 0 ? 0 : std::fabs(p * q); }
Mag mag_of(Cx p, Cx q) { return {term(p.re, q.re) + term(p.im, q.im), term(p.re, q.im) + term(p.im, q.re)}; }
/// The |terms| of s scaled by the complex a: Re(a s) = a_r s_r - a_i s_i, so
/// every term of s_r counts |a_r| times in Re and |a_i| times in Im.
Mag scale_mag(Cx a, Mag s) { return {term(a.re, s.re) + term(a.im, s.im), term(a.re, s.im) + term(a.im, s.re)}; }

/// Element i of a complex vector stored as (n, 2).
Cx vec_at(const Tensor& t, std::int64_t i) { return {t.at(2 * i), t.at(2 * i + 1)}; }
/// Element (i, j) of a complex matrix stored as (rows, cols, 2).
Cx mat_at(const Tensor& t, std::int64_t i, std::int64_t j) {
  const std::int64_t f = (i * t.dim(1) + j) * 2;
  return {t.at(f), t.at(f + 1)};
}

/// A complex vector of n elements with increment inc: shape (n, 2), strides (2 inc, 1).
Tensor cvector(DType dt, std::int64_t n, std::int64_t inc) { return Tensor(dt, {n, 2}, {2 * inc, 1}); }
/// A row-major complex matrix: shape (rows, cols, 2), strides (2 (cols + pad), 2, 1).
Tensor cmatrix(DType dt, std::int64_t rows, std::int64_t cols, std::int64_t pad) {
  return Tensor(dt, {rows, cols, 2}, {2 * (cols + pad), 2, 1});
}

/// N (as stored), T (transposed) or C (conjugate-transposed).
enum class Trans { kN, kT, kC };

Result<Trans> parse_trans(const Config& config, const std::string& key) {
  const std::string v = config.get(key, "N");
  if (v == "N" || v == "n") return Trans::kN;
  if (v == "T" || v == "t") return Trans::kT;
  if (v == "C" || v == "c") return Trans::kC;
  return invalid_argument(key + " = '" + v + "', expected N, T or C");
}
Trans trans_of(const Config& config, const std::string& key) {
  auto t = parse_trans(config, key);
  return t.ok() ? t.value() : Trans::kN;
}

/// op(M)_(i, k) of a stored matrix: M_ik, M_ki or conj(M_ki).
Cx op_at(const Tensor& t, Trans tr, std::int64_t i, std::int64_t k) {
  switch (tr) {
    case Trans::kN:
      return mat_at(t, i, k);
    case Trans::kT:
      return mat_at(t, k, i);
    case Trans::kC:
      return conj(mat_at(t, k, i));
  }
  return {};
}

/// The factors of a complex product, dense and row-major: op(A)_ik and x_k
/// (gemv) or op(B)_kj.
struct Factors {
  std::vector<Cx> a, b;
  std::int64_t inner = 0, cols = 0;
  Cx left(std::int64_t i, std::int64_t k) const { return a[static_cast<std::size_t>(i * inner + k)]; }
  Cx right(std::int64_t k, std::int64_t j) const { return b[static_cast<std::size_t>(k * cols + j)]; }
};

/// A complex scalar parameter (name, name_im), each part rounded to the
/// call's precision (cgemv's COMPLEX ALPHA is two REALs).
Cx scalar(const Call& call, const std::string& name, double re_default) {
  return {round_to(call.get_double(name, re_default), call.config.dtype),
          round_to(call.get_double(name + "_im", 0), call.config.dtype)};
}

/// |x| as reference icamax.f/izamax.f compute it (SCABS1/DCABS1): |re| + |im|,
/// one addition in the routine's precision.
double cabs1(Cx v, DType dt) {
  return round_to(static_cast<double>(std::fabs(v.re) + std::fabs(v.im)), dt);
}

// `with` keys (the first value of each is the oracle's default).
constexpr char kAlphaZeroKey[] = "alpha_zero";
constexpr char kIamaxNanKey[] = "iamax_nan";

std::string option_of(const OracleOptions& o, const char* key, const char* fallback) {
  auto it = o.with.find(key);
  return it == o.with.end() ? fallback : it->second;
}

std::vector<double> flatten(const std::vector<Cx>& v) {
  std::vector<double> out;
  out.reserve(v.size() * 2);
  for (const Cx& c : v) {
    out.push_back(static_cast<double>(c.re));
    out.push_back(static_cast<double>(c.im));
  }
  return out;
}
std::vector<double> flatten(const std::vector<Mag>& v) {
  std::vector<double> out;
  out.reserve(v.size() * 2);
  for (const Mag& c : v) {
    out.push_back(static_cast<double>(c.re));
    out.push_back(static_cast<double>(c.im));
  }
  return out;
}

/// The product a problem of cgemv or cgemm describes: out_(i, j) = alpha
/// sum_k L(i, k) R(k, j) + beta out_(i, j), with `rows` x `cols` outputs and
/// inner length `inner` (cgemv: cols = 1, R = x).
struct Product {
  std::int64_t rows = 0, cols = 0, inner = 0;
  Cx alpha, beta;
};

class ComplexOp final : public Op {
 public:
  explicit ComplexOp(ComplexKind kind) : kind_(kind) {}

  // ---- signature/params
  std::string_view name() const override {
    switch (kind_) {
      case ComplexKind::kDot:
        return "cdot";
      case ComplexKind::kScal:
        return "cscal";
      case ComplexKind::kScalReal:
        return "csscal";
      case ComplexKind::kIamax:
        return "ciamax";
      case ComplexKind::kGemv:
        return "cgemv";
      case ComplexKind::kGemm:
        return "cgemm";
    }
    return "?";
  }
  std::string_view summary() const override {
    switch (kind_) {
      case ComplexKind::kDot:
        return "complex dot product out = sum_i x_i y_i (conj = U, cdotu/zdotu) or conj(x_i) y_i (conj = C, "
               "cdotc/zdotc); (re, im) pairs";
      case ComplexKind::kScal:
        return "in-place complex scaling x = alpha * x (cscal/zscal); (re, im) pairs";
      case ComplexKind::kScalReal:
        return "in-place scaling of a complex x by a real alpha: (alpha re, alpha im) (csscal/zdscal)";
      case ComplexKind::kIamax:
        return "0-based index of the first max |re x_i| + |im x_i| (icamax/izamax; reference NaN rule by default)";
      case ComplexKind::kGemv:
        return "row-major complex y = alpha*op(A)*x + beta*y, op = N, T or C (cgemv/zgemv; beta = 0: y not read)";
      case ComplexKind::kGemm:
        return "row-major complex C = alpha*op(A)*op(B) + beta*C, op = N, T or C (cgemm/zgemm; beta = 0: C not "
               "read)";
    }
    return "";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> dot = {
        {"x", Role::kIn, "complex vector: shape (n, 2) of (re, im) pairs, strides (2 incx, 1)"},
        {"y", Role::kIn, "complex vector: shape (n, 2), strides (2 incy, 1)"},
        {"out", Role::kOut, "the complex result as (re, im), shape (2)"},
    };
    static const std::vector<TensorSpec> scal = {
        {"x", Role::kInOut, "complex vector: shape (n, 2) of (re, im) pairs, strides (2 incx, 1); scaled in place"},
    };
    static const std::vector<TensorSpec> iamax = {
        {"x", Role::kIn, "complex vector: shape (n, 2) of (re, im) pairs, strides (2 incx, 1)"},
        {"out", Role::kOut, "I64 shape (1): 0-based index of the first max |re| + |im|"},
    };
    static const std::vector<TensorSpec> gemv = {
        {"A", Role::kIn, "complex M x N row-major: shape (M, N, 2), strides (2 (N + lda_pad), 2, 1)"},
        {"x", Role::kIn, "complex vector of N (trans = N) or M (T, C) elements: shape (len, 2), strides (2 incx, 1)"},
        {"y", Role::kInOut,
         "complex vector of M (trans = N) or N (T, C) elements: shape (len, 2), strides (2 incy, 1); read only when "
         "beta != 0"},
    };
    static const std::vector<TensorSpec> gemm = {
        {"A", Role::kIn, "complex M x K (trans_a = N) or K x M (T, C): shape (rows, cols, 2), row stride 2 (cols + lda_pad)"},
        {"B", Role::kIn, "complex K x N (trans_b = N) or N x K (T, C): shape (rows, cols, 2), row stride 2 (cols + ldb_pad)"},
        {"C", Role::kInOut, "complex M x N: shape (M, N, 2), row stride 2 (N + ldc_pad); read only when beta != 0"},
    };
    switch (kind_) {
      case ComplexKind::kDot:
        return dot;
      case ComplexKind::kScal:
      case ComplexKind::kScalReal:
        return scal;
      case ComplexKind::kIamax:
        return iamax;
      case ComplexKind::kGemv:
        return gemv;
      case ComplexKind::kGemm:
        return gemm;
    }
    return dot;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> dot = {
        {"n", "1024", "vector length in complex elements"},
        {"conj", "U", "U: sum x_i y_i (cdotu/zdotu); C: sum conj(x_i) y_i (cdotc/zdotc)"},
        {"incx", "1", "stride of x in complex elements (>= 1)"},
        {"incy", "1", "stride of y in complex elements (>= 1)"},
    };
    static const std::vector<Param> scal = {
        {"n", "1024", "vector length in complex elements"},
        {"incx", "1", "stride of x in complex elements (>= 1)"},
        {"alpha", "1.5", "real part of the complex scale factor"},
        {"alpha_im", "-0.7", "imaginary part of the scale factor"},
    };
    static const std::vector<Param> sscal = {
        {"n", "1024", "vector length in complex elements"},
        {"incx", "1", "stride of x in complex elements (>= 1)"},
        {"alpha", "1.5", "the real scale factor (not a power of two, so the products round)"},
    };
    static const std::vector<Param> iamax = {
        {"n", "1024", "vector length in complex elements"},
        {"incx", "1", "stride of x in complex elements (>= 1)"},
    };
    static const std::vector<Param> gemv = {
        {"M", "64", "rows of A"},
        {"N", "64", "columns of A"},
        {"trans", "N", "N: y = alpha A x + beta y; T: alpha A^T x + beta y; C: alpha A^H x + beta y"},
        {"alpha", "1", "real part of alpha"},
        {"alpha_im", "0", "imaginary part of alpha"},
        {"beta", "0", "real part of beta; beta = 0 (both parts) means y is not read (BLAS rule)"},
        {"beta_im", "0", "imaginary part of beta"},
        {"lda_pad", "0", "extra complex elements per stored row of A"},
        {"incx", "1", "stride of x in complex elements (>= 1)"},
        {"incy", "1", "stride of y in complex elements (>= 1)"},
    };
    static const std::vector<Param> gemm = {
        {"M", "64", "rows of C and of op(A)"},
        {"N", "64", "columns of C and of op(B)"},
        {"K", "64", "inner (accumulation) dimension"},
        {"trans_a", "N", "N: A stored M x K; T: A stored K x M, transposed; C: conjugate-transposed"},
        {"trans_b", "N", "N: B stored K x N; T: B stored N x K, transposed; C: conjugate-transposed"},
        {"alpha", "1", "real part of alpha; alpha = 0 (both parts) means A and B are not read (BLAS rule)"},
        {"alpha_im", "0", "imaginary part of alpha"},
        {"beta", "0", "real part of beta; beta = 0 (both parts) means C is not read (BLAS rule)"},
        {"beta_im", "0", "imaginary part of beta"},
        {"lda_pad", "0", "extra complex elements per stored row of A"},
        {"ldb_pad", "0", "extra complex elements per stored row of B"},
        {"ldc_pad", "0", "extra complex elements per stored row of C"},
    };
    switch (kind_) {
      case ComplexKind::kDot:
        return dot;
      case ComplexKind::kScal:
        return scal;
      case ComplexKind::kScalReal:
        return sscal;
      case ComplexKind::kIamax:
        return iamax;
      case ComplexKind::kGemv:
        return gemv;
      case ComplexKind::kGemm:
        return gemm;
    }
    return dot;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    if (dt != DType::kF32 && dt != DType::kF64)
      return invalid_argument("complex ops take FP32 (c routines) or FP64 (z routines) components, not " +
                              std::string(dtype_name(dt)));
    std::vector<detail::Slot> slots;
    switch (kind_) {
      case ComplexKind::kDot:
      case ComplexKind::kScal:
      case ComplexKind::kScalReal:
      case ComplexKind::kIamax: {
        KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
        KC_ASSIGN_OR_RETURN(std::int64_t incx, detail::positive(config, "incx", 1));
        const bool in_place = kind_ == ComplexKind::kScal || kind_ == ComplexKind::kScalReal;
        slots.push_back({"x", in_place ? Role::kInOut : Role::kIn, cvector(dt, n, incx)});
        if (kind_ == ComplexKind::kDot) {
          const std::string c = config.get("conj", "U");
          if (c != "U" && c != "C") return invalid_argument("conj = '" + c + "', expected U or C");
          KC_ASSIGN_OR_RETURN(std::int64_t incy, detail::positive(config, "incy", 1));
          slots.push_back({"y", Role::kIn, cvector(dt, n, incy)});
          slots.push_back({"out", Role::kOut, Tensor(dt, {2})});
        } else if (kind_ == ComplexKind::kIamax) {
          slots.push_back({"out", Role::kOut, Tensor(DType::kI64, {1})});
        }
        break;
      }
      case ComplexKind::kGemv: {
        KC_ASSIGN_OR_RETURN(std::int64_t m, detail::positive(config, "M", 64));
        KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "N", 64));
        KC_ASSIGN_OR_RETURN(Trans tr, parse_trans(config, "trans"));
        KC_ASSIGN_OR_RETURN(std::int64_t incx, detail::positive(config, "incx", 1));
        KC_ASSIGN_OR_RETURN(std::int64_t incy, detail::positive(config, "incy", 1));
        const std::int64_t pad = config.get_int("lda_pad", 0);
        if (pad < 0) return invalid_argument("lda_pad must be >= 0");
        const bool t = tr != Trans::kN;
        slots.push_back({"A", Role::kIn, cmatrix(dt, m, n, pad)});
        slots.push_back({"x", Role::kIn, cvector(dt, t ? m : n, incx)});
        slots.push_back({"y", Role::kInOut, cvector(dt, t ? n : m, incy)});
        break;
      }
      case ComplexKind::kGemm: {
        KC_ASSIGN_OR_RETURN(std::int64_t m, detail::positive(config, "M", 64));
        KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "N", 64));
        KC_ASSIGN_OR_RETURN(std::int64_t k, detail::positive(config, "K", 64));
        KC_ASSIGN_OR_RETURN(Trans ta, parse_trans(config, "trans_a"));
        KC_ASSIGN_OR_RETURN(Trans tb, parse_trans(config, "trans_b"));
        std::int64_t pads[3];
        const char* pad_names[3] = {"lda_pad", "ldb_pad", "ldc_pad"};
        for (int i = 0; i < 3; ++i) {
          pads[i] = config.get_int(pad_names[i], 0);
          if (pads[i] < 0) return invalid_argument(std::string(pad_names[i]) + " must be >= 0");
        }
        slots.push_back({"A", Role::kIn, ta == Trans::kN ? cmatrix(dt, m, k, pads[0]) : cmatrix(dt, k, m, pads[0])});
        slots.push_back({"B", Role::kIn, tb == Trans::kN ? cmatrix(dt, k, n, pads[1]) : cmatrix(dt, n, k, pads[1])});
        slots.push_back({"C", Role::kInOut, cmatrix(dt, m, n, pads[2])});
        break;
      }
    }
    return detail::make_call_from(name(), config, std::move(slots));
  }

  // ---- fill/probes
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) {
      switch (kind_) {
        case ComplexKind::kDot:
          targets = {"x", "y"};
          break;
        case ComplexKind::kScal:
        case ComplexKind::kScalReal:
        case ComplexKind::kIamax:
          targets = {"x"};
          break;
        case ComplexKind::kGemv:
          targets = {"A", "x"};
          if (!is_zero(scalar(call, "beta", 0))) targets.push_back("y");
          break;
        case ComplexKind::kGemm:
          targets = {"A", "B"};
          if (!is_zero(scalar(call, "beta", 0))) targets.push_back("C");
          break;
      }
    }
    return detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
  }

  // ---- oracle
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    OracleResult r;
    switch (kind_) {
      case ComplexKind::kDot: {
        const Tensor& x = call.t("x");
        const Tensor& y = call.t("y");
        const bool c = call.get("conj", "U") == "C";
        Cx acc;
        for (std::int64_t i = 0; i < x.dim(0); ++i) {
          const Cx xi = c ? conj(vec_at(x, i)) : vec_at(x, i);
          acc = add(acc, mul(xi, vec_at(y, i)));
        }
        r.output_names = {"out"};
        r.outputs.push_back(flatten(std::vector<Cx>{acc}));
        return r;
      }
      case ComplexKind::kScal: {
        // Reference cscal.f/zscal.f 3.11 return at once when CA = 1 (x
        // untouched, so NaN and Inf stay as they are) and otherwise store
        // CA*CX(I), the textbook product: at alpha = 0, 0 * NaN and 0 * Inf
        // give NaN. zero_fill: alpha = 0 stores zeros without reading x
        // (declared scal_alpha_zero = ZERO_FILL).
        const Tensor& x = call.t("x");
        const Cx alpha = scalar(call, "alpha", 1.5);
        const bool zero_fill = option_of(options, kAlphaZeroKey, "multiply") == "zero_fill" && is_zero(alpha);
        std::vector<Cx> out(static_cast<std::size_t>(x.dim(0)));
        for (std::int64_t i = 0; i < x.dim(0); ++i) {
          const Cx xi = vec_at(x, i);
          out[static_cast<std::size_t>(i)] = zero_fill ? Cx{} : is_one(alpha) ? xi : mul(alpha, xi);
        }
        r.output_names = {"x"};
        r.outputs.push_back(flatten(out));
        return r;
      }
      case ComplexKind::kScalReal: {
        // Reference csscal.f/zdscal.f 3.11: CX(I) = CMPLX(SA*REAL(CX(I)),
        // SA*AIMAG(CX(I))), one real product per part, no cross terms. In
        // double: exact for FP32 parts, the correctly rounded product for FP64
        // (one rounding, which ulp 0 demands). zero_fill as for cscal.
        const Tensor& x = call.t("x");
        const double alpha = round_to(call.get_double("alpha", 1.5), call.config.dtype);
        const bool zero_fill = option_of(options, kAlphaZeroKey, "multiply") == "zero_fill" && alpha == 0;
        std::vector<double> out(static_cast<std::size_t>(2 * x.dim(0)));
        for (std::int64_t i = 0; i < 2 * x.dim(0); ++i) out[static_cast<std::size_t>(i)] = zero_fill ? 0.0 : alpha * x.at(i);
        r.output_names = {"x"};
        r.outputs.push_back(std::move(out));
        return r;
      }
      case ComplexKind::kIamax: {
        // Reference icamax.f/izamax.f 3.11: SMAX = SCABS1(CX(1)), then I only
        // when SCABS1(CX(I)) .GT. SMAX; SCABS1 = |re| + |im| in the routine's
        // precision. A NaN part makes SCABS1 NaN: a NaN at x_0 wins, a later
        // one never does (greater_than). first_nan: the first element with a
        // NaN part wherever it is, else the same scan.
        const Tensor& x = call.t("x");
        const DType dt = call.config.dtype;
        const std::int64_t n = x.dim(0);
        double best = -1;
        if (option_of(options, kIamaxNanKey, "greater_than") == "first_nan") {
          for (std::int64_t i = 0; i < n && best < 0; ++i)
            if (std::isnan(cabs1(vec_at(x, i), dt))) best = static_cast<double>(i);
        }
        if (best < 0 && n > 0) {
          best = 0;
          double smax = cabs1(vec_at(x, 0), dt);
          for (std::int64_t i = 1; i < n; ++i) {
            const double v = cabs1(vec_at(x, i), dt);
            if (v > smax) {
              best = static_cast<double>(i);
              smax = v;
            }
          }
        }
        r.output_names = {"out"};
        r.outputs.push_back({best});
        return r;
      }
      case ComplexKind::kGemv:
      case ComplexKind::kGemm: {
        // Reference cgemv.f/cgemm.f: beta = 0 overwrites y (C) without reading
        // it, beta = 1 leaves it as is, other betas multiply; alpha = 0 returns
        // after that without referencing A, x (B).
        const Product p = product_of(call);
        const std::string out_name = kind_ == ComplexKind::kGemv ? "y" : "C";
        const Tensor& out_t = call.t(out_name);
        const Factors f = is_zero(p.alpha) ? Factors{} : factors_of(call, p);
        std::vector<Cx> out(static_cast<std::size_t>(p.rows * p.cols));
        for (std::int64_t i = 0; i < p.rows; ++i) {
          for (std::int64_t j = 0; j < p.cols; ++j) {
            Cx acc;
            if (!is_zero(p.alpha)) {
              for (std::int64_t k = 0; k < p.inner; ++k) acc = add(acc, mul(f.left(i, k), f.right(k, j)));
              acc = mul(p.alpha, acc);
            }
            if (!is_zero(p.beta)) {
              const Cx c = current(out_t, i, j);
              acc = add(acc, is_one(p.beta) ? c : mul(p.beta, c));
            }
            out[static_cast<std::size_t>(i * p.cols + j)] = acc;
          }
        }
        r.output_names = {out_name};
        r.outputs.push_back(flatten(out));
        return r;
      }
    }
    return internal_error("unknown complex op");
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> scal = {
        {kAlphaZeroKey,
         {"multiply", "zero_fill"},
         "alpha = 0: multiply (the default) forms the textbook product alpha * x_i, so NaN and Inf in x give NaN "
         "(reference cscal.f/zscal.f 3.11); zero_fill stores 0 without reading x. Every rule leaves x as is at "
         "alpha = 1 (cscal.f's CA = ONE quick return)"},
    };
    static const std::vector<OracleOption> sscal = {
        {kAlphaZeroKey,
         {"multiply", "zero_fill"},
         "alpha = 0: multiply (the default) forms alpha * re and alpha * im, so a NaN or Inf part gives NaN "
         "(reference csscal.f/zdscal.f 3.11); zero_fill stores 0 without reading x"},
    };
    static const std::vector<OracleOption> iamax = {
        {kIamaxNanKey,
         {"greater_than", "first_nan"},
         "which index a NaN gets: greater_than (the default) is reference icamax.f's |re| + |im| > max scan, where "
         "a NaN at x_0 wins and any later NaN never does; first_nan returns the first element with a NaN part"},
    };
    static const std::vector<OracleOption> gemv = {
        {"beta_zero", {"C_not_read"}, "beta = 0: y is overwritten and not read (reference cgemv.f)"},
        {"alpha_zero", {"AB_not_read"}, "alpha = 0: y = beta y, A and x are not read (reference cgemv.f)"},
    };
    static const std::vector<OracleOption> gemm = {
        {"beta_zero", {"C_not_read"}, "beta = 0: C is overwritten and not read (reference cgemm.f)"},
        {"alpha_zero", {"AB_not_read"}, "alpha = 0: C = beta C, A and B are not read (reference cgemm.f)"},
    };
    static const std::vector<OracleOption> none;
    switch (kind_) {
      case ComplexKind::kScal:
        return scal;
      case ComplexKind::kScalReal:
        return sscal;
      case ComplexKind::kIamax:
        return iamax;
      case ComplexKind::kGemv:
        return gemv;
      case ComplexKind::kGemm:
        return gemm;
      default:
        return none;
    }
  }

  // ---- error model (see the file comment)
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    switch (kind_) {
      case ComplexKind::kDot: {
        if (output != "out") return not_found("cdot has no output '" + output + "'");
        const Tensor& x = call.t("x");
        const Tensor& y = call.t("y");
        Mag s;
        for (std::int64_t i = 0; i < x.dim(0); ++i) {
          const Mag m = mag_of(vec_at(x, i), vec_at(y, i));  // conjugation changes no |term|
          s.re += m.re;
          s.im += m.im;
        }
        return flatten(std::vector<Mag>{s});
      }
      case ComplexKind::kScal: {
        if (output != "x") return not_found("cscal has no output '" + output + "'");
        const Tensor& x = call.t("x");
        const Cx alpha = scalar(call, "alpha", 1.5);
        std::vector<Mag> mag(static_cast<std::size_t>(x.dim(0)));
        for (std::int64_t i = 0; i < x.dim(0); ++i) mag[static_cast<std::size_t>(i)] = mag_of(alpha, vec_at(x, i));
        return flatten(mag);
      }
      case ComplexKind::kScalReal: {
        if (output != "x") return not_found("csscal has no output '" + output + "'");
        const Tensor& x = call.t("x");
        const double alpha = round_to(call.get_double("alpha", 1.5), call.config.dtype);
        std::vector<double> mag(static_cast<std::size_t>(2 * x.dim(0)));
        for (std::int64_t i = 0; i < 2 * x.dim(0); ++i)
          mag[static_cast<std::size_t>(i)] = static_cast<double>(term(alpha, x.at(i)));
        return mag;
      }
      case ComplexKind::kIamax:
        if (output != "out") return not_found("ciamax has no output '" + output + "'");
        return std::vector<double>{0.0};
      case ComplexKind::kGemv:
      case ComplexKind::kGemm: {
        const std::string out_name = kind_ == ComplexKind::kGemv ? "y" : "C";
        if (output != out_name) return not_found(std::string(name()) + " has no output '" + output + "'");
        const Product p = product_of(call);
        const Tensor& out_t = call.t(out_name);
        const Factors f = factors_of(call, p);
        std::vector<Mag> mag(static_cast<std::size_t>(p.rows * p.cols));
        for (std::int64_t i = 0; i < p.rows; ++i) {
          for (std::int64_t j = 0; j < p.cols; ++j) {
            Mag s;
            for (std::int64_t k = 0; k < p.inner; ++k) {
              const Mag m = mag_of(f.left(i, k), f.right(k, j));
              s.re += m.re;
              s.im += m.im;
            }
            Mag total = scale_mag(p.alpha, s);
            if (!is_zero(p.beta)) {
              const Mag b = mag_of(p.beta, current(out_t, i, j));
              total.re += b.re;
              total.im += b.im;
            }
            mag[static_cast<std::size_t>(i * p.cols + j)] = total;
          }
        }
        return flatten(mag);
      }
    }
    return not_found("unknown complex op");
  }

  bool overwrites(const Call& call, const std::string& name) const override {
    if (kind_ == ComplexKind::kGemv) return name == "y" && is_zero(scalar(call, "beta", 0));
    if (kind_ == ComplexKind::kGemm) return name == "C" && is_zero(scalar(call, "beta", 0));
    return false;
  }

  double accumulation_length(const Call& call) const override {
    switch (kind_) {
      case ComplexKind::kDot:
        return 2.0 * static_cast<double>(call.get_int("n", 1024));
      case ComplexKind::kScal:
        return 2;
      case ComplexKind::kScalReal:
      case ComplexKind::kIamax:
        return 1;
      case ComplexKind::kGemv:
      case ComplexKind::kGemm:
        return 2.0 * static_cast<double>(product_of(call).inner) + 3;
    }
    return 1;
  }

  // Gradual underflow (Higham (2.8)): each of the 2K products of a component
  // may add lambda, scaled by alpha's parts afterwards, and the alpha and beta
  // products add four more: (max(1, |alpha_r| + |alpha_i|) 2K + 6) lambda, the
  // complex form of gemm_underflow_allowance. cdot and cscal: the default.
  double underflow_allowance(const Call& call) const override {
    if (kind_ != ComplexKind::kGemv && kind_ != ComplexKind::kGemm) return Op::underflow_allowance(call);
    const Product p = product_of(call);
    const double a = static_cast<double>(std::fabs(p.alpha.re) + std::fabs(p.alpha.im));
    return (std::max(1.0, a) * 2.0 * static_cast<double>(p.inner) + 6) * underflow_unit(call.config.dtype);
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    switch (kind_) {
      case ComplexKind::kDot:
      case ComplexKind::kScal:
      case ComplexKind::kScalReal:
      case ComplexKind::kIamax:
        vars["n"] = vars["N"] = static_cast<double>(call.t("x").dim(0));
        break;
      case ComplexKind::kGemv:
      case ComplexKind::kGemm: {
        const Product p = product_of(call);
        vars["K"] = static_cast<double>(p.inner);
        vars["alpha"] = static_cast<double>(p.alpha.re);
        vars["beta"] = static_cast<double>(p.beta.re);
        break;
      }
    }
    return vars;
  }

 private:
  Product product_of(const Call& call) const {
    Product p;
    p.alpha = scalar(call, "alpha", 1);
    p.beta = scalar(call, "beta", 0);
    if (kind_ == ComplexKind::kGemv) {
      const Trans tr = trans_of(call.config, "trans");
      const Tensor& a = call.t("A");
      p.rows = tr == Trans::kN ? a.dim(0) : a.dim(1);
      p.inner = tr == Trans::kN ? a.dim(1) : a.dim(0);
      p.cols = 1;
    } else {
      const Tensor& c = call.t("C");
      const Tensor& a = call.t("A");
      p.rows = c.dim(0);
      p.cols = c.dim(1);
      p.inner = trans_of(call.config, "trans_a") == Trans::kN ? a.dim(1) : a.dim(0);
    }
    return p;
  }
  /// op(A) (rows x inner) and x or op(B) (inner x cols), each element read
  /// once from the stored tensors into dense rows: the products' loops then
  /// cost no tensor or config lookups.
  Factors factors_of(const Call& call, const Product& p) const {
    Factors f;
    f.inner = p.inner;
    f.cols = p.cols;
    const Tensor& a = call.t("A");
    const Trans ta = trans_of(call.config, kind_ == ComplexKind::kGemv ? "trans" : "trans_a");
    f.a.reserve(static_cast<std::size_t>(p.rows * p.inner));
    for (std::int64_t i = 0; i < p.rows; ++i)
      for (std::int64_t k = 0; k < p.inner; ++k) f.a.push_back(op_at(a, ta, i, k));
    f.b.reserve(static_cast<std::size_t>(p.inner * p.cols));
    if (kind_ == ComplexKind::kGemv) {
      const Tensor& x = call.t("x");
      for (std::int64_t k = 0; k < p.inner; ++k) f.b.push_back(vec_at(x, k));
    } else {
      const Tensor& b = call.t("B");
      const Trans tb = trans_of(call.config, "trans_b");
      for (std::int64_t k = 0; k < p.inner; ++k)
        for (std::int64_t j = 0; j < p.cols; ++j) f.b.push_back(op_at(b, tb, k, j));
    }
    return f;
  }
  /// The incoming y_i (gemv) or C_ij.
  Cx current(const Tensor& out, std::int64_t i, std::int64_t j) const {
    return kind_ == ComplexKind::kGemv ? vec_at(out, i) : mat_at(out, i, j);
  }

  ComplexKind kind_;
};

}  // namespace

std::unique_ptr<Op> make_complex_op(ComplexKind kind) { return std::make_unique<ComplexOp>(kind); }

}  // namespace kc::ops
