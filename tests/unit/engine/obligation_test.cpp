// Algebraic properties as contracts (`reference algebraic family.property`,
// kc/obligation.h): the table, the Judge, and the engine judging impls whose
// behaviour we control — a right one conforms, a wrong one is named by the
// property it breaks, a crash on a re-invocation is an error verdict.
#include <gtest/gtest.h>

#include <csignal>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/obligation.h"

namespace kc::engine {
namespace {

class LambdaImpl : public Impl {
 public:
  LambdaImpl(std::string name, std::string op, std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = std::move(name);
    decl_.op = std::move(op);
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fn_(call); }

 private:
  Declaration decl_;
  std::function<Status(Call&)> fn_;
};

/// fp32 softmax over rows; `subtract_max` and `normalise` switch off the two
/// steps the properties are about.
Status softmax(Call& call, bool subtract_max, bool normalise) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<float>(x.at(r * cols + c)));
    if (!subtract_max) m = 0;
    float s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<float>(x.at(r * cols + c)) - m);
    for (std::int64_t c = 0; c < cols; ++c)
      y.set(r * cols + c, std::exp(static_cast<float>(x.at(r * cols + c)) - m) / (normalise ? s : 1.0f));
  }
  return ok_status();
}

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "test.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

std::string contract_for(const std::string& property) {
  return R"(
contract T-PROP {
  scope      softmax
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 3) and cols in {9, 64}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(cols + 2 * max|x| + 4, P) * |y|
  reference  algebraic )" +
         property + R"(
  measure    sample 2 random inputs per config; compute max ratio; pass if <= 1
  violation  signature PROPERTY_VIOLATED
}
)";
}

BackendInfo info() { return {"test", true, "1", "", ""}; }

TEST(ObligationTable, NamesAreUniqueQualifiedAndResolvable) {
  std::set<std::string> seen;
  ASSERT_FALSE(obligation::properties().empty());
  for (const auto& p : obligation::properties()) {
    EXPECT_TRUE(seen.insert(p.name).second) << p.name;
    EXPECT_TRUE(obligation::is_property_name(p.name)) << p.name << " is not family.property";
    EXPECT_FALSE(p.ops.empty()) << p.name;
    EXPECT_FALSE(p.statement.empty()) << p.name;
    EXPECT_TRUE(p.check) << p.name;
    for (const auto& op : p.ops) EXPECT_NE(builtin_ops().find(op), nullptr) << p.name << " names op " << op;
    EXPECT_EQ(obligation::find_property(p.name), &p);
  }
  EXPECT_EQ(obligation::find_property("softmax.sums_to_on"), nullptr);
  EXPECT_EQ(obligation::nearest_property("softmax.sums_to_on"), "softmax.sums_to_one");
  EXPECT_FALSE(obligation::is_property_name("determinism"));  // a descriptive label, as in C-ORD-02
}

TEST(ObligationJudge, ZeroResidualPassesExactAndNaNFails) {
  obligation::Judge j("|d|");
  j.check(0, 0, {0, 0, {}});
  EXPECT_EQ(j.outcome().failures, 0);
  EXPECT_EQ(j.outcome().max_ratio, 0);
  j.check(1e-7, 2e-7, {1, 0, {}});
  EXPECT_EQ(j.outcome().failures, 0);
  EXPECT_DOUBLE_EQ(j.outcome().max_ratio, 0.5);
  j.check(1e-9, 0, {2, 0, {}});  // anything against an exact statement fails
  EXPECT_EQ(j.outcome().failures, 1);
  j.check(std::nan(""), 1, {3, 4, {}});
  const obligation::Outcome o = j.outcome();
  EXPECT_EQ(o.failures, 2);
  EXPECT_TRUE(std::isinf(o.max_ratio));
  EXPECT_EQ(o.worst.row, 2);  // the first infinite ratio is the one shown
  EXPECT_NE(o.evidence.find("2 of 4 checks failed"), std::string::npos) << o.evidence;
  obligation::Judge inf_judge("|d|");
  inf_judge.check(INFINITY, INFINITY, {0, 0, {}});  // inf / inf must not pass as NaN
  EXPECT_EQ(inf_judge.outcome().failures, 1);
  obligation::Judge s("x");
  s.pass();
  s.fail({-1, -1, "row 7"}, "a number where NaN is stated");
  EXPECT_NE(s.outcome().evidence.find("a number where NaN is stated at row 7"), std::string::npos)
      << s.outcome().evidence;
}

TEST(ObligationEngine, RightSoftmaxConformsToEveryProperty) {
  LambdaImpl good("t.softmax", "softmax", [](Call& c) { return softmax(c, true, true); });
  for (const auto& p : obligation::properties()) {
    if (!p.applies_to("softmax")) continue;
    const CaseResult r = run_case(parse_one(contract_for(p.name)), "t.kc", good, info(), CheckRequest{});
    EXPECT_EQ(r.verdict, Verdict::kConforming) << p.name << ": " << r.reason;
    EXPECT_EQ(r.evidence.metric, "property_ratio");
    EXPECT_GT(r.evidence.elements, 0) << p.name;
    EXPECT_LE(r.evidence.max, 1.0) << p.name;
  }
}

TEST(ObligationEngine, MissingNormalisationIsNamedBySumsToOne) {
  LambdaImpl bad("t.unnormalised", "softmax", [](Call& c) { return softmax(c, true, false); });
  const CaseResult r =
      run_case(parse_one(contract_for("softmax.sums_to_one")), "t.kc", bad, info(), CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "PROPERTY_VIOLATED(softmax.sums_to_one)");
  EXPECT_TRUE(r.signature_expected);
  EXPECT_FALSE(r.repro.empty());
  ASSERT_TRUE(r.evidence.worst.has_value());
  EXPECT_EQ(r.evidence.worst->output, "softmax.sums_to_one");
  EXPECT_GT(r.evidence.worst->value, r.evidence.worst->reference);  // residual beyond what is allowed
}

TEST(ObligationEngine, NoMaxSubtractionIsNamedByTranslationInvariance) {
  LambdaImpl naive("t.naive", "softmax", [](Call& c) { return softmax(c, false, true); });
  // Correct on the contract's own inputs (|x| <~ 12, far from exp's overflow)...
  EXPECT_EQ(run_case(parse_one(contract_for("softmax.sums_to_one")), "t.kc", naive, info(), CheckRequest{}).verdict,
            Verdict::kConforming);
  // ...but the shift by 100 the property makes overflows exp.
  const CaseResult r =
      run_case(parse_one(contract_for("softmax.translation_invariance")), "t.kc", naive, info(), CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "PROPERTY_VIOLATED(softmax.translation_invariance)");
  EXPECT_NE(r.reason.find("c = 100"), std::string::npos) << r.reason;
}

TEST(ObligationEngine, CrashOnAReInvocationIsAnErrorVerdict) {
  // Crashes only on the shifted input the property makes (x + 100).
  LambdaImpl crashy("t.crashy", "softmax", [](Call& c) {
    if (c.t("x").at(0) > 50) std::raise(SIGSEGV);
    return softmax(c, true, true);
  });
  const CaseResult r = run_case(parse_one(contract_for("softmax.translation_invariance")), "t.kc", crashy, info(),
                                CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kError) << r.reason;
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "CRASH(SIGSEGV)");
}

TEST(ObligationEngine, UnknownPropertyIsUnderSpecifiedWithASuggestion) {
  LambdaImpl good("t.softmax", "softmax", [](Call& c) { return softmax(c, true, true); });
  const CaseResult r =
      run_case(parse_one(contract_for("softmax.sums_to_on")), "t.kc", good, info(), CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified);
  EXPECT_NE(r.reason.find("did you mean softmax.sums_to_one"), std::string::npos) << r.reason;
}

TEST(ObligationEngine, PropertyOfAnotherOpIsNotApplicable) {
  std::string text = contract_for("softmax.sums_to_one");
  text.replace(text.find("scope      softmax"), 18, "scope      relu   ");
  text.replace(text.find("precision(x, y) in {FP32} and "), 30, "");
  text.replace(text.find(" and cols in {9, 64}"), 20, "");
  LambdaImpl relu("t.relu", "relu", [](Call&) { return ok_status(); });
  const CaseResult r = run_case(parse_one(text), "t.kc", relu, info(), CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable) << r.reason;
  EXPECT_NE(r.reason.find("not defined for op relu"), std::string::npos) << r.reason;
}

// prune.exact_sparsity states the op: the k lowest scores of each row are
// pruned, W's zeros (score 0) first. A kernel that prunes k entries besides
// the zeros it was given (the property's old promise) zeroes too many.
TEST(ObligationPrune, ExistingZerosArePrunedFirst) {
  const Op* op = builtin_ops().find("prune_magnitude");
  ASSERT_NE(op, nullptr);
  const obligation::Property* prop = obligation::find_property("prune.exact_sparsity");
  ASSERT_NE(prop, nullptr);
  Config cfg;
  cfg.dtype = DType::kF32;
  cfg.params = {{"rows", "1"}, {"cols", "4"}, {"sparsity", "0.5"}};
  auto made = op->make_call(cfg);
  ASSERT_TRUE(made.ok()) << made.status().message();
  Call call = *made;
  const std::vector<double> w = {0.5, -2, 0, 1};
  for (std::int64_t i = 0; i < 4; ++i) call.t("W").set(i, w[static_cast<std::size_t>(i)]);
  const obligation::Invoke invoke = [](Call&) { return ok_status(); };
  Rng rng(1);
  auto judge = [&](const std::vector<double>& y) {
    for (std::int64_t i = 0; i < 4; ++i) call.t("y").set(i, y[static_cast<std::size_t>(i)]);
    obligation::Context ctx{*op, call, invoke, rng};
    auto out = prop->check(ctx);
    EXPECT_TRUE(out.ok());
    return out.ok() ? out->failures : -1;
  };
  EXPECT_EQ(judge({0, -2, 0, 1}), 0);  // k = 2: the 0 and 0.5 pruned
  EXPECT_EQ(judge({0, -2, 0, 0}), 1);  // 0.5 and 1 pruned besides the 0
  EXPECT_EQ(judge({0.5, -2, 0, 1}), 1);  // only the 0 "pruned"
}

}  // namespace
}  // namespace kc::engine
