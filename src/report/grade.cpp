// Grades (docs/grading.md) and the conformance matrix.
#include <algorithm>
#include <map>

#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

namespace {

using engine::CaseResult;
using engine::Verdict;

// Level names and their order, worst first. The roll-up of a backend is the
// worst level among its impls; "untested" ranks lowest so one impl that
// nothing applies to does not hide what its siblings showed.
struct LevelInfo {
  std::string_view name;
  int rank;
  std::string_view ansi;
};
constexpr LevelInfo kLevels[] = {
    {"violating", 4, "\033[31m"},  {"error", 3, "\033[31m"},    {"incomplete", 2, "\033[33m"},
    {"conforming", 1, "\033[32m"}, {"untested", 0, "\033[90m"},
};

const LevelInfo& level_info(std::string_view name) {
  for (const auto& l : kLevels)
    if (l.name == name) return l;
  return kLevels[4];
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace

std::vector<ImplGrade> grade(const engine::CheckResult& result) {
  std::vector<ImplGrade> grades;
  std::map<std::string, std::vector<const CaseResult*>> by_impl;
  for (const auto& c : result.cases) {
    auto& list = by_impl[c.impl];
    if (list.empty()) {
      grades.push_back({});
      grades.back().impl = c.impl;
      grades.back().backend = c.backend;
    }
    list.push_back(&c);
  }
  for (ImplGrade& g : grades) {
    std::vector<std::string> violated, errored, open;
    std::map<std::string, int> shown;  // conforming contracts per coverage tag
    for (const CaseResult* c : by_impl[g.impl]) {
      switch (c->verdict) {
        case Verdict::kConforming:
          ++g.conforming;
          for (const auto& tag : c->covers) ++shown[tag];
          break;
        case Verdict::kNotApplicable:
          ++g.not_applicable;
          break;
        case Verdict::kViolation: {
          ++g.violations;
          const std::string sig = signatures_text(*c);
          violated.push_back(c->contract_id + (sig.empty() ? "" : " [" + sig + "]"));
          break;
        }
        case Verdict::kError:
          ++g.errors;
          errored.push_back(c->contract_id);
          break;
        case Verdict::kUnderSpecified:
        case Verdict::kSkipped:
          ++g.other;
          open.push_back(c->contract_id + " (" + std::string(engine::verdict_name(c->verdict)) + ")");
          break;
      }
    }
    const int applicable = g.conforming + g.violations + g.errors + g.other;
    if (g.violations > 0) {
      g.level = "violating";
      g.summary = "violates " + join(violated, ", ");
      if (g.errors > 0) g.summary += "; error on " + join(errored, ", ");
    } else if (g.errors > 0) {
      g.level = "error";
      g.summary = "error on " + join(errored, ", ") + " (kc could not judge it)";
    } else if (g.conforming == 0) {
      g.level = "untested";
      g.summary = applicable == 0 ? "no applicable contract" : "nothing measured: " + join(open, ", ");
    } else if (g.other > 0) {
      g.level = "incomplete";
      g.summary = std::to_string(g.conforming) + " of " + std::to_string(applicable) +
                  " applicable contracts conforming; not measured: " + join(open, ", ");
    } else {
      g.level = "conforming";
      g.summary = "all " + std::to_string(g.conforming) + " applicable contract" + (g.conforming == 1 ? "" : "s") +
                  " conforming";
    }
    // Tiers: each step needs the one below and no violation or error.
    g.tier = "declared";
    if ((g.level == "conforming" || g.level == "incomplete") && g.conforming > 0) {
      g.tier = "numeric";
      if (g.level == "conforming" && shown["exceptional"] > 0 && shown["held_out_shapes"] > 0) g.tier = "robust";
    }
  }
  return grades;
}

std::vector<BackendGrade> grade_backends(const std::vector<ImplGrade>& impls) {
  std::vector<BackendGrade> out;
  std::map<std::string, std::map<std::string, int>> level_counts;
  for (const ImplGrade& g : impls) {
    auto it = std::find_if(out.begin(), out.end(), [&](const BackendGrade& b) { return b.backend == g.backend; });
    if (it == out.end()) {
      out.push_back({g.backend, g.level, 0, ""});
      it = out.end() - 1;
    }
    ++it->impls;
    ++level_counts[g.backend][g.level];
    if (level_info(g.level).rank > level_info(it->level).rank) it->level = g.level;
  }
  for (BackendGrade& b : out) {
    std::vector<std::string> parts;
    for (const auto& l : kLevels)
      if (int n = level_counts[b.backend][std::string(l.name)]; n > 0)
        parts.push_back(std::to_string(n) + " " + std::string(l.name));
    b.summary = std::to_string(b.impls) + (b.impls == 1 ? " impl: " : " impls: ") + join(parts, ", ");
  }
  return out;
}

std::string render_matrix(const engine::CheckResult& result, bool color) {
  constexpr std::size_t kWidth = 100;
  const Grid g = build_grid(result);
  std::string out;
  out += "Conformance matrix: " + std::to_string(g.contracts.size()) + " contracts × " +
         std::to_string(g.impls.size()) + " impls\n";
  if (g.impls.empty()) {
    out += "  (no cases)\n";
  } else {
    // Long names go down the side; the shorter list becomes numbered columns.
    const bool rows_are_impls = g.impls.size() > g.contracts.size();
    const auto& rows = rows_are_impls ? g.impls : g.contracts;
    const auto& cols = rows_are_impls ? g.contracts : g.impls;
    const auto cell = [&](std::size_t r, std::size_t c) { return rows_are_impls ? g.at[c][r] : g.at[r][c]; };
    out += std::string("  ✓ conforming  ✗ violation  E error  ? under_specified  s skipped  – not_applicable\n");
    const std::string lead = std::string("  columns (") + (rows_are_impls ? "contracts" : "impls") + "):";
    out += lead;
    std::size_t line_len = display_width(lead);
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const std::string key = " " + std::to_string(c + 1) + "=" + cols[c];
      if (line_len + display_width(key) > kWidth) {
        out += "\n   ";
        line_len = 3;
      }
      out += key;
      line_len += display_width(key);
    }
    out += "\n";

    std::size_t label_w = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      label_w = std::max(label_w, display_width(rows[r]));
    }
    label_w = std::min<std::size_t>(label_w, 60);
    const std::size_t col_w = std::max<std::size_t>(3, std::to_string(cols.size()).size() + 1);
    const std::size_t per_block = std::max<std::size_t>(1, (kWidth - 4 - label_w) / col_w);
    for (std::size_t first = 0; first < cols.size(); first += per_block) {
      const std::size_t last = std::min(cols.size(), first + per_block);
      std::string head = "\n  " + std::string(label_w + 2, ' ');
      for (std::size_t c = first; c < last; ++c) head += pad_right(std::to_string(c + 1), col_w);
      while (head.back() == ' ') head.pop_back();
      out += head + "\n";
      for (std::size_t r = 0; r < rows.size(); ++r) {
        std::string line = "  " + pad_right(truncate_to_width(rows[r], label_w), label_w) + "  ";
        for (std::size_t c = first; c < last; ++c) {
          const CaseResult* x = cell(r, c);
          if (x == nullptr) {
            line += std::string(col_w, ' ');
            continue;
          }
          line += colorize(verdict_glyph(x->verdict), verdict_color(x->verdict), color);
          line += std::string(col_w - 1, ' ');
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
      }
    }
  }

  // Every violation and error named, with its signatures.
  bool header = false;
  for (const auto& c : result.cases) {
    if (c.verdict != Verdict::kViolation && c.verdict != Verdict::kError) continue;
    if (!header) {
      out += "\nviolations and errors:\n";
      header = true;
    }
    std::string what = c.verdict == Verdict::kViolation
                           ? (c.signatures.empty() ? std::string("(no recognised signature)") : signatures_text(c))
                           : "error: " + c.reason;
    out += "  " + colorize(verdict_glyph(c.verdict), verdict_color(c.verdict), color) + " " + c.contract_id + " × " +
           c.impl + ": " + truncate_to_width(what, 160) + "\n";
  }

  const std::vector<ImplGrade> grades = grade(result);
  if (!grades.empty()) {
    std::size_t iw = 4, bw = 7;
    for (const auto& x : grades) {
      iw = std::max(iw, display_width(x.impl));
      bw = std::max(bw, display_width(x.backend));
    }
    iw = std::min<std::size_t>(iw, 48);
    out += "\ngrade per impl (docs/grading.md: level, then tier = what it has shown):\n";
    for (const auto& x : grades) {
      const LevelInfo& l = level_info(x.level);
      const std::size_t used = 2 + iw + 2 + bw + 2 + 12 + 10;
      out += "  " + pad_right(truncate_to_width(x.impl, iw), iw) + "  " + pad_right(x.backend, bw) + "  " +
             colorize(pad_right(x.level, 10), l.ansi, color) + "  " + pad_right(x.tier, 8) + "  " +
             truncate_to_width(x.summary, used < kWidth ? std::max<std::size_t>(kWidth - used, 30) : 30) + "\n";
    }
    out += "\ngrade per backend:\n";
    for (const auto& b : grade_backends(grades)) {
      out += "  " + pad_right(b.backend, std::max(bw, iw)) + "  " +
             colorize(pad_right(b.level, 10), level_info(b.level).ansi, color) + "  " + b.summary + "\n";
    }
  }
  out += "\n" + summary_line(count_verdicts(result)) + "\n";
  return out;
}

}  // namespace kc::report
