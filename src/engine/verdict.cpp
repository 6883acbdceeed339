#include <array>
#include <map>

#include "engine/select.h"
#include "kc/engine.h"
#include "kc/exit_code.h"
#include "kc/op.h"

namespace kc::engine {

namespace {
constexpr std::array<EnumEntry<Verdict>, 6> kVerdicts{{
    {Verdict::kConforming, "conforming", "every measured case met the contract"},
    {Verdict::kViolation, "violation", "a measured case broke the contract"},
    {Verdict::kUnderSpecified, "under_specified", "the contract or declaration is not executable"},
    {Verdict::kNotApplicable, "not_applicable", "the contract's scope or preconditions exclude the impl"},
    {Verdict::kError, "error", "the impl crashed, hung or failed unexpectedly"},
    {Verdict::kSkipped, "skipped", "the backend is unavailable on this machine"},
}};
}  // namespace

std::span<const EnumEntry<Verdict>> verdict_table() { return kVerdicts; }

std::size_t CheckResult::judged() const {
  std::size_t n = 0;
  for (const auto& c : cases)
    n += c.verdict == Verdict::kConforming || c.verdict == Verdict::kViolation || c.verdict == Verdict::kError;
  return n;
}

std::string CheckResult::nothing_judged() const {
  if (judged() > 0) return {};
  std::map<Verdict, std::size_t> counts;
  for (const auto& c : cases) ++counts[c.verdict];
  std::string out = "no case was judged: 0 of " + std::to_string(cases.size()) + " cases";
  std::string parts;
  for (const auto& [v, n] : counts) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(verdict_name(v));
  if (!parts.empty()) out += " (" + parts + ")";
  // The first case's reason says why, e.g. why the contract is not applicable.
  if (!cases.empty()) out += "; " + cases.front().contract_id + " x " + cases.front().impl + ": " + cases.front().reason;
  return out;
}

int CheckResult::exit_code() const {
  if (!write_errors.empty()) return exit_value(ExitCode::kInternal);
  if (any_error(diagnostics)) return exit_value(ExitCode::kUsage);
  if (interrupted) return exit_value(ExitCode::kInterrupted);
  for (const auto& c : cases)
    if (c.verdict == Verdict::kViolation || c.verdict == Verdict::kError) return exit_value(ExitCode::kViolation);
  if (!allow_empty && judged() == 0) return exit_value(ExitCode::kNothingJudged);
  return exit_value(ExitCode::kOk);
}

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative wildcard match with single-star backtracking.
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::vector<std::string> ops_for_scope(const std::string& scope_entry) {
  // An op name maps to itself; a scope class (reduction, elementwise, ...) to
  // every registered op that names it (Op::scope_classes), in registry order.
  std::vector<std::string> ops;
  for (const Op* op : builtin_ops().all()) {
    if (op->name() == scope_entry) return {scope_entry};
    for (const std::string& c : op->scope_classes())
      if (c == scope_entry) ops.emplace_back(op->name());
  }
  if (ops.empty()) return {scope_entry};
  return ops;
}

}  // namespace kc::engine
