// kc — the sum reduction's named oracle variants (kc/oracles.h), each the
// named summation algorithm evaluated in FP64, operation by operation (one
// rounding per addition; kc builds without FMA contraction or reassociation).
//
//  kahan_sum     compensated summation in index order: s = x_0, c = 0; for
//                each later term y = x_i - c, t = s + y, c = (t - s) - y,
//                s = t. The compensation c carries what each addition lost,
//                so the error is about 2u |sum| + O(n u^2) sum|x_i|, nearly
//                independent of n.
//  pairwise_sum  split [0, n) at h = n / 2 (integer division), sum each half
//                pairwise, add the two; a range of one element is that
//                element. Error about u log2(n) sum|x_i|.
// The default oracle (long double recursive summation) has 11 more bits but
// no compensation: terms below half an ulp of the running sum in long double
// (2^-64 relative) are lost to it one by one, where Kahan keeps them.
#include <cmath>
#include <vector>

#include "ops/named_oracles.h"

namespace kc::ops {
namespace {

double pairwise(const std::vector<double>& x, std::size_t begin, std::size_t end) {
  if (end - begin == 1) return x[begin];
  const std::size_t mid = begin + (end - begin) / 2;
  return pairwise(x, begin, mid) + pairwise(x, mid, end);
}

OracleResult one_value(double v) {
  OracleResult r;
  r.output_names = {"out"};
  r.outputs.push_back({v});
  return r;
}

/// A NaN or infinite term: the sum is what IEEE addition gives (NaN, or the
/// infinity), which compensation would turn into NaN (inf - inf in c).
bool nonfinite(const std::vector<double>& x, double* plain) {
  double s = 0;
  bool any = false;
  for (double v : x) {
    any = any || !std::isfinite(v);
    s += v;
  }
  *plain = s;
  return any;
}

}  // namespace

Result<OracleResult> sum_kahan(const Call& call, const OracleOptions&) {
  const std::vector<double> x = call.t("x").to_doubles();
  if (double plain = 0; nonfinite(x, &plain)) return one_value(plain);
  double s = 0, c = 0;
  for (double v : x) {
    const double y = v - c;
    const double t = s + y;
    c = (t - s) - y;
    s = t;
  }
  return one_value(s);
}

Result<OracleResult> sum_pairwise(const Call& call, const OracleOptions&) {
  const std::vector<double> x = call.t("x").to_doubles();
  return one_value(x.empty() ? 0.0 : pairwise(x, 0, x.size()));
}

}  // namespace kc::ops
