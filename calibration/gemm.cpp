#include "calibration/gemm.h"

#include <algorithm>
#include <vector>

#include "kc/dtype.h"

namespace kc::calibration {

Result<Gemm> gemm_of(Call& call) {
  if (call.get("trans_a", "N") != "N" || call.get("trans_b", "N") != "N")
    return unimplemented("calibration GEMMs take untransposed operands only");
  if (call.t("A").dtype() != DType::kF32) return unimplemented("calibration GEMMs are FP32 only");
  Gemm g;
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  g.a = a.data<float>();
  g.b = b.data<float>();
  g.c = c.data<float>();
  g.m = call.get_int("M", 64);
  g.n = call.get_int("N", 64);
  g.k = call.get_int("K", 64);
  g.lda = a.strides()[0];
  g.ldb = b.strides()[0];
  g.ldc = c.strides()[0];
  g.alpha = static_cast<float>(call.get_double("alpha", 1));
  g.beta = static_cast<float>(call.get_double("beta", 0));
  return g;
}

void plain_gemm_on(const Gemm& g) {
  std::vector<float> row(static_cast<std::size_t>(g.n));
  for (std::int64_t i = 0; i < g.m; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (std::int64_t p = 0; p < g.k; ++p) {
      const float a = g.a[i * g.lda + p];
      const float* b = g.b + p * g.ldb;
      for (std::int64_t j = 0; j < g.n; ++j) row[j] += a * b[j];
    }
    for (std::int64_t j = 0; j < g.n; ++j) store_c(g, i, j, row[j]);
  }
}

void rounded_inputs_gemm_on(const Gemm& g, DType inputs) {
  if (inputs == DType::kF32) {
    plain_gemm_on(g);
    return;
  }
  std::vector<float> a(static_cast<std::size_t>(g.m * g.k)), b(static_cast<std::size_t>(g.k * g.n));
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t p = 0; p < g.k; ++p) a[i * g.k + p] = static_cast<float>(round_to(g.a[i * g.lda + p], inputs));
  for (std::int64_t p = 0; p < g.k; ++p)
    for (std::int64_t j = 0; j < g.n; ++j) b[p * g.n + j] = static_cast<float>(round_to(g.b[p * g.ldb + j], inputs));
  Gemm rounded = g;
  rounded.a = a.data();
  rounded.b = b.data();
  rounded.lda = g.k;
  rounded.ldb = g.n;
  plain_gemm_on(rounded);
}

Status plain_gemm(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  plain_gemm_on(g);
  return ok_status();
}

}  // namespace kc::calibration
