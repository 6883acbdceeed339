// The report formats' table (kc/reporter.h).
#include "kc/reporter.h"

#include <array>

namespace kc::report {

namespace {

std::string table(const engine::CheckResult& r, const ReportOptions& o) { return render_table(r, o.color); }
std::string json(const engine::CheckResult& r, const ReportOptions&) { return render_json(r); }
std::string junit(const engine::CheckResult& r, const ReportOptions& o) { return render_junit(r, o.junit); }
std::string markdown(const engine::CheckResult& r, const ReportOptions&) { return render_markdown(r); }
std::string html(const engine::CheckResult& r, const ReportOptions&) { return render_html(r); }

constexpr std::array<Reporter, 5> kReporters = {{
    {"table", "", "one line per case, on the terminal (the default)", table},
    {"json", "report.json", "every case with its evidence, grades, backends (schemas/)", json},
    {"junit", "report.junit.xml", "JUnit XML: a testsuite per contract, a testcase per impl", junit},
    {"md", "report.md", "Markdown: the matrix, grades, each violation's evidence", markdown},
    {"html", "report.html", "one self-contained page, violations first (docs/grading.md)", html},
}};

}  // namespace

std::span<const Reporter> reporters() { return kReporters; }

const Reporter* find_reporter(std::string_view name) {
  for (const Reporter& r : kReporters)
    if (r.name == name) return &r;
  return nullptr;
}

std::string reporter_names(std::string_view sep) {
  std::string out;
  for (const Reporter& r : kReporters) {
    if (!out.empty()) out += sep;
    out += r.name;
  }
  return out;
}

std::string report_set_pattern() {
  std::string out;
  for (const Reporter& r : kReporters) {
    if (r.file.empty()) continue;
    const std::string_view f = r.file.substr(r.file.find('.') + 1);
    out += (out.empty() ? "" : ",") + std::string(f);
  }
  return "report.{" + out + "}";
}

}  // namespace kc::report
