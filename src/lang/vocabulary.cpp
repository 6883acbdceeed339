// kc — the words the language knows: op classes (from the op registry),
// signatures; nearest-word suggestions; the check of every name a clause uses
// against kc's tables.
#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kc/enum_table.h"
#include "kc/lang.h"
#include "kc/op.h"
#include "kc/retest.h"
#include "kc/signature.h"
#include "kc/vocabulary.h"
#include "lang/names.h"

namespace kc::lang {
namespace {

/// The op words of the language, from the op registry (kc/op.h): every
/// registered op's name, in registry order, then every scope class an op names
/// (reduction, elementwise, ...), in order of first appearance.
std::vector<std::string> op_words(const OpRegistry& registry) {
  std::vector<std::string> names = registry.names(), classes;
  for (const Op* op : registry.all())
    for (std::string& c : op->scope_classes())
      if (std::find(names.begin(), names.end(), c) == names.end() &&
          std::find(classes.begin(), classes.end(), c) == classes.end())
        classes.push_back(std::move(c));
  names.insert(names.end(), classes.begin(), classes.end());
  return names;
}

}  // namespace

const std::vector<std::string>& known_op_classes() {
  // Rebuilt when an op has been registered since (register_op); the lists
  // built before stay alive for whoever still holds one.
  static std::mutex mutex;
  static std::vector<std::unique_ptr<const std::vector<std::string>>> lists;
  static std::size_t built_for = 0;
  const OpRegistry& registry = builtin_ops();
  std::lock_guard<std::mutex> lock(mutex);
  if (lists.empty() || built_for != registry.size()) {
    built_for = registry.size();
    lists.push_back(std::make_unique<const std::vector<std::string>>(op_words(registry)));
  }
  return *lists.back();
}

const std::vector<std::string>& known_signatures() {
  // The one signature table (kc/signature.h): what the producers attach is
  // what a contract may name.
  static const std::vector<std::string> v = kc::signature_names();
  return v;
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& vocabulary) {
  auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const std::string& cand : vocabulary) {
    const std::size_t n = word.size(), m = cand.size();
    std::vector<std::size_t> prev(m + 1), cur(m + 1);
    for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= m; ++j) {
        const std::size_t sub = prev[j - 1] + (lower(word[i - 1]) == lower(cand[j - 1]) ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    if (prev[m] < best_d) {
      best_d = prev[m];
      best = cand;
    }
  }
  // Close means: at most a third of the word's letters changed (and at least 1
  // allowed); a word that differs only in case is close too.
  const std::size_t limit = std::max<std::size_t>(1, (word.size() + 2) / 3);
  if (best_d > limit || best == word) return {};
  return best;
}


namespace detail {
namespace {

/// Offset of `word` as a whole identifier in `t` at or after `from`; npos if absent.
std::size_t find_ident(const std::string& t, std::string_view word, std::size_t from = 0) {
  if (word.empty()) return std::string::npos;
  for (std::size_t at = t.find(word, from); at != std::string::npos; at = t.find(word, at + 1)) {
    const bool left = at == 0 || !is_ident_char(t[at - 1]);
    const std::size_t end = at + word.size();
    const bool right = end >= t.size() || !is_ident_char(t[end]);
    if (left && right) return at;
  }
  return std::string::npos;
}

/// Offset of `word` after the step keyword `after` (e.g. the metric after "compute").
std::size_t find_after(const std::string& t, std::string_view after, std::string_view word) {
  const std::size_t k = find_ident(t, after);
  const std::size_t at = find_ident(t, word, k == std::string::npos ? 0 : k + after.size());
  if (at != std::string::npos) return at;
  return k == std::string::npos ? 0 : k;
}

bool check_word(Diags& d, const Span& sp, std::size_t at, std::string_view what, const std::string& word,
                std::span<const WordInfo> table) {
  if (find_word(table, word)) return true;
  unknown_name(d, sp, at, what, word, word_names(table));
  return false;
}

bool check_aggregate(Diags& d, const Span& sp, std::string_view step, const Aggregate& agg) {
  const std::string& t = sp.text();
  bool ok = check_word(d, sp, find_after(t, step, agg.stat), "statistic", agg.stat, aggregate_table());
  ok = check_word(d, sp, find_after(t, step, agg.metric), "metric", agg.metric, metric_table()) && ok;
  return ok;
}

bool check_measure(const Span& sp, const Protocol& m, Diags& d) {
  const std::string& t = sp.text();
  bool ok = true;
  if (m.kind == Protocol::Kind::kInject) {
    // The spellings NaN, Inf, -Inf and lists of them arrive as nan, inf,
    // neg_inf or nonfinite; any other probe arrives as written.
    if (!find_word(probe_table(), m.anomaly)) {
      const std::size_t k = find_ident(t, "inject");
      std::size_t at = k == std::string::npos ? 0 : k + 6;
      while (at < t.size() && t[at] == ' ') ++at;
      unknown_name(d, sp, at, "probe", m.anomaly, word_names(probe_table()));
      ok = false;
    }
  }
  if (m.kind == Protocol::Kind::kSample && m.per != "config") {
    // The engine draws N samples of every config; nothing else is counted.
    unknown_name(d, sp, find_after(t, "per", m.per), "sampling unit", m.per, {"config"});
    ok = false;
  }
  Aggregate observed;
  Cursor oc(m.observe);
  const std::string o_stat = oc.ident(), o_metric = oc.ident();
  const bool observe_is_agg = !o_metric.empty() && oc.at_end();
  if (m.aggregate && !(observe_is_agg && m.aggregate->stat == o_stat && m.aggregate->metric == o_metric &&
                       find_ident(t, "compute") == std::string::npos))
    ok = check_aggregate(d, sp, "compute", *m.aggregate) && ok;
  if (observe_is_agg) {
    observed.stat = o_stat;
    observed.metric = o_metric;
    ok = check_aggregate(d, sp, "observe", observed) && ok;
  } else if (!m.observe.empty()) {
    ok = check_word(d, sp, find_after(t, "observe", o_stat), "observed quantity", m.observe, observe_table()) && ok;
  }
  return ok;
}

bool check_pre(const Span& sp, const Contract& c, Diags& d) {
  bool ok = true;
  std::size_t search = 0;
  const std::string& t = sp.text();
  for (const Predicate& p : c.pre) {
    if (p.kind != Predicate::Kind::kDeclared) continue;
    const std::size_t kw = find_ident(t, "declared", search);
    const std::size_t key_at = find_ident(t, p.key, kw == std::string::npos ? search : kw);
    search = key_at == std::string::npos ? search : key_at + p.key.size();
    const WordInfo* key = find_word(declaration_key_table(), p.key);
    if (!key) {
      unknown_name(d, sp, key_at == std::string::npos ? 0 : key_at, "declaration key", p.key,
                   word_names(declaration_key_table()));
      ok = false;
      continue;
    }
    const std::vector<std::string> values = declaration_values(*key);
    if (values.empty()) continue;
    for (const std::string& v : p.values) {
      bool known = false;
      for (const auto& k : values) known = known || iequals(k, v);
      if (known) continue;
      const std::size_t v_at = find_ident(t, v, search);
      unknown_name(d, sp, v_at == std::string::npos ? 0 : v_at, "value of declared " + p.key, v, values);
      ok = false;
    }
  }
  return ok;
}

bool check_violation(const Span& sp, const ViolationSpec& v, Diags& d) {
  bool ok = true;
  const std::string& t = sp.text();
  const std::size_t list = t.rfind("signature");
  for (const Signature& s : v.signatures) {
    if (find_signature(s.name)) continue;
    const std::size_t at = find_ident(t, s.name, list == std::string::npos ? 0 : list);
    unknown_name(d, sp, at == std::string::npos ? 0 : at, "signature", s.name, signature_names());
    ok = false;
  }
  return ok;
}

}  // namespace

bool is_unknown_name(const Diagnostic& d) {
  // Only a word close to a known one is taken for a typo; a word unlike every
  // known one is the author writing prose, and the clause is kept as prose.
  return d.severity == Diagnostic::Severity::kError && d.message.rfind("unknown ", 0) == 0 && !d.suggestion.empty();
}

void unknown_name(Diags& d, const Span& sp, std::size_t at, std::string_view what, const std::string& word,
                  const std::vector<std::string>& known) {
  d.error(sp, at, "unknown " + std::string(what) + " '" + word + "'", "one of: " + join(known, ", "),
          nearest_word(word, known));
}

bool check_clause_names(std::string_view keyword, const Span& body, const Contract& c, Diags& d) {
  if (keyword == "measure" && c.measure.kind != Protocol::Kind::kProse) return check_measure(body, c.measure, d);
  if (keyword == "pre") return check_pre(body, c, d);
  if (keyword == "violation") return check_violation(body, c.violation, d);
  return true;
}

bool check_meta_name(std::string_view keyword, const Span& body, const std::string& value, Diags& d) {
  if (keyword == "retest") {
    std::size_t at = 0;
    const auto rule = parse_retest(value, &at);
    if (rule.ok()) return true;
    // The value is the body's text unless it was quoted: point into the body either way.
    const std::size_t shift = body.text().find(value);
    d.error(body, shift == std::string::npos ? 0 : shift + at, rule.status().message(),
            "retest " + join(word_names(retest_table()), " | "));
    return false;
  }
  if (keyword != "class" || find_word(contract_class_table(), value)) return true;
  const std::size_t at = find_ident(body.text(), value);
  unknown_name(d, body, at == std::string::npos ? 0 : at, "contract class", value, word_names(contract_class_table()));
  return false;
}

}  // namespace detail
}  // namespace kc::lang
