// The HTML report: self-contained, escaped, with the matrix, the grades, and
// every violation's evidence and repro line.
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
  return r;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

TEST(RenderHtml, IsOneSelfContainedDocument) {
  const std::string html = kc::report::render_html(sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_NE(html.find("<style>"), std::string::npos);  // inline CSS
  for (const char* external : {"<script", "<link", "src=", "http://", "https://", "@import", "url("})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_EQ(count(html, "<table"), count(html, "</table>"));
  EXPECT_EQ(count(html, "<div"), count(html, "</div>"));
  EXPECT_EQ(count(html, "<tr>"), count(html, "</tr>"));
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  EXPECT_NE(html.find("1 conforming, 1 violation, 2 not_applicable, 0 skipped, 1 error"), std::string::npos);
}

TEST(RenderHtml, MatrixHasEveryContractImplAndColouredVerdict) {
  const std::string html = kc::report::render_html(sample());
  const auto m = html.find("<table class=\"matrix\">");
  ASSERT_NE(m, std::string::npos);
  const std::string matrix = html.substr(m, html.find("</table>", m) - m);
  for (const char* name : {"C-ORD-03", "C-EXC-02", "calib.allreduce_fp16_wire", "mpi.all_reduce.ring",
                           "mpi.all_reduce.broken"})
    EXPECT_NE(matrix.find(name), std::string::npos) << name;
  EXPECT_EQ(count(matrix, "class=\"v-violation\""), 1u);
  EXPECT_EQ(count(matrix, "class=\"v-conforming\""), 1u);
  EXPECT_EQ(count(matrix, "class=\"v-error\""), 1u);
  EXPECT_EQ(count(matrix, "class=\"v-not_applicable\""), 2u);
  EXPECT_NE(matrix.find("WIRE_PRECISION"), std::string::npos);  // the cell names the signature
  // The impl with no C-EXC-02 case has an empty cell, not a missing one.
  EXPECT_EQ(count(matrix, "<td"), 6u);
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
    EXPECT_NE(html.find("href=\"#case-" + std::to_string(i) + "\""), std::string::npos) << "matrix links to it";
    const std::string section = html.substr(at, html.find("</div>", at) - at);
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

TEST(RenderHtml, HostileNamesAreText) {
  CheckResult r;
  CaseResult c = html_case("C-X-<script>alert(1)</script>", "evil.<img src=x onerror=alert(2)>", Verdict::kViolation,
                           "plugin\"><style>");
  c.signatures = {{"SAT<b>", {"&amp;"}}};
  c.reason = "reason </pre></div><script>alert(3)</script>";
  c.evidence.notes = {"note with \x01 control and 'quotes' & <tags>"};
  r.cases.push_back(c);
  r.backends.push_back({"plugin\"><script>", false, "", "<iframe>", ""});
  const std::string html = kc::report::render_html(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  EXPECT_EQ(count(html, "<style>"), 1u);  // only kc's own
  EXPECT_NE(html.find("C-X-&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("evil.&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
  EXPECT_NE(html.find("SAT&lt;b&gt;(&amp;amp;)"), std::string::npos);
  EXPECT_NE(html.find("&#39;quotes&#39; &amp; &lt;tags&gt;"), std::string::npos);
  EXPECT_EQ(count(html, "<div"), count(html, "</div>"));
  EXPECT_EQ(count(html, "<pre>"), count(html, "</pre>"));
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
