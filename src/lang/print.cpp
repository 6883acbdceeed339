// kc — canonical printing (.kc), diagnostics rendering, lint, and the small
// model functions that depend on the printer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>

#include "kc/lang.h"
#include "lang/clauses.h"
#include "lang/source.h"

namespace kc {

std::string Signature::to_string() const {
  if (args.empty()) return name;
  return name + "(" + lang::detail::join(args, ", ") + ")";
}

std::string LatencyAcross::to_string() const {
  std::string s = size +
                  (absolute    ? " = "
                   : value < 0 ? " - "
                               : " + ") +
                  std::to_string(value < 0 && !absolute ? -value : value);
  if (beyond != 1) s += " beyond " + lang::detail::format_number(beyond);
  return s;
}

bool Contract::executable() const {
  for (const ClauseInfo* c : {&scope_info, &pre_info, &post_info, &tolerance_info, &reference_info, &measure_info,
                              &violation_info})
    if (!c->present || !c->gap.empty()) return false;
  return true;
}

namespace lang {
namespace {

constexpr int kKeywordWidth = 10;  // clause bodies line up after the longest keyword

void print_comment(std::ostringstream& out, const std::string& comment, const std::string& indent) {
  if (comment.empty()) return;
  std::istringstream in(comment);
  std::string line;
  while (std::getline(in, line)) out << indent << "--" << (line.empty() ? "" : " ") << line << "\n";
}

void print_entry(std::ostringstream& out, const std::string& keyword, const std::vector<std::string>& given) {
  std::string pad(static_cast<std::size_t>(std::max<int>(1, kKeywordWidth - static_cast<int>(keyword.size()) + 1)), ' ');
  // A line break inside a clause's text (prose kept from YAML, say) becomes a
  // continuation line, indented under the clause, never a line of its own
  // that the parser would read as a new entry.
  std::vector<std::string> lines;
  for (const std::string& g : given) {
    std::size_t from = 0;
    for (;;) {
      const std::size_t nl = g.find('\n', from);
      std::string piece = g.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
      if (!piece.empty() && piece.back() == '\r') piece.pop_back();
      if (piece.find_first_not_of(" \t") != std::string::npos || lines.empty()) lines.push_back(piece);
      if (nl == std::string::npos) break;
      from = nl + 1;
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i == 0) out << "  " << keyword << pad << lines[i] << "\n";
    else out << std::string(2 + keyword.size() + pad.size(), ' ') << lines[i] << "\n";
  }
}

std::string contract_text(const Contract& c, bool with_comments) {
  std::ostringstream out;
  if (with_comments) print_comment(out, c.comment, "");
  out << "contract " << c.id << " {\n";
  for (const auto& key : detail::contract_meta_keywords()) {
    auto it = c.meta.find(key);
    if (it == c.meta.end()) continue;
    // A retest line has its own grammar (kc/retest.h) and reads back unquoted.
    const bool plain = key == "retest" || (key != "title" && detail::valid_plain_name(it->second));
    print_entry(out, key, {plain ? it->second : detail::quote(it->second)});
  }
  if (!c.depends.empty()) {
    std::string ids;
    for (const auto& id : c.depends) ids += (ids.empty() ? "" : ", ") + id;
    print_entry(out, "depends", {ids});
  }
  // Extra meta keys (YAML may carry them) would be lost silently; there are none by construction.
  const ClauseInfo* infos[] = {&c.scope_info, &c.pre_info, &c.post_info, &c.tolerance_info,
                               &c.reference_info, &c.measure_info, &c.violation_info};
  const auto& keys = detail::contract_clause_keywords();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!infos[i]->present) continue;
    if (with_comments) print_comment(out, infos[i]->comment, "  ");
    print_entry(out, keys[i], detail::print_clause(keys[i], c));
  }
  out << "}\n";
  return out.str();
}

}  // namespace

namespace detail {
std::string contract_text_for_hash(const Contract& c) { return contract_text(c, false); }
}  // namespace detail

std::string print_contract_kc(const Contract& contract) { return contract_text(contract, true); }

std::string print_kc(const Document& doc) {
  std::ostringstream out;
  bool first = true;
  auto sep = [&] {
    if (!first) out << "\n";
    first = false;
  };
  for (const auto& c : doc.contracts) {
    sep();
    out << print_contract_kc(c);
  }
  for (std::size_t i = 0; i < doc.impls.size(); ++i) {
    sep();
    if (i < doc.impl_comments.size()) print_comment(out, doc.impl_comments[i], "");
    out << "impl " << doc.impls[i].name << " {\n";
    for (const auto& [k, v] : detail::print_impl(doc.impls[i])) print_entry(out, k, {v});
    out << "}\n";
  }
  for (const auto& cal : doc.calibrations) {
    sep();
    print_comment(out, cal.comment, "");
    out << "calibration " << cal.contract << " {\n";
    if (!cal.baseline.empty()) print_entry(out, "baseline", {cal.baseline});
    if (!cal.bad.empty()) print_entry(out, "bad", {cal.bad});
    if (!cal.good.empty()) print_entry(out, "good", {cal.good});
    if (!cal.visible.empty()) print_entry(out, "visible", {detail::quote(cal.visible)});
    out << "}\n";
  }
  for (const auto& s : doc.suites) {
    sep();
    print_comment(out, s.comment, "");
    out << "suite " << s.name << " {\n";
    print_entry(out, "tier", {s.tier});
    if (!s.contracts.empty()) print_entry(out, "contracts", {detail::join(s.contracts, ", ")});
    if (!s.impls.empty()) print_entry(out, "impls", {detail::join(s.impls, ", ")});
    out << "}\n";
  }
  if (!doc.trailing_comment.empty()) {
    sep();
    print_comment(out, doc.trailing_comment, "");
  }
  return out.str();
}

std::string Diagnostic::render() const {
  std::ostringstream out;
  const char* sev = severity == Severity::kError ? "error" : severity == Severity::kWarning ? "warning" : "note";
  out << (loc.file.empty() ? "<input>" : loc.file);
  if (loc.line > 0) out << ":" << loc.line << ":" << std::max(1, loc.column);
  out << ": " << sev << ": " << message << "\n";
  if (!line_text.empty()) {
    out << "  " << line_text << "\n";
    std::string caret;
    for (int i = 1; i < loc.column && static_cast<std::size_t>(i - 1) < line_text.size(); ++i)
      caret += line_text[static_cast<std::size_t>(i - 1)] == '\t' ? '\t' : ' ';
    out << "  " << caret << "^\n";
  }
  if (!expected.empty() || !suggestion.empty()) {
    out << "  ";
    if (!expected.empty()) out << "expected " << expected;
    if (!suggestion.empty()) out << (expected.empty() ? "" : "; ") << "did you mean '" << suggestion << "'?";
    out << "\n";
  }
  return out.str();
}

bool ParseResult::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::kError; });
}

std::vector<LintFinding> lint(const Document& doc) {
  std::vector<LintFinding> out;
  static const char* kExamples[] = {
      "scope      matmul",
      "pre        precision(A, B, C) in {FP32}",
      "post       output C satisfies elementwise_close(C, ref(C))",
      "tolerance  relative 1e-5",
      "reference  higher_precision FP64",
      "measure    sample 100 random inputs per config; compute max rel_error; pass if <= 1",
      "violation  \"what a violation looks like\" signature NAME(args)",
  };
  for (const Contract& c : doc.contracts) {
    const ClauseInfo* infos[] = {&c.scope_info, &c.pre_info, &c.post_info, &c.tolerance_info,
                                 &c.reference_info, &c.measure_info, &c.violation_info};
    const auto& keys = detail::contract_clause_keywords();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      LintFinding f;
      f.contract = c.id;
      f.clause = keys[i];
      if (!infos[i]->present) {
        f.loc = c.loc;
        f.message = "missing " + keys[i] + " clause; e.g. '" + kExamples[i] + "'";
      } else if (!infos[i]->gap.empty()) {
        // At the place the gap is (the word a form stopped at), else at the keyword.
        f.loc = infos[i]->gap_loc.line > 0 ? infos[i]->gap_loc : infos[i]->loc;
        if (f.loc.file.empty()) f.loc.file = infos[i]->loc.file;
        f.message = infos[i]->gap;
      } else {
        continue;
      }
      out.push_back(std::move(f));
    }
  }
  // At most kMaxDiagnosticsPerFile findings per file, then one that says how
  // many more there are (at the first one left out).
  std::map<std::string, std::size_t> per_file;
  std::map<std::string, std::size_t> summary_at;  // file -> index of its "more" finding in capped
  std::vector<LintFinding> capped;
  for (LintFinding& f : out) {
    const std::size_t n = ++per_file[f.loc.file];
    if (n <= detail::kMaxDiagnosticsPerFile) {
      capped.push_back(std::move(f));
    } else if (n == detail::kMaxDiagnosticsPerFile + 1) {
      summary_at[f.loc.file] = capped.size();
      capped.push_back(std::move(f));
    }
  }
  for (const auto& [file, i] : summary_at) {
    const std::size_t more = per_file[file] - detail::kMaxDiagnosticsPerFile;
    capped[i].message = std::to_string(more) + " more finding" + (more == 1 ? "" : "s") + " in this file not shown";
  }
  return capped;
}

}  // namespace lang

std::string Contract::content_hash() const {
  // FNV-1a over the canonical form without comments: comments do not change what is promised.
  const std::string text = lang::detail::contract_text_for_hash(*this);
  std::uint64_t h1 = 1469598103934665603ull, h2 = 0x84222325cbf29ce4ull;
  for (unsigned char ch : text) {
    h1 = (h1 ^ ch) * 1099511628211ull;
    h2 = (h2 ^ ch) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

}  // namespace kc
