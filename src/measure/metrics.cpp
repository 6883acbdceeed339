// kc — residual metrics (see kc/metrics.h and docs/metrics.md).
#include "kc/metrics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Position of a finite value on format t's number line, counting the
/// representable values between 0 and |x| (0 -> 0, the smallest subnormal -> 1,
/// min_normal -> 2^p), signed like x. Values between two representable
/// numbers get a fractional position, so an unrounded reference still gives a
/// meaningful (fractional) ULP distance.
double ulp_position(double x, const DTypeInfo& info) {
  const double a = std::fabs(x);
  const int p = info.mantissa_bits;
  const int emin = 1 - info.exponent_bias;
  double pos = 0;
  if (a < info.min_normal) {
    pos = std::ldexp(a, p - emin);  // subnormal spacing 2^(emin - p): evenly spaced
  } else {
    int e2 = 0;
    std::frexp(a, &e2);
    const int e = e2 - 1;
    // 2^p values per binade; binade emin starts at position 2^p.
    pos = std::ldexp(static_cast<double>(e - emin + 1), p) + (std::ldexp(a, p - e) - std::ldexp(1.0, p));
  }
  return std::signbit(x) ? -pos : pos;
}

/// Monotone integer image of a double's bits (+0 and -0 both map to 0).
std::int64_t ordered_bits(double x) {
  const auto b = std::bit_cast<std::int64_t>(x);
  return b < 0 ? -(b & std::numeric_limits<std::int64_t>::max()) : b;
}

/// |got - ref| under the NaN/inf conventions shared by every metric here.
double abs_error(double got, double ref) {
  const bool gn = std::isnan(got), rn = std::isnan(ref);
  if (gn || rn) return gn && rn ? 0 : kInf;
  if (got == ref) return 0;  // also covers same-signed infinities and +-0
  return std::fabs(got - ref);
}

}  // namespace

double ulp_distance(double a, double b, DType t) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an && bn ? 0 : kInf;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0 : kInf;
  if (a == b) return 0;  // +0 == -0
  const DTypeInfo& info = dtype_info(t);
  if (!info.is_float) return std::fabs(a - b);  // integers: one unit apart per step
  if (t == DType::kF64) {
    // Count doubles between a and b from their ordered bit images; the
    // difference is formed exactly in 128 bits, then converted.
    const __int128 d = static_cast<__int128>(ordered_bits(a)) - static_cast<__int128>(ordered_bits(b));
    return static_cast<double>(d < 0 ? -d : d);
  }
  return std::fabs(ulp_position(a, info) - ulp_position(b, info));
}

double relative_error(double got, double ref) {
  const double err = abs_error(got, ref);
  if (err == 0) return 0;
  if (ref == 0 || std::isinf(ref)) return kInf;
  return err / std::fabs(ref);
}

double relative_error_floor(double got, double ref, double floor) {
  const double err = abs_error(got, ref);
  if (err == 0) return 0;
  const double denom = std::max(std::isnan(ref) ? 0.0 : std::fabs(ref), floor);
  if (denom == 0) return kInf;
  return err / denom;
}

ResidualStats summarize(std::span<const double> values) {
  ResidualStats s;
  s.count = static_cast<std::int64_t>(values.size());
  if (values.empty()) return s;
  // NaN metrics rank as +inf: an element that cannot be measured is the worst one.
  std::vector<double> sorted(values.size());
  double best = -kInf;
  double finite_sum = 0;
  std::int64_t finite_n = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = std::isnan(values[i]) ? kInf : values[i];
    sorted[i] = v;
    if (!std::isfinite(values[i])) ++s.nonfinite;
    else {
      finite_sum += v;
      ++finite_n;
    }
    best = std::max(best, v);
  }
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] == best) {
      s.worst_index = static_cast<std::int64_t>(i);  // the first one
      break;
    }
  }
  s.max = best;
  // Mean over the finite values; the nonfinite ones are counted separately.
  s.mean = finite_n ? finite_sum / static_cast<double>(finite_n) : 0;
  // p99 by the nearest-rank method: the ceil(0.99 n)-th smallest value.
  const auto n = sorted.size();
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  const std::size_t k = rank == 0 ? 0 : rank - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  s.p99 = sorted[k];
  return s;
}

std::vector<double> abs_errors(std::span<const double> got, std::span<const double> ref) {
  const std::size_t n = std::min(got.size(), ref.size());
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = abs_error(got[i], ref[i]);
  return out;
}

std::vector<double> rel_errors(std::span<const double> got, std::span<const double> ref, double floor) {
  const std::size_t n = std::min(got.size(), ref.size());
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = relative_error_floor(got[i], ref[i], floor);
  return out;
}

std::vector<double> ulp_errors(std::span<const double> got, std::span<const double> ref, DType t) {
  const std::size_t n = std::min(got.size(), ref.size());
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = ulp_distance(got[i], ref[i], t);
  return out;
}

std::vector<double> bound_ratios(std::span<const double> got, std::span<const double> ref,
                                 std::span<const double> allowed) {
  const std::size_t n = std::min({got.size(), ref.size(), allowed.size()});
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double err = abs_error(got[i], ref[i]);
    if (err == 0) out[i] = 0;
    else if (!(allowed[i] > 0)) out[i] = kInf;  // zero or NaN allowance admits no error
    else out[i] = err / allowed[i];
  }
  return out;
}

double normwise_error(std::span<const double> got, std::span<const double> ref) {
  const std::size_t n = std::min(got.size(), ref.size());
  // long double keeps squares of fp32-range values from overflowing.
  long double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double e = abs_error(got[i], ref[i]);
    num += e * e;
    if (!std::isnan(ref[i])) den += static_cast<long double>(ref[i]) * ref[i];
  }
  if (num == 0) return 0;
  if (den == 0) return kInf;
  return static_cast<double>(std::sqrt(num) / std::sqrt(den));
}

bool bitwise_equal(double a, double b, DType t) {
  switch (t) {
    case DType::kF64: return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
    case DType::kF32:
    case DType::kTF32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(a)) ==
             std::bit_cast<std::uint32_t>(static_cast<float>(b));
    case DType::kF16:
      // Round from double once (round_to) so the float step adds no second rounding.
      return f32_to_f16_bits(static_cast<float>(round_to(a, t))) ==
             f32_to_f16_bits(static_cast<float>(round_to(b, t)));
    case DType::kBF16:
      return f32_to_bf16_bits(static_cast<float>(round_to(a, t))) ==
             f32_to_bf16_bits(static_cast<float>(round_to(b, t)));
    case DType::kFP8E4M3:
    case DType::kFP8E5M2: return to_fp8_bits(a, t) == to_fp8_bits(b, t);
    case DType::kI32:
    case DType::kI64: return a == b;
  }
  return false;
}

}  // namespace kc
