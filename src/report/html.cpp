// HTML report: one self-contained file (inline CSS; no scripts, fonts or
// images) with the summary, the backends, the contracts × impls matrix, the
// grades per impl and per backend, and for every violation or error its
// evidence and repro line. Every piece of text that came from a contract, an
// impl or a kernel goes through html_escape: a name like `<script>` is text.
#include <algorithm>
#include <string>
#include <string_view>

#include "kc/report.h"
#include "report/common.h"

namespace kc::report {

namespace {

using engine::CaseResult;
using engine::Verdict;

constexpr std::string_view kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; } h3 { font-size: 15px; margin: 18px 0 6px; }
.meta { color: #666; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #d0d0d0; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.scroll { overflow-x: auto; }
table.matrix th.col { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; font-weight: 600; }
table.matrix td { white-space: nowrap; text-align: center; font-size: 12px; }
table.matrix td a { color: inherit; text-decoration: none; }
.v-conforming { background: #d7f5dd; color: #14532d; }
.v-violation { background: #fbd5d5; color: #7f1d1d; font-weight: 600; }
.v-error { background: #fde2c8; color: #7c2d12; font-weight: 600; }
.v-under_specified { background: #fef3c7; color: #78350f; }
.v-not_applicable, .v-skipped { background: #f4f4f5; color: #71717a; }
.l-conforming { color: #15803d; font-weight: 600; } .l-violating, .l-error { color: #b91c1c; font-weight: 600; }
.l-incomplete { color: #a16207; font-weight: 600; } .l-untested { color: #71717a; }
.case { border-left: 4px solid #d0d0d0; padding: 2px 12px; margin: 12px 0; }
.case.v-violation, .case.v-error { background: none; font-weight: normal; color: inherit; }
.case.v-violation { border-color: #dc2626; } .case.v-error { border-color: #ea580c; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 6px 10px; white-space: pre-wrap; word-break: break-all; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 6px; border: 1px solid #d0d0d0; }
)css";

/// Text as HTML character data or a quoted attribute value: & < > " ' become
/// entities; control characters other than tab and newline (which no report
/// needs, and which a hostile name could carry) become U+FFFD.
std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (const char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n': out += ch; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) out += "\xEF\xBF\xBD";
        else out += ch;
    }
  }
  return out;
}

/// A CSS class suffix from a fixed kc word (verdict or level name): only
/// [a-z_] survive, so nothing outside kc's own tables reaches a class attribute.
std::string css_word(std::string_view s) {
  std::string out;
  for (const char ch : s)
    if ((ch >= 'a' && ch <= 'z') || ch == '_') out += ch;
  return out;
}

std::string verdict_class(Verdict v) { return "v-" + css_word(engine::verdict_name(v)); }

std::string td(std::string_view text) { return "<td>" + html_escape(text) + "</td>"; }

/// Anchor of the detail section of result.cases[i].
std::string case_anchor(std::size_t i) { return "case-" + std::to_string(i); }

bool has_details(const CaseResult& c) { return c.verdict == Verdict::kViolation || c.verdict == Verdict::kError; }

std::string matrix_cell(const CaseResult* c, const engine::CheckResult& result) {
  if (c == nullptr) return "<td></td>";
  std::string text(verdict_glyph(c->verdict));
  const std::string sig = signatures_text(*c);
  if (c->verdict == Verdict::kViolation && !sig.empty()) text += " " + sig;
  std::string inner = html_escape(text);
  if (has_details(*c)) {
    const std::size_t i = static_cast<std::size_t>(c - result.cases.data());
    inner = "<a href=\"#" + case_anchor(i) + "\">" + inner + "</a>";
  }
  return "<td class=\"" + verdict_class(c->verdict) + "\" title=\"" +
         html_escape(std::string(engine::verdict_name(c->verdict)) + (c->reason.empty() ? "" : ": " + c->reason)) +
         "\">" + inner + "</td>";
}

void render_matrix_section(const engine::CheckResult& result, std::string& out) {
  const Grid g = build_grid(result);
  if (g.impls.empty()) return;
  // Rows take the longer list (usually impls), as in the Markdown report, so
  // the grid grows down the page rather than off its side.
  const bool rows_are_impls = g.impls.size() > g.contracts.size();
  const auto& rows = rows_are_impls ? g.impls : g.contracts;
  const auto& cols = rows_are_impls ? g.contracts : g.impls;
  out += "<h2 id=\"matrix\">Conformance matrix</h2>\n<div class=\"scroll\"><table class=\"matrix\">\n<tr><th>";
  out += rows_are_impls ? "impl \\ contract" : "contract \\ impl";
  out += "</th>";
  for (const auto& c : cols) out += "<th class=\"col\">" + html_escape(c) + "</th>";
  out += "</tr>\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += "<tr><th>" + html_escape(rows[r]) + "</th>";
    for (std::size_t c = 0; c < cols.size(); ++c)
      out += matrix_cell(rows_are_impls ? g.at[c][r] : g.at[r][c], result);
    out += "</tr>\n";
  }
  out += "</table></div>\n<p class=\"legend\">";
  for (const Verdict v : {Verdict::kConforming, Verdict::kViolation, Verdict::kError, Verdict::kUnderSpecified,
                          Verdict::kNotApplicable, Verdict::kSkipped})
    out += "<span class=\"" + verdict_class(v) + "\">" + html_escape(verdict_glyph(v)) + " " +
           html_escape(engine::verdict_name(v)) + "</span>";
  out += "<br>A violation's cell names its signature and links to its evidence and repro below.</p>\n";
}

void render_grades_section(const engine::CheckResult& result, std::string& out) {
  const std::vector<ImplGrade> grades = grade(result);
  if (grades.empty()) return;
  out += "<h2 id=\"grades\">Grades</h2>\n<p>Levels are defined in docs/grading.md.</p>\n";
  out += "<table>\n<tr><th>impl</th><th>backend</th><th>level</th><th>tier</th><th>conforming</th><th>violation</th>"
         "<th>error</th><th>not_applicable</th><th>other</th><th>summary</th></tr>\n";
  for (const auto& x : grades) {
    out += "<tr>" + td(x.impl) + td(x.backend) + "<td class=\"l-" + css_word(x.level) + "\">" + html_escape(x.level) +
           "</td>" + td(x.tier) + td(std::to_string(x.conforming)) + td(std::to_string(x.violations)) +
           td(std::to_string(x.errors)) + td(std::to_string(x.not_applicable)) + td(std::to_string(x.other)) +
           td(x.summary) + "</tr>\n";
  }
  out += "</table>\n<table>\n<tr><th>backend</th><th>level</th><th>impls</th></tr>\n";
  for (const auto& b : grade_backends(grades))
    out += "<tr>" + td(b.backend) + "<td class=\"l-" + css_word(b.level) + "\">" + html_escape(b.level) + "</td>" +
           td(b.summary) + "</tr>\n";
  out += "</table>\n";
}

void render_case(const CaseResult& c, std::size_t index, std::string& out) {
  out += "<div class=\"case " + verdict_class(c.verdict) + "\" id=\"" + case_anchor(index) + "\">\n<h3>" +
         html_escape(c.contract_id) + " × " + html_escape(c.impl) + " — " +
         html_escape(engine::verdict_name(c.verdict)) + "</h3>\n<ul>\n";
  if (const std::string sig = signatures_text(c); !sig.empty())
    out += "<li>signature: <code>" + html_escape(sig) + "</code>" +
           (c.signature_expected ? " (listed by the contract)" : "") + "</li>\n";
  out += "<li>backend: " + html_escape(c.backend) +
         (c.backend_version.empty() ? "" : " " + html_escape(c.backend_version)) + "</li>\n";
  if (!c.reason.empty()) out += "<li>reason: " + html_escape(reason_without_signature(c)) + "</li>\n";
  // The evidence lines every other renderer prints (statistics, notes, worst
  // element, seed and input hash), from the one shared helper.
  for (const auto& d : case_details(c)) {
    if (d.rfind("repro: ", 0) == 0) continue;
    out += "<li>" + html_escape(d.rfind("- ", 0) == 0 ? d.substr(2) : d) + "</li>\n";
  }
  if (!c.evidence.method.empty()) out += "<li>method: " + html_escape(c.evidence.method) + "</li>\n";
  out += "</ul>\n";
  if (!c.evidence.per_config.empty()) {
    out += "<table>\n<tr><th>config</th><th>max</th><th>p99</th><th>mean</th><th>failed</th><th>note</th></tr>\n";
    for (const auto& pc : c.evidence.per_config)
      out += "<tr>" + td(pc.config) + td(short_number(pc.max)) + td(short_number(pc.p99)) + td(short_number(pc.mean)) +
             td(std::to_string(pc.failures) + " of " + std::to_string(pc.elements)) + td(pc.note) + "</tr>\n";
    out += "</table>\n";
  }
  if (!c.repro.empty()) out += "<p>repro:</p>\n<pre><code>" + html_escape(c.repro) + "</code></pre>\n";
  out += "</div>\n";
}

}  // namespace

std::string render_html(const engine::CheckResult& result) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>kc conformance report</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n<h1>kc conformance report</h1>\n";
  out += "<p><strong>" + html_escape(summary_line(count_verdicts(result))) + "</strong></p>\n";
  out += "<p class=\"meta\">kc " + html_escape(kKcVersion) + " · " + html_escape(utc_timestamp()) + " · host " +
         html_escape(host_name()) + "</p>\n";

  if (!result.diagnostics.empty()) {
    out += "<h2 id=\"diagnostics\">Diagnostics</h2>\n<pre>";
    for (const auto& d : result.diagnostics) {
      std::string r = d.render();
      if (r.empty() || r.back() != '\n') r += '\n';
      out += html_escape(r);
    }
    out += "</pre>\n";
  }

  render_matrix_section(result, out);
  render_grades_section(result, out);

  if (!result.backends.empty()) {
    out += "<h2 id=\"backends\">Backends</h2>\n<table>\n<tr><th>backend</th><th>available</th><th>version</th>"
           "<th>where / why not</th></tr>\n";
    for (const auto& b : result.backends)
      out += "<tr>" + td(b.name) + "<td class=\"" + std::string(b.available ? "v-conforming" : "v-skipped") + "\">" +
             (b.available ? "yes" : "no") + "</td>" + td(b.version) + td(b.reason) + "</tr>\n";
    out += "</table>\n";
  }

  bool header = false;
  for (std::size_t i = 0; i < result.cases.size(); ++i) {
    const CaseResult& c = result.cases[i];
    if (!has_details(c)) continue;
    if (!header) {
      out += "<h2 id=\"violations\">Violations and errors</h2>\n";
      header = true;
    }
    render_case(c, i, out);
  }
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace kc::report
