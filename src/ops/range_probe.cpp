// kc — the range probes of the row ops (overflow_range, underflow_range):
// rows near the format's overflow or underflow threshold whose exact result
// is representable, so a kernel that forms a plain square, sum or exp in the
// data format loses a result it could have returned. Declared in ops/probe.h.
//
// Shapes (n = the row length, max and min_sub the format's largest finite and
// smallest subnormal values, u uniform in [0.5, 1], s a random sign):
//   kNorm      x = s u f max / sqrt(n): every x^2 >= (f max)^2 / (4 n) overflows
//              (for n < (f^2 max) / 4, i.e. any row length kc runs), while
//              sqrt(sum x^2) <= f max: norm2, rmsnorm's rms(x) = ||x|| / sqrt(n),
//              layernorm's (x - mean) / std (bounded by sqrt(n)) are all finite.
//   kSpread    x = s u f max: exp(x) overflows for every x > ln(max); a max-
//              subtracted softmax only meets exp(x - max(x)) <= 1, and
//              x - max(x) may round to -Inf where exp of it is 0 anyway.
//   kOffset    x = c + s u f sqrt(max), c = +-4 sqrt(max) per row: c^2 = 16 max
//              overflows, so E[x^2] and E[x]^2 do, while the variance
//              <= (f sqrt(max))^2 = f^2 max is finite. ulp(c) = 4 sqrt(max) u(P)
//              is far below the spread in FP32/FP64 (2^-21 and 2^-50 of it).
//   kSameSign  x = s u f max, one sign per row: n > 2 / f terms sum past max,
//              the mean stays <= f max.
// underflow_range (kNorm only): |x| in [2^(e-1), 2^e], e = ilogb(min_sub) / 2 - 2
// (2^-76 in FP32, 2^-539 in FP64): normal numbers whose squares are below half
// the smallest subnormal, so a sum of squares in the format is 0 while ||x||,
// rms(x) and layernorm's x / std are normal. The oracles compute in long
// double (exponent range 2^+-16382), where neither a square of an FP64 value
// nor a sum of them leaves the range: they are exact-enough at both ends.
#include <cmath>
#include <string>
#include <vector>

#include "kc/dtype.h"
#include "ops/probe.h"

namespace kc::ops::detail {

bool is_range_probe(const std::string& name) { return name == "overflow_range" || name == "underflow_range"; }

Status apply_row_range_probe(Call& call, const Probe& probe, Rng& rng, const std::vector<std::string>& targets,
                             RowRange shape) {
  const bool over = probe.name == "overflow_range";
  if (!is_range_probe(probe.name)) return invalid_argument("'" + probe.name + "' is not a range probe");
  if (!over && shape != RowRange::kNorm)
    return invalid_argument("probe 'underflow_range' has no meaning for " + call.op +
                            ": its result on tiny rows is itself below the format's range or cannot underflow "
                            "(it applies to norm2, rmsnorm, layernorm)");
  const double f = probe.args.empty() ? 0.5 : probe.args[0];
  if (over && !(f > 0 && f <= 1)) return invalid_argument("overflow_range(f) takes 0 < f <= 1");
  for (const std::string& name : targets) {
    if (!call.has(name)) return invalid_argument("probe target '" + name + "' is not a tensor of " + call.op);
    Tensor& t = call.t(name);
    const DTypeInfo& info = dtype_info(t.dtype());
    if (!info.is_float) return invalid_argument("probe target '" + name + "' is not a floating tensor");
    const std::int64_t cols = t.rank() >= 2 ? t.dim(t.rank() - 1) : t.numel();
    if (cols <= 0) continue;
    const std::int64_t rows = t.numel() / cols;
    const double n = static_cast<double>(cols);
    const double max = info.max_finite;
    auto sign = [&rng] { return rng.uniform() < 0.5 ? -1.0 : 1.0; };
    for (std::int64_t r = 0; r < rows; ++r) {
      const double row_sign = sign();
      const double center = shape == RowRange::kOffset ? row_sign * 4 * std::sqrt(max) : 0.0;
      for (std::int64_t j = r * cols; j < (r + 1) * cols; ++j) {
        const double u = rng.uniform(0.5, 1.0);
        double v = 0;
        if (!over) {
          const double min_sub = std::ldexp(info.min_normal, -info.mantissa_bits);
          v = sign() * u * std::ldexp(1.0, std::ilogb(min_sub) / 2 - 2);
        } else {
          switch (shape) {
            case RowRange::kNorm:
              v = sign() * u * f * max / std::sqrt(n);
              break;
            case RowRange::kSpread:
              v = sign() * u * f * max;
              break;
            case RowRange::kOffset:
              v = center + sign() * u * f * std::sqrt(max);
              break;
            case RowRange::kSameSign:
              v = row_sign * u * f * max;
              break;
          }
        }
        t.set(j, v);
      }
    }
  }
  return ok_status();
}

}  // namespace kc::ops::detail
