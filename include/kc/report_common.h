// kc — the record-writing helpers the report renderers and the ladder share
// (case, profile and timing JSON, verdict counts, widths and colours).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/engine.h"
#include "kc/json_writer.h"
#include "kc/profile.h"

namespace kc::report {

inline constexpr std::string_view kKcVersion = "0.1.0";

/// Writes the case record (an object) into w — the one place a CaseResult
/// becomes JSON, used by case_json (compact, the trace) and render_json (pretty).
void write_case(JsonWriter& w, const engine::CaseResult& c);
/// A machine profile as one JSON object: its facts, then "env" (run records, certificates).
void write_profile(JsonWriter& w, const Profile& p);
/// `"timing": {config, sample, cold_s, warm_s}` or `"timing": null` (trace records and run records).
void write_timing(JsonWriter& w, const std::optional<engine::CaseResult::Timing>& timing);

/// "0x6b63".
std::string seed_hex(std::uint64_t seed);
/// Now (or SOURCE_DATE_EPOCH when set, for reproducible reports) as
/// ISO-8601 UTC: "2026-11-22T15:46:53Z".
std::string utc_timestamp();
/// gethostname(), or "unknown".
std::string host_name();

/// fsync()s the directory holding path, so a newly created or renamed entry
/// survives a crash. A directory that cannot be opened, or a file system that
/// does not sync directories (EINVAL), is not an error; an I/O error (EIO,
/// ENOSPC, ...) is: the entry may not survive.
Status fsync_parent_dir(const std::string& path);

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

namespace kc::report {

/// The reason without a leading "<signatures>: " (for places that already show
/// the signatures next to it).
std::string reason_without_signature(const engine::CaseResult& c);

/// Seconds as text with millisecond resolution ("0.250"); 0 when not finite.
std::string seconds_text(double s);

/// Evidence lines for one case, shared by the terminal, JUnit and Markdown
/// renderers: tolerance and statistics, each note, the worst element, the
/// repro command ("repro: kc check ...") when there is one. No trailing newlines.
std::vector<std::string> case_details(const engine::CaseResult& c);

/// The contracts × impls grid of a result, in first-seen order. When a pair
/// occurs more than once the most severe verdict wins.
struct Grid {
  std::vector<std::string> contracts;
  std::vector<std::string> impls;
  std::vector<std::vector<const engine::CaseResult*>> at;  ///< [contract][impl], may be null
};
Grid build_grid(const engine::CheckResult& result);

/// How bad a verdict is, for picking the worst: violation > error >
/// under_specified > skipped > conforming > not_applicable.
int verdict_severity(engine::Verdict v);

/// One-column glyph of a verdict: ✓ ✗ E ? s –.
std::string_view verdict_glyph(engine::Verdict v);

}  // namespace kc::report
