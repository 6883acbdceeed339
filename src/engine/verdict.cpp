#include <array>

#include "kc/engine.h"

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

int CheckResult::exit_code() const {
  for (const auto& d : diagnostics)
    if (d.severity == lang::Diagnostic::Severity::kError) return 2;
  for (const auto& c : cases)
    if (c.verdict == Verdict::kViolation || c.verdict == Verdict::kError) return 1;
  return 0;
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
  // Op classes of the paper's taxonomy map onto the ops kc knows; an op name maps to itself.
  if (scope_entry == "reduction") return {"sum", "asum", "nrm2", "dot"};
  if (scope_entry == "elementwise")
    return {"scal", "relu", "gelu_erf", "gelu_tanh", "silu", "exp", "log", "tanh", "erf"};
  if (scope_entry == "collective") return {"all_reduce", "reduce_scatter", "all_gather"};
  if (scope_entry == "indexing") return {"gather", "index_select", "embedding", "scatter_add"};
  if (scope_entry == "fused_attention") return {"attention"};
  return {scope_entry};
}

}  // namespace kc::engine
