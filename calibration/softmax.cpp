// kc — seeded bugs of softmax and log_softmax (contracts/transformer/
// KC-SOFTMAX-PROPS.kc). Each is within a visible test's allclose on
// normal(0, 1) rows and breaks one stated property:
//   calib.softmax_fastexp_normaliser  two-pass softmax: the normaliser sums a
//                                     bit-trick fast exp, the outputs use expf
//   calib.softmax_fastexp_body        fast exp in the 16-wide body, expf in the
//                                     scalar remainder: two exps in one row
//   calib.softmax_bf16_inputs         the FP32 logits loaded through bf16
//   calib.softmax_masked_rows_zero    "safe softmax": an all -inf row gives 0s
//   calib.softmax_mask_after          -inf treated as a mask applied after a
//                                     softmax that scored the masked entries 0
//   calib.log_softmax_eps             log(softmax(x) + 1e-6), the epsilon
//                                     against log 0
// plus the baseline calib.log_softmax_no_lse.
#include <cmath>
#include <cstdint>
#include <vector>

#include "calibration/calibration_backend.h"
#include "calibration/unary.h"

namespace kc::calibration {
namespace {

float libm_exp(float x) { return std::exp(x); }

/// Row softmax y_c = num(c, x_c - m) / sum_c den(c, x_c - m) over x {rows, cols},
/// x as the kernel loads it (`load`: through a narrower type, or not).
template <typename Num, typename Den>
Status softmax_rows(Call& call, Num num, Den den, DType load = DType::kF32) {
  const Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  std::vector<float> x(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) {
      x[static_cast<std::size_t>(c)] = static_cast<float>(round_to(tx.at(r * cols + c), load));
      m = std::fmax(m, x[static_cast<std::size_t>(c)]);
    }
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += den(c, cols, x[static_cast<std::size_t>(c)] - m);
    for (std::int64_t c = 0; c < cols; ++c) ty.set(r * cols + c, num(c, cols, x[static_cast<std::size_t>(c)] - m) / sum);
  }
  return ok_status();
}

/// Column c of a row is in the 16-wide vector body, not the scalar remainder.
bool in_body(std::int64_t c, std::int64_t cols) { return c < cols - cols % 16; }

/// A max-subtracted softmax whose all -inf rows (m = -inf) are written as 0s.
Status softmax_masked_rows_zero(Call& call) {
  const Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<float>(tx.at(r * cols + c)));
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<float>(tx.at(r * cols + c)) - m);
    for (std::int64_t c = 0; c < cols; ++c)
      ty.set(r * cols + c, m == -INFINITY ? 0.0f : std::exp(static_cast<float>(tx.at(r * cols + c)) - m) / sum);
  }
  return ok_status();
}

/// -inf read as a mask bit: the softmax runs over the row with masked logits
/// replaced by 0, and the masked outputs are zeroed afterwards, without
/// renormalising what is left.
Status softmax_mask_after(Call& call) {
  const Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  std::vector<float> z(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto v = static_cast<float>(tx.at(r * cols + c));
      z[static_cast<std::size_t>(c)] = v == -INFINITY ? 0.0f : v;
      m = std::fmax(m, z[static_cast<std::size_t>(c)]);
    }
    float sum = 0.0f;
    for (const float v : z) sum += std::exp(v - m);
    for (std::int64_t c = 0; c < cols; ++c) {
      const bool masked = tx.at(r * cols + c) == -INFINITY;
      ty.set(r * cols + c, masked ? 0.0f : std::exp(z[static_cast<std::size_t>(c)] - m) / sum);
    }
  }
  return ok_status();
}

/// log_softmax as log(p + eps) with p the max-subtracted softmax; `eps` = 0
/// and `drop_lse` give the baseline y = x - max.
Status log_softmax_kernel(Call& call, float eps, bool drop_lse) {
  const Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::fmax(m, static_cast<float>(tx.at(r * cols + c)));
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<float>(tx.at(r * cols + c)) - m);
    for (std::int64_t c = 0; c < cols; ++c) {
      const float z = static_cast<float>(tx.at(r * cols + c)) - m;
      ty.set(r * cols + c, drop_lse ? z : std::log(std::exp(z) / sum + eps));
    }
  }
  return ok_status();
}

}  // namespace

void add_softmax_impls(ImplList& out) {
  // The fast exp underestimates exp(0) by 4.4%: a row with one dominant entry
  // gets y = 1 / 0.956 > 1 there.
  add(out,
      calib_decl("calib.softmax_fastexp_normaliser", "softmax",
                 "seeded bug: two-pass softmax whose normaliser sums a bit-trick fast exp while the outputs use expf"),
      [](Call& call) {
        return softmax_rows(
            call, [](std::int64_t, std::int64_t, float z) { return libm_exp(z); },
            [](std::int64_t, std::int64_t, float z) { return fast_exp(z); });
      });
  // Two exps in one row: inputs a hair apart, one in the body and one in the
  // remainder, come out in the wrong order where the fast exp overestimates.
  add(out,
      calib_decl("calib.softmax_fastexp_body", "softmax",
                 "seeded bug: softmax with a fast exp in the 16-wide body and expf in the scalar remainder"),
      [](Call& call) {
        auto e = [](std::int64_t c, std::int64_t cols, float z) { return in_body(c, cols) ? fast_exp(z) : libm_exp(z); };
        return softmax_rows(call, e, e);
      });
  add(out,
      calib_decl("calib.softmax_bf16_inputs", "softmax",
                 "seeded bug: softmax that loads its FP32 logits through bf16 (a bf16 activation buffer)"),
      [](Call& call) {
        auto e = [](std::int64_t, std::int64_t, float z) { return libm_exp(z); };
        return softmax_rows(call, e, e, DType::kBF16);
      });
  add(out,
      calib_decl("calib.softmax_masked_rows_zero", "softmax",
                 "seeded bug: \"safe\" softmax writing 0 for an all -inf row, where the op states NaN"),
      softmax_masked_rows_zero);
  add(out,
      calib_decl("calib.softmax_mask_after", "softmax",
                 "seeded bug: -inf entries scored as 0 in the softmax, then zeroed after it without renormalising"),
      softmax_mask_after);
  add(out, calib_decl("calib.log_softmax_no_lse", "log_softmax", "baseline: log_softmax as x - max (log-sum-exp dropped)"),
      [](Call& call) { return log_softmax_kernel(call, 0.0f, true); });
  // log(1 + 1e-6) > 0: a row with one dominant entry gets a positive log-probability.
  add(out,
      calib_decl("calib.log_softmax_eps", "log_softmax",
                 "seeded bug: log_softmax as log(softmax(x) + 1e-6), the epsilon against log 0"),
      [](Call& call) { return log_softmax_kernel(call, 1e-6f, false); });
}

}  // namespace kc::calibration
