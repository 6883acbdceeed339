// An op is one folder: a toy op defined in this file alone (signature, oracle,
// error model, one algebraic property, a scope class and a work model) and
// added with one registration call is a word of the language, is checked by
// the engine against its oracle and its property, and sets the timing floor,
// with no edit anywhere else in kc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/obligation.h"
#include "kc/op.h"
#include "kc/peak.h"

namespace kc::engine {
namespace {

// ---- the op's folder: toy_square, y = x * x elementwise over x {n}

// toy_square.even: y(-x) = y(x). The impl is re-run on -x (exact); both runs
// round by at most (f + u) |y| each, plus each run's gradual underflow.
Result<obligation::Outcome> toy_even(const obligation::Context& ctx) {
  Call neg = ctx.fresh_inputs();
  Tensor& xn = neg.t("x");
  for (std::int64_t i = 0; i < xn.numel(); ++i) xn.set(i, -ctx.call.t("x").at(i));
  if (Status s = ctx.invoke(neg); !s.ok()) return s;
  const std::vector<double> y = ctx.call.t("y").to_doubles(), yn = neg.t("y").to_doubles();
  const double under = ctx.underflow_of(ctx.call) + ctx.underflow_of(neg);
  obligation::Judge judge("|y(-x) - y(x)|");
  for (std::size_t i = 0; i < y.size(); ++i)
    judge.check(yn[i] - y[i], ctx.allowed(std::fabs(y[i]) + std::fabs(yn[i]), under),
                obligation::Where{static_cast<std::int64_t>(i), -1, {}});
  return judge.outcome();
}

class ToySquareOp final : public Op {
 public:
  std::string_view name() const override { return "toy_square"; }
  std::string_view summary() const override { return "y = x * x elementwise (a test's op)"; }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {{"x", Role::kIn, "n"}, {"y", Role::kOut, "n"}};
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {{"n", "64", "elements"}};
    return ps;
  }
  Result<Call> make_call(const Config& config) const override {
    const std::int64_t n = config.get_int("n", 64);
    if (n < 1) return invalid_argument("n must be >= 1");
    Call call;
    call.op = std::string(name());
    call.config = config;
    call.names = {"x", "y"};
    call.roles = {Role::kIn, Role::kOut};
    call.tensors = {Tensor(config.dtype, {n}), Tensor(config.dtype, {n})};
    return call;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    OracleResult r;
    r.output_names = {"y"};
    std::vector<double> y;
    for (double x : call.t("x").to_doubles()) y.push_back(x * x);  // exact in FP64 for FP32 inputs
    r.outputs.push_back(std::move(y));
    return r;
  }
  // What the rest of kc asks of an op.
  std::vector<std::string> scope_classes() const override { return {"toy_class"}; }
  std::vector<obligation::Property> properties() const override {
    return {{"toy_square.even", {"toy_square"}, "y(-x) = y(x)", toy_even}};
  }
  double multiply_adds(const Call& call) const override { return static_cast<double>(call.t("x").numel()); }
};

// ---- the test's registration call (a registry table line for a built-in op)

const Op& toy_op() {
  static const Op* op = [] {
    const Status s = register_op(std::make_unique<ToySquareOp>());
    EXPECT_TRUE(s.ok()) << s.to_string();
    return builtin_ops().find("toy_square");
  }();
  return *op;
}

// ---- a reference impl (and a wrong one) and the contracts

class ToyImpl : public Impl {
 public:
  ToyImpl(std::string name, std::function<float(float)> f) : f_(std::move(f)) {
    decl_.name = std::move(name);
    decl_.op = "toy_square";
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    for (std::int64_t i = 0; i < x.numel(); ++i) y.set(i, f_(static_cast<float>(x.at(i))));
    return ok_status();
  }

 private:
  Declaration decl_;
  std::function<float(float)> f_;
};

const ToyImpl kRight("toy.square", [](float x) { return x * x; });
const ToyImpl kSignKept("toy.x_abs_x", [](float x) { return x * std::fabs(x); });  // odd, not even

lang::ParseResult parse(const std::string& text) { return lang::parse_kc(text, "toy.kc"); }

Contract one_contract(const lang::ParseResult& r) {
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

const char* const kOracleContract = R"(
contract T-TOY-01 {
  scope      toy_class
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 4) and n in {7, 64}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 0
  reference  higher_precision FP64
  measure    sample 3 random inputs per config; compute max ulp; pass if <= 0
  violation  signature TOLERANCE_EXCEEDED
}
)";

const char* const kPropertyContract = R"(
contract T-TOY-EVEN {
  scope      toy_square
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 4) and n in {7, 64}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(1, P) * |y|
  reference  algebraic toy_square.even
  measure    sample 3 random inputs per config; compute max ratio; pass if <= 1
  violation  signature PROPERTY_VIOLATED
}
)";

BackendInfo info() { return {"test", true, "1", "", ""}; }

TEST(ToyOp, ItsNameAndScopeClassAreWordsOfTheLanguage) {
  toy_op();
  const auto& known = lang::known_op_classes();
  EXPECT_NE(std::find(known.begin(), known.end(), "toy_square"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "toy_class"), known.end());
  EXPECT_EQ(ops_for_scope("toy_class"), std::vector<std::string>{"toy_square"});
  // A misspelled scope word is an error with the toy op as the suggestion.
  const auto bad = parse(R"(
contract T-TOY-TYPO {
  scope      toy_squar
  post       output y satisfies elementwise_close(y, ref(y))
}
)");
  ASSERT_FALSE(bad.diagnostics.empty());
  EXPECT_EQ(bad.diagnostics.front().suggestion, "toy_square") << bad.diagnostics.front().render();
}

TEST(ToyOp, ConformsToItsOracleAndAWrongImplDoesNot) {
  toy_op();
  const Contract c = one_contract(parse(kOracleContract));
  const CaseResult right = run_case(c, "toy.kc", kRight, info(), CheckRequest{});
  EXPECT_EQ(right.verdict, Verdict::kConforming) << right.reason;
  EXPECT_GT(right.evidence.elements, 0);
  const CaseResult wrong = run_case(c, "toy.kc", kSignKept, info(), CheckRequest{});
  EXPECT_EQ(wrong.verdict, Verdict::kViolation) << wrong.reason;
}

TEST(ToyOp, ItsPropertyIsInTheTableAndJudged) {
  toy_op();
  const obligation::Property* p = obligation::find_property("toy_square.even");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->applies_to("toy_square"));
  const Contract c = one_contract(parse(kPropertyContract));
  const CaseResult right = run_case(c, "toy.kc", kRight, info(), CheckRequest{});
  EXPECT_EQ(right.verdict, Verdict::kConforming) << right.reason;
  EXPECT_EQ(right.evidence.metric, "property_ratio");
  const CaseResult wrong = run_case(c, "toy.kc", kSignKept, info(), CheckRequest{});
  EXPECT_EQ(wrong.verdict, Verdict::kViolation) << wrong.reason;
  ASSERT_FALSE(wrong.signatures.empty());
  EXPECT_EQ(wrong.signatures.front().name, "PROPERTY_VIOLATED");
}

TEST(ToyOp, ItsWorkModelSetsTheTimingFloor) {
  Config config;
  config.params = {{"n", "1000000"}};
  auto call = toy_op().make_call(config);
  ASSERT_TRUE(call.ok());
  HostPeak peak;
  peak.multiply_adds_per_s = 1e6;  // 1e6 multiply-adds take 1 s
  peak.bytes_per_s = 1e12;         // 4e6 bytes take 4 us
  const TimeFloor f = time_floor(*call, peak);
  EXPECT_DOUBLE_EQ(f.seconds, 1.0);
  EXPECT_NE(f.basis.find("multiply-adds"), std::string::npos) << f.basis;
}

}  // namespace
}  // namespace kc::engine
