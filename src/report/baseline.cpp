// kc — known-violation baselines: `--baseline FILE` on check and grade, and
// `kc baseline update` (kc/diff.h, docs/diff.md "Baseline").
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <set>
#include <sstream>

#include "kc/diff.h"
#include "kc/exit_code.h"
#include "kc/json_writer.h"
#include "report/yaml_read.h"

namespace kc::report {

namespace {

bool valid_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  const int m = std::stoi(s.substr(5, 2)), d = std::stoi(s.substr(8, 2));
  return m >= 1 && m <= 12 && d >= 1 && d <= 31;
}

std::string signature_name(const std::string& s) { return s.substr(0, s.find('(')); }

bool signature_covered(const BaselineEntry& e, const std::string& sig) {
  return engine::glob_match(e.signature, sig) || engine::glob_match(e.signature, signature_name(sig));
}

bool case_matches(const BaselineEntry& e, const std::string& contract, const std::string& impl) {
  return engine::glob_match(e.contract, contract) && engine::glob_match(e.impl, impl);
}

std::string date_plus_days(const std::string& today, int days) {
  std::tm tm{};
  tm.tm_year = std::stoi(today.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(today.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(today.substr(8, 2)) + days;
  tm.tm_hour = 12;
  const std::time_t t = timegm(&tm);
  std::tm out{};
  gmtime_r(&t, &out);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &out);
  return buf;
}

}  // namespace

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  if (const char* sde = std::getenv("SOURCE_DATE_EPOCH"); sde != nullptr && *sde != '\0') t = std::strtoll(sde, nullptr, 10);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

Result<Baseline> read_baseline(const std::string& path) {
  YamlDoc doc;
  KC_RETURN_IF_ERROR(doc.load(path));
  const YAML::Node& root = doc.root;
  const std::string shape = "a map with \"format\": \"" + std::string(kBaselineFormat) +
                            "\" and \"violations\": a list of {contract, impl, signature, reason, expires, link}";
  if (!root.IsMap()) return doc.error(root, "a baseline is a map", shape);
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.Scalar();
    if (k != "format" && k != "violations" && k != "comment")
      return doc.error(it->first, "unknown key '" + k + "'", "format, violations, comment");
  }
  KC_ASSIGN_OR_RETURN(std::string format, doc.str(root, "format"));
  if (format != kBaselineFormat)
    return doc.error(root["format"], "format '" + format + "' is not one this kc reads", std::string(kBaselineFormat));
  Baseline b;
  b.path = path;
  const YAML::Node list = root["violations"];
  if (!list || list.IsNull()) return b;
  if (!list.IsSequence()) return doc.error(list, "\"violations\" is not a list", shape);
  for (const auto& n : list) {
    if (!n.IsMap()) return doc.error(n, "an entry is not a map", "{contract, impl, signature, reason, expires, link}");
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (k != "contract" && k != "impl" && k != "signature" && k != "reason" && k != "expires" && k != "link")
        return doc.error(it->first, "unknown key '" + k + "' in an entry", "contract, impl, signature, reason, expires, link");
    }
    BaselineEntry e;
    e.line = n.Mark().line + 1;
    KC_ASSIGN_OR_RETURN(e.contract, doc.str(n, "contract"));
    KC_ASSIGN_OR_RETURN(e.impl, doc.str(n, "impl"));
    KC_ASSIGN_OR_RETURN(e.signature, doc.str(n, "signature"));
    KC_ASSIGN_OR_RETURN(e.reason, doc.str(n, "reason"));
    KC_ASSIGN_OR_RETURN(e.expires, doc.str(n, "expires"));
    KC_ASSIGN_OR_RETURN(e.link, doc.str(n, "link", true));
    if (e.reason.empty()) return doc.error(n["reason"], "empty reason", "why this violation is accepted, in words");
    if (!valid_date(e.expires))
      return doc.error(n["expires"], "expires '" + e.expires + "' is not a date",
                       "YYYY-MM-DD, the last day the entry excuses the violation");
    b.entries.push_back(std::move(e));
  }
  return b;
}

BaselineOutcome apply_baseline(const Baseline& b, const engine::CheckResult& result, const std::string& today) {
  BaselineOutcome out;
  std::vector<bool> used(b.entries.size(), false), ran(b.entries.size(), false);
  auto where = [&](const BaselineEntry& e) {
    return b.path + ":" + std::to_string(e.line) + ": " + e.contract + " × " + e.impl + " " + e.signature;
  };
  bool other_failure = false;
  for (const auto& c : result.cases) {
    for (std::size_t k = 0; k < b.entries.size(); ++k)
      if (case_matches(b.entries[k], c.contract_id, c.impl) &&
          (c.verdict == engine::Verdict::kConforming || c.verdict == engine::Verdict::kViolation ||
           c.verdict == engine::Verdict::kError))
        ran[k] = true;  // judged: a skipped or not-applicable case shows nothing either way
    if (c.verdict == engine::Verdict::kError) other_failure = true;
    if (c.verdict != engine::Verdict::kViolation) continue;
    std::vector<std::string> sigs;
    for (const auto& s : c.signatures) sigs.push_back(s.to_string());
    if (sigs.empty()) sigs.push_back("");  // a violation without a named pattern: only "*" covers it
    bool all = true;
    std::string uncovered;
    for (const auto& s : sigs) {
      bool covered = false;
      for (std::size_t k = 0; k < b.entries.size(); ++k) {
        const BaselineEntry& e = b.entries[k];
        if (!case_matches(e, c.contract_id, c.impl) || !signature_covered(e, s)) continue;
        used[k] = true;
        if (e.expires >= today) covered = true;
      }
      if (!covered) {
        all = false;
        uncovered += (uncovered.empty() ? "" : ", ") + (s.empty() ? std::string("(no signature)") : s);
      }
    }
    if (all) ++out.excused;
    else out.unexcused.push_back(c.contract_id + " × " + c.impl + ": " + uncovered);
  }
  for (std::size_t k = 0; k < b.entries.size(); ++k) {
    const BaselineEntry& e = b.entries[k];
    if (e.expires < today)
      out.warnings.push_back(where(e) + ": expired on " + e.expires + (used[k] ? " and still occurs: it no longer excuses it" : "") +
                             "; renew it with a reason or fix the violation");
    else if (!ran[k])
      out.warnings.push_back(where(e) + ": not exercised by this run (no such contract × impl was judged)");
    else if (!used[k])
      out.warnings.push_back(where(e) + ": no longer occurs; remove it (kc baseline update) so it cannot hide a return");
  }
  // The run's own exit code stands unless its only failures were excused violations.
  const int rc = result.exit_code();
  if (rc == exit_value(ExitCode::kViolation) && out.unexcused.empty() && !other_failure) out.exit_code = exit_value(ExitCode::kOk);
  else out.exit_code = rc;
  return out;
}

std::string render_baseline(const RunRecord& record, const Baseline* previous, const std::string& today,
                            const std::string& run_source) {
  JsonWriter w(2);
  w.begin_object();
  w.field("format", kBaselineFormat);
  w.field("comment", "known violations of " + run_source + " (" + record.created +
                         "); each excuses its contract x impl x signature until it expires");
  w.key("violations").begin_array();
  std::set<std::string> written;
  for (const auto& c : record.cases) {
    if (c.verdict != "violation") continue;
    std::vector<std::string> names;
    for (const auto& s : c.signatures) names.push_back(signature_name(s));
    if (names.empty()) names.push_back("*");
    for (const auto& name : names) {
      if (!written.insert(c.contract + "|" + c.impl + "|" + name).second) continue;
      const BaselineEntry* keep = nullptr;
      if (previous)
        for (const auto& e : previous->entries)
          if (case_matches(e, c.contract, c.impl) && (engine::glob_match(e.signature, name) || e.signature == name)) {
            keep = &e;
            break;
          }
      w.begin_object();
      w.field("contract", c.contract).field("impl", c.impl).field("signature", name);
      if (keep) {
        w.field("reason", keep->reason).field("expires", keep->expires).field("link", keep->link);
      } else {
        w.field("reason", "recorded by kc baseline update on " + today + " from " + run_source + ": " + c.reason);
        w.field("expires", date_plus_days(today, 90)).field("link", "");
      }
      w.end_object();
    }
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace kc::report
