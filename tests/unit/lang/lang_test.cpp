// The contract language: parsing, diagnostics, printing, round trips, lint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kc/lang.h"

namespace kc::lang {
namespace {

const char* kGemm = R"(-- leading comment
-- second line
contract KC-GEMM-01 {
  title      "GEMM bound"
  scope      matmul
  pre        precision(A, B, C) in {FP32}
             and value_range(A, B) normal(0, 1)
             and M in {1, 17}
             and declared accumulator = FP32
  -- why the bound
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64 with accumulator = FP64
  measure    sample 2 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "error beyond FP32 rounding"
             signature PRECISION_FINGERPRINT(bf16), SATURATION(65504)
}
)";

ParseResult parse_ok(const std::string& text, const std::string& file = "t.kc") {
  ParseResult r = parse_text(text, file);
  for (const auto& d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::kError) ADD_FAILURE() << d.render();
  return r;
}

TEST(Parse, ExecutableContractToTypedModel) {
  auto r = parse_ok(kGemm);
  ASSERT_EQ(r.document.contracts.size(), 1u);
  const Contract& c = r.document.contracts[0];
  EXPECT_EQ(c.id, "KC-GEMM-01");
  EXPECT_EQ(c.loc.line, 3);
  EXPECT_EQ(c.comment, "leading comment\nsecond line");
  EXPECT_EQ(c.meta.at("title"), "GEMM bound");
  EXPECT_TRUE(c.executable());
  ASSERT_EQ(c.scope, std::vector<std::string>{"matmul"});
  ASSERT_EQ(c.pre.size(), 4u);
  EXPECT_EQ(c.pre[0].kind, Predicate::Kind::kPrecision);
  EXPECT_EQ(c.pre[0].tensors, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(c.pre[0].dtypes, std::vector<DType>{DType::kF32});
  EXPECT_EQ(c.pre[1].kind, Predicate::Kind::kValueRange);
  EXPECT_EQ(c.pre[1].range, Predicate::Range::kNormal);
  EXPECT_EQ(c.pre[1].hi, 1.0);
  EXPECT_EQ(c.pre[2].kind, Predicate::Kind::kParamIn);
  EXPECT_EQ(c.pre[2].values, (std::vector<std::string>{"1", "17"}));
  EXPECT_EQ(c.pre[3].kind, Predicate::Kind::kDeclared);
  EXPECT_EQ(c.pre[3].key, "accumulator");
  EXPECT_EQ(c.pre[3].loc.line, 9);
  EXPECT_EQ(c.post.kind, Postcondition::Kind::kElementwiseClose);
  EXPECT_EQ(c.post.output, "C");
  EXPECT_EQ(c.post_info.comment, "why the bound");
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kBound);
  EXPECT_EQ(c.tolerance.magnitude, "|A||B|");
  EXPECT_EQ(print_expr(c.tolerance.value), "gamma(K + 2, P)");
  EXPECT_EQ(c.reference.kind, Reference::Kind::kHigherPrecision);
  ASSERT_EQ(c.reference.with.size(), 1u);
  EXPECT_EQ(c.reference.with[0].first, "accumulator");
  EXPECT_EQ(c.measure.kind, Protocol::Kind::kSample);
  EXPECT_EQ(c.measure.count, 2);
  ASSERT_TRUE(c.measure.aggregate && c.measure.pass_if);
  EXPECT_EQ(c.measure.aggregate->metric, "bound_ratio");
  EXPECT_EQ(c.measure.pass_if->cmp, "<=");
  EXPECT_EQ(c.violation.text, "error beyond FP32 rounding");
  ASSERT_EQ(c.violation.signatures.size(), 2u);
  EXPECT_EQ(c.violation.signatures[1].to_string(), "SATURATION(65504)");
}

TEST(Parse, ProtocolShapes) {
  auto r = parse_ok(R"(
contract X-1 {
  scope      reduction
  pre        precision(x) in {FP32, FP16}
  post       bitwise_identical across 10 invocations
  tolerance  per_precision {FP32: relative 1e-5, FP16: elementwise absolute 1e-3 and relative 2 * eps(FP16)}
  reference  algebraic associativity
  measure    sweep threads in {1, 2, 8}; compute max mismatches; pass if == 0
  violation  signature NONDETERMINISTIC
}
contract X-2 {
  scope      elementwise
  pre        value_range(x) in [-1, 1]
  post       declared_policy nan in {IEEE_PROPAGATE, MASK}
  tolerance  none
  reference  spec IEEE754-2019
  measure    inject nan(x) at density 0.01; observe propagation
  violation  signature NAN_SWALLOWED
}
contract X-3 {
  scope      matmul
  pre        stack = cublas and flag(fast_math) = off and version >= 12.1 and schedule in {a, b}
  post       raise IndexError
  tolerance  ulp 4
  reference  alternate_stack openblas
  measure    enumerate schedules; compute max ulp; pass if <= 4
  violation  signature SCHEDULE_OUTLIER(schedule)
}
)");
  ASSERT_EQ(r.document.contracts.size(), 3u);
  const auto& c1 = r.document.contracts[0];
  EXPECT_EQ(c1.post.invocations, 10);
  ASSERT_EQ(c1.tolerance.per_precision.size(), 2u);
  EXPECT_EQ(c1.tolerance.per_precision[1].dtype, DType::kF16);
  EXPECT_EQ(c1.tolerance.per_precision[1].tolerance.kind, Tolerance::Kind::kElementwise);
  EXPECT_EQ(c1.measure.kind, Protocol::Kind::kSweep);
  EXPECT_EQ(c1.measure.values.size(), 3u);
  const auto& c2 = r.document.contracts[1];
  EXPECT_EQ(c2.pre[0].lo, -1);
  EXPECT_EQ(c2.post.allowed.size(), 2u);
  EXPECT_EQ(c2.measure.kind, Protocol::Kind::kInject);
  EXPECT_EQ(c2.measure.anomaly, "nan");
  EXPECT_EQ(c2.measure.anomaly_args, std::vector<std::string>{"x"});
  EXPECT_EQ(*c2.measure.density, 0.01);
  EXPECT_EQ(c2.measure.observe, "propagation");
  const auto& c3 = r.document.contracts[2];
  ASSERT_EQ(c3.pre.size(), 4u);
  EXPECT_EQ(c3.pre[0].kind, Predicate::Kind::kStack);
  EXPECT_EQ(c3.pre[1].kind, Predicate::Kind::kFlag);
  EXPECT_EQ(c3.pre[2].kind, Predicate::Kind::kVersion);
  EXPECT_EQ(c3.pre[3].kind, Predicate::Kind::kParamIn);
  EXPECT_EQ(c3.measure.kind, Protocol::Kind::kEnumerate);
  for (const auto& c : r.document.contracts) EXPECT_TRUE(c.executable()) << c.id;
}

// The paper's style: some clauses in English. Parses as descriptive; lint
// names each clause that keeps it from running.
TEST(Parse, PaperStyleProseIsDescriptive) {
  auto r = parse_ok(R"(
contract C-PRC-02 {
  scope      matmul, fused_attention
  pre        inputs are representable in the declared storage precision
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  relative 1e-3
  reference  higher_precision FP64
  measure    run the kernel on large-magnitude inputs and compare to the reference
  violation  outputs differ from FP32 results in the low mantissa bits
}
)");
  ASSERT_EQ(r.document.contracts.size(), 1u);
  const Contract& c = r.document.contracts[0];
  EXPECT_FALSE(c.executable());
  EXPECT_EQ(c.violation.text, "outputs differ from FP32 results in the low mantissa bits");
  auto findings = lint(r.document);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].clause, "pre");
  EXPECT_NE(findings[0].message.find("precision(...)"), std::string::npos);
  EXPECT_EQ(findings[0].loc.line, 4);
  EXPECT_EQ(findings[1].clause, "measure");
}

TEST(Lint, MissingClausesAreFindings) {
  auto r = parse_ok("contract C-X-01 {\n  scope matmul\n}\n");
  auto f = lint(r.document);
  EXPECT_EQ(f.size(), 6u);
  EXPECT_FALSE(r.document.contracts[0].executable());
}

struct BadCase {
  const char* text;
  int line, column;
  const char* message_part;
  const char* suggestion;
};

// Hard errors are structural only: brackets and quotes, block headers and
// closing braces, a word where a clause keyword must stand, a duplicate clause.
class Diagnostics : public ::testing::TestWithParam<BadCase> {};

TEST_P(Diagnostics, PointAtTheProblem) {
  const BadCase& b = GetParam();
  auto r = parse_kc(b.text, "bad.kc");
  ASSERT_TRUE(r.has_errors()) << b.text;
  const Diagnostic& d = r.diagnostics.front();
  EXPECT_EQ(d.loc.file, "bad.kc");
  EXPECT_EQ(d.loc.line, b.line) << d.render();
  EXPECT_EQ(d.loc.column, b.column) << d.render();
  EXPECT_NE(d.message.find(b.message_part), std::string::npos) << d.render();
  EXPECT_EQ(d.suggestion, b.suggestion) << d.render();
  const std::string shown = d.render();
  EXPECT_NE(shown.find("bad.kc:" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": error:"),
            std::string::npos);
  EXPECT_NE(shown.find("^"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Lang, Diagnostics,
    ::testing::Values(
        BadCase{"contract C-1 {\n  scope matmul\n  tolerence relative 1e-5\n}\n", 3, 3, "unknown contract entry",
                "tolerance"},
        BadCase{"contract C-1 {\n  scope matmul\n", 1, 14, "is not closed", ""},
        BadCase{"contrct C-1 {\n}\n", 1, 1, "unknown block 'contrct'", "contract"},
        BadCase{"contract C-1\n  scope matmul\n}\n", 1, 13, "expected '{'", ""},
        BadCase{"contract C-1 {\n  scope matmul\n  scope dot\n}\n", 3, 3, "duplicate 'scope'", ""},
        BadCase{"contract C-1 {\n  pre precision(A in {FP32}\n}\n", 2, 16, "'(' is never closed", ""},
        BadCase{"contract C-1 {\n  post output C satisfies close(C, ref(C)))\n}\n", 2, 43, "unmatched ')'", ""},
        BadCase{"contract C-1 {\n  pre shape(A) = (M, K]\n}\n", 2, 23, "']' closes the '('", ""},
        BadCase{"contract C-1 {\n  violation \"never closed\n}\n", 2, 13, "unterminated string", ""}));

// A clause that does not match its structured form is prose, not an error:
// lint says where and what would make it executable.
class ProseNotes : public ::testing::TestWithParam<BadCase> {};

TEST_P(ProseNotes, LintSaysWhereAndWhat) {
  const BadCase& b = GetParam();
  auto r = parse_kc(b.text, "prose.kc");
  EXPECT_FALSE(r.has_errors()) << (r.diagnostics.empty() ? "" : r.diagnostics[0].render());
  ASSERT_EQ(r.document.contracts.size(), 1u);
  EXPECT_FALSE(r.document.contracts[0].executable());
  bool found = false;
  for (const LintFinding& f : lint(r.document)) {
    if (f.message.find(b.message_part) == std::string::npos) continue;
    found = true;
    EXPECT_EQ(f.loc.file, "prose.kc");
    EXPECT_EQ(f.loc.line, b.line) << f.message;
    EXPECT_EQ(f.loc.column, b.column) << f.message;
    if (*b.suggestion) {
      EXPECT_NE(f.message.find(std::string("did you mean '") + b.suggestion + "'"), std::string::npos) << f.message;
    }
  }
  EXPECT_TRUE(found) << b.text;
}

INSTANTIATE_TEST_SUITE_P(
    Lang, ProseNotes,
    ::testing::Values(
        // (A misspelt name in a structured form, 'matmull', is not prose: the vocabulary check reports it.)
        BadCase{"contract C-1 {\n  tolerance relative 1e-5 *\n}\n", 2, 28, "ends too early", ""},
        BadCase{"contract C-1 {\n  measure sample many inputs\n}\n", 2, 18, "whole number of samples", ""},
        BadCase{"contract C-1 {\n  pre shape(A) = (M, K) with N in {4}\n}\n", 2, 30, "'N' is not a dimension", "M"},
        BadCase{"contract C-1 {\n  tolerance relative 1e-4 (FP32) relative 1e-3\n}\n", 2, 34,
                "names the precisions", ""},
        BadCase{"contract C-1 {\n  post output C satisfies close(C)\n}\n", 2, 32, "compares an output", ""},
        BadCase{"contract C-1 {\n  post output within tolerance of the reference\n}\n", 2, 22, "expected 'satisfies'",
                ""}));

TEST(Diagnostics, RenderShowsLineCaretExpectationAndSuggestion) {
  auto r = parse_kc("contract C-1 {\n  scope      matmul\n  tolerence  none\n}\n", "f.kc");
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics[0].render(),
            "f.kc:3:3: error: unknown contract entry 'tolerence'\n"
            "    tolerence  none\n"
            "    ^\n"
            "  expected one of: scope, pre, post, tolerance, reference, measure, violation, title, version, class, "
            "retest, depends; or indent the line further to continue 'scope'; did you mean 'tolerance'?\n");
}

TEST(Diagnostics, ManyErrorsInOneFileAreAllReported) {
  auto r = parse_kc("contract A-1 {\n  scope matmul)\n}\ncontract A-2 {\n  scpoe matmul\n}\n", "m.kc");
  int errors = 0;
  for (const auto& d : r.diagnostics) errors += d.severity == Diagnostic::Severity::kError;
  EXPECT_EQ(errors, 2);
  EXPECT_EQ(r.document.contracts.size(), 2u);  // recovery: both blocks still parsed
}

TEST(Diagnostics, MissingFileIsADiagnostic) {
  auto r = parse_file("/nonexistent/dir/x.kc");
  ASSERT_TRUE(r.has_errors());
  EXPECT_NE(r.diagnostics[0].render().find("cannot read file"), std::string::npos);
}

TEST(Expr, ParsePrintEval) {
  auto e = parse_expr("N * eps(P) * max|x| + 2 ^ -3");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(print_expr(*e), "N * eps(P) * max|x| + 2 ^ -3");
  ExprEnv env;
  env.vars = {{"N", 100}, {"max|x|", 4}};
  env.precision = DType::kF32;
  auto v = eval_expr(*e, env);
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(*v, 100 * std::ldexp(1.0, -23) * 4 + 0.125);
}

TEST(Expr, GammaAndUnitRoundoff) {
  ExprEnv env;
  env.vars = {{"K", 1000}};
  auto g = eval_expr(*parse_expr("gamma(K, FP32)"), env);
  const double u = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(*g, 1000 * u / (1 - 1000 * u));
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("u(FP16)"), env), std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("eps(BF16)"), env), std::ldexp(1.0, -7));
}

TEST(Expr, AccIsTheDeclaredAccumulator) {
  ExprEnv env;
  env.vars = {{"K", 256}};
  env.precision = DType::kBF16;
  auto none = eval_expr(*parse_expr("gamma(K, ACC)"), env);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("declares no accumulator"), std::string::npos) << none.status().message();
  env.accumulator = DType::kF32;
  const double u = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("gamma(K, ACC)"), env), 256 * u / (1 - 256 * u));
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("u(P)"), env), std::ldexp(1.0, -8));
}

TEST(Expr, PrecedenceAndParensSurvivePrinting) {
  for (const char* s : {"a - (b - c)", "a / (b * c)", "(a + b) * c", "-(a + b)", "2 ^ 3 ^ 2", "(2 ^ 3) ^ 2",
                        "min(a, b, 3)", "sqrt(K) * u(P)"}) {
    auto e = parse_expr(s);
    ASSERT_TRUE(e.ok()) << s;
    EXPECT_EQ(print_expr(*e), s);
  }
  ExprEnv env;
  env.vars = {{"a", 10}, {"b", 4}, {"c", 3}};
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("a - (b - c)"), env), 9);
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("a - b - c"), env), 3);
  EXPECT_DOUBLE_EQ(*eval_expr(*parse_expr("2 ^ 3 ^ 2"), env), 512);
}

TEST(Expr, ErrorsNameTheProblem) {
  EXPECT_FALSE(parse_expr("1 +").ok());
  EXPECT_FALSE(parse_expr("(1 + 2").ok());
  EXPECT_FALSE(parse_expr("1 2").ok());
  auto unknown = eval_expr(*parse_expr("Q * 2"), ExprEnv{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown variable 'Q'"), std::string::npos);
  auto no_p = eval_expr(*parse_expr("eps(P)"), ExprEnv{});
  ASSERT_FALSE(no_p.ok());
  auto arity = eval_expr(*parse_expr("gamma(3)"), ExprEnv{});
  ASSERT_FALSE(arity.ok());
  EXPECT_NE(arity.status().message().find("2 arguments"), std::string::npos);
}

TEST(Expr, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '(');
  EXPECT_FALSE(parse_expr(deep).ok());
  std::string negs(100000, '-');
  EXPECT_FALSE(parse_expr(negs + "1").ok());
}

TEST(Blocks, ImplCalibrationSuite) {
  auto r = parse_ok(R"(
-- an impl
impl calib.matmul_fp16acc {
  op          matmul
  backend     calibration
  dtypes      FP32
  declares    accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE, vendor_note = x
  schedules   {t16, t32}
  source      "docs/classes/C-PRC-01.md"
  description "FP16 accumulation while declaring FP32"
}
calibration C-PRC-01 {
  baseline  calib.matmul_bf16in
  bad       calib.matmul_fp16acc
  good      calib.matmul_fp32
  visible   "3 random inputs, allclose 1e-2"
}
suite smoke {
  tier       smoke
  contracts  KC-GEMM-01, C-*
  impls      ref.*, openblas.sgemm
}
)");
  ASSERT_EQ(r.document.impls.size(), 1u);
  const Declaration& d = r.document.impls[0];
  EXPECT_EQ(d.name, "calib.matmul_fp16acc");
  EXPECT_EQ(d.op, "matmul");
  EXPECT_EQ(d.accumulator, DType::kF32);
  EXPECT_EQ(d.determinism, Determinism::kBitwise);
  EXPECT_EQ(d.extra.at("vendor_note"), "x");
  EXPECT_EQ(d.schedules, (std::vector<std::string>{"t16", "t32"}));
  EXPECT_EQ(r.document.impl_comments[0], "an impl");
  ASSERT_EQ(r.document.calibrations.size(), 1u);
  EXPECT_EQ(r.document.calibrations[0].bad, "calib.matmul_fp16acc");
  EXPECT_EQ(r.document.calibrations[0].visible, "3 random inputs, allclose 1e-2");
  ASSERT_EQ(r.document.suites.size(), 1u);
  EXPECT_EQ(r.document.suites[0].contracts, (std::vector<std::string>{"KC-GEMM-01", "C-*"}));
}

TEST(Blocks, BadDeclarationValueSaysWhatIsAllowed) {
  auto r = parse_kc("impl x.y {\n  op matmul\n  declares nan = PROPAGATE\n}\n", "i.kc");
  ASSERT_TRUE(r.has_errors());
  EXPECT_NE(r.diagnostics[0].expected.find("IEEE_PROPAGATE"), std::string::npos) << r.diagnostics[0].render();
  EXPECT_EQ(r.diagnostics[0].loc.line, 3);
}

// fmt: printing is canonical (a fixed point) and both conversions are lossless.
void expect_round_trips(const std::string& text, const std::string& file) {
  auto first = parse_ok(text, file);
  const std::string kc1 = print_kc(first.document);
  auto second = parse_ok(kc1, "rt.kc");
  EXPECT_EQ(print_kc(second.document), kc1) << "kc print is not a fixed point for " << file;
  const std::string yaml = print_yaml(second.document);
  auto from_yaml = parse_ok(yaml, "rt.yaml");
  EXPECT_EQ(print_kc(from_yaml.document), kc1) << "kc -> yaml -> kc loses something for " << file << "\n" << yaml;
  EXPECT_EQ(print_yaml(from_yaml.document), yaml);
  ASSERT_EQ(first.document.contracts.size(), from_yaml.document.contracts.size());
  for (std::size_t i = 0; i < first.document.contracts.size(); ++i) {
    EXPECT_EQ(first.document.contracts[i].content_hash(), from_yaml.document.contracts[i].content_hash());
    EXPECT_EQ(first.document.contracts[i].executable(), from_yaml.document.contracts[i].executable());
  }
}

TEST(Fmt, RoundTripsInlineExamples) {
  expect_round_trips(kGemm, "gemm.kc");
  expect_round_trips(R"(
contract C-PRC-02 {
  scope      matmul
  pre        inputs are finite and K in {1, 2}
  post       the output is close
  tolerance  elementwise absolute 1e-6 and relative N * eps(P) * max|x|
  reference  stable_algorithm Kahan summation
  measure    sample 3 random inputs per config; observe max rel_error
  violation  "x \"quoted\" y"
}
)",
                     "prose.kc");
}

TEST(Fmt, SignedUlpToleranceParsesPrintsAndRoundTrips) {
  const char* text = R"(
contract KC-SZ {
  scope      tanh
  pre        precision(x, y) in {FP32}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 0 signed
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature ZERO_SIGN
}
)";
  auto r = lang::parse_kc(text, "sz.kc");
  ASSERT_FALSE(r.has_errors());
  ASSERT_EQ(r.document.contracts.size(), 1u);
  const Tolerance& t = r.document.contracts[0].tolerance;
  EXPECT_EQ(t.kind, Tolerance::Kind::kUlp);
  EXPECT_TRUE(t.signed_zeros);
  EXPECT_TRUE(r.document.contracts[0].executable());
  expect_round_trips(text, "sz.kc");
  auto plain = lang::parse_kc(std::string(text).replace(std::string(text).find(" signed"), 7, ""), "p.kc");
  ASSERT_FALSE(plain.has_errors());
  EXPECT_FALSE(plain.document.contracts[0].tolerance.signed_zeros);
}

TEST(Fmt, RoundTripsEveryShippedContract) {
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(KC_SOURCE_DIR "/contracts")) {
    if (!entry.is_regular_file()) continue;
    const auto ext = entry.path().extension();
    if (ext != ".kc" && ext != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    expect_round_trips(ss.str(), entry.path().string());
    ++files;
  }
  EXPECT_GT(files, 5);
}

TEST(Fmt, ContentHashIgnoresCommentsButNotMeaning) {
  auto a = parse_ok(kGemm).document.contracts[0];
  std::string changed = kGemm;
  changed.replace(changed.find("leading comment"), 7, "altered");
  auto b = parse_ok(changed).document.contracts[0];
  EXPECT_EQ(a.content_hash(), b.content_hash());
  std::string tighter = kGemm;
  tighter.replace(tighter.find("pass if <= 1"), 12, "pass if <= 2");
  auto c = parse_ok(tighter).document.contracts[0];
  EXPECT_NE(a.content_hash(), c.content_hash());
  EXPECT_EQ(a.content_hash().size(), 32u);
}

TEST(Yaml, UnknownKeysAreErrorsWithSuggestions) {
  auto r = parse_yaml("contracts:\n  - id: C-1\n    scope: matmul\n    tolerence: relative 1e-5\n", "c.yaml");
  ASSERT_TRUE(r.has_errors());
  EXPECT_EQ(r.diagnostics[0].suggestion, "tolerance");
  EXPECT_EQ(r.diagnostics[0].loc.line, 4);
  EXPECT_EQ(r.diagnostics[0].loc.column, 5);
}

TEST(Yaml, ClauseGapsPointIntoTheYaml) {
  auto r = parse_yaml("contracts:\n  - id: C-1\n    measure: sample many inputs\n", "c.yaml");
  EXPECT_FALSE(r.has_errors());
  auto findings = lint(r.document);
  bool found = false;
  for (const auto& f : findings) {
    if (f.clause != "measure") continue;
    found = true;
    EXPECT_EQ(f.loc.line, 3);
    EXPECT_EQ(f.loc.column, 21);
    EXPECT_NE(f.message.find("whole number of samples"), std::string::npos);
  }
  EXPECT_TRUE(found);
}

TEST(Yaml, StructuralErrorsPointIntoTheYaml) {
  auto r = parse_yaml("contracts:\n  - id: C-1\n    pre: precision(A in {FP32}\n", "c.yaml");
  ASSERT_TRUE(r.has_errors());
  EXPECT_EQ(r.diagnostics[0].loc.line, 3);
  EXPECT_EQ(r.diagnostics[0].loc.column, 19);
  EXPECT_NE(r.diagnostics[0].message.find("never closed"), std::string::npos);
}

TEST(Yaml, MalformedYamlIsADiagnostic) {
  auto r = parse_yaml("contracts: [\n  - {id: \n", "bad.yaml");
  ASSERT_TRUE(r.has_errors());
  EXPECT_NE(r.diagnostics[0].message.find("malformed YAML"), std::string::npos);
}

TEST(Vocabulary, NearestWord) {
  EXPECT_EQ(nearest_word("matmull", known_op_classes()), "matmul");
  EXPECT_EQ(nearest_word("softmx", known_op_classes()), "softmax");
  EXPECT_EQ(nearest_word("zzzzzz", known_op_classes()), "");
  EXPECT_EQ(nearest_word("my_custom_opp", {"my_custom_op"}), "my_custom_op");
  // The op words are the registry's names and the scope classes its ops name.
  const auto& known = known_op_classes();
  EXPECT_NE(std::find(known.begin(), known.end(), "reduction"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "fused_attention"), known.end());
}

TEST(Robustness, GarbageNeverCrashes) {
  const char* inputs[] = {"", "}", "{", "contract", "contract {", "contract X {\n}", "contract X {\n  scope\n}",
                          "contract X {\n  pre and and\n}", "contract X {\n  tolerance bound * |A|\n}",
                          "contract X {\n  violation signature\n}", "\"unterminated", "-- only a comment",
                          "contract X {\n  measure ;;;\n}", "contract X {\n  tolerance per_precision {FP32:}\n}",
                          "contract X {\n  pre value_range(x) in [2, 1]\n}"};
  for (const char* s : inputs) {
    auto r = parse_kc(s, "g.kc");
    (void)print_kc(r.document);
    (void)print_yaml(r.document);
    (void)lint(r.document);
  }
  SUCCEED();
}

}  // namespace
}  // namespace kc::lang
