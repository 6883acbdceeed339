// kc — shared plumbing of the calibration GEMMs: the matmul call's operands as
// raw FP32 pointers with leading dimensions, and the BLAS store rule.
#pragma once

#include <cstdint>

#include "kc/op.h"
#include "kc/status.h"

namespace kc::calibration {

/// Row-major matmul operands (trans = N only) with their leading dimensions.
struct Gemm {
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  float alpha = 1, beta = 0;
};

/// The operands of a matmul call; kUnimplemented for transposes or non-FP32.
Result<Gemm> gemm_of(Call& call);

/// C_ij = alpha * acc + beta * C_ij, with C not read when beta == 0 (reference BLAS).
inline void store_c(const Gemm& g, std::int64_t i, std::int64_t j, float acc) {
  float& c = g.c[i * g.ldc + j];
  c = g.beta == 0 ? g.alpha * acc : g.alpha * acc + g.beta * c;
}

/// An honest GEMM: FP32 accumulation along K in order, i-k-j loops (row of C
/// accumulated in place, so the inner loop streams B and C).
void plain_gemm_on(const Gemm& g);
/// plain_gemm_on with A and B first rounded to `inputs` (kc/dtype.h round_to):
/// exact products of the rounded values summed in FP32, what a TF32, bf16 or
/// fp16 input path does; FP32 is plain_gemm_on itself.
void rounded_inputs_gemm_on(const Gemm& g, DType inputs);
/// plain_gemm on a matmul call's operands.
Status plain_gemm(Call& call);

}  // namespace kc::calibration
