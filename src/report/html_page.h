// kc — pieces of the HTML report shared by its files (not a public header).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/engine.h"

namespace kc::report::html {

/// Text as HTML character data or a quoted attribute value: & < > " ' become
/// entities; control characters other than tab and newline (which no report
/// needs, and which a hostile name could carry) become U+FFFD.
std::string escape(std::string_view s);

/// A CSS class suffix from a fixed kc word (verdict or level name): only
/// [a-z_] survive, so nothing outside kc's own tables reaches a class attribute.
std::string css_word(std::string_view s);

/// Whether a case's evidence metric is a bound ratio: the measured error over
/// the error its tolerance allows, so that <= 1 conforms (docs/diff.md).
bool is_ratio_metric(std::string_view metric);

/// The worst bound ratio of a judged case (conforming or violation) whose
/// metric is a bound ratio; nullopt otherwise. May be +inf (a NaN or Inf
/// where a finite value was due).
std::optional<double> worst_ratio(const engine::CaseResult& c);

/// One point of a ratio plot.
struct PlotPoint {
  double ratio = 0;       ///< >= 0, may be +inf
  std::string label;      ///< shown on hover (escaped by the plot)
  std::string verdict;    ///< a verdict name (colours the point; the page's verdict filter)
  std::string backend;    ///< for the page's backend filter (escaped by the plot)
};

/// A strip of points on a log axis with the threshold (1) marked: one contract,
/// every impl's worst bound ratio.
std::string ratio_strip_svg(const std::vector<PlotPoint>& points);

/// Points in order (configs of one case) on a log axis with the threshold
/// marked: the ratio across configs.
std::string ratio_series_svg(const std::vector<PlotPoint>& points);

}  // namespace kc::report::html
