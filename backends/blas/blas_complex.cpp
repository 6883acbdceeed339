// kc — the complex routines of the BLAS libraries (openblas, blis, refblas).
//
// Each impl maps a kc call of a complex op (src/ops/complex: (re, im) pairs
// in FP32 tensors for the c routines, FP64 for z) onto one routine of the
// library handle:
//   cdot   -> cblas_?dotu_sub / cblas_?dotc_sub. The Fortran functions cdotu_
//             and zdotc_ return a COMPLEX, whose ABI differs between gfortran
//             (value in registers) and f2c/g77 (hidden result pointer); the
//             CBLAS _sub forms store through a pointer in every library here.
//   cscal  -> ?scal_ (Fortran; alpha passed as two components).
//   csscal -> csscal_ / zdscal_ (Fortran; a real alpha).
//   ciamax -> i?amax_ (Fortran, 1-based; kc's index is 0-based).
//   cgemv  -> cblas_?gemv(CblasRowMajor, ...), cgemm -> cblas_?gemm(CblasRowMajor, ...):
//             the ops are row-major, and a row-major A^H x has no single
//             Fortran ?gemv call (the column-major view of row-major A is A^T,
//             so A^H would need "conjugate without transposing"); the CBLAS
//             row-major interface is the library's own answer to that.
// alpha and beta go through unchanged and outputs are not pre-cleared, so
// what a library does at beta = 0 or alpha = 0 is what gets measured.
#include "blas_complex.h"

#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

namespace kc::backends {
namespace {

constexpr int kRowMajor = 101;  // CBLAS_ORDER CblasRowMajor
constexpr int kNoTrans = 111, kTrans = 112, kConjTrans = 113;  // CBLAS_TRANSPOSE

using DotSubFn = void (*)(int, const void*, int, const void*, int, void*);
using ScalFn = void (*)(const FortranInt*, const void*, void*, const FortranInt*);
using IamaxFn = FortranInt (*)(const FortranInt*, const void*, const FortranInt*);
using GemvFn = void (*)(int, int, int, int, const void*, const void*, int, const void*, int, const void*, void*,
                        int);
using GemmFn = void (*)(int, int, int, int, int, int, const void*, const void*, int, const void*, int, const void*,
                        void*, int);

Result<FortranInt> fit(std::int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX)
    return invalid_argument(std::string(what) + " = " + std::to_string(v) + " does not fit the LP64 BLAS interface");
  return static_cast<FortranInt>(v);
}

Status check_dtype(const Call& call, const char* name, DType want) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  if (call.t(name).dtype() != want)
    return unimplemented(std::string("tensor ") + name + " is " + std::string(dtype_name(call.t(name).dtype())) +
                         ", this routine takes " + std::string(dtype_name(want)) + " components");
  return ok_status();
}

/// A complex vector: shape (n, 2), strides (2 inc, 1).
struct VectorArg {
  FortranInt n = 0, inc = 1;
};
Result<VectorArg> vector_arg(const Tensor& t, const char* name) {
  if (t.rank() != 2 || t.dim(1) != 2 || t.strides()[1] != 1)
    return invalid_argument(std::string(name) + " has shape " + t.shape_string() +
                            ", expected (n, 2) (re, im) pairs with unit stride between the parts");
  const std::int64_t n = t.dim(0);
  std::int64_t s = t.strides()[0];
  if (n <= 1) s = 2;  // never used to step
  if (s < 2 || s % 2 != 0)
    return unimplemented(std::string(name) + " row stride " + std::to_string(s) +
                         " is not a positive whole number of complex elements");
  if (n > 0 && (n - 1) * s + 2 > t.storage_elems())
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  KC_ASSIGN_OR_RETURN(FortranInt n32, fit(n, "n"));
  KC_ASSIGN_OR_RETURN(FortranInt inc32, fit(s / 2, "increment"));
  return VectorArg{n32, inc32};
}

/// A row-major complex matrix rows x cols: shape (rows, cols, 2), strides
/// (2 ld, 2, 1); ld in complex elements, >= max(1, cols) as CBLAS row-major wants.
Result<FortranInt> matrix_ld(const Tensor& t, const char* name, std::int64_t rows, std::int64_t cols) {
  if (t.rank() != 3 || t.dim(0) != rows || t.dim(1) != cols || t.dim(2) != 2)
    return invalid_argument(std::string(name) + " has shape " + t.shape_string() + ", expected (" +
                            std::to_string(rows) + ", " + std::to_string(cols) + ", 2)");
  if (t.strides()[2] != 1 || (cols > 1 && t.strides()[1] != 2))
    return unimplemented(std::string(name) + " is not a dense row of (re, im) pairs");
  std::int64_t s = t.strides()[0];
  if (rows <= 1) s = 2 * std::max<std::int64_t>(1, cols);
  if (s % 2 != 0 || s / 2 < std::max<std::int64_t>(1, cols))
    return unimplemented(std::string(name) + " row stride " + std::to_string(s) + " is not a leading dimension >= " +
                         std::to_string(std::max<std::int64_t>(1, cols)) + " complex elements");
  if (rows > 0 && cols > 0 && (rows - 1) * s + 2 * cols > t.storage_elems())
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  return fit(s / 2, "leading dimension");
}

Result<int> cblas_trans(const Call& call, const std::string& key) {
  const std::string v = call.get(key, "N");
  if (v == "N" || v == "n") return kNoTrans;
  if (v == "T" || v == "t") return kTrans;
  if (v == "C" || v == "c") return kConjTrans;
  return invalid_argument(key + " = '" + v + "', expected N, T or C");
}

template <typename T>
constexpr DType kDTypeOf = std::is_same_v<T, float> ? DType::kF32 : DType::kF64;

/// A complex scalar parameter (name, name_im) as the routine's two components.
template <typename T>
void scalar(const Call& call, const std::string& name, double re_default, T out[2]) {
  out[0] = static_cast<T>(call.get_double(name, re_default));
  out[1] = static_cast<T>(call.get_double(name + "_im", 0));
}

template <typename Fn>
Result<Fn> entry(const BlasLibrary& lib, const std::string& symbol) {
  void* p = lib.symbol(symbol.c_str());
  if (!p) return unimplemented(lib.spec().name + " exports no " + symbol);
  return reinterpret_cast<Fn>(p);
}

template <typename T>
const char* prefix() {
  return std::is_same_v<T, float> ? "c" : "z";
}

template <typename T, bool Conj>
Status run_dot(const BlasLibrary& lib, Call& call) {
  for (const char* n : {"x", "y", "out"}) KC_RETURN_IF_ERROR(check_dtype(call, n, kDTypeOf<T>));
  if (call.t("out").numel() != 2 || call.t("out").storage_elems() < 2)
    return invalid_argument("out must hold one (re, im) pair");
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  KC_ASSIGN_OR_RETURN(VectorArg y, vector_arg(call.t("y"), "y"));
  if (x.n != y.n) return invalid_argument("x and y differ in length");
  const std::string name = std::string("cblas_") + prefix<T>() + (Conj ? "dotc_sub" : "dotu_sub");
  KC_ASSIGN_OR_RETURN(DotSubFn fn, entry<DotSubFn>(lib, name));
  T result[2] = {0, 0};
  fn(x.n, call.t("x").data<T>(), x.inc, call.t("y").data<T>(), y.inc, result);
  call.t("out").data<T>()[0] = result[0];
  call.t("out").data<T>()[1] = result[1];
  return ok_status();
}

template <typename T>
Status run_scal(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  T alpha[2];
  scalar<T>(call, "alpha", 1.5, alpha);
  KC_ASSIGN_OR_RETURN(ScalFn fn, entry<ScalFn>(lib, std::string(prefix<T>()) + "scal_"));
  fn(&x.n, alpha, call.t("x").data<T>(), &x.inc);
  return ok_status();
}

// csscal_/zdscal_: a real alpha (REAL SA / DOUBLE PRECISION DA).
template <typename T>
Status run_sscal(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  const T alpha = static_cast<T>(call.get_double("alpha", 1.5));
  KC_ASSIGN_OR_RETURN(ScalFn fn, entry<ScalFn>(lib, std::is_same_v<T, float> ? "csscal_" : "zdscal_"));
  fn(&x.n, &alpha, call.t("x").data<T>(), &x.inc);
  return ok_status();
}

// i?amax returns a 1-based index, 0 when n < 1 (icamax.f); kc's is 0-based.
template <typename T>
Status run_iamax(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kI64));
  if (call.t("out").numel() != 1) return invalid_argument("out must be a single I64 element");
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  KC_ASSIGN_OR_RETURN(IamaxFn fn, entry<IamaxFn>(lib, std::string("i") + prefix<T>() + "amax_"));
  const FortranInt one_based = fn(&x.n, call.t("x").data<T>(), &x.inc);
  call.t("out").data<std::int64_t>()[0] = static_cast<std::int64_t>(one_based) - 1;
  return ok_status();
}

template <typename T>
Status run_gemv(const BlasLibrary& lib, Call& call) {
  for (const char* n : {"A", "x", "y"}) KC_RETURN_IF_ERROR(check_dtype(call, n, kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(int trans, cblas_trans(call, "trans"));
  Tensor& a = call.t("A");
  if (a.rank() != 3) return invalid_argument("A must be (M, N, 2)");
  const std::int64_t m = a.dim(0), n = a.dim(1);
  KC_ASSIGN_OR_RETURN(FortranInt lda, matrix_ld(a, "A", m, n));
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  KC_ASSIGN_OR_RETURN(VectorArg y, vector_arg(call.t("y"), "y"));
  const std::int64_t want_x = trans == kNoTrans ? n : m, want_y = trans == kNoTrans ? m : n;
  if (x.n != want_x || y.n != want_y)
    return invalid_argument("x has " + std::to_string(x.n) + " elements and y " + std::to_string(y.n) + "; expected " +
                            std::to_string(want_x) + " and " + std::to_string(want_y));
  KC_ASSIGN_OR_RETURN(FortranInt m32, fit(m, "M"));
  KC_ASSIGN_OR_RETURN(FortranInt n32, fit(n, "N"));
  T alpha[2], beta[2];
  scalar<T>(call, "alpha", 1, alpha);
  scalar<T>(call, "beta", 0, beta);
  KC_ASSIGN_OR_RETURN(GemvFn fn, entry<GemvFn>(lib, std::string("cblas_") + prefix<T>() + "gemv"));
  fn(kRowMajor, trans, m32, n32, alpha, a.data<T>(), lda, call.t("x").data<T>(), x.inc, beta, call.t("y").data<T>(),
     y.inc);
  return ok_status();
}

template <typename T>
Status run_gemm(const BlasLibrary& lib, Call& call) {
  for (const char* n : {"A", "B", "C"}) KC_RETURN_IF_ERROR(check_dtype(call, n, kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(int ta, cblas_trans(call, "trans_a"));
  KC_ASSIGN_OR_RETURN(int tb, cblas_trans(call, "trans_b"));
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (a.rank() != 3 || c.rank() != 3) return invalid_argument("A and C must be (rows, cols, 2)");
  const std::int64_t m = c.dim(0), n = c.dim(1);
  const std::int64_t k = ta == kNoTrans ? a.dim(1) : a.dim(0);
  KC_ASSIGN_OR_RETURN(FortranInt lda, ta == kNoTrans ? matrix_ld(a, "A", m, k) : matrix_ld(a, "A", k, m));
  KC_ASSIGN_OR_RETURN(FortranInt ldb, tb == kNoTrans ? matrix_ld(b, "B", k, n) : matrix_ld(b, "B", n, k));
  KC_ASSIGN_OR_RETURN(FortranInt ldc, matrix_ld(c, "C", m, n));
  KC_ASSIGN_OR_RETURN(FortranInt m32, fit(m, "M"));
  KC_ASSIGN_OR_RETURN(FortranInt n32, fit(n, "N"));
  KC_ASSIGN_OR_RETURN(FortranInt k32, fit(k, "K"));
  T alpha[2], beta[2];
  scalar<T>(call, "alpha", 1, alpha);
  scalar<T>(call, "beta", 0, beta);
  KC_ASSIGN_OR_RETURN(GemmFn fn, entry<GemmFn>(lib, std::string("cblas_") + prefix<T>() + "gemm"));
  fn(kRowMajor, ta, tb, m32, n32, k32, alpha, a.data<T>(), lda, b.data<T>(), ldb, beta, c.data<T>(), ldc);
  return ok_status();
}

using RunFn = Status (*)(const BlasLibrary&, Call&);

struct Routine {
  const char* name;  ///< the impl suffix and the routine: "cdotc"
  const char* op;
  RunFn run;
  DType dtype;
  bool accumulates;
  const char* conj;  ///< cdot only: the conj parameter the routine computes ("U" or "C")
  const char* description;
};

constexpr Routine kRoutines[] = {
    {"cdotu", "cdot", &run_dot<float, false>, DType::kF32, true, "U", "sum x_i y_i (cblas_cdotu_sub)"},
    {"cdotc", "cdot", &run_dot<float, true>, DType::kF32, true, "C", "sum conj(x_i) y_i (cblas_cdotc_sub)"},
    {"zdotu", "cdot", &run_dot<double, false>, DType::kF64, true, "U", "sum x_i y_i (cblas_zdotu_sub)"},
    {"zdotc", "cdot", &run_dot<double, true>, DType::kF64, true, "C", "sum conj(x_i) y_i (cblas_zdotc_sub)"},
    {"cscal", "cscal", &run_scal<float>, DType::kF32, false, nullptr, "x = alpha x, complex alpha (cscal_)"},
    {"zscal", "cscal", &run_scal<double>, DType::kF64, false, nullptr, "x = alpha x, complex alpha (zscal_)"},
    {"csscal", "csscal", &run_sscal<float>, DType::kF32, false, nullptr, "x = alpha x, real alpha (csscal_)"},
    {"zdscal", "csscal", &run_sscal<double>, DType::kF64, false, nullptr, "x = alpha x, real alpha (zdscal_)"},
    {"icamax", "ciamax", &run_iamax<float>, DType::kF32, false, nullptr,
     "first index of max |re| + |im| (icamax_, 0-based)"},
    {"izamax", "ciamax", &run_iamax<double>, DType::kF64, false, nullptr,
     "first index of max |re| + |im| (izamax_, 0-based)"},
    {"cgemv", "cgemv", &run_gemv<float>, DType::kF32, true, nullptr,
     "y = alpha op(A) x + beta y, op = N, T, C (cblas_cgemv, row-major)"},
    {"zgemv", "cgemv", &run_gemv<double>, DType::kF64, true, nullptr,
     "y = alpha op(A) x + beta y, op = N, T, C (cblas_zgemv, row-major)"},
    {"cgemm", "cgemm", &run_gemm<float>, DType::kF32, true, nullptr,
     "C = alpha op(A) op(B) + beta C (cblas_cgemm, row-major)"},
    {"zgemm", "cgemm", &run_gemm<double>, DType::kF64, true, nullptr,
     "C = alpha op(A) op(B) + beta C (cblas_zgemm, row-major)"},
};

/// The rules each library's complex routines follow, with the document each
/// is taken from (the real routines' counterparts are in blas_backend.cpp,
/// declare_level1_rules and declare_gemm_rules).
///
/// cscal, scal_alpha_zero: netlib cscal.f/zscal.f 3.11 store CA*CX(I), the
///   textbook complex product, for every CA but ONE (a quick return): MULTIPLY,
///   0 * NaN and 0 * Inf give NaN. OpenBLAS 0.3.21 (x86_64 zscal kernels) and
///   BLIS 0.9.0 (bli_?scalv) store zeros at alpha = 0 without reading x:
///   ZERO_FILL, as for their real scal (observed, tests/repro/blas_complex_rules.c;
///   neither documents it).
/// ciamax, iamax_nan: netlib icamax.f/izamax.f 3.11 scan with
///   SCABS1(CX(I)).GT.SMAX from SMAX = SCABS1(CX(1)): GREATER_THAN. BLIS 0.9.0's
///   amaxv returns the first NaN (flame/blis PR #382; observed for izamax too):
///   FIRST_NAN. OpenBLAS documents none (OpenMathLib/OpenBLAS#624): UNSPECIFIED.
/// cgemv, cgemm: netlib cgemv.f/cgemm.f, argument BETA: "When BETA is supplied
///   as zero then Y (C) need not be set on input" (beta_zero = C_NOT_READ); the
///   ALPHA.EQ.ZERO quick return after scaling by beta (alpha_zero =
///   AB_NOT_READ), the same rules as sgemv/sgemm; OpenBLAS and BLIS document no
///   other rule for their BLAS interfaces.
void declare_rules(Declaration& d, BlasFlavor flavor) {
  if (d.op == "cscal" || d.op == "csscal") {
    d.extra["scal_alpha_zero"] = flavor == BlasFlavor::kNetlib ? "MULTIPLY" : "ZERO_FILL";
    d.source += flavor == BlasFlavor::kNetlib
                    ? (d.op == "cscal"
                           ? "; scal_alpha_zero: netlib cscal.f/zscal.f 3.11 (CX(I) = CA*CX(I); quick return at CA = ONE)"
                           : "; scal_alpha_zero: netlib csscal.f/zdscal.f 3.11 (SA times each part, no alpha = 0 branch)")
                : flavor == BlasFlavor::kOpenBlas
                    ? "; scal_alpha_zero: OpenBLAS 0.3.21 x86_64 zscal kernels store zeros at alpha = 0 (source; "
                      "observed for cscal, zscal, csscal and zdscal)"
                    : "; scal_alpha_zero: BLIS 0.9.0 bli_?scalv sets x to 0 at alpha = 0 (observed)";
  } else if (d.op == "ciamax") {
    d.extra["iamax_nan"] = flavor == BlasFlavor::kNetlib  ? "GREATER_THAN"
                           : flavor == BlasFlavor::kBlis ? "FIRST_NAN"
                                                         : "UNSPECIFIED";
    d.source += flavor == BlasFlavor::kNetlib
                    ? "; iamax_nan: netlib icamax.f/izamax.f 3.11 (SCABS1(CX(I)).GT.SMAX)"
                : flavor == BlasFlavor::kBlis ? "; iamax_nan: flame/blis PR #382 (first NaN), observed with 0.9.0"
                                              : "; iamax_nan: unspecified (OpenMathLib/OpenBLAS#624)";
  } else if (d.op == "cgemv" || d.op == "cgemm") {
    d.extra["beta_zero"] = "C_NOT_READ";
    d.extra["alpha_zero"] = "AB_NOT_READ";
    d.source += d.op == "cgemv" ? "; netlib cgemv.f arguments ALPHA, BETA (Y need not be set when BETA is zero)"
                                : "; netlib cgemm.f arguments ALPHA, BETA (C need not be set when BETA is zero)";
  }
}

class ComplexBlasImpl final : public Impl {
 public:
  ComplexBlasImpl(std::shared_ptr<const BlasLibrary> lib, const Routine& r) : lib_(std::move(lib)), routine_(r) {
    const BlasLibrarySpec& spec = lib_->spec();
    decl_.name = spec.name + "." + r.name;
    decl_.op = r.op;
    decl_.backend = spec.name;
    decl_.dtypes = {r.dtype};
    // COMPLEX (COMPLEX*16) temporaries in the reference routines, SIMD
    // accumulators of the component type in the OpenBLAS and BLIS kernels.
    if (r.accumulates) decl_.accumulator = r.dtype;
    decl_.determinism = spec.determinism;
    decl_.nan = NanPolicy::kIeeePropagate;
    decl_.denormal = DenormalPolicy::kIeee;
    decl_.source = spec.source;
    decl_.description = std::string(r.description) + " — " + spec.description;
    declare_rules(decl_, spec.flavor);
  }

  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    KC_RETURN_IF_ERROR(Impl::can_implement(call));
    if (routine_.conj && call.get("conj", "U") != routine_.conj)
      return unimplemented(decl_.name + " computes conj = " + routine_.conj + ", the call asks for conj = " +
                           call.get("conj", "U"));
    return ok_status();
  }

  Status run(Call& call) const override { return routine_.run(*lib_, call); }

 private:
  std::shared_ptr<const BlasLibrary> lib_;
  Routine routine_;
  Declaration decl_;
};

}  // namespace

std::vector<std::shared_ptr<const Impl>> complex_blas_impls(const std::shared_ptr<const BlasLibrary>& lib) {
  std::vector<std::shared_ptr<const Impl>> out;
  for (const Routine& r : kRoutines) out.push_back(std::make_shared<ComplexBlasImpl>(lib, r));
  return out;
}

}  // namespace kc::backends
