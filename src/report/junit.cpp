// JUnit XML: one <testsuite> per contract, one <testcase> per impl.
#include <cmath>
#include <map>

#include "kc/report.h"
#include "report/common.h"

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

std::string render_junit(const engine::CheckResult& result) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> by_contract;
  for (const auto& c : result.cases) {
    auto& list = by_contract[c.contract_id];
    if (list.empty()) order.push_back(c.contract_id);
    list.push_back(&c);
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
    all.push_back(&c);
    if (std::isfinite(c.seconds)) total_seconds += c.seconds;
  }
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
