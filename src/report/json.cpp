// case_json and render_json: the JSON forms of verdict records (schemas/report.schema.json).
#include "kc/json_writer.h"
#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

std::string case_json(const engine::CaseResult& c) {
  JsonWriter w;  // compact: one record is one trace line
  write_case(w, c);
  return w.take();
}

std::string render_json(const engine::CheckResult& result) {
  using engine::Verdict;
  JsonWriter w(2);
  w.begin_object();
  w.field("kc_version", kKcVersion);
  w.key("cases").begin_array();
  for (const auto& c : result.cases) write_case(w, c);
  w.end_array();

  w.key("backends").begin_array();
  for (const auto& b : result.backends) {
    w.begin_object();
    w.field("name", b.name);
    w.field("available", b.available);
    w.field("version", b.version);
    w.field("reason", b.reason);
    w.end_object();
  }
  w.end_array();

  const VerdictCounts k = count_verdicts(result);
  w.key("summary").begin_object();
  w.field("cases", static_cast<std::int64_t>(result.cases.size()));
  for (const auto& e : engine::verdict_table()) w.field(e.name, k[e.value]);
  w.field("exit_code", result.exit_code());
  w.end_object();

  w.key("grades").begin_array();
  for (const ImplGrade& g : grade(result)) {
    w.begin_object();
    w.field("impl", g.impl);
    w.field("backend", g.backend);
    w.field("level", g.level);
    w.field("tier", g.tier);
    w.field("conforming", g.conforming);
    w.field("violations", g.violations);
    w.field("not_applicable", g.not_applicable);
    w.field("errors", g.errors);
    w.field("other", g.other);
    w.field("summary", g.summary);
    w.end_object();
  }
  w.end_array();

  if (!result.trace_path.empty()) {
    w.key("trace").begin_object();
    w.field("path", result.trace_path);
    w.field("last_hash", result.trace_last_hash);
    w.end_object();
  }
  w.key("notes").begin_array();
  for (const auto& n : result.notes) w.value(n);
  w.end_array();
  w.key("write_errors").begin_array();
  for (const auto& e : result.write_errors) w.value(e);
  w.end_array();

  w.key("diagnostics").begin_array();
  for (const auto& d : result.diagnostics) {
    w.begin_object();
    const char* sev = d.severity == lang::Diagnostic::Severity::kError     ? "error"
                      : d.severity == lang::Diagnostic::Severity::kWarning ? "warning"
                                                                           : "note";
    w.field("severity", sev);
    w.field("file", d.loc.file);
    w.field("line", d.loc.line);
    w.field("column", d.loc.column);
    w.field("message", d.message);
    w.field("expected", d.expected);
    w.field("suggestion", d.suggestion);
    w.field("text", d.render());
    w.end_object();
  }
  w.end_array();
  w.end_object();
  std::string out = w.take();
  out += '\n';
  return out;
}

}  // namespace kc::report
