// Contracts written in the paper's prose-heavy style (tests/unit/lang/paper_style/):
// every one lints clean (kc lint exit 0), the structured forms the paper uses
// come out executable, and the prose around them stays descriptive.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <sys/wait.h>

#include "kc/lang.h"

namespace kc::lang {
namespace {

const std::string kDir = std::string(KC_SOURCE_DIR) + "/tests/unit/lang/paper_style";

ParseResult load(const std::string& name) {
  ParseResult r = parse_file(kDir + "/" + name + ".kc");
  for (const auto& d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::kError) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u) << name;
  return r;
}

const Predicate* find_pred(const Contract& c, Predicate::Kind kind, std::size_t nth = 0) {
  for (const Predicate& p : c.pre)
    if (p.kind == kind && nth-- == 0) return &p;
  return nullptr;
}

TEST(PaperStyle, EveryFileLintsCleanAndRoundTrips) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() != ".kc") continue;
    ++files;
    const std::string path = entry.path().string();
    ParseResult r = parse_file(path);
    EXPECT_FALSE(r.has_errors()) << path << "\n" << (r.diagnostics.empty() ? "" : r.diagnostics[0].render());
    ASSERT_EQ(r.document.contracts.size(), 1u) << path;
    // fmt is a fixed point, and .kc -> YAML -> .kc keeps the meaning.
    const std::string printed = print_kc(r.document);
    ParseResult again = parse_kc(printed, "printed.kc");
    EXPECT_FALSE(again.has_errors()) << printed;
    EXPECT_EQ(print_kc(again.document), printed);
    ParseResult via_yaml = parse_yaml(print_yaml(r.document), "printed.yaml");
    EXPECT_FALSE(via_yaml.has_errors()) << print_yaml(r.document);
    ASSERT_EQ(via_yaml.document.contracts.size(), 1u);
    EXPECT_EQ(via_yaml.document.contracts[0].content_hash(), r.document.contracts[0].content_hash()) << path;
  }
  EXPECT_EQ(files, 18u);  // twelve classes, three incidents, three FlashAttention-3 contracts
}

TEST(PaperStyle, KcLintExitsZero) {
  const std::string kc = std::string(KC_BINARY_DIR) + "/bin/kc";
  if (!std::filesystem::exists(kc)) GTEST_SKIP() << "kc binary not built";
  const std::string cmd = kc + " lint " + kDir + " >/dev/null 2>&1";
  const int rc = std::system(cmd.c_str());
  ASSERT_NE(rc, -1);
  EXPECT_EQ(WEXITSTATUS(rc), 0) << cmd;
}

TEST(PaperStyle, Fp8AttentionFormsAreExecutable) {
  ParseResult r = load("FA3-FP8");
  const Contract& c = r.document.contracts.at(0);
  EXPECT_TRUE(c.executable()) << (lint(r.document).empty() ? "" : lint(r.document)[0].message);
  EXPECT_TRUE(c.pre_info.gap.empty()) << c.pre_info.gap;
  ASSERT_EQ(c.pre.size(), 4u);
  // shape(Q) = (B, H, S, D) with D in {64, 128, 256}
  const Predicate* q = find_pred(c, Predicate::Kind::kShape, 0);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->tensors, std::vector<std::string>({"Q"}));
  EXPECT_EQ(q->dims, std::vector<std::string>({"B", "H", "S", "D"}));
  ASSERT_EQ(q->dim_sets.size(), 1u);
  EXPECT_EQ(q->dim_sets[0].first, "D");
  EXPECT_EQ(q->dim_sets[0].second, std::vector<std::string>({"64", "128", "256"}));
  // shape(K) = shape(V) = (B, H, S, D)
  const Predicate* kv = find_pred(c, Predicate::Kind::kShape, 1);
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->tensors, std::vector<std::string>({"K", "V"}));
  // value_range(Q, K, V) finite
  const Predicate* vr = find_pred(c, Predicate::Kind::kValueRange);
  ASSERT_NE(vr, nullptr);
  EXPECT_EQ(vr->range, Predicate::Range::kFinite);
  EXPECT_EQ(vr->tensors.size(), 3u);
  // elementwise_close(O, ref(Q, K, V)): the reference applied to the inputs
  EXPECT_EQ(c.post.kind, Postcondition::Kind::kElementwiseClose);
  EXPECT_EQ(c.post.output, "O");
  EXPECT_EQ(c.post.ref_args, std::vector<std::string>({"Q", "K", "V"}));
  // one `relative E for P` per line, with trailing comments
  ASSERT_EQ(c.tolerance.kind, Tolerance::Kind::kPerPrecision);
  ASSERT_EQ(c.tolerance.per_precision.size(), 2u);
  EXPECT_EQ(c.tolerance.per_precision[0].dtype, DType::kFP8E4M3);
  EXPECT_EQ(c.tolerance.per_precision[0].tolerance.kind, Tolerance::Kind::kRelative);
  EXPECT_DOUBLE_EQ(c.tolerance.per_precision[0].tolerance.value.number, 5e-3);
  EXPECT_EQ(c.tolerance.per_precision[1].dtype, DType::kF16);
  EXPECT_DOUBLE_EQ(c.tolerance.per_precision[1].tolerance.value.number, 1e-3);
  // reference over four lines
  EXPECT_EQ(c.reference.kind, Reference::Kind::kHigherPrecision);
  EXPECT_EQ(c.reference.precision, DType::kF32);
  ASSERT_EQ(c.reference.with.size(), 3u);
  EXPECT_EQ(c.reference.with[0], std::make_pair(std::string("softmax_stabilization"), std::string("max_subtraction")));
  EXPECT_EQ(c.reference.with[2], std::make_pair(std::string("reduction_order"), std::string("row_major")));
  // a violation continuation line that begins with a clause keyword
  EXPECT_NE(c.violation.text.find("reference handles the same inputs"), std::string::npos) << c.violation.text;
  EXPECT_EQ(c.violation.signatures.size(), 2u);
}

TEST(PaperStyle, CausalAttentionChainsThreeShapesAndRestrictsHeadDim) {
  ParseResult r = load("FA3-CAUSAL");
  const Contract& c = r.document.contracts.at(0);
  EXPECT_TRUE(c.executable());
  const Predicate* s = find_pred(c, Predicate::Kind::kShape);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->tensors, std::vector<std::string>({"q", "k", "v"}));
  ASSERT_EQ(s->dim_sets.size(), 1u);  // `with` on its own continuation line
  EXPECT_EQ(s->dim_sets[0].first, "head_dim");
  EXPECT_EQ(c.post.ref_args, std::vector<std::string>({"q", "k", "v"}));
  // `absolute E for precision P`: one expression for every precision
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kAbsolute);
  EXPECT_EQ(print_expr(c.tolerance.value), "4 * seq * eps(P)");
}

TEST(PaperStyle, DeterminismIsBitwiseAcrossInvocations) {
  for (const char* name : {"FA3-DETERMINISM", "C-ORD-02"}) {
    ParseResult r = load(name);
    const Contract& c = r.document.contracts.at(0);
    EXPECT_EQ(c.post.kind, Postcondition::Kind::kBitwiseIdentical) << name;
    EXPECT_EQ(c.post.invocations, 100) << name;
    EXPECT_TRUE(c.post_info.gap.empty()) << name;
  }
  // The determinism contract's prose conjunct keeps it descriptive, and says so.
  ParseResult r = load("FA3-DETERMINISM");
  EXPECT_FALSE(r.document.contracts[0].executable());
  EXPECT_FALSE(r.document.contracts[0].pre_info.gap.empty());
}

TEST(PaperStyle, ExpressionToleranceForPrecisionP) {
  ParseResult r = load("C-ORD-01");
  const Contract& c = r.document.contracts.at(0);
  EXPECT_TRUE(c.executable());
  EXPECT_EQ(c.tolerance.kind, Tolerance::Kind::kAbsolute);
  EXPECT_EQ(print_expr(c.tolerance.value), "N * eps(P) * max|x|");
  ExprEnv env;
  env.vars = {{"N", 1000}, {"max|x|", 0.5}};
  env.precision = DType::kF32;
  auto v = eval_expr(c.tolerance.value, env);
  ASSERT_TRUE(v.ok());
  EXPECT_DOUBLE_EQ(*v, 1000 * 0x1p-23 * 0.5);
}

TEST(PaperStyle, PerPrecisionListInParentheses) {
  ParseResult r = load("C-CMP-01");
  const Contract& c = r.document.contracts.at(0);
  ASSERT_EQ(c.tolerance.kind, Tolerance::Kind::kPerPrecision);
  EXPECT_TRUE(c.tolerance_info.gap.empty());
  ASSERT_EQ(c.tolerance.per_precision.size(), 2u);
  EXPECT_EQ(c.tolerance.per_precision[0].dtype, DType::kF32);
  EXPECT_DOUBLE_EQ(c.tolerance.per_precision[0].tolerance.value.number, 1e-4);
  EXPECT_EQ(c.tolerance.per_precision[1].dtype, DType::kF16);
  EXPECT_EQ(c.post.ref_args, std::vector<std::string>({"A", "B"}));
  // the pre clause's second conjunct and the measure clause are prose: descriptive
  EXPECT_FALSE(c.executable());
  EXPECT_EQ(c.pre[0].kind, Predicate::Kind::kPrecision);
  EXPECT_EQ(c.measure.kind, Protocol::Kind::kProse);
}

TEST(PaperStyle, NanInfInjectionAtVariedPositions) {
  ParseResult r = load("C-EXC-01");
  const Contract& c = r.document.contracts.at(0);
  EXPECT_TRUE(c.executable());
  EXPECT_EQ(c.measure.kind, Protocol::Kind::kInject);
  EXPECT_EQ(c.measure.anomaly, "nonfinite");
  EXPECT_EQ(c.measure.positions, "varied");
  EXPECT_EQ(c.measure.observe, "propagation");
  // a violation line starting with `reference` continues the violation
  EXPECT_EQ(c.reference.kind, Reference::Kind::kSpec);
  EXPECT_NE(c.violation.text.find("reference handles it finitely"), std::string::npos);
}

TEST(PaperStyle, ProseThatStartsLikeAFormIsDescriptiveWithAPlace) {
  ParseResult r = load("INC-REWARD-HACK");
  const Contract& c = r.document.contracts.at(0);
  // "output within tolerance on ..." in the violation is text; in a post it would be prose.
  EXPECT_NE(c.violation.text.find("output within tolerance"), std::string::npos);
  ParseResult p = load("C-PRC-01");
  const Contract& d = p.document.contracts.at(0);
  EXPECT_EQ(d.post.kind, Postcondition::Kind::kProse);
  bool found = false;
  for (const LintFinding& f : lint(p.document)) {
    if (f.clause != "post") continue;
    found = true;
    EXPECT_EQ(f.loc.line, 6);
    EXPECT_NE(f.message.find("satisfies"), std::string::npos) << f.message;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(d.tolerance.kind, Tolerance::Kind::kPerPrecision);  // relative 1e-3 (FP16), relative 8e-3 (BF16)
}

}  // namespace
}  // namespace kc::lang
