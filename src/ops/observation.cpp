// kc — the element ratio every classifier reads (kc/observation.h).
#include "kc/observation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kc {

double element_ratio(double got, double ref, double allowed) {
  const bool gn = std::isnan(got), rn = std::isnan(ref);
  if (gn && rn) return 0;
  if (gn || rn) return std::numeric_limits<double>::infinity();
  if (std::isinf(got) || std::isinf(ref)) {
    return (got == ref) ? 0 : std::numeric_limits<double>::infinity();
  }
  const double err = std::fabs(got - ref);
  if (err == 0) return 0;
  if (!(allowed > 0)) return std::numeric_limits<double>::infinity();
  return err / allowed;
}

double max_ratio(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& allowed) {
  double m = 0;
  for (std::size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    const double a = i < allowed.size() ? allowed[i] : 0;
    m = std::max(m, element_ratio(got[i], ref[i], a));
  }
  return m;
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace kc
