// The parser's structure rules: indentation segments clauses, only structure
// is a hard error, bytes are checked first, errors are capped per file; the
// YAML front end ignores key order; parameter sets are checked for numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::lang {
namespace {

int errors(const ParseResult& r) {
  int n = 0;
  for (const auto& d : r.diagnostics) n += d.severity == Diagnostic::Severity::kError;
  return n;
}

TEST(Continuation, IndentationNotTheFirstWordDecides) {
  auto r = parse_kc(R"(contract C-1 {
  scope      matmul
  pre        precision(A, B, C) in {FP32}
             and value_range(A, B) normal(0, 1)
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  relative 1e-5
  reference  higher_precision FP64
  measure    sample 2 random inputs per config
  violation  results drift and the
             reference handles finitely what the kernel does not;
             measure twice, post once, scope creep
}
)",
                    "c.kc");
  EXPECT_EQ(errors(r), 0) << (r.diagnostics.empty() ? "" : r.diagnostics[0].render());
  ASSERT_EQ(r.document.contracts.size(), 1u);
  const Contract& c = r.document.contracts[0];
  EXPECT_EQ(c.violation.text,
            "results drift and the reference handles finitely what the kernel does not; measure twice, post once, "
            "scope creep");
  EXPECT_EQ(c.reference.kind, Reference::Kind::kHigherPrecision);
  EXPECT_EQ(c.measure.count, 2);
  EXPECT_TRUE(c.executable());
}

TEST(Continuation, AKeywordAtTheKeywordColumnStartsAClause) {
  auto r = parse_kc("contract C-1 {\n  scope matmul\n  -- a comment between clauses\n  pre precision(A) in {FP32}\n"
                    "        and M in {4}\n  post raise IndexError\n}\n",
                    "c.kc");
  EXPECT_EQ(errors(r), 0);
  const Contract& c = r.document.contracts.at(0);
  EXPECT_EQ(c.scope, std::vector<std::string>({"matmul"}));
  EXPECT_EQ(c.pre.size(), 2u);
  EXPECT_EQ(c.post.kind, Postcondition::Kind::kRaise);
  EXPECT_EQ(c.pre_info.comment, "a comment between clauses");
}

TEST(Continuation, AnUnknownWordAtTheKeywordColumnIsAnErrorAndItsContinuationIsSkipped) {
  auto r = parse_kc("contract C-1 {\n  scope matmul\n  overall the kernel is fine\n     and so on\n  post raise E\n}\n",
                    "c.kc");
  ASSERT_EQ(errors(r), 1);
  EXPECT_EQ(r.diagnostics[0].loc.line, 3);
  EXPECT_EQ(r.diagnostics[0].loc.column, 3);
  EXPECT_NE(r.diagnostics[0].expected.find("indent the line further"), std::string::npos);
  EXPECT_EQ(r.document.contracts.at(0).scope_info.text, "matmul");  // nothing appended to scope
  EXPECT_EQ(r.document.contracts.at(0).post.kind, Postcondition::Kind::kRaise);
}

TEST(Structure, MissingClosingBraceIsReportedOnceBeforeTheNextBlock) {
  auto r = parse_kc("contract A-1 {\n  scope matmul\n  post raise E\n\ncontract A-2 {\n  scope dot\n}\n"
                    "contract A-3 {\n  scope asum\n}\n",
                    "m.kc");
  ASSERT_EQ(errors(r), 1);
  EXPECT_NE(r.diagnostics[0].message.find("'contract A-1' is not closed"), std::string::npos);
  EXPECT_EQ(r.diagnostics[0].loc.line, 1);
  EXPECT_NE(r.diagnostics[0].expected.find("line 5"), std::string::npos);
  ASSERT_EQ(r.document.contracts.size(), 3u);  // the blocks after it parse on their own
  EXPECT_EQ(r.document.contracts[1].scope, std::vector<std::string>({"dot"}));
}

TEST(Structure, MissingBraceAtTheEndAndMissingHeaderAreOneErrorEach) {
  EXPECT_EQ(errors(parse_kc("contract A-1 {\n  scope matmul\n  post raise E\n", "m.kc")), 1);
  auto r = parse_kc("  scope matmul\n  post raise E\n}\ncontract A-2 {\n  scope dot\n}\n", "m.kc");
  EXPECT_EQ(errors(r), 1);
  EXPECT_EQ(r.document.contracts.size(), 1u);
}

TEST(Structure, MultiLineBracesInsideAClauseDoNotCloseTheBlock) {
  auto r = parse_kc("contract C-1 {\n  tolerance  per_precision {\n               FP32: relative 1e-5,\n"
                    "               FP16: relative 1e-2\n             }\n  post raise E\n}\n",
                    "c.kc");
  EXPECT_EQ(errors(r), 0) << (r.diagnostics.empty() ? "" : r.diagnostics[0].render());
  const Contract& c = r.document.contracts.at(0);
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kPerPrecision);
  EXPECT_EQ(c.post.kind, Postcondition::Kind::kRaise);
}

TEST(Bytes, NulCrOnlyAndBadUtf8AreErrorsWithPositions) {
  const std::string nul = std::string("contract C-1 {\n  scope mat") + '\0' + "mul\n}\n";
  auto a = parse_kc(nul, "n.kc");
  ASSERT_EQ(errors(a), 1);
  EXPECT_EQ(a.diagnostics[0].loc.line, 2);
  EXPECT_EQ(a.diagnostics[0].loc.column, 12);
  EXPECT_NE(a.diagnostics[0].message.find("NUL"), std::string::npos);

  auto b = parse_kc("contract C-1 {\r  scope matmul\r}\r", "cr.kc");
  ASSERT_EQ(errors(b), 1);
  EXPECT_EQ(b.diagnostics[0].loc.column, 15);
  EXPECT_NE(b.diagnostics[0].message.find("CR-only"), std::string::npos);
  EXPECT_FALSE(parse_kc("contract C-1 {\r\n  scope matmul\r\n}\r\n", "crlf.kc").has_errors());

  auto c = parse_yaml("contracts:\n  - id: C-1\n    title: \"caf\xC3\xA9 \xE9t\xE9\"\n", "u.yaml");
  ASSERT_EQ(errors(c), 1);
  EXPECT_EQ(c.diagnostics[0].loc.line, 3);
  EXPECT_EQ(c.diagnostics[0].loc.column, 19);  // byte columns
  EXPECT_NE(c.diagnostics[0].message.find("invalid UTF-8 (byte 0xE9)"), std::string::npos);
  EXPECT_TRUE(c.document.contracts.empty());  // nothing garbled reaches the model
}

TEST(Yaml, TabsInIndentationAreNamed) {
  auto r = parse_yaml("contracts:\n  - id: C-1\n\tscope: matmul\n", "t.yaml");
  ASSERT_EQ(errors(r), 1);
  EXPECT_EQ(r.diagnostics[0].loc.file, "t.yaml");
  EXPECT_EQ(r.diagnostics[0].loc.line, 3);
  EXPECT_EQ(r.diagnostics[0].loc.column, 1);
  EXPECT_NE(r.diagnostics[0].message.find("tab"), std::string::npos);
  // a tab inside a value is text, not indentation
  EXPECT_FALSE(parse_yaml("contracts:\n  - id: C-1\n    title: \"a\tb\"\n", "t.yaml").has_errors());
}

TEST(Yaml, ViolationKeyOrderDoesNotMatter) {
  const char* a = "contracts:\n  - id: C-1\n    violation:\n      signatures: [NONDETERMINISTIC, SATURATION(65504)]\n"
                  "      text: \"repeated calls differ\"\n";
  const char* b = "contracts:\n  - id: C-1\n    violation:\n      text: \"repeated calls differ\"\n"
                  "      signatures: [NONDETERMINISTIC, SATURATION(65504)]\n";
  auto ra = parse_yaml(a, "a.yaml");
  auto rb = parse_yaml(b, "b.yaml");
  ASSERT_FALSE(ra.has_errors()) << ra.diagnostics[0].render();
  ASSERT_FALSE(rb.has_errors());
  const ViolationSpec& va = ra.document.contracts.at(0).violation;
  EXPECT_EQ(va.text, "repeated calls differ");
  ASSERT_EQ(va.signatures.size(), 2u);
  EXPECT_EQ(va.signatures[1].to_string(), "SATURATION(65504)");
  EXPECT_TRUE(ra.document.contracts[0].violation_info.gap.empty());
  EXPECT_EQ(ra.document.contracts[0].content_hash(), rb.document.contracts[0].content_hash());
}

TEST(Yaml, ClauseKeyOrderDoesNotMatter) {
  auto a = parse_yaml("contracts:\n  - tolerance: relative 1e-4 (FP32), relative 1e-3 (FP16)\n"
                      "    comments: {tolerance: \"from the paper\"}\n    scope: matmul\n    id: C-1\n",
                      "a.yaml");
  ASSERT_FALSE(a.has_errors());
  const Contract& c = a.document.contracts.at(0);
  EXPECT_EQ(c.id, "C-1");
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kPerPrecision);
  EXPECT_EQ(c.tolerance_info.comment, "from the paper");
}

TEST(Yaml, MultiLineTextSurvivesTheKcForm) {
  auto y = parse_yaml("contracts:\n  - id: C-1\n    violation:\n      text: \"first line\\nsecond\\tline \\x01\"\n",
                      "m.yaml");
  ASSERT_FALSE(y.has_errors());
  const std::string text = y.document.contracts.at(0).violation.text;
  EXPECT_EQ(text, std::string("first line\nsecond\tline \x01"));
  const std::string kc_text = print_kc(y.document);
  EXPECT_NE(kc_text.find("\"first line\\nsecond\\tline \\x01\""), std::string::npos) << kc_text;
  auto back = parse_kc(kc_text, "m.kc");
  ASSERT_FALSE(back.has_errors()) << back.diagnostics[0].render();
  EXPECT_EQ(back.document.contracts.at(0).violation.text, text);
}

TEST(Yaml, AKeyGivenTwiceInAContractIsAnError) {
  auto y = parse_yaml("contracts:\n  - id: C-1\n    violation: \"a\"\n    post: \"x\"\n    violation: \"b\"\n",
                      "d.yaml");
  ASSERT_TRUE(y.has_errors());
  EXPECT_NE(y.diagnostics[0].message.find("duplicate key 'violation'"), std::string::npos) << y.diagnostics[0].render();
  EXPECT_EQ(y.diagnostics[0].loc.line, 5);
}

TEST(Yaml, AnEmptyViolationTextReadsBack) {
  auto y = parse_yaml("contracts:\n  - id: C-1\n    violation:\n      text: \"\"\n", "e.yaml");
  ASSERT_FALSE(y.has_errors()) << y.diagnostics[0].render();
  auto back = parse_yaml(print_yaml(y.document), "p.yaml");
  ASSERT_FALSE(back.has_errors()) << print_yaml(y.document);
  EXPECT_EQ(back.document.contracts.at(0).content_hash(), y.document.contracts.at(0).content_hash())
      << print_yaml(y.document);
}

TEST(Yaml, ProseWithLineBreaksPrintsAsContinuationLines) {
  auto y = parse_yaml(
      "contracts:\n  - id: C-1\n    scope: matmul\n    pre: [\"the caller\\nThe invocations run in one worker\"]\n",
      "p.yaml");
  ASSERT_FALSE(y.has_errors()) << y.diagnostics[0].render();
  const std::string kc_text = print_kc(y.document);
  auto back = parse_kc(kc_text, "p.kc");
  EXPECT_FALSE(back.has_errors()) << kc_text << (back.diagnostics.empty() ? "" : back.diagnostics[0].render());
}

TEST(Yaml, ALineBreakInASignatureArgumentIsASpace) {
  auto y = parse_yaml(
      "contracts:\n  - id: C-1\n    violation:\n      signatures: [\"PRECISION_FINGERPRINT(fp16\\nacc)\"]\n",
      "s.yaml");
  ASSERT_FALSE(y.has_errors()) << y.diagnostics[0].render();
  const auto& sigs = y.document.contracts.at(0).violation.signatures;
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].to_string(), "PRECISION_FINGERPRINT(fp16 acc)");
  auto back = parse_kc(print_kc(y.document), "s.kc");
  ASSERT_FALSE(back.has_errors()) << back.diagnostics[0].render();
  EXPECT_EQ(back.document.contracts.at(0).content_hash(), y.document.contracts.at(0).content_hash());
}

TEST(Yaml, NamesAreCheckedAsInTheKcForm) {
  // What YAML accepts must print as .kc that parses: ids and names are one word.
  auto bad_id = parse_yaml("contracts:\n  - id: \"FA3-FP=\"\n", "i.yaml");
  ASSERT_TRUE(bad_id.has_errors());
  EXPECT_NE(bad_id.diagnostics[0].message.find("malformed contract id 'FA3-FP='"), std::string::npos);
  auto dashes = parse_yaml("contracts:\n  - id: C--0CRP2\n", "i.yaml");  // `--` starts a .kc comment
  ASSERT_TRUE(dashes.has_errors());
  EXPECT_NE(dashes.diagnostics[0].message.find("malformed contract id 'C--0CRP2'"), std::string::npos);
  auto twice = parse_yaml("contracts:\n  - id: C-1\n  - id: C-1\n", "i.yaml");
  ASSERT_TRUE(twice.has_errors());
  EXPECT_NE(twice.diagnostics[0].message.find("defined twice"), std::string::npos);
  EXPECT_EQ(twice.diagnostics[0].loc.line, 3);
  auto cal = parse_yaml("calibrations:\n  - contract: C-1\n    baseline: a\n    good: b\n", "c.yaml");
  ASSERT_TRUE(cal.has_errors());
  EXPECT_NE(cal.diagnostics[0].message.find("names no bad impl"), std::string::npos);
  auto suite = parse_yaml("suites:\n  - name: ci\n    contracts: [\"C-1 -- x\"]\n", "s.yaml");
  EXPECT_TRUE(suite.has_errors());
}

TEST(Limits, DiagnosticsAreCappedPerFile) {
  std::string text;
  for (int i = 0; i < 80; ++i) text += "contract C-" + std::to_string(i) + " {\n  scpoe matmul\n}\n";
  auto r = parse_kc(text, "many.kc");
  ASSERT_EQ(r.diagnostics.size(), 51u);
  EXPECT_NE(r.diagnostics.back().message.find("30 more diagnostics"), std::string::npos);
  EXPECT_EQ(r.diagnostics.back().severity, Diagnostic::Severity::kError);
}

TEST(Limits, LintFindingsAreCappedPerFile) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += "contract C-" + std::to_string(i) + " {\n  scope matmul\n}\n";  // 6 gaps each
  auto r = parse_kc(text, "gaps.kc");
  ASSERT_FALSE(r.has_errors());
  auto findings = lint(r.document);
  ASSERT_EQ(findings.size(), 51u);
  EXPECT_EQ(findings.back().message, "130 more findings in this file not shown");
  EXPECT_EQ(findings.back().loc.file, "gaps.kc");
}

TEST(Forms, ToleranceListsThatDoNotNamePrecisionsAreProse) {
  auto r = parse_kc("contract C-1 {\n  tolerance  relative 1e-4 (FP32), relative 1e-3\n}\n", "t.kc");
  EXPECT_FALSE(r.has_errors());
  const Contract& c = r.document.contracts.at(0);
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kProse);
  EXPECT_NE(c.tolerance_info.gap.find("names the precisions"), std::string::npos) << c.tolerance_info.gap;
  auto dup = parse_kc("contract C-1 {\n  tolerance  relative 1e-4 for FP32, FP16\n             relative 1e-3 for FP16\n}\n",
                      "t.kc");
  EXPECT_NE(dup.document.contracts.at(0).tolerance_info.gap.find("FP16 is given two tolerances"), std::string::npos);
  auto two = parse_kc("contract C-1 {\n  tolerance  ulp 2 signed for FP32, FP16\n}\n", "t.kc");
  const Tolerance& t = two.document.contracts.at(0).tolerance;
  ASSERT_EQ(t.kind, Tolerance::Kind::kPerPrecision);
  ASSERT_EQ(t.per_precision.size(), 2u);
  EXPECT_TRUE(t.per_precision[1].tolerance.signed_zeros);
}

TEST(Forms, InjectSpellingsOfNonFiniteValues) {
  auto anomaly = [](const std::string& m) {
    auto r = parse_kc("contract C-1 {\n  measure    " + m + "\n}\n", "m.kc");
    EXPECT_FALSE(r.has_errors());
    const Contract& c = r.document.contracts.at(0);
    return c.measure.kind == Protocol::Kind::kInject ? c.measure.anomaly : "prose: " + c.measure_info.gap;
  };
  EXPECT_EQ(anomaly("inject NaN at density 0.1; observe propagation"), "nan");
  EXPECT_EQ(anomaly("inject -Inf; observe propagation"), "neg_inf");
  EXPECT_EQ(anomaly("inject NaN/+Inf/-Inf at varied positions; observe propagation"), "nonfinite");
  EXPECT_EQ(anomaly("inject saturation(65504); observe max rel_error"), "saturation");
  EXPECT_EQ(anomaly("inject NaN/banana; observe propagation").rfind("prose: ", 0), 0u);
}

TEST(Forms, ShapeSetsMustNameADimensionAndHoldSizes) {
  auto gap = [](const std::string& pre) {
    auto r = parse_kc("contract C-1 {\n  pre        " + pre + "\n}\n", "s.kc");
    EXPECT_FALSE(r.has_errors());
    return r.document.contracts.at(0).pre_info.gap;
  };
  EXPECT_EQ(gap("shape(Q) = (B, H, S, D) with D in {64, 128}, H in {8}"), "");
  EXPECT_NE(gap("shape(Q) = (B, H, S, D) with E in {64}").find("'E' is not a dimension"), std::string::npos);
  EXPECT_NE(gap("shape(Q) = (B, H, S, D) with D in {big}").find("not a whole number"), std::string::npos);
}

TEST(Parameters, NonNumericValuesOfNumericParametersAreErrors) {
  const std::string dir = testing::TempDir() + "/kc_param_values";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/p.kc";
  std::ofstream(file) << "contract P-1 {\n  scope      matmul\n  pre        precision(A, B, C) in {FP32}\n"
                         "             and M in {abc}\n  post       output C satisfies elementwise_close(C, ref(C))\n"
                         "  tolerance  relative 1e-5\n  reference  higher_precision FP64\n"
                         "  measure    sample 1 random inputs per config\n  violation  \"x\"\n}\n";
  auto loaded = kc::engine::load_contracts({file});
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  const Diagnostic& d = loaded.diagnostics[0];
  EXPECT_EQ(d.severity, Diagnostic::Severity::kError);
  EXPECT_EQ(d.loc.file, file);
  EXPECT_EQ(d.loc.line, 4);
  EXPECT_EQ(d.loc.column, 18);
  EXPECT_NE(d.message.find("'abc' is not a number"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kc::lang
