// kc — the report formats in one table: `--format`, the help text and the
// report set `kc grade` writes all come from it, so a new format is one row.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kc/engine.h"
#include "kc/report.h"

namespace kc::report {

/// What a renderer may need beyond the result.
struct ReportOptions {
  bool color = false;   ///< ANSI colour (the table)
  JunitOptions junit;   ///< what the JUnit report holds beyond the verdicts
};

/// One report format.
struct Reporter {
  std::string_view name;  ///< its --format value
  /// The file `kc grade` (and kc merge, kc vet) writes it to in --out DIR;
  /// empty: printed only, not in the report set.
  std::string_view file;
  std::string_view help;  ///< one line for --help
  std::string (*render)(const engine::CheckResult& result, const ReportOptions& options);
};

/// Every report format, in the order help text lists them; names are unique.
std::span<const Reporter> reporters();
/// The format named name, or nullptr.
const Reporter* find_reporter(std::string_view name);
/// "table | json | junit | md | html".
std::string reporter_names(std::string_view sep = " | ");
/// "report.{json,junit.xml,md,html}": the report set's files, for messages.
std::string report_set_pattern();

}  // namespace kc::report
