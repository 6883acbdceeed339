// kc — the words a contract may use where a name is expected, one table per
// kind: probes (`inject`), aggregate statistics and metrics (`compute`,
// `observe`), contract classes (`class`), oracle kinds (`reference`) and
// declaration keys (`declared`). The parser checks names against these
// tables, the engine acts on the same names, and `kc list` and
// docs/language.md print them. Signatures have their own table (kc/signature.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kc {

/// One word of a table.
struct WordInfo {
  std::string_view name;
  std::string_view args;     ///< arguments it takes, as written ("(v)", "(x0, ...)"); empty: none
  std::string_view meaning;  ///< one line
  /// Per table: probes — which ops apply it; metrics — the tolerance forms it
  /// measures against; declaration keys — the values it takes ("|"-separated;
  /// empty: any value; "precision"/"enum": from the dtype or enum table, see
  /// declaration_values); others — empty.
  std::string_view detail;
};

/// `inject PROBE[(args)]`: the probes the ops apply (ops/op.cpp apply_generic_probe,
/// indexing ops for oob). The spellings NaN, Inf, -Inf and NaN/Inf/-Inf are
/// read as nan, inf, neg_inf and nonfinite.
std::span<const WordInfo> probe_table();
/// `compute STAT METRIC`: the statistics the engine decides on.
std::span<const WordInfo> aggregate_table();
/// `compute STAT METRIC`: the metrics; `detail` lists the tolerance forms (or
/// postconditions) whose judgement produces the metric.
std::span<const WordInfo> metric_table();
/// `observe WHAT` (besides `observe STAT METRIC`).
std::span<const WordInfo> observe_table();
/// The `class` line of a contract: the paper's four families.
std::span<const WordInfo> contract_class_table();
/// The `retest` line of a contract: when a library update must run it again.
std::span<const WordInfo> retest_table();
/// `reference KIND ...`: the oracle kinds.
std::span<const WordInfo> oracle_table();
/// `declared KEY = VALUE` and `declared_policy KEY in {...}`: the declaration keys.
std::span<const WordInfo> declaration_key_table();

/// `declared_policy KEY in {...}`: the policies a judge exists for.
std::span<const WordInfo> policy_table();

/// The names of a table, in order (for suggestions and "one of" lists).
std::vector<std::string> word_names(std::span<const WordInfo> table);
/// The entry named `name` (exact), or nullptr.
const WordInfo* find_word(std::span<const WordInfo> table, std::string_view name);
/// The values a declaration key takes: its enum table's names for the five
/// core keys (kc/declaration.h, the table Declaration::set reads), else
/// `detail` split at '|' (empty: any value).
std::vector<std::string> declaration_values(const WordInfo& key);

}  // namespace kc
