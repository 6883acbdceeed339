// kc — calibration kernels for the GEMM arithmetic contracts
// (contracts/lowprec/KC-GEMM-NUMERICS-01.kc), each a GEMM whose arithmetic is
// known bit for bit:
//   FP32, declared FP32 inputs and accumulator:
//     baseline  multiplies by B transposed: wrong on any test;
//     bad       exact products, every addition rounded toward zero to FP32
//               (a truncating accumulator): within 1e-2 anywhere, beyond the
//               round-to-nearest bound on the drift rows of a long sum;
//     bad'      A and B rounded to tf32 (10 fraction bits) before an FP32
//               fused multiply-add chain (a tensor-core "TF32 mode");
//     good      an FP32 fused multiply-add chain over K, round to nearest;
//   bf16, declared FP32 accumulator (good and baseline: lowprec.cpp's):
//     bad       each product rounded to 11 significant bits (a tf32-wide
//               multiplier output) before the FP32 sum: bf16 products have 16.
#include <cmath>
#include <cstdint>
#include <limits>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

enum class Numerics { kTransposedB, kTruncatingAcc, kTf32Inputs, kFp32Fma, kBf16RoundedProducts };

/// a + b rounded toward zero to FP32, from the exact sum: s = fl64(a + b)
/// plus its rounding error e (two-sum), so the exact value is s + e.
float add_toward_zero(float a, double b) {
  const double s = static_cast<double>(a) + b;
  const double bb = s - a, e = (a - (s - bb)) + (b - bb);
  float f = static_cast<float>(s);  // to nearest: one step too far at most
  if (std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.0f);
  // s itself an FP32 value, the exact sum just inside it: one step toward zero.
  if (static_cast<double>(f) == s && e != 0 && (e > 0) != (s > 0)) f = std::nextafter(f, 0.0f);
  return f;
}

Status numerics_gemm(Call& call, Numerics variant) {
  if (call.get("trans_a", "N") != "N" || call.get("trans_b", "N") != "N")
    return unimplemented("calibration GEMMs take untransposed operands only");
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  const bool bf16 = variant == Numerics::kBf16RoundedProducts;
  if (a.dtype() != (bf16 ? DType::kBF16 : DType::kF32))
    return unimplemented(bf16 ? "this calibration GEMM is bf16 only" : "this calibration GEMM is FP32 only");
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  auto in = [&](double v) {
    return static_cast<float>(variant == Numerics::kTf32Inputs ? round_to(v, DType::kTF32) : v);
  };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const float x = in(a.load(i * lda + p));
        const float y = in(variant == Numerics::kTransposedB && p < n && j < k ? b.load(j * ldb + p)
                                                                                 : b.load(p * ldb + j));
        switch (variant) {
          case Numerics::kTruncatingAcc:
            acc = add_toward_zero(acc, static_cast<double>(x) * y);  // the product is exact in double
            break;
          case Numerics::kBf16RoundedProducts:
            acc += static_cast<float>(round_to(static_cast<double>(x) * y, DType::kTF32));
            break;
          default: acc = std::fma(x, y, acc); break;
        }
      }
      const std::int64_t at = i * ldc + j;
      c.store(at, beta == 0 ? alpha * acc : alpha * acc + beta * static_cast<float>(c.load(at)));
    }
  return ok_status();
}

}  // namespace

void add_gemm_numerics_impls(ImplList& out) {
  struct Entry {
    const char* name;
    Numerics variant;
    const char* description;
  };
  static const Entry kEntries[] = {
      {"calib.matmul_numerics_transposed_b", Numerics::kTransposedB,
       "KC-GEMM-NUMERICS-01 baseline: FP32 GEMM that multiplies by B^T"},
      {"calib.matmul_truncating_acc", Numerics::kTruncatingAcc,
       "KC-GEMM-NUMERICS-01 bad: FP32 GEMM with exact products and every addition rounded toward zero to FP32; "
       "declares accumulator = FP32"},
      {"calib.matmul_tf32_inputs", Numerics::kTf32Inputs,
       "FP32 GEMM rounding A and B to tf32 before an FP32 fused multiply-add chain; declares FP32 inputs and "
       "accumulator"},
      {"calib.matmul_fp32_fma", Numerics::kFp32Fma,
       "KC-GEMM-NUMERICS-01 good: FP32 GEMM, one fused multiply-add chain over K, round to nearest"},
      {"calib.matmul_bf16_rounded_products", Numerics::kBf16RoundedProducts,
       "KC-GEMM-NUMERICS-02 bad: bf16 GEMM rounding each product to 11 significant bits (tf32) before its FP32 "
       "sum; declares accumulator = FP32"},
  };
  for (const Entry& e : kEntries) {
    Declaration d = calib_decl(e.name, "matmul", e.description);
    if (e.variant == Numerics::kBf16RoundedProducts) d.dtypes = {DType::kBF16};
    add(out, std::move(d), [variant = e.variant](Call& call) { return numerics_gemm(call, variant); });
  }
}

}  // namespace kc::calibration
