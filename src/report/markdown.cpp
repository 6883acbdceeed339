// Markdown report: summary, matrix, grades, violation details.
#include <algorithm>

#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

namespace {

using engine::CaseResult;
using engine::Verdict;

// A table cell: pipes escaped, newlines flattened, HTML-significant < > & escaped
// so a kernel's output text cannot inject markup.
std::string md_cell(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '|':
        out += "\\|";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '`':
        out += "\\`";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// Code span that survives backticks in the text.
std::string md_code(std::string_view s) {
  std::size_t run = 0, longest = 0;
  for (char ch : s) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  std::string flat(s);
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  return fence + " " + flat + " " + fence;
}

std::string cell_text(const CaseResult* c) {
  if (c == nullptr) return "";
  switch (c->verdict) {
    case Verdict::kConforming:
      return "✓";
    case Verdict::kViolation: {
      const std::string sig = signatures_text(*c);
      return "✗" + (sig.empty() ? std::string() : " " + md_cell(sig));
    }
    case Verdict::kError:
      return "error";
    case Verdict::kUnderSpecified:
      return "under_specified";
    case Verdict::kSkipped:
      return "skip";
    case Verdict::kNotApplicable:
      return "–";
  }
  return "";
}

}  // namespace

std::string render_markdown(const engine::CheckResult& result) {
  std::string out = "# kc conformance report\n\n";
  out += "**" + summary_line(count_verdicts(result)) + "** (kc " + std::string(kKcVersion) + ", " + utc_timestamp() +
         ")\n";

  if (!result.diagnostics.empty()) {
    out += "\n## Diagnostics\n\n```\n";
    for (const auto& d : result.diagnostics) {
      std::string r = d.render();
      out += r;
      if (r.empty() || r.back() != '\n') out += '\n';
    }
    out += "```\n";
  }

  const Grid g = build_grid(result);
  if (!g.impls.empty()) {
    // Rows take the longer list so the table stays narrow.
    const bool rows_are_impls = g.impls.size() > g.contracts.size();
    const auto& rows = rows_are_impls ? g.impls : g.contracts;
    const auto& cols = rows_are_impls ? g.contracts : g.impls;
    out += "\n## Matrix\n\n| " + std::string(rows_are_impls ? "impl \\ contract" : "contract \\ impl") + " |";
    for (const auto& c : cols) out += " " + md_cell(c) + " |";
    out += "\n|---|";
    for (std::size_t i = 0; i < cols.size(); ++i) out += "---|";
    out += "\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
      out += "| " + md_cell(rows[r]) + " |";
      for (std::size_t c = 0; c < cols.size(); ++c)
        out += " " + cell_text(rows_are_impls ? g.at[c][r] : g.at[r][c]) + " |";
      out += "\n";
    }
    out += "\n✓ conforming · ✗ violation (signature) · – not_applicable · skip: backend unavailable\n";
  }

  const std::vector<ImplGrade> grades = grade(result);
  if (!grades.empty()) {
    out += "\n## Grades\n\nLevels are defined in docs/grading.md.\n\n";
    out += "| impl | backend | level | tier | conforming | violation | error | not_applicable | other | summary |\n";
    out += "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& x : grades) {
      out += "| " + md_cell(x.impl) + " | " + md_cell(x.backend) + " | **" + x.level + "** | " + x.tier + " | " +
             std::to_string(x.conforming) + " | " + std::to_string(x.violations) + " | " + std::to_string(x.errors) +
             " | " + std::to_string(x.not_applicable) + " | " + std::to_string(x.other) + " | " + md_cell(x.summary) +
             " |\n";
    }
    out += "\n| backend | level | impls |\n|---|---|---|\n";
    for (const auto& b : grade_backends(grades))
      out += "| " + md_cell(b.backend) + " | **" + b.level + "** | " + md_cell(b.summary) + " |\n";
  }

  bool header = false;
  for (const auto& c : result.cases) {
    if (c.verdict != Verdict::kViolation && c.verdict != Verdict::kError) continue;
    if (!header) {
      out += "\n## Violations and errors\n";
      header = true;
    }
    out += "\n### " + md_cell(c.contract_id) + " × " + md_cell(c.impl) + " — " +
           std::string(engine::verdict_name(c.verdict)) + "\n\n";
    if (const std::string sig = signatures_text(c); !sig.empty())
      out += "- signature: " + md_code(sig) + (c.signature_expected ? " (listed by the contract)" : "") + "\n";
    if (!c.reason.empty()) out += "- reason: " + md_cell(c.reason) + "\n";
    for (const auto& d : case_details(c)) {
      if (d.rfind("repro: ", 0) == 0) continue;
      out += "- " + md_cell(d.rfind("- ", 0) == 0 ? d.substr(2) : d) + "\n";
    }
    if (!c.repro.empty()) out += "\nrepro:\n\n```sh\n" + c.repro + "\n```\n";
  }
  return out;
}

}  // namespace kc::report
