// kc — the trio of KC-GEMV-01 (contracts/blas/KC-GEMV-01.kc), FP32 and FP64:
//   calib.gemv_loop        y_i = alpha sum_k op(A)_ik x_k + beta y_i, one loop per y_i in the working precision
//   calib.gemv_fp16_x      the same with A, x and y rounded to fp16 first (operands loaded through fp16)
//   calib.gemv_beta_only   baseline: the product forgotten, y = beta y
//   calib.gemv_beta_reads_y y = alpha op(A) x + beta y with y read at beta = 0 too (0 * NaN = NaN)
// All declare the BLAS rule beta_zero = C_NOT_READ (y not read at beta = 0).
#include <cmath>
#include <cstdint>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

enum class GemvDefect { kNone, kFp16X, kBetaOnly, kBetaReadsY };

template <typename T>
Status gemv_typed(Call& call, GemvDefect defect) {
  const Tensor& ta = call.t("A");
  const Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const bool trans = call.get("trans", "N") == "T";
  const std::int64_t lda = ta.strides()[0];
  std::int64_t inner = tx.dim(0);
  if (defect == GemvDefect::kBetaOnly) inner = 0;
  const std::int64_t rows = ty.dim(0);
  const std::int64_t incx = tx.strides()[0], incy = ty.strides()[0];
  const T* a = ta.data<T>();
  const T* x = tx.data<T>();
  T* y = ty.data<T>();
  const T alpha = static_cast<T>(call.get_double("alpha", 1));
  const T beta = static_cast<T>(call.get_double("beta", 0));
  for (std::int64_t i = 0; i < rows; ++i) {
    T acc = 0;
    for (std::int64_t k = 0; k < inner; ++k) {
      T xk = x[k * incx], aik = trans ? a[k * lda + i] : a[i * lda + k];
      if (defect == GemvDefect::kFp16X) {
        xk = static_cast<T>(round_to(xk, DType::kF16));
        aik = static_cast<T>(round_to(aik, DType::kF16));
      }
      acc += aik * xk;
    }
    // beta = 0: y is overwritten, never read (the BLAS rule).
    const bool read_y = beta != 0 || defect == GemvDefect::kBetaReadsY;
    T yi = read_y ? y[i * incy] : T(0);
    if (defect == GemvDefect::kFp16X) yi = static_cast<T>(round_to(yi, DType::kF16));
    y[i * incy] = read_y ? alpha * acc + beta * yi : alpha * acc;
  }
  return ok_status();
}

Status gemv_kernel(Call& call, GemvDefect defect) {
  switch (call.t("A").dtype()) {
    case DType::kF32:
      return gemv_typed<float>(call, defect);
    case DType::kF64:
      return gemv_typed<double>(call, defect);
    default:
      return unimplemented("calibration gemv takes FP32 or FP64");
  }
}

}  // namespace

void add_gemv_impls(ImplList& out) {
  auto gemv = [&](const char* name, GemvDefect defect, const char* what) {
    Declaration d = calib_decl(name, "gemv", what);
    d.dtypes = {DType::kF32, DType::kF64};
    d.accumulator.reset();  // the working precision: FP32 or FP64 with the call
    d.extra["beta_zero"] = "C_NOT_READ";
    add(out, std::move(d), [defect](Call& call) { return gemv_kernel(call, defect); });
  };
  gemv("calib.gemv_loop", GemvDefect::kNone,
       "y = alpha op(A) x + beta y, one dot product per y_i in the working precision (beta = 0: y not read)");
  gemv("calib.gemv_fp16_x", GemvDefect::kFp16X,
       "seeded bug: gemv with A, x and y rounded to fp16 first (operands loaded through fp16): 2^-11 of each "
       "term, within a 1e-2 allclose, far beyond FP32 accumulation");
  gemv("calib.gemv_beta_only", GemvDefect::kBetaOnly, "baseline: gemv that forgets the product: y = beta y");
  gemv("calib.gemv_beta_reads_y", GemvDefect::kBetaReadsY,
       "seeded bug: gemv declaring the BLAS rule beta = 0 -> y not read, yet storing alpha op(A) x + beta y with y "
       "read (0 * NaN = NaN)");
}

}  // namespace kc::calibration
