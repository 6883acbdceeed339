// kc — small helpers shared by the property files (src/ops/<op>/properties.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kc/obligation.h"

namespace kc::obligation::detail {

/// A number as evidence prints it: four significant digits ("%.4g").
inline std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

/// A row-major matrix view of a call's tensor as doubles (logical elements).
struct Rows {
  std::vector<double> v;
  std::int64_t rows = 0, cols = 0;
  const double* row(std::int64_t r) const { return v.data() + r * cols; }
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

/// The tensor as rows of its last dimension.
inline Rows rows_of(const Tensor& t) {
  Rows m;
  m.v = t.to_doubles();
  m.cols = t.rank() == 0 ? 1 : t.dim(t.rank() - 1);
  m.rows = m.cols > 0 ? static_cast<std::int64_t>(m.v.size()) / m.cols : 0;
  return m;
}

/// Whether a row holds no NaN and no +inf (a -inf is a masked entry).
inline bool maskable_row(const double* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i]) || x[i] == INFINITY) return false;
  return true;
}

/// Whether every element is finite.
inline bool all_finite(const double* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

/// Runs the impl on `c`; a Status the property must pass on (the engine turns
/// kUnimplemented into a skipped config and a raise into a verdict).
inline Status rerun(const Context& ctx, Call& c, const std::string& why) {
  Status s = ctx.invoke(c);
  if (!s.ok()) return Status(s.code(), why + ": " + s.message());
  return s;
}

}  // namespace kc::obligation::detail
