// kc — helpers shared by the report renderers (not a public header).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kc/engine.h"
#include "report/json_writer.h"

namespace kc::report {

inline constexpr std::string_view kKcVersion = "0.1.0";

/// Writes the case record (an object) into w — the one place a CaseResult
/// becomes JSON, used by case_json (compact, the trace) and render_json (pretty).
void write_case(JsonWriter& w, const engine::CaseResult& c);

/// "0x6b63".
std::string seed_hex(std::uint64_t seed);
/// Now (or SOURCE_DATE_EPOCH when set, for reproducible reports) as
/// ISO-8601 UTC: "2026-11-22T15:46:53Z".
std::string utc_timestamp();
/// gethostname(), or "unknown".
std::string host_name();

/// "SATURATION(65504), NAN_SWALLOWED" (empty when there are none).
std::string signatures_text(const engine::CaseResult& c, std::string_view sep = ", ");

/// Verdict counts, indexed by the Verdict's underlying value.
struct VerdictCounts {
  std::array<int, 6> n{};
  int& operator[](engine::Verdict v) { return n[static_cast<std::size_t>(v)]; }
  int operator[](engine::Verdict v) const { return n[static_cast<std::size_t>(v)]; }
};
VerdictCounts count_verdicts(const engine::CheckResult& result);
/// "N conforming, N violation, N not_applicable, N skipped, N error"
/// (", N under_specified" appended when there are any).
std::string summary_line(const VerdictCounts& counts);

/// Terminal columns a UTF-8 string occupies (one per code point; kc prints no
/// wide characters).
std::size_t display_width(std::string_view s);
/// s cut to at most width columns, ending in "…" when cut.
std::string truncate_to_width(std::string_view s, std::size_t width);
/// s padded with spaces on the right to width columns.
std::string pad_right(std::string_view s, std::size_t width);

/// ANSI colour of a verdict: green conforming, red violation/error, yellow
/// under_specified, grey not_applicable/skipped.
std::string_view verdict_color(engine::Verdict v);
/// text wrapped in the ANSI code when color is true.
std::string colorize(std::string_view text, std::string_view ansi, bool color);

/// Short human form of a number: 3 significant digits ("65504", "3.21e+04", "0.000123").
std::string short_number(double v);

}  // namespace kc::report
