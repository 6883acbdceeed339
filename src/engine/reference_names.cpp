// kc — lint checks of reference names against the engine's tables (kc/lint.h).
#include <algorithm>
#include <fstream>
#include <map>

#include "kc/engine.h"
#include "kc/lint.h"
#include "kc/obligation.h"
#include "kc/oracles.h"
#include "kc/vocabulary.h"

namespace kc::engine {
namespace {

/// The lines of a file, read once per lint.
const std::vector<std::string>& lines_of(const std::string& file, std::map<std::string, std::vector<std::string>>* cache) {
  auto it = cache->find(file);
  if (it != cache->end()) return it->second;
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return cache->emplace(file, std::move(lines)).first->second;
}

/// An error at `name` in the reference clause that starts at `loc`.
lang::Diagnostic at_name(const SourceLoc& loc, const std::string& name, const std::vector<std::string>& lines) {
  lang::Diagnostic d;
  d.loc = loc;
  // The name is on the clause's first line or a continuation line below it.
  for (int l = std::max(1, loc.line); l <= loc.line + 6 && l <= static_cast<int>(lines.size()); ++l) {
    const std::string& text = lines[static_cast<std::size_t>(l - 1)];
    const std::size_t at = text.find(name, l == loc.line ? static_cast<std::size_t>(std::max(0, loc.column - 1)) : 0);
    if (at == std::string::npos) continue;
    d.loc.line = l;
    d.loc.column = static_cast<int>(at) + 1;
    d.line_text = text;
    return d;
  }
  if (loc.line >= 1 && loc.line <= static_cast<int>(lines.size())) d.line_text = lines[static_cast<std::size_t>(loc.line - 1)];
  return d;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::vector<lang::Diagnostic> check_reference_names(const std::vector<Contract>& contracts,
                                                    const std::vector<std::string>& files) {
  std::vector<lang::Diagnostic> out;
  std::map<std::string, std::vector<std::string>> cache;
  for (std::size_t i = 0; i < contracts.size(); ++i) {
    const Contract& c = contracts[i];
    const Reference& r = c.reference;
    if (!c.reference_info.gap.empty()) continue;  // prose: names nothing
    std::vector<std::string> ops;
    for (const auto& s : c.scope)
      for (const auto& o : ops_for_scope(s)) ops.push_back(o);
    const std::string file = i < files.size() ? files[i] : c.reference_info.loc.file;
    auto error = [&](std::string message, std::string expected, std::string suggestion) {
      lang::Diagnostic d = at_name(c.reference_info.loc, r.name, lines_of(file, &cache));
      if (d.loc.file.empty()) d.loc.file = file;
      d.message = std::move(message);
      d.expected = std::move(expected);
      d.suggestion = std::move(suggestion);
      out.push_back(std::move(d));
    };
    if (r.kind == Reference::Kind::kAlgebraic && obligation::is_property_name(r.name)) {
      const obligation::Property* p = obligation::find_property(r.name);
      if (!p) {
        error("unknown algebraic property '" + r.name + "'", "a property of `kc list properties`",
              obligation::nearest_property(r.name));
        continue;
      }
      bool fits = false;
      for (const auto& o : ops) fits = fits || p->applies_to(o);
      if (!fits && !ops.empty())
        error("property '" + r.name + "' applies to " + joined(p->ops) + ", not to the scope " + joined(c.scope),
              "a property of one of the scope's ops", "");
      continue;
    }
    if (r.kind != Reference::Kind::kStableAlgorithm && r.kind != Reference::Kind::kSpec) continue;
    const char* kind = r.kind == Reference::Kind::kSpec ? "spec" : "stable_algorithm";
    // Under declared_policy (not determinism) a policy spec's rules apply to every op.
    bool fits = r.kind == Reference::Kind::kSpec && c.post.kind == Postcondition::Kind::kDeclaredPolicy &&
                c.post.policy != "determinism" && is_policy_spec(r.name);
    for (const auto& o : ops) fits = fits || find_named_oracle(r.kind, r.name, o) != nullptr;
    if (fits) continue;
    const std::vector<std::string> names = named_oracle_names(r.kind);
    const std::string near = lang::nearest_word(r.name, names);
    bool known = false;
    for (const auto& o : named_oracles())
      known = known || (o.kind == r.kind && find_named_oracle(r.kind, r.name, o.op) != nullptr);
    if (!known) {
      error("unknown " + std::string(kind) + " '" + r.name + "'", "one of: " + joined(names), near);
    } else if (!ops.empty()) {
      error(named_oracle_error(r.kind, r.name, ops.front()),
            "a " + std::string(kind) + " of one of the scope's ops (`kc list oracles`)", "");
    }
  }
  return out;
}

namespace {

/// The tolerance forms a contract's comparison uses (each entry of a per_precision list).
std::vector<Tolerance::Kind> tolerance_kinds(const Tolerance& t) {
  if (t.kind != Tolerance::Kind::kPerPrecision) return {t.kind};
  std::vector<Tolerance::Kind> out;
  for (const auto& e : t.per_precision) out.push_back(e.tolerance.kind);
  return out;
}

/// Whether the engine's judgement of `c` measures `metric` (kc/vocabulary.h's metric table).
bool metric_fits(const std::string& metric, const Contract& c) {
  using K = Tolerance::Kind;
  const Postcondition::Kind post = c.post.kind;
  if (metric == "mismatched_runs")
    return post == Postcondition::Kind::kBitwiseIdentical ||
           (post == Postcondition::Kind::kDeclaredPolicy && c.post.policy == "determinism");
  if (metric == "policy_mismatches") return post == Postcondition::Kind::kDeclaredPolicy;
  if (metric == "ratio") return true;
  // The unit metrics name the tolerance every element is judged against.
  const std::vector<K> kinds = tolerance_kinds(c.tolerance);
  auto all = [&](std::initializer_list<K> ok) {
    for (K k : kinds)
      if (std::find(ok.begin(), ok.end(), k) == ok.end()) return false;
    return !kinds.empty();
  };
  if (metric == "bound_ratio") return all({K::kBound});
  if (metric == "rel_error") return all({K::kRelative, K::kElementwise});
  if (metric == "abs_error") return all({K::kAbsolute, K::kElementwise});
  if (metric == "ulp") return all({K::kUlp});
  if (metric == "mismatches") return all({K::kNone});
  return true;  // an unknown metric is the parser's error
}

}  // namespace

std::vector<lang::Diagnostic> check_metric_units(const std::vector<Contract>& contracts,
                                                 const std::vector<std::string>& files) {
  std::vector<lang::Diagnostic> out;
  std::map<std::string, std::vector<std::string>> cache;
  for (std::size_t i = 0; i < contracts.size(); ++i) {
    const Contract& c = contracts[i];
    if (c.executable() && !c.measure.observe.empty() && !c.measure.aggregate) {
      // `observe WORD`: the post clause decides what is judged; the word must name it.
      const std::string& word = c.measure.observe;
      const bool policy_post = c.post.kind == Postcondition::Kind::kDeclaredPolicy && c.post.policy != "determinism";
      std::string why;
      if ((word == "policy" || word == "policy_mismatches") && !policy_post)
        why = "kc judges a declared policy only under `post declared_policy KEY in {...}`; under `post " +
              c.post_info.text + "` it compares with the reference";
      else if (word == "propagation" && !policy_post && c.post.kind != Postcondition::Kind::kElementwiseClose)
        why = "propagation is judged under `post declared_policy nan in {...}` or an elementwise comparison, not "
              "under `post " + c.post_info.text + "`";
      if (!why.empty()) {
        const std::string file = i < files.size() ? files[i] : c.measure_info.loc.file;
        lang::Diagnostic d = at_name(c.measure_info.loc, word, lines_of(file, &cache));
        d.severity = lang::Diagnostic::Severity::kWarning;
        if (d.loc.file.empty()) d.loc.file = file;
        d.message = "'observe " + word + "' is not what kc judges: " + why;
        d.expected = "post declared_policy KEY in {...}";
        out.push_back(std::move(d));
      }
    }
    if (!c.executable() || !c.measure.aggregate) continue;
    const std::string& metric = c.measure.aggregate->metric;
    const std::string file = i < files.size() ? files[i] : c.measure_info.loc.file;
    if (metric_fits(metric, c)) {
      // `pass if`: the engine passes when the value is <= the bound, and takes
      // the bound from the clause only for ratio metrics; a unit metric is
      // judged as a ratio to its tolerance (bound 1), a count must be 0.
      // failing_fraction's bound is the allowed fraction of samples (the parser checks it).
      if (!c.measure.pass_if || c.measure.aggregate->stat == "failing_fraction") continue;
      const PassIf& pi = *c.measure.pass_if;
      const auto bound = lang::eval_expr(pi.bound, {});
      const bool ratio = metric == "ratio" || metric == "bound_ratio";
      const bool unit = metric == "rel_error" || metric == "abs_error" || metric == "ulp";
      std::string why;
      if (pi.cmp != "<=") why = "kc passes when the value is <= the bound, not " + pi.cmp;
      else if (unit && bound.ok() && *bound != 1)
        why = "kc judges " + metric + " as a ratio to the tolerance and passes at <= 1; the bound " +
              lang::print_expr(pi.bound) + " is not used (write it in the tolerance clause)";
      else if (!ratio && !unit && bound.ok() && *bound != 0)
        why = "kc passes " + metric + " only at 0; the bound " + lang::print_expr(pi.bound) + " is not used";
      if (why.empty()) continue;
      lang::Diagnostic d = at_name(c.measure_info.loc, "pass", lines_of(file, &cache));
      d.severity = lang::Diagnostic::Severity::kWarning;
      if (d.loc.file.empty()) d.loc.file = file;
      d.message = "'pass if " + pi.cmp + " " + lang::print_expr(pi.bound) + "' is not what kc decides: " + why;
      d.expected = std::string("pass if <= ") + (unit ? "1" : ratio ? "X" : "0");
      out.push_back(std::move(d));
      continue;
    }
    std::vector<std::string> fitting;
    for (const auto& w : metric_table())
      if (metric_fits(std::string(w.name), c)) fitting.emplace_back(w.name);
    lang::Diagnostic d = at_name(c.measure_info.loc, metric, lines_of(file, &cache));
    d.severity = lang::Diagnostic::Severity::kWarning;
    if (d.loc.file.empty()) d.loc.file = file;
    d.message = "metric '" + metric + "' is not what kc measures under `tolerance " + c.tolerance_info.text +
                "` and `post " + c.post_info.text + "`";
    d.expected = "one of: " + joined(fitting);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace kc::engine
