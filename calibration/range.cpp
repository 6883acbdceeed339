// kc — the trios of the range contracts (contracts/range/KC-RANGE-*): FP32
// layernorm, variance and softmax kernels that declare reduction_range = SAFE
// and keep it by scaling each row by a power of two, or break it by forming
// squares, sums or exp in the data format, which a visible test with
// normal(0, 1) rows cannot see:
//   calib.layernorm_scaled          rows scaled by 2^-ilogb(max|x|), two-pass in fp32 (SAFE)
//   calib.layernorm_one_pass_range  SAFE declared, E[x^2] - E[x]^2 in fp32: the squares overflow or underflow
//   calib.variance_scaled           two-pass on power-of-two-scaled values and deviations (SAFE)
//   calib.variance_two_pass_range   SAFE declared, plain fp32 two-pass: n var overflows where var does not
//   calib.variance_sum_sq           baseline: the sum of squared deviations, 1/n forgotten
//   calib.softmax_naive_range       SAFE declared, exp(x) / sum exp(x) without the max subtraction
// Scaling by 2^k with std::ldexp is exact while the result is a normal
// number, so the scaled kernels round exactly as their unscaled two-pass
// counterparts on rows of ordinary size (the error models of norm.cpp and
// stats.cpp apply unchanged).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

/// ilogb of the largest finite |v| of a row, or 0 for a row of zeros (or
/// non-finite values only: then no scaling, and IEEE arithmetic decides).
int row_exponent(const std::vector<float>& v) {
  float m = 0;
  for (float a : v)
    if (std::isfinite(a)) m = std::max(m, std::fabs(a));
  return m > 0 ? std::ilogb(m) : 0;
}

/// FP32 mean of a row.
float mean_of(const std::vector<float>& v) {
  float s = 0;
  for (float a : v) s += a;
  return s / static_cast<float>(v.size());
}

/// Biased variance of a row by two passes on scaled copies: the values scaled
/// so the largest is in [1, 2), the deviations from the mean scaled again the
/// same way, their mean square scaled back once (ldexp rounds once, to Inf
/// only where the variance itself overflows). Returns the variance as
/// var_s * 2^(2 k); with `k_out`, var_s and k separately.
float scaled_variance(const std::vector<float>& x, float* var_s_out = nullptr, int* k_out = nullptr,
                      float* mean_out = nullptr) {
  const int k1 = row_exponent(x);
  std::vector<float> xs(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xs[i] = std::ldexp(x[i], -k1);
  const float mean_s = mean_of(xs);
  std::vector<float> d(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) d[i] = xs[i] - mean_s;
  const int k2 = row_exponent(d);
  float ss = 0;
  for (float& a : d) {
    a = std::ldexp(a, -k2);
    ss += a * a;
  }
  const float var_s = ss / static_cast<float>(x.size());
  if (var_s_out) *var_s_out = var_s;
  if (k_out) *k_out = k1 + k2;
  if (mean_out) *mean_out = std::ldexp(mean_s, k1);
  return std::ldexp(var_s, 2 * (k1 + k2));
}

// ---------------------------------------------------------------- layernorm

enum class LnRange { kScaled, kOnePass };

Status layernorm_range(Call& call, LnRange kind) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  const float* g = call.t("gamma").data<float>();
  const float* b = call.t("beta").data<float>();
  Tensor& ty = call.t("y");
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  std::vector<float> x(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(c)] = static_cast<float>(tx.at(r * cols + c));
    if (kind == LnRange::kOnePass) {
      float sum = 0, sq = 0;
      for (float v : x) {
        sum += v;
        sq += v * v;
      }
      const float mean = sum / static_cast<float>(cols);
      const float var = sq / static_cast<float>(cols) - mean * mean;
      const float rs = 1.0f / std::sqrt(var + eps);
      for (std::int64_t c = 0; c < cols; ++c) ty.set(r * cols + c, (x[static_cast<std::size_t>(c)] - mean) * rs * g[c] + b[c]);
      continue;
    }
    // y = (x - mu) / sqrt(var + eps) = (x_s - mu_s) 2^-k2 / sqrt(var_s + eps 2^-2k),
    // with x_s = x 2^-k1 and var = var_s 2^2k (k = k1 + k2, scaled_variance).
    // The deviation d_s = x_s - mu_s is formed at scale k1, then scaled by
    // 2^-k2 so it matches var_s. For a row so tiny that eps 2^-2k would
    // overflow, eps dominates the variance by a factor past 2^100 and the
    // output is d / sqrt(eps): the scale is capped where eps 2^-2k = 2^100.
    const int k1 = row_exponent(x);
    std::vector<float> xs(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) xs[i] = std::ldexp(x[i], -k1);
    const float mean_s = mean_of(xs);
    std::vector<float> d(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) d[i] = xs[i] - mean_s;
    int k2 = row_exponent(d);
    if (eps > 0) k2 = std::max(k2, (std::ilogb(eps) - 100) / 2 - k1);
    float ss = 0;
    for (float& a : d) {
      a = std::ldexp(a, -k2);
      ss += a * a;
    }
    const float var_s = ss / static_cast<float>(cols);
    const float eps_s = std::ldexp(eps, -2 * (k1 + k2));
    const float rs = 1.0f / std::sqrt(var_s + eps_s);
    for (std::int64_t c = 0; c < cols; ++c) ty.set(r * cols + c, d[static_cast<std::size_t>(c)] * rs * g[c] + b[c]);
  }
  return ok_status();
}

// ---------------------------------------------------------------- variance

enum class VarRange { kScaled, kTwoPass, kSumSq };

Status variance_range(Call& call, VarRange kind) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  Tensor& out = call.t("out");
  std::vector<float> x(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(c)] = static_cast<float>(tx.at(r * cols + c));
    if (kind == VarRange::kScaled) {
      out.set(r, scaled_variance(x));
      continue;
    }
    const float mean = mean_of(x);
    float ss = 0;
    for (float v : x) ss += (v - mean) * (v - mean);
    out.set(r, kind == VarRange::kSumSq ? ss : ss / static_cast<float>(cols));
  }
  return ok_status();
}

// ---------------------------------------------------------------- softmax

Status softmax_naive(Call& call) {
  const Tensor& tx = call.t("x");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  Tensor& ty = call.t("y");
  for (std::int64_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<float>(tx.at(r * cols + c)));
    for (std::int64_t c = 0; c < cols; ++c) ty.set(r * cols + c, std::exp(static_cast<float>(tx.at(r * cols + c))) / sum);
  }
  return ok_status();
}

Declaration range_decl(const char* name, const char* op, const char* description, bool declare) {
  Declaration d = calib_decl(name, op, description);
  if (declare) d.extra["reduction_range"] = "SAFE";
  return d;
}

}  // namespace

void add_range_impls(ImplList& out) {
  add(out,
      range_decl("calib.layernorm_scaled", "layernorm",
                 "layernorm on rows scaled by 2^-ilogb(max|x|), two-pass in fp32; declares reduction_range = SAFE",
                 true),
      [](Call& call) { return layernorm_range(call, LnRange::kScaled); });
  add(out,
      range_decl("calib.layernorm_one_pass_range", "layernorm",
                 "seeded bug: declares reduction_range = SAFE but computes E[x^2] - E[x]^2 in fp32: the squares "
                 "overflow (rows past 1.8e19) or underflow (rows below 1e-19)",
                 true),
      [](Call& call) { return layernorm_range(call, LnRange::kOnePass); });
  add(out,
      range_decl("calib.variance_scaled", "variance",
                 "two-pass row variance on power-of-two-scaled values and deviations; declares reduction_range = "
                 "SAFE",
                 true),
      [](Call& call) { return variance_range(call, VarRange::kScaled); });
  add(out,
      range_decl("calib.variance_two_pass_range", "variance",
                 "seeded bug: declares reduction_range = SAFE but sums the squared deviations in fp32 unscaled: "
                 "n var overflows where var is finite",
                 true),
      [](Call& call) { return variance_range(call, VarRange::kTwoPass); });
  add(out,
      range_decl("calib.variance_sum_sq", "variance",
                 "baseline: the sum of squared deviations, the 1/n forgotten; declares reduction_range = SAFE", true),
      [](Call& call) { return variance_range(call, VarRange::kSumSq); });
  add(out,
      range_decl("calib.softmax_naive_range", "softmax",
                 "seeded bug: declares reduction_range = SAFE but computes exp(x) / sum exp(x) without the max "
                 "subtraction: exp overflows past x = 88.7",
                 true),
      softmax_naive);
}

}  // namespace kc::calibration
