// JUnit XML: one <testsuite> per contract, one <testcase> per impl.
#include <cmath>
#include <map>
#include <set>

#include "kc/report.h"
#include "kc/report_common.h"
#include "kc_commit.h"

namespace kc::report {

namespace {

using engine::CaseResult;
using engine::Verdict;

// XML 1.0 text/attribute escaping. Characters XML 1.0 cannot carry at all
// (control characters other than tab, newline, carriage return) and invalid
// UTF-8 bytes become U+FFFD, so the document is always well-formed.
std::string xml_escape(std::string_view s, bool attribute = true) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\uFFFD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\uFFFD";
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

// Body text keeps its whitespace literally (escaping it is for attributes,
// where a parser would otherwise normalise it to spaces).
std::string xml_text(std::string_view s) { return xml_escape(s, /*attribute=*/false); }

std::string body_text(const CaseResult& c) {
  std::string b = c.reason + "\n";
  for (const auto& d : case_details(c)) b += d + "\n";
  return b;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> junit_properties(const engine::CheckResult& result) {
  std::vector<std::pair<std::string, std::string>> props;
  // The base seed each case ran with: one for a plain run; a merge of runs
  // made with different seeds lists each.
  std::set<std::uint64_t> seeds;
  for (const auto& c : result.cases)
    if (c.verdict == Verdict::kConforming || c.verdict == Verdict::kViolation || c.verdict == Verdict::kError)
      seeds.insert(c.seed);
  std::string seed_text;
  for (std::uint64_t s : seeds) seed_text += (seed_text.empty() ? "" : ",") + seed_hex(s);
  if (!seed_text.empty()) props.emplace_back("kc.seed", seed_text);
  props.emplace_back("kc.version", std::string(kKcVersion));
  props.emplace_back("kc.commit", KC_GIT_COMMIT);
  for (const auto& b : result.backends)
    props.emplace_back("kc.library." + b.name, b.available ? b.version : "unavailable: " + b.reason);
  return props;
}

std::string render_junit(const engine::CheckResult& result, const JunitOptions& options) {
  const auto listed = [&](const CaseResult& c) {
    return options.include_not_applicable || c.verdict != Verdict::kNotApplicable;
  };
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> by_contract;
  std::map<std::string, int> left_out;  // not_applicable pairs not listed, per contract
  for (const auto& c : result.cases) {
    if (by_contract.count(c.contract_id) == 0) order.push_back(c.contract_id);
    auto& list = by_contract[c.contract_id];  // a suite even when all its pairs are left out
    if (listed(c)) {
      list.push_back(&c);
    } else {
      ++left_out[c.contract_id];
    }
  }
  const auto count = [](const std::vector<const CaseResult*>& cs, auto pred) {
    int n = 0;
    for (const CaseResult* c : cs) n += pred(c->verdict) ? 1 : 0;
    return n;
  };
  const auto is_failure = [](Verdict v) { return v == Verdict::kViolation; };
  const auto is_error = [](Verdict v) { return v == Verdict::kError; };
  const auto is_skipped = [](Verdict v) {
    return v == Verdict::kNotApplicable || v == Verdict::kSkipped || v == Verdict::kUnderSpecified;
  };

  std::vector<const CaseResult*> all;
  double total_seconds = 0;
  for (const auto& c : result.cases) {
    if (!listed(c)) continue;
    all.push_back(&c);
    if (std::isfinite(c.seconds)) total_seconds += c.seconds;
  }
  std::string properties = "    <properties>\n";
  for (const auto& [name, value] : junit_properties(result))
    properties += "      <property name=\"" + xml_escape(name) + "\" value=\"" + xml_escape(value) + "\"/>\n";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"kc\" tests=\"" + std::to_string(all.size()) + "\" failures=\"" +
         std::to_string(count(all, is_failure)) + "\" errors=\"" + std::to_string(count(all, is_error)) +
         "\" skipped=\"" + std::to_string(count(all, is_skipped)) + "\" time=\"" + seconds_text(total_seconds) +
         "\">\n";
  if (!result.diagnostics.empty()) {
    // Contract-file problems: a suite of their own, one error each.
    out += "  <testsuite name=\"diagnostics\" tests=\"" + std::to_string(result.diagnostics.size()) +
           "\" failures=\"0\" errors=\"" + std::to_string(result.diagnostics.size()) + "\" skipped=\"0\">\n";
    for (const auto& d : result.diagnostics) {
      const std::string where = d.loc.file + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column);
      out += "    <testcase classname=\"diagnostics\" name=\"" + xml_escape(where) + "\">\n";
      out += "      <error message=\"" + xml_escape(d.message) + "\">" + xml_text(d.render()) + "</error>\n";
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  for (const std::string& id : order) {
    const auto& cs = by_contract[id];
    double secs = 0;
    for (const CaseResult* c : cs)
      if (std::isfinite(c->seconds)) secs += c->seconds;
    out += "  <testsuite name=\"" + xml_escape(id) + "\" tests=\"" + std::to_string(cs.size()) + "\" failures=\"" +
           std::to_string(count(cs, is_failure)) + "\" errors=\"" + std::to_string(count(cs, is_error)) +
           "\" skipped=\"" + std::to_string(count(cs, is_skipped)) + "\" time=\"" + seconds_text(secs) + "\">\n";
    out += properties;
    if (const auto n = left_out.find(id); n != left_out.end())
      out += "      <property name=\"kc.not_applicable\" value=\"" + std::to_string(n->second) +
             "\"/>\n";  // pairs left out (JunitOptions::include_not_applicable lists them)
    out += "    </properties>\n";
    for (const CaseResult* c : cs) {
      out += "    <testcase classname=\"" + xml_escape(id) + "\" name=\"" + xml_escape(c->impl) + "\" time=\"" +
             seconds_text(c->seconds) + "\"";
      if (c->verdict == Verdict::kConforming) {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (c->verdict == Verdict::kViolation) {
        const std::string sig = signatures_text(*c);
        out += "      <failure type=\"violation\" message=\"" +
               xml_escape((sig.empty() ? std::string("violation") : sig) + ": " + reason_without_signature(*c)) +
               "\">" + xml_text(body_text(*c)) + "</failure>\n";
      } else if (c->verdict == Verdict::kError) {
        out += "      <error type=\"error\" message=\"" + xml_escape(c->reason) + "\">" + xml_text(body_text(*c)) +
               "</error>\n";
      } else {
        out += "      <skipped message=\"" +
               xml_escape(std::string(engine::verdict_name(c->verdict)) + ": " + c->reason) + "\"/>\n";
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace kc::report
