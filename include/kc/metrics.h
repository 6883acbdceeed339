// kc — residual metrics: how far an output is from the reference.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kc/dtype.h"

namespace kc {

/// Distance in units in the last place of format t between two values
/// already representable in t. Conventions (documented in docs/metrics.md):
///   +0 and -0 are 0 apart; NaN vs NaN is 0; NaN vs non-NaN is +inf;
///   inf vs same-signed inf is 0, vs anything else +inf; subnormals count
///   as the evenly spaced values they are.
double ulp_distance(double a, double b, DType t);

/// |got - ref| / |ref|, with |ref| == 0 giving |got - ref| / tiny (inf if got != 0)
/// — callers usually prefer the floor form below.
double relative_error(double got, double ref);
/// |got - ref| / max(|ref|, floor)
double relative_error_floor(double got, double ref, double floor);

/// Statistics of one metric over the elements of one output.
struct ResidualStats {
  double max = 0;
  double p99 = 0;
  double mean = 0;
  std::int64_t count = 0;
  std::int64_t worst_index = -1;   ///< logical flat index of the max (first one)
  std::int64_t nonfinite = 0;      ///< elements where the metric was NaN/inf
};
ResidualStats summarize(std::span<const double> values);

/// Elementwise metrics of got vs ref. got/ref are logical elements. NaN
/// handling: both NaN -> 0; one NaN -> +inf.
std::vector<double> abs_errors(std::span<const double> got, std::span<const double> ref);
std::vector<double> rel_errors(std::span<const double> got, std::span<const double> ref,
                               double floor = 0);
std::vector<double> ulp_errors(std::span<const double> got, std::span<const double> ref, DType t);
/// Componentwise bound ratio r_i = |got_i - ref_i| / allowed_i (allowed_i = 0 and equal -> 0).
std::vector<double> bound_ratios(std::span<const double> got, std::span<const double> ref,
                                 std::span<const double> allowed);
/// Normwise relative error ||got - ref||_F / ||ref||_F (0/0 -> 0).
double normwise_error(std::span<const double> got, std::span<const double> ref);

/// True when a and b have identical bit patterns in format t (NaN payloads included).
bool bitwise_equal(double a, double b, DType t);

}  // namespace kc
