// The terminal report: diagnostics, one row per case, the evidence of each
// violation and error, and a summary line.
#include <algorithm>
#include <array>
#include <utility>

#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

namespace {

using engine::CaseResult;
using engine::Verdict;

constexpr std::size_t kWidth = 100;

std::string max_cell(const CaseResult& c) {
  const engine::Evidence& e = c.evidence;
  if (e.elements == 0 && e.max == 0) return "-";
  return short_number(e.max) + (e.metric.empty() ? "" : " " + e.metric);
}

}  // namespace

std::string render_table(const engine::CheckResult& result, bool color) {
  std::string out;
  for (const auto& d : result.diagnostics) {
    out += d.render();
    if (out.empty() || out.back() != '\n') out += '\n';
  }
  if (!result.diagnostics.empty()) out += '\n';

  // Not-applicable pairs are most of a cross product; they are counted in the
  // summary and shown by the matrix, not listed here.
  std::vector<const CaseResult*> rows;
  for (const auto& c : result.cases)
    if (c.verdict != Verdict::kNotApplicable) rows.push_back(&c);

  const std::vector<std::string> header = {"contract", "impl", "verdict", "signature", "max", "reason"};
  std::vector<std::vector<std::string>> cells;
  for (const CaseResult* c : rows) {
    std::string sig = signatures_text(*c);
    cells.push_back({c->contract_id, c->impl, std::string(engine::verdict_name(c->verdict)), sig.empty() ? "-" : sig,
                     max_cell(*c), reason_without_signature(*c)});
  }
  // Column widths: the data's, capped so a row fits kWidth with at least 24
  // columns left for the reason.
  constexpr std::size_t kCaps[] = {20, 36, 15, 28, 22};
  std::array<std::size_t, 5> w{};
  for (std::size_t i = 0; i < 5; ++i) {
    w[i] = display_width(header[i]);
    for (const auto& r : cells) w[i] = std::max(w[i], display_width(r[i]));
    w[i] = std::min(w[i], kCaps[i]);
  }
  // Too wide for kWidth: narrow the signature, max, impl and contract columns
  // (in that order, each to a floor) until the reason keeps kMinReason columns.
  constexpr std::size_t kMinReason = 18;
  const auto used = [&] {
    std::size_t u = 0;
    for (std::size_t x : w) u += x + 2;
    return u;
  };
  constexpr std::pair<std::size_t, std::size_t> kShrink[] = {{3, 14}, {4, 10}, {1, 24}, {0, 12}};
  for (const auto& [col, floor] : kShrink) {
    while (used() + kMinReason > kWidth && w[col] > floor) --w[col];
  }
  const std::size_t reason_w = used() + kMinReason <= kWidth ? kWidth - used() : kMinReason;

  if (!rows.empty()) {
    std::string line;
    for (std::size_t i = 0; i < 5; ++i) line += pad_right(header[i], w[i]) + "  ";
    out += line + header[5] + "\n";
    for (std::size_t r = 0; r < rows.size(); ++r) {
      line.clear();
      for (std::size_t i = 0; i < 5; ++i) {
        std::string text = pad_right(truncate_to_width(cells[r][i], w[i]), w[i]);
        if (i == 2) text = colorize(text, verdict_color(rows[r]->verdict), color);
        line += text + "  ";
      }
      out += line + truncate_to_width(cells[r][5], reason_w) + "\n";
    }
  }
  const std::size_t hidden = result.cases.size() - rows.size();
  if (hidden > 0)
    out += "(" + std::to_string(hidden) + " not_applicable pairs not listed; `kc grade` shows the matrix)\n";

  // Evidence for each violation and error.
  for (const CaseResult* c : rows) {
    if (c->verdict != Verdict::kViolation && c->verdict != Verdict::kError) continue;
    std::string title = std::string(engine::verdict_name(c->verdict)) + " " + c->contract_id + " × " + c->impl;
    if (const std::string sig = signatures_text(*c); !sig.empty()) {
      title += ": " + sig;
      if (c->signature_expected) title += " (listed by the contract)";
    }
    out += "\n" + colorize(title, verdict_color(c->verdict), color) + "\n";
    // The reason, unless the signature title and the notes below already say it.
    const std::string reason = reason_without_signature(*c);
    bool in_notes = false;
    for (const auto& n : c->evidence.notes) in_notes = in_notes || n == reason;
    if (!reason.empty() && !in_notes) out += "  " + reason + "\n";
    for (const auto& d : case_details(*c)) out += "  " + d + "\n";
  }

  out += "\n" + summary_line(count_verdicts(result)) + "\n";
  return out;
}

}  // namespace kc::report
