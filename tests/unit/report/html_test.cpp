// The HTML report: self-contained (its policy allows only its own script),
// escaped, violations first, a matrix per op, plots, the grades, and every
// violation's evidence and repro line. (tests/browser runs it in Chromium.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kc/engine.h"
#include "kc/report.h"

namespace {

using kc::engine::CaseResult;
using kc::engine::CheckResult;
using kc::engine::Verdict;

CaseResult html_case(const std::string& contract, const std::string& impl, Verdict v, const std::string& backend) {
  CaseResult c;
  c.contract_id = contract;
  c.contract_file = "contracts/classes/" + contract + ".kc";
  c.impl = impl;
  c.backend = backend;
  c.backend_version = "4.1.4";
  c.verdict = v;
  c.reason = std::string(kc::engine::verdict_name(v)) + " because";
  c.seed = 0x6b63;
  if (v == Verdict::kViolation || v == Verdict::kError) {
    if (v == Verdict::kViolation) c.signatures.push_back({"WIRE_PRECISION", {}});
    c.evidence.metric = "bound_ratio";
    c.evidence.tolerance = "bound gamma(K, P) * |x| = 1.2e-7";
    c.evidence.max = 812.5;
    c.evidence.p99 = 400;
    c.evidence.mean = 3;
    c.evidence.elements = 5120;
    c.evidence.failures = 77;
    c.evidence.notes = {"only schedule ring breaks the bound"};
    c.evidence.per_config.push_back({"ranks=32 schedule=ring", 812.5, 400, 3, 1024, 77, ""});
    kc::engine::WorstElement w;
    w.output = "out";
    w.index = 9;
    w.value = 1.5;
    w.reference = 1.25;
    w.metric = 812.5;
    w.config = "ranks=32";
    c.evidence.worst = w;
    c.input_hash = "cafef00d";
    c.repro = "kc check " + c.contract_file + " --impl '" + impl + "' --config 'ranks=32' --sample 0";
  }
  return c;
}

CheckResult sample() {
  CheckResult r;
  r.cases = {
      html_case("C-ORD-03", "calib.allreduce_fp16_wire", Verdict::kViolation, "calibration"),
      html_case("C-ORD-03", "mpi.all_reduce.ring", Verdict::kConforming, "mpi"),
      html_case("C-ORD-03", "mpi.all_reduce.broken", Verdict::kError, "mpi"),
      html_case("C-EXC-02", "mpi.all_reduce.ring", Verdict::kNotApplicable, "mpi"),
      html_case("C-EXC-02", "calib.allreduce_fp16_wire", Verdict::kNotApplicable, "calibration"),
  };
  r.backends.push_back({"mpi", true, "Open MPI v4.1.4", "/usr/bin/mpirun -np 32", "OpenMPI collectives"});
  r.backends.push_back({"cuda", false, "", "no CUDA device", "cuBLAS"});
  for (const auto& c : r.cases) r.impl_ops[c.impl] = "all_reduce";
  return r;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

/// The text of html from the element that carries `attr` to the end of that element's `close` tag.
std::string element(const std::string& html, const std::string& attr, const std::string& close) {
  const auto at = html.find(attr);
  if (at == std::string::npos) return {};
  const auto end = html.find(close, at);
  return html.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {k[n >> 18], k[(n >> 12) & 63], k[(n >> 6) & 63], k[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned n = static_cast<unsigned char>(bytes[i]) << 16;
    out += {k[n >> 18], k[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned n = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {k[n >> 18], k[(n >> 12) & 63], k[(n >> 6) & 63], '='};
  }
  return out;
}

TEST(RenderHtml, IsOneSelfContainedDocument) {
  const std::string html = kc::report::render_html(sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("<style>"), std::string::npos);  // inline CSS
  EXPECT_EQ(count(html, "<script"), 1u);               // kc's one inline script
  for (const char* external : {"<link", "src=", "http://", "https://", "@import", "url(", "<iframe", "<img"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
  EXPECT_EQ(count(html, "<div"), count(html, "</div>"));
  EXPECT_EQ(count(html, "<section"), count(html, "</section>"));
  EXPECT_EQ(count(html, "<details"), count(html, "</details>"));
  EXPECT_EQ(count(html, "<tr"), count(html, "</tr>"));
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  EXPECT_NE(html.find("1 conforming, 1 violation, 2 not_applicable, 0 skipped, 1 error"), std::string::npos);
}

// The page forbids every load and every script but its own, by hash: the hash
// in the policy must be the script's, or the browser would not run it.
TEST(RenderHtml, ContentSecurityPolicyAllowsOnlyItsOwnScript) {
  const std::string html = kc::report::render_html(sample());
  const std::string csp = element(html, "http-equiv=\"Content-Security-Policy\"", ">");
  ASSERT_FALSE(csp.empty());
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  const auto open = html.find("<script>") + 8;
  const std::string script = html.substr(open, html.find("</script>") - open);
  const std::string hex = kc::report::sha256_hex(script);
  std::string digest;
  for (std::size_t i = 0; i < hex.size(); i += 2) digest += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  EXPECT_NE(csp.find("script-src 'sha256-" + base64(digest) + "'"), std::string::npos) << csp;
  // Names reach the script only through data attributes, never as code.
  EXPECT_EQ(script.find("innerHTML"), std::string::npos);
  EXPECT_EQ(script.find("eval("), std::string::npos);
}

TEST(RenderHtml, ViolationsComeFirstWithTheirRatioAndRepro) {
  const CheckResult r = sample();
  const std::string html = kc::report::render_html(r);
  const auto v = html.find("<section id=\"violations\">");
  ASSERT_NE(v, std::string::npos);
  EXPECT_LT(v, html.find("<section id=\"ops\">"));
  EXPECT_LT(html.find("<section id=\"summary\">"), v);
  const std::string rows = element(html, "<tbody id=\"violation-rows\">", "</tbody>");
  EXPECT_EQ(count(rows, "<tr class=\"f "), 2u);  // the violation and the error
  EXPECT_NE(rows.find("data-b=\"calibration\" data-v=\"violation\""), std::string::npos) << rows;
  EXPECT_NE(rows.find("data-b=\"mpi\" data-v=\"error\""), std::string::npos) << rows;
  EXPECT_NE(rows.find("href=\"#case-0\""), std::string::npos);
  EXPECT_NE(rows.find("WIRE_PRECISION"), std::string::npos);
  EXPECT_NE(rows.find(">812</td>"), std::string::npos) << "worst bound ratio";
  EXPECT_NE(rows.find("<code>kc check contracts/classes/C-ORD-03.kc"), std::string::npos);
  // Per backend: the violation count links to that backend's violations.
  EXPECT_NE(html.find("href=\"#backend=calibration&amp;verdict=violation\">1</a>"), std::string::npos);
}

TEST(RenderHtml, MatrixPerOpHoldsOnlyApplicableContracts) {
  CheckResult r = sample();
  r.cases.push_back(html_case("C-EXC-01", "ref.relu", Verdict::kConforming, "ref"));
  r.cases.push_back(html_case("C-ORD-03", "ref.relu", Verdict::kNotApplicable, "ref"));
  r.impl_ops["ref.relu"] = "relu";
  const std::string html = kc::report::render_html(r);
  const std::string op = element(html, "<details class=\"op fc\" id=\"op-all_reduce\"", "</details>");
  ASSERT_FALSE(op.empty()) << html;
  EXPECT_NE(op.find(" open>"), std::string::npos) << "an op with a violation starts open";
  // C-EXC-02 applies to no all_reduce impl: no column. C-EXC-01 is relu's only.
  EXPECT_NE(op.find(">C-ORD-03</th>"), std::string::npos);
  EXPECT_EQ(op.find("C-EXC-02"), std::string::npos);
  EXPECT_EQ(op.find("C-EXC-01"), std::string::npos);
  for (const char* impl : {"calib.allreduce_fp16_wire", "mpi.all_reduce.ring", "mpi.all_reduce.broken"})
    EXPECT_NE(op.find("<th>" + std::string(impl) + "</th>"), std::string::npos) << impl;
  EXPECT_EQ(count(op, "<td class=\"c v-violation\""), 1u);
  EXPECT_EQ(count(op, "<td class=\"c v-conforming\""), 1u);
  EXPECT_EQ(count(op, "<td class=\"c v-error\""), 1u);
  EXPECT_NE(op.find("<a href=\"#case-0\">"), std::string::npos) << "a violation's cell links to its evidence";
  const std::string relu = element(html, "id=\"op-relu\"", "</details>");
  EXPECT_NE(relu.find(">C-EXC-01</th>"), std::string::npos);
  EXPECT_EQ(relu.find("C-ORD-03"), std::string::npos);
  // A result without ops (put together from run records) groups impls by
  // the contracts they share.
  r.impl_ops.clear();
  const std::string merged = kc::report::render_html(r);
  EXPECT_NE(merged.find("<h3>(op not recorded) C-ORD-03</h3>"), std::string::npos) << merged;
  EXPECT_NE(merged.find("<h3>(op not recorded) C-EXC-01</h3>"), std::string::npos) << merged;
}

// Many ops with violations: their matrices start closed (the violations table
// is the way in), so the page stays short.
TEST(RenderHtml, ManyFailingOpsStartClosed) {
  CheckResult r;
  for (const char* op : {"a", "b", "c", "d", "e"}) {
    r.cases.push_back(html_case("C-" + std::string(op), std::string("impl.") + op, Verdict::kViolation, "x"));
    r.impl_ops[std::string("impl.") + op] = op;
  }
  const std::string html = kc::report::render_html(r);
  EXPECT_EQ(count(html, "<details class=\"op fc\""), 5u);
  EXPECT_EQ(count(html, "\" open><summary><h3>"), 0u) << html;
  r.cases.pop_back();
  EXPECT_EQ(count(kc::report::render_html(r), "\" open><summary><h3>"), 4u);
}

TEST(RenderHtml, NearMissesAndPlots) {
  CheckResult r = sample();
  CaseResult near = html_case("C-ORD-03", "mpi.all_reduce.tree", Verdict::kConforming, "mpi");
  near.evidence.metric = "bound_ratio";
  near.evidence.elements = 100;
  near.evidence.max = 0.75;
  CaseResult far = near;
  far.impl = "mpi.all_reduce.rd";
  far.evidence.max = 0.25;
  r.cases.push_back(near);
  r.cases.push_back(far);
  const std::string html = kc::report::render_html(r);
  const std::string rows = element(html, "<tbody id=\"near-rows\">", "</tbody>");
  EXPECT_NE(rows.find("mpi.all_reduce.tree"), std::string::npos) << rows;
  EXPECT_NE(rows.find(">0.75</td>"), std::string::npos) << rows;
  EXPECT_EQ(rows.find("mpi.all_reduce.rd"), std::string::npos) << "0.25 is no near miss";
  // One strip per contract with a bound ratio: the violation and both conforming impls.
  const std::string plots = element(html, "<section id=\"plots\">", "</section>");
  EXPECT_EQ(count(plots, "<svg"), 1u);
  EXPECT_EQ(count(plots, "<circle"), 3u);
  EXPECT_EQ(count(plots, "class=\"threshold\""), 1u);
  EXPECT_NE(plots.find("<title>calib.allreduce_fp16_wire: 812</title>"), std::string::npos) << plots;
  // Per violation, the ratio across its configs.
  const std::string ev = element(html, "id=\"case-0\"", "</details>");
  EXPECT_EQ(count(ev, "<svg"), 1u);
  EXPECT_NE(ev.find("<title>ranks=32 schedule=ring: 812</title>"), std::string::npos) << ev;
}

TEST(RenderHtml, EveryViolationAndErrorHasEvidenceAndRepro) {
  const CheckResult r = sample();
  const std::string html = kc::report::render_html(r);
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    const CaseResult& c = r.cases[i];
    const std::string anchor = "id=\"case-" + std::to_string(i) + "\"";
    if (c.verdict != Verdict::kViolation && c.verdict != Verdict::kError) {
      EXPECT_EQ(html.find(anchor), std::string::npos) << c.impl;
      continue;
    }
    const auto at = html.find(anchor);
    ASSERT_NE(at, std::string::npos) << c.impl;
    EXPECT_NE(html.find("href=\"#case-" + std::to_string(i) + "\""), std::string::npos) << "linked to";
    const std::string section = html.substr(at, html.find("</details>", at) - at);
    // The evidence the other reporters print: statistics, tolerance, note, worst element, per-config row.
    for (const char* e : {"max 812", "77 of 5120 failed", "tolerance bound gamma(K, P) * |x| = 1.2e-7",
                          "only schedule ring breaks the bound", "worst: out [9] = 1.5 vs reference 1.25",
                          "seed 0x6b63, input cafef00d", "ranks=32 schedule=ring"})
      EXPECT_NE(section.find(e), std::string::npos) << c.impl << ": " << e;
    // The repro line, HTML-escaped (its quotes), in a code block.
    std::string repro_escaped;
    for (char ch : c.repro) repro_escaped += ch == '\'' ? std::string("&#39;") : std::string(1, ch);
    EXPECT_NE(section.find("<pre><code>" + repro_escaped + "</code></pre>"), std::string::npos) << section;
  }
}

// Kernels are untrusted: a name, a signature argument, a reason or a note
// that holds markup is shown as text everywhere, attributes included.
TEST(RenderHtml, HostileNamesAreText) {
  CheckResult r;
  CaseResult c = html_case("C-X-<script>alert(1)</script>", "evil.<img src=x onerror=alert(2)>", Verdict::kViolation,
                           "plugin\"><style>");
  c.signatures = {{"SAT<b>", {"&amp;"}}};
  c.reason = "reason </pre></div><script>alert(3)</script>";
  c.evidence.notes = {"note with \x01 control and 'quotes' & <tags>"};
  c.evidence.per_config[0].config = "x=\"><svg onload=alert(4)>";
  r.cases.push_back(c);
  CaseResult ok = c;
  ok.verdict = Verdict::kConforming;
  ok.impl = "evil2\" onmouseover=\"alert(5)";
  ok.evidence.max = 0.9;
  r.cases.push_back(ok);
  r.impl_ops[c.impl] = "op<script>";
  r.impl_ops[ok.impl] = "op<script>";
  r.backends.push_back({"plugin\"><script>", false, "", "<iframe>", ""});
  const std::string html = kc::report::render_html(r);
  EXPECT_EQ(count(html, "<script"), 1u);  // only kc's own
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_EQ(html.find("\" onmouseover"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  EXPECT_EQ(count(html, "<style>"), 1u);  // only kc's own
  EXPECT_NE(html.find("C-X-&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("evil.&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-b=\"plugin&quot;&gt;&lt;style&gt;\""), std::string::npos);
  EXPECT_NE(html.find("<option value=\"plugin&quot;&gt;&lt;style&gt;\">"), std::string::npos);
  // In a link the name is one URL component: its & and = cannot add filter terms.
  EXPECT_NE(html.find("href=\"#backend=plugin%22%3E%3Cstyle%3E&amp;verdict=violation\""), std::string::npos);
  EXPECT_NE(html.find("SAT&lt;b&gt;(&amp;amp;)"), std::string::npos);
  EXPECT_NE(html.find("&#39;quotes&#39; &amp; &lt;tags&gt;"), std::string::npos);
  EXPECT_EQ(count(html, "<div"), count(html, "</div>"));
  EXPECT_EQ(count(html, "<pre>"), count(html, "</pre>"));
  EXPECT_EQ(count(html, "<details"), count(html, "</details>"));
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(RenderHtml, GradesPerImplAndPerBackend) {
  const std::string html = kc::report::render_html(sample());
  const auto g = html.find("id=\"grades\"");
  ASSERT_NE(g, std::string::npos);
  const std::string grades = html.substr(g, html.find("id=\"backends\"") - g);
  for (const auto& x : kc::report::grade(sample())) {
    EXPECT_NE(grades.find("<td>" + x.impl + "</td><td>" + x.backend + "</td><td class=\"l-" + x.level + "\">"),
              std::string::npos)
        << x.impl;
  }
  for (const auto& b : kc::report::grade_backends(kc::report::grade(sample())))
    EXPECT_NE(grades.find("<td>" + b.backend + "</td><td class=\"l-" + b.level + "\">"), std::string::npos)
        << b.backend;
  // The backends table says why one is unavailable.
  EXPECT_NE(html.find("<td>no CUDA device</td>"), std::string::npos);
}

}  // namespace
