// kc — calibration trio for the bf16 GEMM contract (KC-GEMM-BF16-01): bf16
// operands and result, the accumulator declared FP32.
//   baseline  multiplies by B transposed: wrong on any test;
//   bad       sums blocks of 64 products in FP32 and adds the block partials
//             in bf16 (8 significant bits): one block, so right, at the visible
//             test's K = 64; beyond FP32 accumulation plus one rounding to bf16
//             at K = 256;
//   good      one FP32 accumulator over K, rounded to bf16 once.
#include <algorithm>
#include <cstdint>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

enum class Bf16Gemm { kTransposedB, kBf16BlockPartials, kFp32 };

constexpr std::int64_t kBlock = 64;  // one block at the default K = 64: exact there

Status bf16_gemm(Call& call, Bf16Gemm variant) {
  if (call.get("trans_a", "N") != "N" || call.get("trans_b", "N") != "N")
    return unimplemented("calibration GEMMs take untransposed operands only");
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (a.dtype() != DType::kBF16) return unimplemented("this calibration GEMM is bf16 only");
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      auto a_at = [&](std::int64_t p) { return static_cast<float>(a.at(i * lda + p)); };
      auto b_at = [&](std::int64_t p) {
        return static_cast<float>(variant == Bf16Gemm::kTransposedB && p < n && j < k ? b.at(j * ldb + p)
                                                                                        : b.at(p * ldb + j));
      };
      float acc = 0;
      if (variant == Bf16Gemm::kBf16BlockPartials) {
        for (std::int64_t p0 = 0; p0 < k; p0 += kBlock) {
          float block = 0;
          for (std::int64_t p = p0; p < std::min(k, p0 + kBlock); ++p) block += a_at(p) * b_at(p);
          acc = static_cast<float>(round_to(acc + block, DType::kBF16));
        }
      } else {
        for (std::int64_t p = 0; p < k; ++p) acc += a_at(p) * b_at(p);
      }
      const std::int64_t at = i * ldc + j;
      const float out = beta == 0 ? alpha * acc : alpha * acc + beta * static_cast<float>(c.at(at));
      c.set(at, out);  // rounds to bf16 once
    }
  return ok_status();
}

Declaration bf16_decl(const char* name, const char* description) {
  Declaration d = calib_decl(name, "matmul", description);
  d.dtypes = {DType::kBF16};
  d.accumulator = DType::kF32;
  return d;
}

}  // namespace

void add_lowprec_impls(ImplList& out) {
  add(out, bf16_decl("calib.matmul_bf16_transposed_b", "KC-GEMM-BF16-01 baseline: bf16 GEMM that multiplies by B^T"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kTransposedB); });
  add(out,
      bf16_decl("calib.matmul_bf16_blockpartials",
                "KC-GEMM-BF16-01 bad: bf16 GEMM summing 64-product blocks in FP32 and the block partials in bf16; "
                "declares accumulator = FP32"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kBf16BlockPartials); });
  add(out,
      bf16_decl("calib.matmul_bf16_fp32acc",
                "KC-GEMM-BF16-01 good: bf16 GEMM with one FP32 accumulator over K, rounded to bf16 once"),
      [](Call& call) { return bf16_gemm(call, Bf16Gemm::kFp32); });
}

}  // namespace kc::calibration
