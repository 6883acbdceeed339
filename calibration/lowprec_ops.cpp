// kc — calibration trios of the low-precision op contracts (contracts/lowprec/
// KC-GEMM-LP.kc, KC-SOFTMAX-LP.kc, KC-NORM-LP.kc, KC-ELEM-LP.kc, KC-RED-LP.kc).
// Every kernel stores its result in the call's storage format (FP16, BF16 or
// FP8) and, unless it says otherwise, declares an FP32 accumulator; the bad
// ones carry one low-precision bug each, small enough to pass the visible
// test (allclose 1e-2 at the op's default config, in the first declared
// format, FP16 here):
//   GEMM (FP16, FP8 E4M3, FP8 E5M2)
//     baseline  multiplies by B transposed;
//     bad       FP32 sums over blocks of 64 products, the block partials
//               rounded to the storage format: one block, so right, at the
//               visible test's K = 64;
//     good      one FP32 accumulator over K, one rounding of C.
//   GEMM declaring an FP16 accumulator
//     baseline  multiplies by B transposed;
//     bad       the K > 64 path keeps its running sum in bf16 (the half /
//               bfloat16 type mixed up in one kernel); K <= 64 is the good
//               kernel's compensated FP16 sum;
//     good      compensated (Kahan) summation in FP16 registers: an
//               uncompensated FP16 sum is about 1e-2 off at K = 64 and
//               fails the visible test, however honest.
//   softmax     baseline exp(x - max) without the division; bad sums the
//               exponentials in the storage format; good FP32 throughout.
//   layernorm   baseline ignores gamma and beta; bad sums the squared
//               deviations in the storage format (the variance in fp16 /
//               bf16); good FP32 two-pass statistics.
//   rmsnorm     baseline ignores gamma; bad sums the squares in the storage
//               format; good FP32.
//   gelu_erf    baseline drops the 0.5; bad evaluates erf, 1 + erf and the
//               products in the storage format (an autocast region without
//               an FP32 island); good evaluates in FP64 and rounds once.
//   sum, mean   baseline drops the last element (sum) or the 1/n (mean); bad
//               sums blocks of 64 in FP32 and the block partials in the
//               storage format; good one FP32 running sum.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

constexpr std::int64_t kBlock = 64;  // one block at the default K, n and cols: exact there

float to_storage(float v, DType storage) { return static_cast<float>(round_to(v, storage)); }

// ---- GEMM in FP16 / FP8 with a declared FP32 accumulator, and in FP16 with
// a declared FP16 accumulator.

enum class LpGemm { kTransposedB, kStorageBlockPartials, kFp32, kFp16Acc, kFp16AccLongKBf16 };

Status lp_gemm(Call& call, LpGemm variant) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  const DType storage = a.dtype();
  const bool ta = call.get("trans_a", "N") == "T", tb = call.get("trans_b", "N") == "T";
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  auto a_at = [&](std::int64_t i, std::int64_t p) {
    return static_cast<float>(ta ? a.load(p * lda + i) : a.load(i * lda + p));
  };
  auto b_at = [&](std::int64_t p, std::int64_t j) {
    if (variant == LpGemm::kTransposedB && p < n && j < k)  // the defect: B^T where it fits
      return static_cast<float>(tb ? b.load(p * ldb + j) : b.load(j * ldb + p));
    return static_cast<float>(tb ? b.load(j * ldb + p) : b.load(p * ldb + j));
  };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      if (variant == LpGemm::kStorageBlockPartials) {
        for (std::int64_t p0 = 0; p0 < k; p0 += kBlock) {
          float block = 0;
          for (std::int64_t p = p0; p < std::min(k, p0 + kBlock); ++p) block += a_at(i, p) * b_at(p, j);
          acc = to_storage(acc + block, storage);
        }
      } else if (variant == LpGemm::kFp16Acc || (variant == LpGemm::kFp16AccLongKBf16 && k <= kBlock)) {
        // Compensated (Kahan) summation with FP16 registers for the sum and
        // its correction; each product of two FP16 values is exact in FP32.
        // An uncompensated FP16 sum of 64 normal(0, 1) products is about 1e-2
        // off near zero results (measured: allclose ratio 2.3 sequential, 1.1
        // pairwise), so it could not pass the visible test; this kernel is
        // honest to its FP16 declaration and within FP16's bound.
        float comp = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const float y = to_storage(a_at(i, p) * b_at(p, j) - comp, DType::kF16);
          const float t = to_storage(acc + y, DType::kF16);
          comp = to_storage(to_storage(t - acc, DType::kF16) - y, DType::kF16);
          acc = t;
        }
      } else if (variant == LpGemm::kFp16AccLongKBf16) {
        // The long-K path's running sum is a bf16 register.
        for (std::int64_t p = 0; p < k; ++p)
          acc = to_storage(acc + to_storage(a_at(i, p) * b_at(p, j), DType::kF16), DType::kBF16);
      } else {
        for (std::int64_t p = 0; p < k; ++p) acc += a_at(i, p) * b_at(p, j);
      }
      const std::int64_t at = i * ldc + j;
      float out = alpha * acc;
      if (beta != 0) out += beta * static_cast<float>(c.load(at));
      c.store(at, out);  // one rounding into the storage format
    }
  return ok_status();
}

Declaration lp_gemm_decl(const char* name, const char* description, bool fp16_acc) {
  Declaration d = calib_decl(name, "matmul", description);
  // FP16 first: the visible test's format (an FP8 result is 2^-4 off, beyond its 1e-2).
  d.dtypes = fp16_acc ? std::vector<DType>{DType::kF16} : std::vector<DType>{DType::kF16, DType::kFP8E4M3, DType::kFP8E5M2};
  d.accumulator = fp16_acc ? DType::kF16 : DType::kF32;
  return d;
}

// ---- row ops: softmax, layernorm, rmsnorm (rows x cols, last axis).

enum class LpRow { kBaseline, kStorageSum, kFp32 };

Status lp_softmax(Call& call, LpRow variant) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const DType storage = x.dtype();
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<float> e(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<float>(x.at(r * cols + c)));
    float s = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      e[static_cast<std::size_t>(c)] = std::exp(static_cast<float>(x.at(r * cols + c)) - m);
      s += e[static_cast<std::size_t>(c)];
      if (variant == LpRow::kStorageSum) s = to_storage(s, storage);  // the defect
    }
    for (std::int64_t c = 0; c < cols; ++c)
      y.set(r * cols + c, variant == LpRow::kBaseline ? e[static_cast<std::size_t>(c)] : e[static_cast<std::size_t>(c)] / s);
  }
  return ok_status();
}

Status lp_norm(Call& call, LpRow variant, bool layernorm) {
  const Tensor& x = call.t("x");
  const Tensor& g = call.t("gamma");
  Tensor& y = call.t("y");
  const DType storage = x.dtype();
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  for (std::int64_t r = 0; r < rows; ++r) {
    auto xv = [&](std::int64_t c) { return static_cast<float>(x.at(r * cols + c)); };
    float mu = 0;
    if (layernorm) {
      for (std::int64_t c = 0; c < cols; ++c) mu += xv(c);
      mu /= static_cast<float>(cols);
    }
    float ss = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float d = xv(c) - mu;
      ss += d * d;
      if (variant == LpRow::kStorageSum) ss = to_storage(ss, storage);  // the defect
    }
    const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) {
      float v = (xv(c) - mu) * rstd;
      if (variant != LpRow::kBaseline) {
        v *= static_cast<float>(g.at(c));
        if (layernorm) v += static_cast<float>(call.t("beta").at(c));
      }
      y.set(r * cols + c, v);
    }
  }
  return ok_status();
}

// ---- gelu_erf

enum class LpGelu { kNoHalf, kStorage, kFp64 };

Status lp_gelu(Call& call, LpGelu variant) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const DType s = x.dtype();
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.at(i);
    double out = 0;
    switch (variant) {
      case LpGelu::kNoHalf: out = v * std::erfc(-v / std::sqrt(2.0)); break;
      case LpGelu::kFp64: out = 0.5 * v * std::erfc(-v / std::sqrt(2.0)); break;
      case LpGelu::kStorage: {
        // Every intermediate held in the storage format.
        const double t = round_to(v * round_to(0.70710678118654752, s), s);
        const double one_plus = round_to(1.0 + round_to(std::erf(t), s), s);
        out = round_to(round_to(0.5 * v, s) * one_plus, s);
        break;
      }
    }
    y.set(i, out);  // one rounding into the storage format
  }
  return ok_status();
}

// ---- sum and mean

enum class LpSum { kBaseline, kStorageBlockPartials, kFp32 };

/// Sum of xs[0..n) as the variant computes it.
float lp_sum_of(const std::vector<double>& xs, std::int64_t n, LpSum variant, DType storage) {
  float acc = 0;
  if (variant == LpSum::kStorageBlockPartials) {
    for (std::int64_t p0 = 0; p0 < n; p0 += kBlock) {
      float block = 0;
      for (std::int64_t p = p0; p < std::min(n, p0 + kBlock); ++p) block += static_cast<float>(xs[static_cast<std::size_t>(p)]);
      acc = to_storage(acc + block, storage);
    }
    return acc;
  }
  for (std::int64_t p = 0; p < n; ++p) acc += static_cast<float>(xs[static_cast<std::size_t>(p)]);
  return acc;
}

Status lp_sum(Call& call, LpSum variant) {
  const Tensor& x = call.t("x");
  const std::vector<double> xs = x.to_doubles();
  const auto n = static_cast<std::int64_t>(xs.size());
  // The baseline's defect: the last element is never added.
  call.t("out").set(0, lp_sum_of(xs, variant == LpSum::kBaseline ? n - 1 : n, variant, x.dtype()));
  return ok_status();
}

Status lp_mean(Call& call, LpSum variant) {
  const Tensor& x = call.t("x");
  Tensor& out = call.t("out");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  const std::vector<double> xs = x.to_doubles();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<double> row(xs.begin() + r * cols, xs.begin() + (r + 1) * cols);
    const float s = lp_sum_of(row, cols, variant, x.dtype());
    // The baseline's defect: the sum, not the mean.
    out.set(r, variant == LpSum::kBaseline ? s : s / static_cast<float>(cols));
  }
  return ok_status();
}

Declaration lp_decl(const char* name, const char* op, const char* description) {
  Declaration d = calib_decl(name, op, description);
  d.dtypes = {DType::kF16, DType::kBF16};  // FP16 first: the visible test's format
  d.accumulator = DType::kF32;
  return d;
}

}  // namespace

void add_lowprec_op_impls(ImplList& out) {
  struct GemmEntry {
    const char* name;
    LpGemm variant;
    const char* description;
  };
  static const GemmEntry kGemm[] = {
      {"calib.matmul_lp_transposed_b", LpGemm::kTransposedB,
       "KC-GEMM-LP-01 baseline: FP16/FP8 GEMM that multiplies by B^T"},
      {"calib.matmul_lp_blockpartials", LpGemm::kStorageBlockPartials,
       "KC-GEMM-LP-01 bad: FP16/FP8 GEMM summing 64-product blocks in FP32 and the block partials in the storage "
       "format; declares accumulator = FP32"},
      {"calib.matmul_lp_fp32acc", LpGemm::kFp32,
       "KC-GEMM-LP-01 good: FP16/FP8 GEMM with one FP32 accumulator over K, rounded to the storage format once"},
      {"calib.matmul_fp16acc_transposed_b", LpGemm::kTransposedB,
       "KC-GEMM-FP16ACC-01 baseline: FP16 GEMM declaring an FP16 accumulator that multiplies by B^T"},
      {"calib.matmul_fp16acc_longk_bf16", LpGemm::kFp16AccLongKBf16,
       "KC-GEMM-FP16ACC-01 bad: FP16 GEMM declaring an FP16 accumulator whose K > 64 path keeps the running sum in "
       "bf16 (K <= 64, the visible test's, a compensated FP16 sum)"},
      {"calib.matmul_fp16acc", LpGemm::kFp16Acc,
       "KC-GEMM-FP16ACC-01 good: FP16 GEMM with a compensated (Kahan) sum in FP16 registers, as it declares"},
  };
  for (const GemmEntry& e : kGemm) {
    const bool fp16_acc = std::string_view(e.name).find("fp16acc") != std::string_view::npos;
    add(out, lp_gemm_decl(e.name, e.description, fp16_acc),
        [variant = e.variant](Call& call) { return lp_gemm(call, variant); });
  }

  add(out, lp_decl("calib.softmax_lp_unnormalized", "softmax", "KC-SOFTMAX-LP-01 baseline: fp16/bf16 exp(x - max) without the division by the sum"),
      [](Call& call) { return lp_softmax(call, LpRow::kBaseline); });
  add(out,
      lp_decl("calib.softmax_lp_storage_sum", "softmax",
              "KC-SOFTMAX-LP-01 bad: fp16/bf16 softmax summing its exponentials in the storage format; declares "
              "accumulator = FP32"),
      [](Call& call) { return lp_softmax(call, LpRow::kStorageSum); });
  add(out, lp_decl("calib.softmax_lp_fp32", "softmax", "KC-SOFTMAX-LP-01 good: fp16/bf16 softmax computed in FP32, rounded once"),
      [](Call& call) { return lp_softmax(call, LpRow::kFp32); });

  add(out, lp_decl("calib.layernorm_lp_no_affine", "layernorm", "KC-NORM-LP-01 baseline: fp16/bf16 layernorm ignoring gamma and beta"),
      [](Call& call) { return lp_norm(call, LpRow::kBaseline, true); });
  add(out,
      lp_decl("calib.layernorm_lp_storage_var", "layernorm",
              "KC-NORM-LP-01 bad: fp16/bf16 layernorm summing the squared deviations in the storage format (the "
              "variance in fp16/bf16); declares accumulator = FP32"),
      [](Call& call) { return lp_norm(call, LpRow::kStorageSum, true); });
  add(out, lp_decl("calib.layernorm_lp_fp32", "layernorm", "KC-NORM-LP-01 good: fp16/bf16 layernorm with FP32 two-pass statistics, rounded once"),
      [](Call& call) { return lp_norm(call, LpRow::kFp32, true); });

  add(out, lp_decl("calib.rmsnorm_lp_no_gamma", "rmsnorm", "KC-NORM-LP-02 baseline: fp16/bf16 rmsnorm ignoring gamma"),
      [](Call& call) { return lp_norm(call, LpRow::kBaseline, false); });
  add(out,
      lp_decl("calib.rmsnorm_lp_storage_ms", "rmsnorm",
              "KC-NORM-LP-02 bad: fp16/bf16 rmsnorm summing the squares in the storage format; declares accumulator "
              "= FP32"),
      [](Call& call) { return lp_norm(call, LpRow::kStorageSum, false); });
  add(out, lp_decl("calib.rmsnorm_lp_fp32", "rmsnorm", "KC-NORM-LP-02 good: fp16/bf16 rmsnorm with an FP32 mean square, rounded once"),
      [](Call& call) { return lp_norm(call, LpRow::kFp32, false); });

  add(out, lp_decl("calib.gelu_erf_lp_no_half", "gelu_erf", "KC-ELEM-LP-01 baseline: fp16/bf16 gelu_erf without the 0.5, x (1 + erf(x / sqrt 2))"),
      [](Call& call) { return lp_gelu(call, LpGelu::kNoHalf); });
  add(out,
      lp_decl("calib.gelu_erf_lp_storage", "gelu_erf",
              "KC-ELEM-LP-01 bad: fp16/bf16 gelu_erf with erf, 1 + erf and the products held in the storage format"),
      [](Call& call) { return lp_gelu(call, LpGelu::kStorage); });
  add(out, lp_decl("calib.gelu_erf_lp_fp64", "gelu_erf", "KC-ELEM-LP-01 good: fp16/bf16 gelu_erf evaluated in FP64 (erfc form), rounded once"),
      [](Call& call) { return lp_gelu(call, LpGelu::kFp64); });

  add(out, lp_decl("calib.sum_lp_drop_last", "sum", "KC-RED-LP-01 baseline: fp16/bf16 sum that never adds the last element"),
      [](Call& call) { return lp_sum(call, LpSum::kBaseline); });
  add(out,
      lp_decl("calib.sum_lp_blockpartials", "sum",
              "KC-RED-LP-01 bad: fp16/bf16 sum of 64-element FP32 blocks whose partials are added in the storage "
              "format; declares accumulator = FP32"),
      [](Call& call) { return lp_sum(call, LpSum::kStorageBlockPartials); });
  add(out, lp_decl("calib.sum_lp_fp32", "sum", "KC-RED-LP-01 good: fp16/bf16 sum with one FP32 running sum, rounded once"),
      [](Call& call) { return lp_sum(call, LpSum::kFp32); });

  add(out, lp_decl("calib.mean_lp_no_divide", "mean", "KC-RED-LP-02 baseline: fp16/bf16 row mean that returns the row sum"),
      [](Call& call) { return lp_mean(call, LpSum::kBaseline); });
  add(out,
      lp_decl("calib.mean_lp_blockpartials", "mean",
              "KC-RED-LP-02 bad: fp16/bf16 row mean of 64-element FP32 blocks whose partials are added in the storage "
              "format; declares accumulator = FP32"),
      [](Call& call) { return lp_mean(call, LpSum::kStorageBlockPartials); });
  add(out, lp_decl("calib.mean_lp_fp32", "mean", "KC-RED-LP-02 good: fp16/bf16 row mean with one FP32 running sum, rounded once"),
      [](Call& call) { return lp_mean(call, LpSum::kFp32); });
}

}  // namespace kc::calibration
