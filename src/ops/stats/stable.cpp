// kc — the stats ops' named oracle variants (kc/oracles.h), each the named
// algorithm evaluated in FP64, operation by operation (one rounding per
// operation: kc builds without FMA contraction).
//
//  two_pass_variance   m = (sum_j x_j) / n, then V = (sum_j (x_j - m)^2) / n,
//                      sums left to right. The mean's error enters V only
//                      squared (sum_j (x_j - m) = 0), so data far from zero
//                      loses nothing to cancellation.
//  welford_variance    one pass with a running mean: for k = 1..n,
//                      d = x_k - mean, mean += d / k, M2 += d * (x_k - mean);
//                      V = M2 / n. Stable too; its rounding differs from the
//                      two-pass one, so the two names are different oracles.
//  shifted_logsumexp   m = max_j x_j; lse = m + log(sum_j exp(x_j - m)): no
//  (max_subtraction)   term exceeds 1, so nothing overflows. NaN anywhere
//                      gives NaN; m = +-inf gives m (every exp is 0 or the
//                      +inf dominates).
// The one-pass E[x^2] - E[x]^2 is what these are stable against: for data at
// offset x0 with spread s it loses about u x0^2 / s^2 of V's digits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/named_oracles.h"

namespace kc::ops {
namespace {

using RowFn = double (*)(const double* row, std::int64_t n);

Result<OracleResult> per_row(const Call& call, RowFn fn) {
  const Tensor& x = call.t("x");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<double> row(static_cast<std::size_t>(cols));
  std::vector<double> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < cols; ++j) row[static_cast<std::size_t>(j)] = x.at(r * cols + j);
    out[static_cast<std::size_t>(r)] = fn(row.data(), cols);
  }
  OracleResult res;
  res.outputs.push_back(std::move(out));
  res.output_names.push_back("out");
  return res;
}

double two_pass(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) s += x[j];
  const double m = s / static_cast<double>(n);
  double ss = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double d = x[j] - m;
    ss += d * d;
  }
  return ss / static_cast<double>(n);
}

double welford(const double* x, std::int64_t n) {
  double mean = 0, m2 = 0;
  for (std::int64_t k = 1; k <= n; ++k) {
    const double v = x[k - 1];
    const double d = v - mean;
    mean += d / static_cast<double>(k);
    m2 += d * (v - mean);
  }
  return m2 / static_cast<double>(n);
}

double shifted_lse(const double* x, std::int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    if (std::isnan(x[j])) return x[j];
    m = std::max(m, x[j]);
  }
  if (std::isinf(m)) return m;
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) s += std::exp(x[j] - m);
  return m + std::log(s);
}

}  // namespace

Result<OracleResult> variance_two_pass(const Call& call, const OracleOptions&) { return per_row(call, two_pass); }
Result<OracleResult> variance_welford(const Call& call, const OracleOptions&) { return per_row(call, welford); }
Result<OracleResult> log_sum_exp_shifted(const Call& call, const OracleOptions&) {
  return per_row(call, shifted_lse);
}

}  // namespace kc::ops
