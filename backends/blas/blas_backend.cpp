#include "blas_backend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "blas_complex.h"
#include "blas_library.h"
#include "kc/capability.h"

namespace kc::backends {

namespace {

// --- Argument checks. The reference BLAS reports a bad argument through
// XERBLA, which prints and STOPs the process; we check every argument the way
// the routine's own INFO checks do and return a Status instead, so the library
// is only ever called with arguments it accepts.

Result<FortranInt> to_fortran_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX) {
    return invalid_argument(std::string(what) + " = " + std::to_string(v) +
                            " does not fit the LP64 BLAS interface (0 <= v <= 2^31-1)");
  }
  return static_cast<FortranInt>(v);
}

Status check_dtype(const Call& call, const char* name, DType want) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  if (call.t(name).dtype() != want) {
    return unimplemented(std::string("tensor ") + name + " is " +
                         std::string(dtype_name(call.t(name).dtype())) + ", this routine takes " +
                         std::string(dtype_name(want)));
  }
  return ok_status();
}

Status check_f32(const Call& call, const char* name) { return check_dtype(call, name, DType::kF32); }

/// A row-major matrix operand as the column-major BLAS sees it.
struct MatrixArg {
  FortranInt ld = 1;
};

// rows x cols row-major with strides {ld, 1} is, to a column-major routine, a
// cols x rows matrix with leading dimension ld, which BLAS requires >= max(1, cols).
Result<MatrixArg> matrix_arg(const Tensor& t, const char* name, std::int64_t rows,
                             std::int64_t cols) {
  if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != cols) {
    return invalid_argument(std::string(name) + " has shape " + t.shape_string() + ", expected (" +
                            std::to_string(rows) + ", " + std::to_string(cols) + ")");
  }
  if (cols > 1 && rows > 0 && t.strides()[1] != 1) {
    return unimplemented(std::string(name) + " is not unit-stride along rows");
  }
  std::int64_t ld = t.strides()[0];
  const std::int64_t min_ld = std::max<std::int64_t>(1, cols);
  if (ld < min_ld) {
    // With at most one row, or no columns, the leading dimension never steps
    // through memory; BLAS still wants it >= max(1, cols).
    if (rows > 1 && cols > 0) {
      return unimplemented(std::string(name) + " leading dimension " + std::to_string(ld) + " < " +
                           std::to_string(min_ld));
    }
    ld = min_ld;
  }
  if (rows > 0 && cols > 0 && (rows - 1) * ld + cols > t.storage_elems()) {
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  }
  KC_ASSIGN_OR_RETURN(FortranInt ld32, to_fortran_int(ld, "leading dimension"));
  return MatrixArg{ld32};
}

Result<char> trans_flag(const Call& call, const std::string& key) {
  std::string v = call.get(key, "N");
  if (v == "N" || v == "n") return 'N';
  if (v == "T" || v == "t") return 'T';
  return invalid_argument(key + " = '" + v + "', expected N or T");
}

/// A strided vector operand: n elements, increment inc (>= 1).
struct VectorArg {
  FortranInt n = 0;
  FortranInt inc = 1;
};

Result<VectorArg> vector_arg(const Tensor& t, const char* name) {
  if (t.rank() != 1) return invalid_argument(std::string(name) + " must be rank 1");
  const std::int64_t n = t.dim(0);
  std::int64_t inc = t.strides()[0];
  if (n <= 1) inc = 1;  // never used to step
  // A negative BLAS increment walks the vector backwards from its far end, which
  // is not what a kc stride means; zero is legal BLAS but not a kc tensor.
  if (inc < 1) return unimplemented(std::string(name) + " stride " + std::to_string(inc) + " < 1");
  if (n > 0 && (n - 1) * inc + 1 > t.storage_elems()) {
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  }
  KC_ASSIGN_OR_RETURN(FortranInt n32, to_fortran_int(n, "n"));
  KC_ASSIGN_OR_RETURN(FortranInt inc32, to_fortran_int(inc, "increment"));
  return VectorArg{n32, inc32};
}

/// A level-1 vector operand: n elements and the signed increment of the
/// call's `param` (incx, incy; src/ops/blas1 keeps |inc| as the tensor's
/// stride and the sign there). The pointer passed is the storage's start, as
/// the Fortran interface wants for every sign: INCX < 0 walks it from the far
/// end, INCX = 0 reads X(1) every time. Without the param (a call built by
/// hand) the increment is the stride.
Result<VectorArg> level1_vector_arg(const Call& call, const char* name, const char* param) {
  const Tensor& t = call.t(name);
  if (t.rank() != 1) return invalid_argument(std::string(name) + " must be rank 1");
  const std::int64_t n = t.dim(0), stride = t.strides()[0];
  const std::int64_t inc = call.get_int(param, stride);
  const std::int64_t step = inc < 0 ? -inc : inc;
  if (n > 1 && step != stride) {
    return invalid_argument(std::string(name) + " has stride " + std::to_string(stride) + ", " + param + " = " +
                            std::to_string(inc) + " addresses it with |" + param + "| = " + std::to_string(step));
  }
  if (n > 0 && (n - 1) * step + 1 > t.storage_elems()) {
    return invalid_argument(std::string(name) + " storage is smaller than its increment reaches");
  }
  KC_ASSIGN_OR_RETURN(FortranInt n32, to_fortran_int(n, "n"));
  KC_ASSIGN_OR_RETURN(FortranInt step32, to_fortran_int(step, "|increment|"));
  return VectorArg{n32, inc < 0 ? -step32 : step32};
}

Status check_scalar_out(const Call& call, const char* name, DType dtype) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  const Tensor& t = call.t(name);
  if (t.dtype() != dtype || t.numel() != 1 || t.storage_elems() < 1) {
    return invalid_argument(std::string(name) + " must be a single " +
                            std::string(dtype_name(dtype)) + " element");
  }
  return ok_status();
}

// --- The kernels. Each maps a kc Call onto one Fortran routine.

// Row-major C = alpha op(A) op(B) + beta C is, read column-major, C^T = alpha
// op(B)^T op(A)^T + beta C^T: swap the operands and M with N, keep the flags.
// alpha and beta go through unchanged and C is not pre-cleared, so what each
// library does with beta = 0 (reference sgemm.f: "C need not be set on input")
// or alpha = 0 is exactly what gets measured.
Status run_sgemm(const BlasLibrary& lib, Call& call) {
  for (const char* n : {"A", "B", "C"}) KC_RETURN_IF_ERROR(check_f32(call, n));
  KC_ASSIGN_OR_RETURN(char ta, trans_flag(call, "trans_a"));
  KC_ASSIGN_OR_RETURN(char tb, trans_flag(call, "trans_b"));
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (c.rank() != 2 || a.rank() != 2) return invalid_argument("A and C must be rank 2");
  const std::int64_t m = c.dim(0), n = c.dim(1);
  const std::int64_t k = ta == 'N' ? a.dim(1) : a.dim(0);
  KC_ASSIGN_OR_RETURN(MatrixArg am,
                      ta == 'N' ? matrix_arg(a, "A", m, k) : matrix_arg(a, "A", k, m));
  KC_ASSIGN_OR_RETURN(MatrixArg bm,
                      tb == 'N' ? matrix_arg(b, "B", k, n) : matrix_arg(b, "B", n, k));
  KC_ASSIGN_OR_RETURN(MatrixArg cm, matrix_arg(c, "C", m, n));
  KC_ASSIGN_OR_RETURN(FortranInt m32, to_fortran_int(m, "M"));
  KC_ASSIGN_OR_RETURN(FortranInt n32, to_fortran_int(n, "N"));
  KC_ASSIGN_OR_RETURN(FortranInt k32, to_fortran_int(k, "K"));
  const float alpha = static_cast<float>(call.get_double("alpha", 1.0));
  const float beta = static_cast<float>(call.get_double("beta", 0.0));
  // The trailing 1s are gfortran's hidden lengths of the two CHARACTER*1 args.
  lib.sgemm(&tb, &ta, &n32, &m32, &k32, &alpha, b.data<float>(), &bm.ld, a.data<float>(), &am.ld,
            &beta, c.data<float>(), &cm.ld, 1, 1);
  return ok_status();
}

// --- Level 1, single and double precision. The routines share one shape per
// op; T picks the s- or d-routine. The s entry points were resolved when the
// library was adopted; the d ones are looked up on the same handle (a private
// core-type copy included) when first called.

template <typename T>
constexpr DType kDTypeOf = std::is_same_v<T, float> ? DType::kF32 : DType::kF64;

template <typename T>
using DotFn = T (*)(const FortranInt*, const T*, const FortranInt*, const T*, const FortranInt*);
template <typename T>
using VecToScalarFn = T (*)(const FortranInt*, const T*, const FortranInt*);
template <typename T>
using ScalFn = void (*)(const FortranInt*, const T*, T*, const FortranInt*);
template <typename T>
using IamaxFn = FortranInt (*)(const FortranInt*, const T*, const FortranInt*);

/// The Fortran entry point `s<name>_` or `d<name>_` (`is<name>_`/`id<name>_`
/// for iamax) of this library handle.
template <typename Fn>
Result<Fn> entry(const BlasLibrary& lib, const std::string& symbol) {
  void* p = lib.symbol(symbol.c_str());
  if (!p) return unimplemented(lib.spec().name + " exports no " + symbol);
  return reinterpret_cast<Fn>(p);
}

template <typename T>
std::string routine_name(const char* stem) {
  return std::string(std::is_same_v<T, float> ? "s" : "d") + stem + "_";
}

template <typename T>
Status run_dot(const BlasLibrary& lib, Call& call) {
  for (const char* n : {"x", "y"}) KC_RETURN_IF_ERROR(check_dtype(call, n, kDTypeOf<T>));
  KC_RETURN_IF_ERROR(check_scalar_out(call, "out", kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(VectorArg x, level1_vector_arg(call, "x", "incx"));
  KC_ASSIGN_OR_RETURN(VectorArg y, level1_vector_arg(call, "y", "incy"));
  if (x.n != y.n) return invalid_argument("x and y differ in length");
  KC_ASSIGN_OR_RETURN(DotFn<T> fn, entry<DotFn<T>>(lib, routine_name<T>("dot")));
  call.t("out").data<T>()[0] = fn(&x.n, call.t("x").data<T>(), &x.inc, call.t("y").data<T>(), &y.inc);
  return ok_status();
}

// asum and nrm2 share a signature: x -> out.
template <typename T, const char* Stem>
Status run_reduction(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_RETURN_IF_ERROR(check_scalar_out(call, "out", kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(VectorArg x, level1_vector_arg(call, "x", "incx"));
  KC_ASSIGN_OR_RETURN(VecToScalarFn<T> fn, entry<VecToScalarFn<T>>(lib, routine_name<T>(Stem)));
  call.t("out").data<T>()[0] = fn(&x.n, call.t("x").data<T>(), &x.inc);
  return ok_status();
}

// alpha is a scalar of the routine's precision (sscal's REAL SA, dscal's
// DOUBLE PRECISION DA), passed through unchanged: 0, -1, 1 and NaN included.
template <typename T>
Status run_scal(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(VectorArg x, level1_vector_arg(call, "x", "incx"));
  const T alpha = static_cast<T>(call.get_double("alpha", 1.0));
  KC_ASSIGN_OR_RETURN(ScalFn<T> fn, entry<ScalFn<T>>(lib, routine_name<T>("scal")));
  fn(&x.n, &alpha, call.t("x").data<T>(), &x.inc);
  return ok_status();
}

// i?amax returns a 1-based index, and 0 when n < 1 (isamax.f: "ISAMAX = 0;
// IF (N.LT.1 .OR. INCX.LE.0) RETURN"). kc indices are 0-based, so n = 0 gives
// -1: "no element", not a valid index.
template <typename T>
Status run_iamax(const BlasLibrary& lib, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", kDTypeOf<T>));
  KC_RETURN_IF_ERROR(check_scalar_out(call, "out", DType::kI64));
  KC_ASSIGN_OR_RETURN(VectorArg x, level1_vector_arg(call, "x", "incx"));
  const std::string name = std::string("i") + (std::is_same_v<T, float> ? "s" : "d") + "amax_";
  KC_ASSIGN_OR_RETURN(IamaxFn<T> fn, entry<IamaxFn<T>>(lib, name));
  const FortranInt one_based = fn(&x.n, call.t("x").data<T>(), &x.inc);
  call.t("out").data<std::int64_t>()[0] = static_cast<std::int64_t>(one_based) - 1;
  return ok_status();
}

// --- Level 2: gemv. A row-major M x N matrix with leading dimension lda is,
// to a column-major routine, the N x M matrix A^T with the same lda; so
// y = A x is ?gemv('T') on it and y = A^T x is ?gemv('N'), with m = N, n = M.
// beta goes through unchanged and y is not pre-cleared: what the library does
// with beta = 0 ("When BETA is supplied as zero then Y need not be set on
// input", sgemv.f) is what gets measured.

template <typename T>
using GemvFn = void (*)(const char*, const FortranInt*, const FortranInt*, const T*, const T*, const FortranInt*,
                        const T*, const FortranInt*, const T*, T*, const FortranInt*, std::size_t);

template <typename T>
Status run_gemv(const BlasLibrary& lib, Call& call) {
  for (const char* name : {"A", "x", "y"}) KC_RETURN_IF_ERROR(check_dtype(call, name, kDTypeOf<T>));
  KC_ASSIGN_OR_RETURN(char trans, trans_flag(call, "trans"));
  Tensor& a = call.t("A");
  if (a.rank() != 2) return invalid_argument("A must be rank 2");
  const std::int64_t m = a.dim(0), n = a.dim(1);
  KC_ASSIGN_OR_RETURN(MatrixArg am, matrix_arg(a, "A", m, n));
  KC_ASSIGN_OR_RETURN(VectorArg x, vector_arg(call.t("x"), "x"));
  KC_ASSIGN_OR_RETURN(VectorArg y, vector_arg(call.t("y"), "y"));
  const std::int64_t want_x = trans == 'N' ? n : m, want_y = trans == 'N' ? m : n;
  if (x.n != want_x || y.n != want_y) {
    return invalid_argument("x has " + std::to_string(x.n) + " elements and y " + std::to_string(y.n) +
                            "; trans = " + std::string(1, trans) + " wants " + std::to_string(want_x) + " and " +
                            std::to_string(want_y));
  }
  KC_ASSIGN_OR_RETURN(FortranInt m32, to_fortran_int(n, "M (columns of A)"));
  KC_ASSIGN_OR_RETURN(FortranInt n32, to_fortran_int(m, "N (rows of A)"));
  const char blas_trans = trans == 'N' ? 'T' : 'N';
  const T alpha = static_cast<T>(call.get_double("alpha", 1.0));
  const T beta = static_cast<T>(call.get_double("beta", 0.0));
  KC_ASSIGN_OR_RETURN(GemvFn<T> fn, entry<GemvFn<T>>(lib, routine_name<T>("gemv")));
  // The trailing 1 is gfortran's hidden length of the CHARACTER*1 TRANS.
  fn(&blas_trans, &m32, &n32, &alpha, a.data<T>(), &am.ld, call.t("x").data<T>(), &x.inc, &beta,
     call.t("y").data<T>(), &y.inc, 1);
  return ok_status();
}

constexpr char kAsumStem[] = "asum";
constexpr char kNrm2Stem[] = "nrm2";

using RunFn = Status (*)(const BlasLibrary&, Call&);

/// One row per routine: the impl name suffix, the kc op, and the mapping.
struct Routine {
  const char* suffix;
  const char* op;
  RunFn run;
  bool accumulates;  ///< has a sum whose precision to declare (scal and iamax do not)
  const char* description;
  DType dtype = DType::kF32;  ///< s-routines FP32, d-routines FP64
};

/// sgemm's argument rules, the same for the three libraries: kc calls the
/// Fortran BLAS interface (sgemm_), whose semantics are the reference BLAS's.
/// beta = 0: "When BETA is supplied as zero then C need not be set on input"
/// (netlib sgemm.f, argument BETA; in every release). alpha = 0: the reference
/// sgemm.f returns beta*C without referencing A or B ("And if alpha.eq.zero."
/// quick return, since the 1989 original), and its documentation states it
/// since Reference-LAPACK PR #1098 (2025; argument ALPHA: "If ALPHA is zero the
/// values in A and B do not affect the result ... NaN/Inf propagation from A
/// and B is inhibited if ALPHA is zero"). OpenBLAS and BLIS document no other
/// rule for their BLAS interfaces. OpenBLAS 0.3.21's SkylakeX kernels break the
/// alpha rule (KC-GEMM-03; tests/repro/openblas_sgemm_alpha_zero.c, docs/audit.md).
void declare_gemm_rules(Declaration& d) {
  if (d.op == "gemv") {
    // The same rule for y: "When BETA is supplied as zero then Y need not be
    // set on input" (netlib sgemv.f/dgemv.f, argument BETA).
    d.extra["beta_zero"] = "C_NOT_READ";
    d.source += "; netlib sgemv.f argument BETA (Y need not be set when BETA is zero)";
    return;
  }
  if (d.op != "matmul") return;
  d.extra["alpha_zero"] = "AB_NOT_READ";
  d.extra["beta_zero"] = "C_NOT_READ";
  d.source += "; netlib sgemm.f arguments ALPHA, BETA (Reference-LAPACK PR #1098 for ALPHA)";
}

/// Why the sub-configuration a BLIS instance dispatches to cannot run on this
/// CPU ("" when it can, and for other libraries). BLIS runs whatever
/// BLIS_ARCH_TYPE names without checking the CPU (blas_library.cpp), so with
/// BLIS_ARCH_TYPE=12 (bulldozer, FMA4) on a CPU without FMA4 every call would
/// die with SIGILL; such impls are not applicable instead.
std::string arch_unrunnable(const BlasLibrary& lib) {
  if (lib.spec().flavor != BlasFlavor::kBlis) return "";
  const std::string arch = lib.arch_name(lib.arch_id());
  const BlisSubconfig* sc = find_blis_subconfig(arch);
  if (!sc) return "";
  const std::string missing = missing_cpu_features(*sc);
  if (missing.empty()) return "";
  return "BLIS runs sub-configuration " + arch + " (BLIS_ARCH_TYPE), whose kernels need " + missing +
         ", which this CPU lacks";
}

/// The level-1 rules, declared per library with the document each is taken
/// from; the contracts that judge them (contracts/blas/KC-SCAL-02/03,
/// KC-IAMAX-02/03, KC-NRM2-01..03, KC-INC-01..04) apply to the impls that
/// declare the rule.
///
/// scal_alpha_zero: what x := alpha x does at alpha = 0 with NaN or Inf in x.
///   MULTIPLY: the IEEE product, 0 * NaN = NaN and 0 * Inf = NaN. netlib
///   sscal.f/dscal.f 3.11 have no alpha = 0 branch: `SX(I) = SA*SX(I)`.
///   OpenBLAS declares it too: its ?SCAL is the Fortran BLAS interface, and
///   upstream took its kernels' zero stores at alpha = 0 for a bug
///   (OpenMathLib/OpenBLAS#4728, "0 * nan != nan * 0", fixed by PR #4729 in
///   0.3.28; PR #4807 keeps zero-filling for LAPACK's internal calls only,
///   behind a flag). So 0.3.21's x86_64 kernels, which store zeros, violate
///   KC-SCAL-02 (docs/findings.md).
///   ZERO_FILL: zeros are stored and x is not read. BLIS 0.9.0's
///   compatibility layer calls bli_?scalv, whose reference kernel
///   (ref_kernels/1/bli_scalv_ref.c) sets x with setv when alpha is zero, on
///   purpose ("If alpha is zero, use setv"); observed. BLIS's documents do not
///   state it: BLISTypedAPI.md and KernelsHowTo.md give scalv as x := alpha x.
///   Every rule gives the IEEE product for alpha != 0, NaN alpha included.
/// iamax_nan: which index i?amax returns when x holds a NaN.
///   GREATER_THAN: netlib isamax.f/idamax.f 3.11, `IF (ABS(SX(I)).GT.SMAX)`
///   from SMAX = |x_1|: a NaN at x_1 is returned, a later NaN never.
///   FIRST_NAN: the first NaN wherever it is; BLIS since flame/blis PR #382
///   ("the first NaN if one is encountered"), observed with 0.9.0. (BLIS
///   0.9.0's own BLISTypedAPI.md, amaxv, still says a NaN is treated as smaller
///   than any value: docs/findings.md.)
///   UNSPECIFIED: OpenBLAS; its maintainers call the result with a NaN
///   undefined (OpenMathLib/OpenBLAS#624), and PR #4191 (first NaN) is open.
///   No contract judges it.
/// nrm2_range: SAFE for all three: the reference snrm2.f90/dnrm2.f90 (3.10+,
///   Anderson's safe scaling, ACM TOMS Algorithm 978) return ||x|| without
///   overflow or underflow wherever ||x|| is representable, and +Inf when an
///   element is infinite and none is NaN; OpenBLAS and BLIS implement that
///   Fortran interface (BLIS: "the BLAS compatibility layer, which mimics
///   conventional Fortran-77 BLAS", BLISTypedAPI.md).
/// increments: BLAS for every level-1 routine of the three: kc passes the
///   signed INCX/INCY to the Fortran interface (level1_vector_arg). What a
///   negative or zero increment means is documented for nrm2 (dnrm2.f90 3.10+,
///   argument INCX: x(i) = X(1-(n-i)*INCX) for INCX < 0; INCX = 0 counts x(1)
///   n times) and fixed by ddot.f's code (a negative increment starts at the
///   far end); KC-INC-01/02 hold every impl declaring it to that.
/// nonpositive_inc: asum, scal and iamax at INCX <= 0, where only the
///   reference's code decides (dasum.f, dscal.f, idamax.f 3.11: IF (N.LE.0
///   .OR. INCX.LE.0) RETURN).
///   QUICK_RETURN: netlib; OpenBLAS 0.3.21 (its asum and scal kernels return
///   at INCX <= 0; observed); all three libraries' i?amax (0; observed).
///   WALK: BLIS 0.9.0's ?asum and ?scal: the compatibility layer turns a
///   negative increment into a pointer at the far end and runs the routine on
///   what it addresses, and at INCX = 0 on x(1) n times (observed: asum{1,2,3}
///   at INCX = -1 is 6; x(1) scaled n times at INCX = 0).
///   Judged by KC-INC-03 (QUICK_RETURN) and KC-INC-04 (WALK).
void declare_level1_rules(Declaration& d, BlasFlavor flavor) {
  const bool level1 = d.op == "dot" || d.op == "asum" || d.op == "nrm2" || d.op == "scal" || d.op == "iamax";
  if (!level1) return;
  d.extra["increments"] = "BLAS";
  d.source += "; increments: the Fortran interface's signed INCX/INCY (netlib dnrm2.f90 3.10+ argument INCX, "
              "ddot.f)";
  if (d.op == "scal") {
    d.extra["scal_alpha_zero"] = flavor == BlasFlavor::kBlis ? "ZERO_FILL" : "MULTIPLY";
    d.source += flavor == BlasFlavor::kNetlib
                    ? "; scal_alpha_zero: netlib sscal.f/dscal.f 3.11 (SX(I) = SA*SX(I), no alpha = 0 branch)"
                : flavor == BlasFlavor::kOpenBlas
                    ? "; scal_alpha_zero: the reference rule for the BLAS interface, as upstream states it "
                      "(OpenMathLib/OpenBLAS#4728, fixed by PR #4729 in 0.3.28; PR #4807 zero-fills for "
                      "LAPACK-internal calls only)"
                    : "; scal_alpha_zero: BLIS 0.9.0 ref_kernels/1/bli_scalv_ref.c (\"If alpha is zero, use "
                      "setv\"), observed; not in BLISTypedAPI.md, which gives x := alpha x";
  } else if (d.op == "iamax") {
    d.extra["iamax_nan"] = flavor == BlasFlavor::kNetlib  ? "GREATER_THAN"
                           : flavor == BlasFlavor::kBlis ? "FIRST_NAN"
                                                         : "UNSPECIFIED";
    d.source += flavor == BlasFlavor::kNetlib ? "; iamax_nan: netlib isamax.f/idamax.f 3.11 (ABS(SX(I)).GT.SMAX)"
                : flavor == BlasFlavor::kBlis ? "; iamax_nan: flame/blis PR #382 (first NaN), observed with 0.9.0"
                                              : "; iamax_nan: unspecified (OpenMathLib/OpenBLAS#624; PR #4191 open)";
  } else if (d.op == "nrm2") {
    d.extra["nrm2_range"] = "SAFE";
    d.source += "; nrm2_range: netlib snrm2.f90/dnrm2.f90 3.10+ (safe scaling, ACM TOMS Algorithm 978)";
  }
  if (d.op == "asum" || d.op == "scal" || d.op == "iamax") {
    const bool walk = flavor == BlasFlavor::kBlis && d.op != "iamax";
    d.extra["nonpositive_inc"] = walk ? "WALK" : "QUICK_RETURN";
    d.source += flavor == BlasFlavor::kNetlib
                    ? "; nonpositive_inc: netlib dasum.f/dscal.f/idamax.f 3.11 (IF (N.LE.0 .OR. INCX.LE.0) RETURN)"
                : walk ? "; nonpositive_inc: BLIS 0.9.0 compatibility layer walks INCX <= 0 (observed)"
                       : "; nonpositive_inc: returns at INCX <= 0 like netlib (observed)";
  }
}

constexpr Routine kRoutines[] = {
    {"sgemm", "matmul", &run_sgemm, true, "C = alpha op(A) op(B) + beta C (row-major via C^T)"},
    {"sdot", "dot", &run_dot<float>, true, "x . y"},
    {"sasum", "asum", &run_reduction<float, kAsumStem>, true, "sum |x_i|"},
    {"snrm2", "nrm2", &run_reduction<float, kNrm2Stem>, true, "sqrt(sum x_i^2), scaled"},
    {"sscal", "scal", &run_scal<float>, false, "x = alpha x"},
    {"isamax", "iamax", &run_iamax<float>, false, "first index of max |x_i| (0-based)"},
    {"ddot", "dot", &run_dot<double>, true, "x . y (FP64)", DType::kF64},
    {"dasum", "asum", &run_reduction<double, kAsumStem>, true, "sum |x_i| (FP64)", DType::kF64},
    {"dnrm2", "nrm2", &run_reduction<double, kNrm2Stem>, true, "sqrt(sum x_i^2), scaled (FP64)", DType::kF64},
    {"dscal", "scal", &run_scal<double>, false, "x = alpha x (FP64)", DType::kF64},
    {"idamax", "iamax", &run_iamax<double>, false, "first index of max |x_i| (0-based, FP64)", DType::kF64},
    {"sgemv", "gemv", &run_gemv<float>, true, "y = alpha op(A) x + beta y (row-major via A^T)"},
    {"dgemv", "gemv", &run_gemv<double>, true, "y = alpha op(A) x + beta y (row-major via A^T, FP64)",
     DType::kF64},
};

class BlasImpl final : public Impl {
 public:
  /// threads > 0 pins the library's thread count for the duration of run().
  BlasImpl(std::shared_ptr<const BlasLibrary> lib, const Routine& routine, int threads = 0)
      : lib_(std::move(lib)), run_(routine.run), threads_(threads) {
    const BlasLibrarySpec& spec = lib_->spec();
    decl_.name = spec.name + "." + routine.suffix;
    if (threads_ > 0) decl_.name += "_t" + std::to_string(threads_);
    decl_.op = routine.op;
    decl_.backend = spec.name;
    decl_.dtypes = {routine.dtype};
    // Accumulator of the routine's precision: REAL (DOUBLE PRECISION)
    // temporaries in the reference routines; SIMD accumulators of the data
    // type in OpenBLAS and BLIS kernels.
    if (routine.accumulates) decl_.accumulator = routine.dtype;
    decl_.determinism = spec.determinism;
    decl_.nan = NanPolicy::kIeeePropagate;
    decl_.denormal = DenormalPolicy::kIeee;
    decl_.source = spec.source;
    decl_.description = std::string(routine.description) + " — " + spec.description;
    if (threads_ > 0) {
      decl_.description += ", " + std::to_string(threads_) + " thread(s)";
      // One thread: one fixed summation order, whatever the library's default.
      if (threads_ == 1) decl_.determinism = Determinism::kBitwise;
    }
    declare_gemm_rules(decl_);
    declare_level1_rules(decl_, spec.flavor);
  }

  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    KC_RETURN_IF_ERROR(Impl::can_implement(call));
    if (std::string why = arch_unrunnable(*lib_); !why.empty()) return unimplemented(decl_.name + ": " + why);
    return ok_status();
  }

  Status run(Call& call) const override {
    // The kernel set a DYNAMIC_ARCH OpenBLAS dispatches to (openblas_get_corename;
    // "" for the other libraries): the path the call ran (kc/capability.h).
    if (std::string core = lib_->core_name(); !core.empty()) report_selected_path(core);
    if (threads_ <= 0) return run_(*lib_, call);
    // The knob is process-wide; kc runs one kernel at a time in a worker, and
    // the previous setting is restored so other impls see the default.
    const std::int64_t previous = lib_->threads();
    lib_->set_threads(threads_);
    Status s = run_(*lib_, call);
    lib_->set_threads(previous);
    return s;
  }

 private:
  std::shared_ptr<const BlasLibrary> lib_;
  RunFn run_;
  int threads_;
  Declaration decl_;
};

// Thread-pinned variants of sgemm, for libraries with a thread knob.
constexpr int kPinnedThreads[] = {1, 2};
static_assert(std::string_view(kRoutines[0].suffix) == "sgemm");
static_assert(std::string_view(kRoutines[1].suffix) == "sdot");
constexpr std::size_t kSscalRow = 4;
static_assert(std::string_view(kRoutines[kSscalRow].suffix) == "sscal");

// --- Core-type impls: the kernel sets of a DYNAMIC_ARCH OpenBLAS as separate impls.
//
// OpenBLAS built with DYNAMIC_ARCH=1 (Debian's openblas-pthread is) carries one
// kernel set per CPU family and picks one when it loads; the environment
// variable OPENBLAS_CORETYPE overrides that choice (OpenBLAS README, "Setting
// the number of threads using environment variables" / DYNAMIC_ARCH notes, and
// docs/runtime_variables.md: "OPENBLAS_CORETYPE: overrides the autodetected
// core type ... only for DYNAMIC_ARCH builds"). It is read once, at load
// (driver/others/dynamic.c, gotoblas_dynamic_init), so each core type needs its
// own copy of the library: in the worker that runs the impl we dlmopen a fresh
// copy into a new link-map namespace with the variable set, and read back
// openblas_get_corename() before trusting it. OpenBLAS falls back to another
// kernel set when the CPU lacks what the forced one needs (dynamic.c checks
// support_avx2 / support_avx512 / support_amx_bf16), so a core type that does
// not read back as requested is reported not applicable, never run as if it were.

struct CoreType {
  const char* label;     ///< impl name part: openblas.sgemm_core_<label>
  const char* coretype;  ///< OPENBLAS_CORETYPE value; corename reads back the same, any case
  const char* isa;       ///< what the kernels need, for the description
  /// The features checked before a copy is loaded: OpenBLAS 0.3.21 honours a
  /// forced core type without checking the CPU (observed: SKYLAKEX on a CPU
  /// without AVX-512 loads, and its sgemm dies of SIGILL).
  std::vector<CpuFeature> needs;
};

const CoreType kOpenBlasCoreTypes[] = {
    {"prescott", "PRESCOTT", "SSE3 (the generic x86_64 kernels)", {CpuFeature::kSse3}},
    {"sandybridge", "SANDYBRIDGE", "AVX", {CpuFeature::kAvx}},
    {"haswell", "HASWELL", "AVX2 + FMA3", {CpuFeature::kAvx2, CpuFeature::kFma}},
    {"zen", "ZEN", "AVX2 + FMA3 (AMD Zen tuning)", {CpuFeature::kAvx2, CpuFeature::kFma}},
    {"skylakex",
     "SKYLAKEX",
     "AVX-512 F/CD/BW/DQ/VL",
     {CpuFeature::kAvx512F, CpuFeature::kAvx512Dq, CpuFeature::kAvx512Bw, CpuFeature::kAvx512Vl}},
    {"sapphirerapids",
     "SAPPHIRERAPIDS",
     "AVX-512 + AMX-BF16 / AVX512-FP16",
     {CpuFeature::kAvx512F, CpuFeature::kAvx512Dq, CpuFeature::kAvx512Bw, CpuFeature::kAvx512Vl}},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// One fresh copy of the library per core type per process, loaded on first use.
struct FreshCopy {
  std::shared_ptr<const BlasLibrary> lib;
  std::string error;  ///< why there is no usable copy
};

const FreshCopy& fresh_copy(const BlasLibrary& base, const CoreType& ct) {
  static std::mutex mu;
  static std::map<std::string, FreshCopy> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = base.path() + "|" + ct.coretype;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  FreshCopy copy;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer runtimes interpose malloc & co. in the base namespace only; a
  // library copy in another namespace would mix allocators.
  copy.error = "core-type impls are disabled in sanitizer builds (dlmopen namespaces are not "
               "supported by ASan/TSan)";
#else
  if (const std::string missing = missing_cpu_features(ct.needs); !missing.empty()) {
    copy.error = std::string("this CPU lacks ") + missing + ", which the OPENBLAS_CORETYPE=" + ct.coretype +
                 " kernels need (OpenBLAS loads a forced core type without checking the CPU)";
    return cache.emplace(key, std::move(copy)).first->second;
  }
  auto lib = BlasLibrary::open_fresh(base.spec(), base.path(), "OPENBLAS_CORETYPE", ct.coretype);
  if (!lib.ok()) {
    copy.error = lib.status().message() + " (each core type needs its own namespace)";
  } else {
    const std::string got = lib.value()->core_name();
    if (lower(got) != lower(ct.coretype)) {
      copy.error = std::string("OPENBLAS_CORETYPE=") + ct.coretype + " was not honoured: " +
                   "the fresh copy runs core '" + got + "' (this CPU lacks " + ct.isa +
                   ", or the library has no such kernel set)";
    } else {
      copy.lib = std::move(lib).value();
    }
  }
#endif
  return cache.emplace(key, std::move(copy)).first->second;
}

/// The declaration of an FP32 routine run on a forced code path of its
/// library (an OpenBLAS core type, a BLIS sub-configuration): the library's
/// own declaration, renamed and with the knob named in source and description.
Declaration forced_variant_decl(const BlasLibrarySpec& spec, const Routine& routine, const std::string& suffix,
                                const std::string& source_note, const std::string& description_note) {
  Declaration d;
  d.name = spec.name + "." + routine.suffix + suffix;
  d.op = routine.op;
  d.backend = spec.name;
  d.dtypes = {DType::kF32};
  if (routine.accumulates) d.accumulator = DType::kF32;  // single precision SIMD accumulators, as above
  d.determinism = spec.determinism;
  d.nan = NanPolicy::kIeeePropagate;
  d.denormal = DenormalPolicy::kIeee;
  d.source = spec.source + source_note;
  d.description = std::string(routine.description) + " — " + spec.description + description_note;
  return d;
}

class CoreTypeImpl final : public Impl {
 public:
  CoreTypeImpl(std::shared_ptr<const BlasLibrary> base, const Routine& routine, const CoreType& ct)
      : base_(std::move(base)), run_(routine.run), ct_(ct) {
    const BlasLibrarySpec& spec = base_->spec();
    decl_ = forced_variant_decl(spec, routine, "_core_" + std::string(ct.label),
                                "; OpenBLAS docs/runtime_variables.md and README (OPENBLAS_CORETYPE overrides "
                                "the DYNAMIC_ARCH core type, read at load in driver/others/dynamic.c)",
                                ", kernels forced to OPENBLAS_CORETYPE=" + std::string(ct.coretype) + " (needs " +
                                    ct.isa + ")");
    decl_.extra["coretype"] = ct.coretype;
    // The path is the forced kernel set, as openblas_get_corename names it
    // (any case). A copy whose core name does not read back as forced is
    // refused (kUnimplemented) rather than run: unsupported = RAISE, no fallback.
    decl_.extra["path"] = ct.coretype;
    decl_.extra["unsupported"] = "RAISE";
    // The features the forced kernel set executes: what dynamic.c checks
    // before it selects the core type itself (kc checks them before loading
    // a copy, since a forced one is not checked).
    std::string features;
    for (CpuFeature f : ct.needs) features += (features.empty() ? "" : " and ") + std::string(cpu_feature_name(f));
    decl_.extra["device_capability"] = features.empty() ? "any" : features;
    declare_gemm_rules(decl_);
    declare_level1_rules(decl_, spec.flavor);
  }

  const Declaration& declaration() const override { return decl_; }

  Status run(Call& call) const override {
    const FreshCopy& copy = fresh_copy(*base_, ct_);
    if (!copy.lib) return unimplemented(decl_.name + ": " + copy.error);
    report_selected_path(copy.lib->core_name());
    return run_(*copy.lib, call);
  }

 private:
  std::shared_ptr<const BlasLibrary> base_;
  RunFn run_;
  CoreType ct_;
  Declaration decl_;
};

// --- Sub-configuration impls: the kernel sets of a BLIS built for several CPUs.
//
// Debian builds BLIS for the x86_64 configuration family: one kernel set
// ("sub-configuration") per CPU family, picked at initialisation by
// bli_cpuid_query_id, or forced with BLIS_ARCH_TYPE=<arch_t id> (BLIS
// docs/ConfigurationHowTo.md, "Runtime hardware detection"; read in
// bli_arch_set_id, frame/base/bli_arch.c). Like OPENBLAS_CORETYPE it is read
// once per library instance, so each sub-configuration runs in its own copy:
// the worker dlmopens a fresh copy with the variable set, initialises it and
// reads back bli_arch_query_id before trusting it. Two things are settled in
// kc's process first (can_implement), because getting them wrong kills the
// worker: whether this CPU has the features BLIS itself requires for the
// sub-configuration (BLIS does not check a forced id: SIGILL), and, in a probe
// child, whether the build carries it at all (an id it does not carry aborts).

const FreshCopy& blis_arch_copy(const BlasLibrary& base, int id) {
  static std::mutex mu;
  static std::map<std::string, FreshCopy> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = base.path() + "|" + std::to_string(id);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  FreshCopy copy;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  copy.error = "sub-configuration impls are disabled in sanitizer builds (dlmopen namespaces are not "
               "supported by ASan/TSan)";
#else
  auto lib = BlasLibrary::open_fresh(base.spec(), base.path(), "BLIS_ARCH_TYPE", std::to_string(id));
  if (!lib.ok()) {
    copy.error = lib.status().message() + " (each sub-configuration needs its own namespace)";
  } else if (const int got = lib.value()->arch_id(); got != id) {
    copy.error = "BLIS_ARCH_TYPE=" + std::to_string(id) + " was not honoured: the fresh copy runs arch " +
                 std::to_string(got) + " (" + lib.value()->arch_name(got) + ")";
  } else {
    copy.lib = std::move(lib).value();
  }
#endif
  return cache.emplace(key, std::move(copy)).first->second;
}

/// "" when sub-configuration `sc` (arch id `id`) of `base` can run here, else
/// why not. Probes (a child) once per process and library file
/// (blis_arch_probe keeps the answer).
std::string blis_arch_blocker(const BlasLibrary& base, int id, const BlisSubconfig& sc) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // No copy is made in these builds (blis_arch_copy), so none is probed either.
  (void)base;
  (void)id;
  (void)sc;
  return "sub-configuration impls are disabled in sanitizer builds (dlmopen namespaces are not supported by "
         "ASan/TSan)";
#else
  if (std::string missing = missing_cpu_features(sc); !missing.empty()) {
    return std::string("sub-configuration ") + sc.name + " needs " + missing +
           " (BLIS's own detection requires it, bli_cpuid_is_" + sc.name + "), which this CPU lacks";
  }
  if (auto probed = blis_arch_probe(base, id); !probed.ok()) {
    return "BLIS_ARCH_TYPE=" + std::to_string(id) + " (" + sc.name + ") in a probe child: " +
           probed.status().message();
  }
  return "";
#endif
}

class BlisArchImpl final : public Impl {
 public:
  BlisArchImpl(std::shared_ptr<const BlasLibrary> base, const Routine& routine, int id,
               const BlisSubconfig& sc)
      : base_(std::move(base)), run_(routine.run), id_(id), sc_(sc) {
    const BlasLibrarySpec& spec = base_->spec();
    decl_ = forced_variant_decl(spec, routine, "_arch_" + std::string(sc.name),
                                "; BLIS docs/ConfigurationHowTo.md (BLIS_ARCH_TYPE forces the sub-configuration of a "
                                "multi-configuration build, read once in frame/base/bli_arch.c)",
                                ", sub-configuration forced to " + std::string(sc.name) + " (BLIS_ARCH_TYPE=" +
                                    std::to_string(id) + ")");
    decl_.extra["blis_arch"] = sc.name;
    declare_gemm_rules(decl_);
    declare_level1_rules(decl_, spec.flavor);
  }

  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    KC_RETURN_IF_ERROR(Impl::can_implement(call));
    if (verdict_.load(std::memory_order_acquire) == kUnknown) {
      // kc's process, several case threads: one probes, the others wait.
      std::lock_guard<std::mutex> lock(mu_);
      if (verdict_.load(std::memory_order_relaxed) == kUnknown) {
        blocker_ = blis_arch_blocker(*base_, id_, sc_);
        verdict_.store(blocker_.empty() ? kRunnable : kBlocked, std::memory_order_release);
      }
    }
    if (verdict_.load(std::memory_order_acquire) == kBlocked) return unimplemented(decl_.name + ": " + blocker_);
    return ok_status();
  }

  Status run(Call& call) const override {
    // Settled before any copy is made: a copy of an id the CPU cannot run, or
    // the build does not carry, would kill this process. A worker is forked
    // after can_implement settled it, and must not take mu_: another thread
    // of kc may have held it at the fork.
    const int v = verdict_.load(std::memory_order_acquire);
    if (v == kBlocked) return unimplemented(decl_.name + ": " + blocker_);
    if (v == kUnknown) {
      if (std::string why = blis_arch_blocker(*base_, id_, sc_); !why.empty())
        return unimplemented(decl_.name + ": " + why);
    }
    const FreshCopy& copy = blis_arch_copy(*base_, id_);
    if (!copy.lib) return unimplemented(decl_.name + ": " + copy.error);
    return run_(*copy.lib, call);
  }

 private:
  std::shared_ptr<const BlasLibrary> base_;
  RunFn run_;
  int id_;
  const BlisSubconfig& sc_;
  Declaration decl_;
  static constexpr int kUnknown = 0, kRunnable = 1, kBlocked = 2;
  mutable std::mutex mu_;
  mutable std::atomic<int> verdict_{kUnknown};
  mutable std::string blocker_;  ///< written once, before verdict_ becomes kBlocked
};

class BlasBackend final : public Backend {
 public:
  explicit BlasBackend(BlasLibrarySpec spec) : spec_(std::move(spec)) {}

  std::string_view name() const override { return spec_.name; }

  BackendInfo probe() override {
    load();
    BackendInfo info;
    info.name = spec_.name;
    info.description = spec_.description;
    if (lib_) {
      info.available = true;
      info.version = lib_->version();
      info.reason = "loaded from " + lib_->path();
      if (has_core_types()) {
        std::string cores;
        for (const CoreType& ct : kOpenBlasCoreTypes) cores += (cores.empty() ? "" : ", ") + std::string(ct.label);
        info.reason += "; core-type impls (sgemm/sdot/sscal_core_<type>, each a fresh copy verified in the worker, "
                       "not applicable where the core does not read back): " + cores;
      }
      if (std::string why = arch_unrunnable(*lib_); !why.empty())
        info.reason += "; its impls are not applicable: " + why;
      if (auto archs = blis_archs(); !archs.empty()) {
        std::string runnable, not_runnable;
        for (const auto& [id, sc] : archs) {
          const std::string missing = missing_cpu_features(*sc);
          const std::string item = std::string(sc->name) + " " + std::to_string(id);
          if (missing.empty()) {
            runnable += (runnable.empty() ? "" : ", ") + item;
          } else {
            not_runnable += (not_runnable.empty() ? "" : ", ") + item + " (lacks " + missing + ")";
          }
        }
        info.reason += "; sub-configuration impls (sgemm/sdot_arch_<name>, each a fresh copy with "
                       "BLIS_ARCH_TYPE=<id>, probed in a child first): " + runnable;
        if (!not_runnable.empty()) info.reason += "; not applicable on this CPU: " + not_runnable;
      }
    } else {
      info.reason = error_;
    }
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    load();
    if (!lib_) return {};
    if (impls_.empty()) {
      for (const Routine& r : kRoutines) impls_.push_back(std::make_shared<BlasImpl>(lib_, r));
      // The complex routines (c and z), backends/blas/blas_complex.cpp.
      for (auto& impl : complex_blas_impls(lib_)) impls_.push_back(std::move(impl));
      if (lib_->has_thread_knob()) {
        for (int t : kPinnedThreads)
          impls_.push_back(std::make_shared<BlasImpl>(lib_, kRoutines[0], t));
      }
      // sgemm, sdot and sscal per core type, only for a DYNAMIC_ARCH OpenBLAS
      // (it exports openblas_get_corename and one gotoblas_<CORE> table per
      // set); sscal so the level-1 rule contracts see every kernel set.
      if (has_core_types()) {
        for (const CoreType& ct : kOpenBlasCoreTypes)
          for (const Routine* r : {&kRoutines[0], &kRoutines[1], &kRoutines[kSscalRow]})
            impls_.push_back(std::make_shared<CoreTypeImpl>(lib_, *r, ct));
      }
      // sgemm and sdot per sub-configuration of a BLIS built for the x86_64
      // family; whether each runs here is settled per impl (can_implement).
      for (const auto& [id, sc] : blis_archs())
        for (const Routine* r : {&kRoutines[0], &kRoutines[1]})
          impls_.push_back(std::make_shared<BlisArchImpl>(lib_, *r, id, *sc));
    }
    return impls_;
  }

 private:
  /// A BLIS's x86_64-family sub-configurations, with the arch ids this build
  /// gives them (read from the library: the ids differ between BLIS releases).
  std::vector<std::pair<int, const BlisSubconfig*>> blis_archs() const {
    std::vector<std::pair<int, const BlisSubconfig*>> out;
    if (!lib_ || spec_.flavor != BlasFlavor::kBlis) return out;
    for (const auto& [id, name] : lib_->arch_table())
      if (const BlisSubconfig* sc = find_blis_subconfig(name)) out.emplace_back(id, sc);
    return out;
  }

  bool has_core_types() const {
    return lib_ && spec_.flavor == BlasFlavor::kOpenBlas && lib_->symbol("openblas_get_corename") &&
           lib_->symbol("gotoblas_HASWELL");
  }

  void load() {
    if (loaded_) return;
    loaded_ = true;
    auto lib = BlasLibrary::open(spec_);
    if (lib.ok()) {
      lib_ = std::move(lib).value();
    } else {
      error_ = lib.status().message();
    }
  }

  BlasLibrarySpec spec_;
  bool loaded_ = false;
  std::shared_ptr<const BlasLibrary> lib_;
  std::string error_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

std::unique_ptr<Backend> make_openblas_backend() {
  return std::make_unique<BlasBackend>(openblas_spec());
}
std::unique_ptr<Backend> make_blis_backend() { return std::make_unique<BlasBackend>(blis_spec()); }

std::unique_ptr<Backend> make_blas_backend_at(const std::string& library, const std::string& label,
                                              const std::string& path) {
  BlasLibrarySpec spec;
  if (library == "openblas") spec = openblas_spec();
  else if (library == "blis") spec = blis_spec();
  else if (library == "refblas") spec = refblas_spec();
  else return nullptr;
  if (!label.empty()) {
    spec.name += "@" + label;
    spec.description += " (--library " + library + "@" + label + ")";
  }
  spec.candidates = {path};
  spec.env_var.clear();  // the path given on the command line is the one asked for
  return std::make_unique<BlasBackend>(std::move(spec));
}
std::unique_ptr<Backend> make_refblas_backend() {
  return std::make_unique<BlasBackend>(refblas_spec());
}

}  // namespace kc::backends
