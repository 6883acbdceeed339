// kc — the check that an op's oracle honours a contract's higher_precision
// reference and its `with` options (kc/oracle_options.h).
#include "kc/oracle_options.h"

#include <algorithm>
#include <fstream>

#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::engine {
namespace {

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

/// The clause's location at `word`: on the clause's line or one of the
/// continuation lines below it; else the clause keyword.
SourceLoc locate(const SourceLoc& clause, const std::string& file, const std::string& word) {
  SourceLoc at = clause;
  if (at.file.empty()) at.file = file;
  std::ifstream in(file);
  std::string text;
  for (int l = 1; std::getline(in, text); ++l) {
    if (l < clause.line) continue;
    if (l > clause.line + 6) break;
    const std::size_t from = l == clause.line ? static_cast<std::size_t>(std::max(0, clause.column - 1)) : 0;
    const std::size_t pos = text.find(word, std::min(from, text.size()));
    if (pos == std::string::npos) continue;
    at.line = l;
    at.column = static_cast<int>(pos) + 1;
    return at;
  }
  return at;
}

}  // namespace

std::string unhonoured_reference(const Contract& c, const Op& op, std::string* word) {
  const Reference& r = c.reference;
  if (r.kind != Reference::Kind::kHigherPrecision) return {};
  const std::string name(op.name());
  if (dtype_info(r.precision).exponent_bits == 0) {
    if (word) *word = std::string(dtype_name(r.precision));
    return "reference higher_precision " + std::string(dtype_name(r.precision)) +
           ": an integer format is no reference precision; write higher_precision FP64 or FP32";
  }
  std::vector<std::string> keys;
  for (const OracleOption& o : op.oracle_options()) keys.push_back(o.key);
  for (const auto& [key, value] : r.with) {
    const OracleOption* o = find_oracle_option(op, key);
    if (!o) {
      if (word) *word = key;
      const std::string near = lang::nearest_word(key, keys);
      return "reference option '" + key + "' is not one " + name + "'s oracle honours (known: " +
             (keys.empty() ? std::string("none") : joined(keys)) + (near.empty() ? "" : "; nearest: " + near) +
             "); the oracle would ignore it";
    }
    bool accepted = false;
    for (const auto& v : o->values) accepted = accepted || v == value;
    if (!accepted) {
      if (word) *word = value;
      const std::string near = lang::nearest_word(value, o->values);
      return "reference option " + key + " = " + value + " is not one " + name + "'s oracle honours (values: " +
             joined(o->values, " | ") + (near.empty() ? "" : "; nearest: " + near) + ")";
    }
  }
  return {};
}

void mark_unhonoured_references(std::vector<Contract>* contracts, const std::vector<std::string>& files) {
  for (std::size_t i = 0; i < contracts->size(); ++i) {
    Contract& c = (*contracts)[i];
    if (!c.reference_info.gap.empty() || c.reference.kind != Reference::Kind::kHigherPrecision) continue;
    for (const auto& s : c.scope) {
      std::string why, word;
      for (const auto& name : ops_for_scope(s)) {
        const Op* op = builtin_ops().find(name);
        if (op) why = unhonoured_reference(c, *op, &word);
        if (!why.empty()) break;
      }
      if (why.empty()) continue;
      c.reference_info.gap = why;
      const std::string file = i < files.size() && !files[i].empty() ? files[i] : c.reference_info.loc.file;
      c.reference_info.gap_loc = locate(c.reference_info.loc, file, word);
      break;
    }
  }
}

std::vector<std::vector<std::string>> oracle_option_rows() {
  std::vector<std::vector<std::string>> rows;
  for (const Op* op : builtin_ops().all())
    for (const OracleOption& o : op->oracle_options())
      rows.push_back({std::string(op->name()), o.key, joined(o.values, " | "), o.meaning});
  return rows;
}

}  // namespace kc::engine
