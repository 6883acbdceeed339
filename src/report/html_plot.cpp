// Inline SVG plots of the HTML report: bound ratios on a log axis against
// the threshold 1 (a ratio <= 1 conforms). No script draws them; each point
// carries its label in a <title> for the browser's tooltip.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "report/html_page.h"

namespace kc::report::html {

namespace {

// The axis never spans more decades than this: ratios far below the
// threshold all mean "holds with room" and are drawn at the left edge.
constexpr int kMinDecade = -9;

struct LogAxis {
  int lo = -3, hi = 1;  ///< decades at the axis ends

  explicit LogAxis(const std::vector<PlotPoint>& points) {
    double mn = 0.1, mx = 10;
    for (const auto& p : points) {
      if (!(p.ratio > 0) || !std::isfinite(p.ratio)) continue;
      mn = std::min(mn, p.ratio);
      mx = std::max(mx, p.ratio);
    }
    lo = std::max(kMinDecade, static_cast<int>(std::floor(std::log10(mn))));
    hi = static_cast<int>(std::ceil(std::log10(mx)));
    if (hi <= lo) hi = lo + 1;
  }
  /// Decades between labelled ticks, so that at most `labels` + 1 are labelled.
  int step(int labels = 8) const { return std::max(1, (hi - lo + labels - 1) / labels); }
  /// Position in [0, 1] along the axis; zero and tiny ratios at 0, +inf past 1.
  double at(double ratio) const {
    if (std::isinf(ratio)) return 1.04;
    if (!(ratio > 0)) return 0;
    const double t = (std::log10(ratio) - lo) / (hi - lo);
    return std::clamp(t, 0.0, 1.0);
  }
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string decade_label(int d) {
  switch (d) {
    case -2: return "0.01";
    case -1: return "0.1";
    case 0: return "1";
    case 1: return "10";
    case 2: return "100";
    case 3: return "1000";
    default: return "1e" + std::to_string(d);
  }
}

std::string ratio_text(double r) {
  if (std::isinf(r)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", r);
  return buf;
}

std::string point_attrs(const PlotPoint& p) {
  std::string lower;
  for (char ch : p.label) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return " class=\"f pt v-" + css_word(p.verdict) + "\" data-b=\"" + escape(p.backend) + "\" data-v=\"" +
         css_word(p.verdict) + "\" data-s=\"" + escape(lower) + "\"";
}

}  // namespace

std::string ratio_strip_svg(const std::vector<PlotPoint>& points) {
  constexpr double kW = 360, kL = 10, kR = 24, kAxisY = 42;
  const LogAxis ax(points);
  const auto x = [&](double r) { return kL + ax.at(r) * (kW - kL - kR); };
  std::string s = "<svg class=\"plot\" viewBox=\"0 0 360 62\" width=\"360\" height=\"62\" role=\"img\">";
  s += "<line class=\"axis\" x1=\"" + num(kL) + "\" y1=\"" + num(kAxisY) + "\" x2=\"" + num(kW - kR + 8) + "\" y2=\"" +
       num(kAxisY) + "\"/>";
  for (int d = ax.lo; d <= ax.hi; d += ax.step()) {
    const double px = kL + (static_cast<double>(d - ax.lo) / (ax.hi - ax.lo)) * (kW - kL - kR);
    s += "<line class=\"tick\" x1=\"" + num(px) + "\" y1=\"" + num(kAxisY) + "\" x2=\"" + num(px) + "\" y2=\"" +
         num(kAxisY + 4) + "\"/>";
    s += "<text x=\"" + num(px) + "\" y=\"" + num(kAxisY + 15) + "\" text-anchor=\"middle\">" + decade_label(d) +
         "</text>";
  }
  s += "<line class=\"threshold\" x1=\"" + num(x(1)) + "\" y1=\"2\" x2=\"" + num(x(1)) + "\" y2=\"" + num(kAxisY) +
       "\"><title>threshold: ratio 1</title></line>";
  // Points in lanes, so that impls with equal ratios stay apart.
  for (std::size_t i = 0; i < points.size(); ++i) {
    const PlotPoint& p = points[i];
    const double y = 8 + 7.0 * static_cast<double>(i % 5);
    s += "<circle" + point_attrs(p) + " cx=\"" + num(x(p.ratio)) + "\" cy=\"" + num(y) + "\" r=\"3.5\"><title>" +
         escape(p.label) + ": " + ratio_text(p.ratio) + "</title></circle>";
  }
  s += "</svg>";
  return s;
}

std::string ratio_series_svg(const std::vector<PlotPoint>& points) {
  constexpr double kW = 420, kH = 120, kL = 42, kR = 12, kT = 14, kB = 18;
  const LogAxis ax(points);
  const auto y = [&](double r) { return kH - kB - std::min(ax.at(r), 1.06) * (kH - kT - kB); };
  const auto x = [&](std::size_t i) {
    return points.size() <= 1 ? (kL + kW - kR) / 2
                              : kL + 8 + (kW - kL - kR - 16) * static_cast<double>(i) / static_cast<double>(points.size() - 1);
  };
  std::string s = "<svg class=\"plot\" viewBox=\"0 0 420 120\" width=\"420\" height=\"120\" role=\"img\">";
  s += "<line class=\"axis\" x1=\"" + num(kL) + "\" y1=\"" + num(kT - 6) + "\" x2=\"" + num(kL) + "\" y2=\"" +
       num(kH - kB) + "\"/>";
  for (int d = ax.lo; d <= ax.hi; d += ax.step(6)) {
    const double py = kH - kB - (static_cast<double>(d - ax.lo) / (ax.hi - ax.lo)) * (kH - kT - kB);
    s += "<line class=\"grid\" x1=\"" + num(kL) + "\" y1=\"" + num(py) + "\" x2=\"" + num(kW - kR) + "\" y2=\"" +
         num(py) + "\"/><text x=\"" + num(kL - 4) + "\" y=\"" + num(py + 4) + "\" text-anchor=\"end\">" +
         decade_label(d) + "</text>";
  }
  s += "<line class=\"threshold\" x1=\"" + num(kL) + "\" y1=\"" + num(y(1)) + "\" x2=\"" + num(kW - kR) + "\" y2=\"" +
       num(y(1)) + "\"><title>threshold: ratio 1</title></line>";
  if (points.size() > 1) {
    s += "<polyline class=\"series\" points=\"";
    for (std::size_t i = 0; i < points.size(); ++i) s += (i ? " " : "") + num(x(i)) + "," + num(y(points[i].ratio));
    s += "\"/>";
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const PlotPoint& p = points[i];
    s += "<circle class=\"pt v-" + css_word(p.verdict) + "\" cx=\"" + num(x(i)) + "\" cy=\"" + num(y(p.ratio)) +
         "\" r=\"3.5\"><title>" + escape(p.label) + ": " + ratio_text(p.ratio) + "</title></circle>";
  }
  s += "<text x=\"" + num(kW - kR) + "\" y=\"" + num(kH - 3) + "\" text-anchor=\"end\">configs, in run order</text>";
  s += "</svg>";
  return s;
}

}  // namespace kc::report::html
