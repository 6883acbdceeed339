// kc — softmax's named oracle variants (kc/oracles.h): the max-subtraction
// algorithm evaluated in FP64, operation by operation.
//
// `reference stable_algorithm max_subtraction`: per row, m = max_j x_j,
// e_j = exp(x_j - m) (every e_j <= 1, the largest exactly 1, so nothing
// overflows and the sum S = sum_j e_j lies in [1, cols]), summed left to
// right, y_j = e_j / S (softmax) or y_j = (x_j - m) - log S (log_softmax).
// Each operation is one FP64 rounding (kc builds without FMA contraction),
// so the answer is what a careful FP64 kernel of this algorithm computes,
// not the exact value the default long double oracle approximates. The
// naive algorithm, exp(x_j) / sum exp(x_k), overflows once a logit passes
// log(DBL_MAX) ~ 709.78 (FP32 kernels: ~88.72); it is not a reference.
// IEEE consequences as in the default oracle: a NaN makes its row NaN; an
// all -inf row has m = -inf and x - m = NaN.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/named_oracles.h"

namespace kc::ops {
namespace {

Result<OracleResult> max_subtraction(const Call& call, bool log) {
  const Tensor& x = call.t("x");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  std::vector<double> e(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (std::int64_t c = 0; c < cols; ++c) {
      const double v = x.at(r * cols + c);
      if (std::isnan(v)) nan = true;
      else if (v > m) m = v;
    }
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      e[static_cast<std::size_t>(c)] = std::exp(x.at(r * cols + c) - m);
      sum += e[static_cast<std::size_t>(c)];
    }
    const double log_sum = std::log(sum);
    for (std::int64_t c = 0; c < cols; ++c) {
      double y = log ? (x.at(r * cols + c) - m) - log_sum : e[static_cast<std::size_t>(c)] / sum;
      if (nan) y = std::numeric_limits<double>::quiet_NaN();
      out[static_cast<std::size_t>(r * cols + c)] = y;
    }
  }
  OracleResult res;
  res.output_names = {"y"};
  res.outputs.push_back(std::move(out));
  return res;
}

}  // namespace

Result<OracleResult> softmax_max_subtraction(const Call& call, const OracleOptions&) {
  return max_subtraction(call, false);
}
Result<OracleResult> log_softmax_max_subtraction(const Call& call, const OracleOptions&) {
  return max_subtraction(call, true);
}

}  // namespace kc::ops
