// kc — seeded bugs of the BLAS-level contracts (contracts/blas/,
// contracts/transformer/KC-MATMUL-PROPS.kc): GEMMs that break the reference
// BLAS alpha/beta rules or a transpose flag, an iamax that drops its tail, a
// sum over bf16-rounded inputs. Each is right at the op's default config, so a
// visible test passes it:
//   calib.matmul_beta_reads_c       C = alpha AB + beta C with C read at beta = 0 (0 * NaN = NaN)
//   calib.matmul_alpha_reads_ab     A B formed and scaled at alpha = 0 (0 * NaN = NaN)
//   calib.matmul_bt_bf16_pack       the trans_b = T path packs B^T through bf16
//   calib.matmul_bf16_epilogue      C stored through bf16
//   calib.iamax_tile16              16-wide iamax without the remainder loop
//   calib.sum_bf16_inputs           FP32 sum of inputs rounded to bf16
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibration_backend.h"
#include "calibration/gemm.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- GEMM

/// The honest FP32 product with the textbook store c = alpha acc + beta c,
/// which reads C even when beta == 0 (reference BLAS does not: sgemm.f).
Status beta_reads_c(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  // C scaled by beta in place, then the store adds alpha acc to it (beta 1):
  // the incoming C is read whatever beta is.
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) g.c[i * g.ldc + j] *= g.beta;
  g.beta = 1;
  plain_gemm_on(g);
  return ok_status();
}

/// What a packed GEMM does differently from the reference rules.
enum class PackDefect {
  // The trans_b = T path packs B^T through bf16 (a packing routine shared
  // with a bf16 kernel), so that path alone rounds B; N N, the default, is
  // exact FP32.
  kBtBf16,
  // The epilogue stores C through bf16 (a mixed-precision epilogue): each
  // output rounded to 8 significant bits, 0.2% of |C|, within an allclose at
  // 1e-2 but far beyond FP32 accumulation, and not linear in B.
  kBf16Epilogue,
};

/// C = alpha op(A) op(B) + beta C under the reference BLAS rules, every
/// transpose honoured, but for `defect`.
Status gemm_packed(Call& call, PackDefect defect) {
  const bool pack_bt_bf16 = defect == PackDefect::kBtBf16;
  const Tensor& ta = call.t("A");
  const Tensor& tb = call.t("B");
  Tensor& tc = call.t("C");
  if (ta.dtype() != DType::kF32) return unimplemented("calibration GEMMs are FP32 only");
  const bool tra = call.get("trans_a", "N") == "T", trb = call.get("trans_b", "N") == "T";
  const std::int64_t m = tc.dim(0), n = tc.dim(1), k = tra ? ta.dim(0) : ta.dim(1);
  const std::int64_t lda = ta.strides()[0], ldb = tb.strides()[0], ldc = tc.strides()[0];
  const float* a = ta.data<float>();
  const float* b = tb.data<float>();
  float* c = tc.data<float>();
  // op(B) packed K x N, row-major.
  std::vector<float> bp(static_cast<std::size_t>(k * n));
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j) {
      const float v = trb ? b[j * ldb + p] : b[p * ldb + j];
      bp[static_cast<std::size_t>(p * n + j)] = trb && pack_bt_bf16 ? static_cast<float>(round_to(v, DType::kBF16)) : v;
    }
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      if (alpha != 0)
        for (std::int64_t p = 0; p < k; ++p) acc += (tra ? a[p * lda + i] : a[i * lda + p]) * bp[static_cast<std::size_t>(p * n + j)];
      float& cij = c[i * ldc + j];
      cij = beta == 0 ? alpha * acc : alpha * acc + beta * cij;
      if (defect == PackDefect::kBf16Epilogue) cij = static_cast<float>(round_to(cij, DType::kBF16));
    }
  return ok_status();
}

// ---------------------------------------------------------------- iamax

/// isamax over 16-wide tiles: the lane-parallel loop covers the full tiles and
/// the scalar loop for the last n mod 16 elements is missing. `signed_max`
/// compares x, not |x| (the baseline).
Status iamax_kernel(Call& call, bool drop_tail, bool signed_max) {
  const Tensor& tx = call.t("x");
  const float* x = tx.data<float>();
  const std::int64_t n = tx.dim(0), inc = tx.strides()[0];
  const std::int64_t end = drop_tail ? n - n % 16 : n;
  std::int64_t best = n > 0 ? 0 : -1;
  auto key = [signed_max](float v) { return signed_max ? v : std::fabs(v); };
  float dmax = n > 0 ? key(x[0]) : 0.0f;
  for (std::int64_t i = 1; i < end; ++i)
    if (key(x[i * inc]) > dmax) {
      best = i;
      dmax = key(x[i * inc]);
    }
  call.t("out").data<std::int64_t>()[0] = best;
  return ok_status();
}

// ---------------------------------------------------------------- reductions

/// An FP32 sum of the inputs rounded to bf16: a kernel that loads its FP32
/// operand through a bf16 buffer (a "mixed precision" reduction).
Status sum_bf16_inputs(Call& call) {
  const Tensor& x = call.t("x");
  if (x.dtype() != DType::kF32) return unimplemented("calibration sums are FP32 only");
  float acc = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) acc += static_cast<float>(round_to(x.at(i), DType::kBF16));
  call.t("out").set(0, acc);
  return ok_status();
}

}  // namespace

void add_blas_impls(ImplList& out) {
  // Both declare the reference BLAS rule they break (KC-GEMM-02/03 apply to
  // impls that declare it): a GEMM sold as a drop-in sgemm promises that rule
  // to every caller that leaves C (or A, B) unset.
  Declaration beta_decl =
      calib_decl("calib.matmul_beta_reads_c", "matmul",
                 "seeded bug: GEMM declaring the BLAS rule beta = 0 -> C not read, yet storing alpha AB + beta C "
                 "with C read (0 * NaN = NaN)");
  beta_decl.extra["beta_zero"] = "C_NOT_READ";
  add(out, std::move(beta_decl), beta_reads_c);
  Declaration alpha_decl =
      calib_decl("calib.matmul_alpha_reads_ab", "matmul",
                 "seeded bug: GEMM declaring the BLAS rule alpha = 0 -> A, B not read, yet forming A B and scaling "
                 "by alpha (0 * NaN = NaN)");
  alpha_decl.extra["alpha_zero"] = "AB_NOT_READ";
  add(out, std::move(alpha_decl), plain_gemm);
  add(out,
      calib_decl("calib.matmul_bt_bf16_pack", "matmul",
                 "seeded bug: GEMM whose trans_b = T path packs B^T through bf16 (the other paths are FP32)"),
      [](Call& call) { return gemm_packed(call, PackDefect::kBtBf16); });
  add(out,
      calib_decl("calib.matmul_bf16_epilogue", "matmul",
                 "seeded bug: FP32 GEMM whose epilogue stores C through bf16 (0.2% of |C|, not linear in B)"),
      [](Call& call) { return gemm_packed(call, PackDefect::kBf16Epilogue); });
  add(out, calib_decl("calib.iamax_signed", "iamax", "baseline: iamax comparing x instead of |x| (the fabs forgotten)"),
      [](Call& call) { return iamax_kernel(call, false, true); });
  add(out,
      calib_decl("calib.iamax_tile16", "iamax",
                 "seeded bug: 16-wide iamax without the remainder loop: the last n mod 16 elements are never compared"),
      [](Call& call) { return iamax_kernel(call, true, false); });
  add(out,
      calib_decl("calib.sum_bf16_inputs", "sum",
                 "seeded bug: FP32 sum of the inputs rounded to bf16 (the operand loaded through a bf16 buffer)"),
      sum_bf16_inputs);
}

}  // namespace kc::calibration
