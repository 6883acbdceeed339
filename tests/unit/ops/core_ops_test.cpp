// Tests of the op framework (src/ops/op.cpp) and the core ops: matmul, the
// level-1 BLAS ops, sum, softmax and log_softmax — oracles on hand-computed
// cases, error models, and every generic probe.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kc/lang.h"
#include "kc/op.h"

namespace kc {
namespace {

const double kNaN = std::nan("");
constexpr double kInf = std::numeric_limits<double>::infinity();

const Op& op_named(const std::string& name) {
  const Op* op = builtin_ops().find(name);
  KC_CHECK_MSG(op != nullptr, "op missing from builtin_ops()");
  return *op;
}

Call call_for(const std::string& op, std::map<std::string, std::string> params, DType dt = DType::kF32) {
  Config c;
  c.params = std::move(params);
  c.dtype = dt;
  auto r = op_named(op).make_call(c);
  KC_CHECK_MSG(r.ok(), "make_call failed");
  return std::move(r).value();
}

std::vector<double> run_oracle(const std::string& op, const Call& call) {
  auto r = op_named(op).oracle(call, OracleOptions{});
  KC_CHECK_MSG(r.ok(), "oracle failed");
  return r->outputs.at(0);
}

/// Sets a stored row-major matrix from logical values (respects its leading dimension).
void set_matrix(Tensor& t, const std::vector<double>& v) {
  ASSERT_EQ(static_cast<std::int64_t>(v.size()), t.numel());
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
}

// ---- framework

TEST(Config, TypedGettersAndStableString) {
  Config c;
  c.params = {{"N", "64"}, {"K", "127"}, {"alpha", "0.5"}, {"trans_a", "T"}, {"big", "1e3"}};
  EXPECT_EQ(c.get_int("K"), 127);
  EXPECT_EQ(c.get_int("big"), 1000);
  EXPECT_EQ(c.get_int("missing", 7), 7);
  EXPECT_EQ(c.get_int("trans_a", -1), -1);  // not a number: fallback
  EXPECT_EQ(c.get_double("alpha"), 0.5);
  EXPECT_EQ(c.get("trans_a"), "T");
  EXPECT_EQ(c.to_string(), "dtype=FP32 K=127 N=64 alpha=0.5 big=1e3 trans_a=T");
}

class NamedOp final : public Op {
 public:
  explicit NamedOp(std::string n) : n_(std::move(n)) {}
  std::string_view name() const override { return n_; }
  std::string_view summary() const override { return "test"; }
  const std::vector<TensorSpec>& signature() const override { return sig_; }
  const std::vector<Param>& params() const override { return params_; }
  Result<Call> make_call(const Config&) const override { return unimplemented("test"); }
  Result<OracleResult> oracle(const Call&, const OracleOptions&) const override { return unimplemented("t"); }

 private:
  std::string n_;
  std::vector<TensorSpec> sig_;
  std::vector<Param> params_;
};

TEST(OpRegistry, RejectsDuplicatesAndNull) {
  OpRegistry r;
  EXPECT_TRUE(r.add(std::make_unique<NamedOp>("a")).ok());
  EXPECT_TRUE(r.add(std::make_unique<NamedOp>("b")).ok());
  const Status dup = r.add(std::make_unique<NamedOp>("a"));
  EXPECT_EQ(dup.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(r.add(nullptr).ok());
  EXPECT_EQ(r.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.find("c"), nullptr);
  // The built-in table cannot be registered twice into one registry.
  OpRegistry twice;
  ASSERT_TRUE(register_builtin_ops(twice).ok());
  EXPECT_FALSE(register_builtin_ops(twice).ok());
}

TEST(OpRegistry, BuiltinCoreOpsHaveHelp) {
  for (const char* name : {"matmul", "dot", "asum", "nrm2", "scal", "iamax", "sum", "softmax", "log_softmax"}) {
    const Op* op = builtin_ops().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_FALSE(op->summary().empty()) << name;
    for (const Param& p : op->params()) EXPECT_FALSE(p.help.empty()) << name << "." << p.name;
    for (const TensorSpec& t : op->signature()) EXPECT_FALSE(t.help.empty()) << name << "." << t.name;
    auto call = op->make_call(Config{});  // defaults must make a valid call
    EXPECT_TRUE(call.ok()) << name << ": " << call.status().to_string();
  }
}

// A contract's scope may name any registered op: the language's vocabulary
// (which the parser checks without linking the ops) must list every one.
TEST(OpRegistry, EveryBuiltinOpIsAKnownScopeWord) {
  const auto& known = lang::known_op_classes();
  for (const std::string& name : builtin_ops().names())
    EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << name << " missing from vocabulary.cpp";
}

TEST(Fill, IntegerKindGivesExactSmallIntegers) {
  Call c = call_for("sum", {{"n", "100"}});
  Rng rng(3);
  op_named("sum").fill(c, FillSpec{FillSpec::Kind::kInteger, -3, 3}, rng);
  std::set<double> seen;
  for (double v : c.t("x").to_doubles()) {
    EXPECT_EQ(v, std::round(v));
    EXPECT_GE(v, -3);
    EXPECT_LE(v, 3);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  // Uniform stays in its interval; outputs are not written by fill.
  op_named("sum").fill(c, FillSpec{FillSpec::Kind::kUniform, 2, 4}, rng);
  for (double v : c.t("x").to_doubles()) {
    EXPECT_GE(v, 2);
    EXPECT_LT(v, 4);
  }
  EXPECT_EQ(c.t("out").at(0), 0);
}

// ---- matmul

TEST(MatmulOracle, HandComputedTwoByTwoByThree) {
  Call c = call_for("matmul", {{"M", "2"}, {"N", "2"}, {"K", "3"}, {"alpha", "2"}, {"beta", "1"}});
  set_matrix(c.t("A"), {1, 2, 3, 4, 5, 6});
  set_matrix(c.t("B"), {1, 0, 0, 1, 1, 1});
  set_matrix(c.t("C"), {10, 20, 30, 40});
  // A B = [[1+3, 2+3], [4+6, 5+6]] = [[4, 5], [10, 11]]; 2 AB + C:
  EXPECT_EQ(run_oracle("matmul", c), (std::vector<double>{18, 30, 50, 62}));
  const auto mag = op_named("matmul").magnitude(c, "C");
  ASSERT_TRUE(mag.ok());
  EXPECT_EQ(*mag, (std::vector<double>{18, 30, 50, 62}));  // all terms positive
  EXPECT_EQ(op_named("matmul").accumulation_length(c), 5);
  // Gradual underflow of the K = 3 products scales with alpha = 2: (2 K + 4) lambda.
  EXPECT_EQ(op_named("matmul").underflow_allowance(c), 10 * underflow_unit(DType::kF32));
  Call half = call_for("matmul", {{"M", "2"}, {"N", "2"}, {"K", "3"}, {"alpha", "0.5"}});
  EXPECT_EQ(op_named("matmul").underflow_allowance(half), 7 * underflow_unit(DType::kF32));
  const auto vars = op_named("matmul").expr_vars(c);
  EXPECT_EQ(vars.at("M"), 2);
  EXPECT_EQ(vars.at("N"), 2);
  EXPECT_EQ(vars.at("K"), 3);
  EXPECT_EQ(vars.at("max|x|"), 40);
}

TEST(MatmulOracle, TransposesAndLeadingDimensions) {
  // The same logical op(A), op(B) stored transposed and padded must give the same C.
  Call n = call_for("matmul", {{"M", "2"}, {"N", "3"}, {"K", "2"}});
  set_matrix(n.t("A"), {1, 2, 3, 4});            // 2x2
  set_matrix(n.t("B"), {1, 2, 3, 4, 5, 6});      // 2x3
  const auto want = run_oracle("matmul", n);
  EXPECT_EQ(want, (std::vector<double>{9, 12, 15, 19, 26, 33}));
  Call t = call_for("matmul", {{"M", "2"}, {"N", "3"}, {"K", "2"}, {"trans_a", "T"}, {"trans_b", "T"},
                               {"lda_pad", "3"}, {"ldb_pad", "1"}, {"ldc_pad", "2"}});
  EXPECT_EQ(t.t("A").strides()[0], 5);
  EXPECT_EQ(t.t("B").shape(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(t.t("C").strides()[0], 5);
  t.t("A").fill_storage(kNaN);  // padding must never be read
  t.t("B").fill_storage(kNaN);
  set_matrix(t.t("A"), {1, 3, 2, 4});            // A^T stored
  set_matrix(t.t("B"), {1, 4, 2, 5, 3, 6});      // B^T stored
  EXPECT_EQ(run_oracle("matmul", t), want);
}

TEST(MatmulOracle, BetaZeroDoesNotReadC) {
  Call c = call_for("matmul", {{"M", "1"}, {"N", "2"}, {"K", "1"}});
  set_matrix(c.t("A"), {2});
  set_matrix(c.t("B"), {3, 4});
  set_matrix(c.t("C"), {kNaN, kInf});
  EXPECT_EQ(run_oracle("matmul", c), (std::vector<double>{6, 8}));
  auto mag = op_named("matmul").magnitude(c, "C");
  EXPECT_EQ(*mag, (std::vector<double>{6, 8}));
  // With beta != 0 the NaN does propagate.
  Call d = call_for("matmul", {{"M", "1"}, {"N", "2"}, {"K", "1"}, {"beta", "1"}});
  set_matrix(d.t("A"), {2});
  set_matrix(d.t("B"), {3, 4});
  set_matrix(d.t("C"), {kNaN, 1});
  const auto out = run_oracle("matmul", d);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], 9);
}

TEST(MatmulOracle, AlphaZeroDoesNotReadAOrB) {
  Call c = call_for("matmul", {{"M", "1"}, {"N", "2"}, {"K", "2"}, {"alpha", "0"}, {"beta", "2"}});
  set_matrix(c.t("A"), {kNaN, kInf});
  set_matrix(c.t("B"), {1, 2, kNaN, 4});
  set_matrix(c.t("C"), {1.5, -2});
  EXPECT_EQ(run_oracle("matmul", c), (std::vector<double>{3, -4}));
  Call z = call_for("matmul", {{"M", "1"}, {"N", "1"}, {"K", "1"}, {"alpha", "0"}});
  set_matrix(z.t("A"), {kNaN});
  set_matrix(z.t("C"), {kNaN});
  EXPECT_EQ(run_oracle("matmul", z), (std::vector<double>{0}));
}

TEST(MatmulOracle, RejectsBadConfigs) {
  Config c;
  c.params = {{"trans_a", "X"}};
  EXPECT_EQ(op_named("matmul").make_call(c).status().code(), StatusCode::kInvalidArgument);
  c.params = {{"M", "0"}};
  EXPECT_FALSE(op_named("matmul").make_call(c).ok());
  c.params = {{"lda_pad", "-1"}};
  EXPECT_FALSE(op_named("matmul").make_call(c).ok());
  c.params = {};
  c.dtype = DType::kI32;
  EXPECT_FALSE(op_named("matmul").make_call(c).ok());
}

TEST(MatmulProbe, NanGoesIntoAAndBButNotAnUnreadC) {
  Call c = call_for("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
  Rng rng(5);
  op_named("matmul").fill(c, FillSpec{}, rng);
  Probe p{"nan", {}, 0.05, {}};
  ASSERT_TRUE(op_named("matmul").apply_probe(c, p, rng).ok());
  auto count_nan = [](const Tensor& t) {
    int n = 0;
    for (double v : t.to_doubles()) n += std::isnan(v);
    return n;
  };
  EXPECT_EQ(count_nan(c.t("A")), 3);  // round(0.05 * 64)
  EXPECT_EQ(count_nan(c.t("B")), 3);
  EXPECT_EQ(count_nan(c.t("C")), 0);
  Call d = call_for("matmul", {{"M", "2"}, {"N", "2"}, {"K", "2"}, {"beta", "1"}});
  ASSERT_TRUE(op_named("matmul").apply_probe(d, Probe{"inf", {}, 0.0, {}}, rng).ok());
  EXPECT_EQ(std::isinf(d.t("C").at(0)) + std::isinf(d.t("C").at(1)) + std::isinf(d.t("C").at(2)) +
                std::isinf(d.t("C").at(3)),
            1);  // density 0 still touches one element
}

TEST(MatmulProbe, SaturationDrivesEveryOutputToAboutFourV) {
  Call c = call_for("matmul", {{"M", "4"}, {"N", "4"}, {"K", "64"}});
  Rng rng(9);
  ASSERT_TRUE(op_named("matmul").apply_probe(c, Probe{"saturation", {65504}, 0.01, {}}, rng).ok());
  for (double v : c.t("A").to_doubles()) EXPECT_GT(v, 0);
  for (double y : run_oracle("matmul", c)) {
    EXPECT_GT(y, 3 * 65504.0);
    EXPECT_LT(y, 5 * 65504.0);
  }
}

// ---- generic probes (through sum and softmax)

TEST(Probe, MantissaValuesNeedTheirBits) {
  Call c = call_for("sum", {{"n", "64"}});
  Rng rng(2);
  ASSERT_TRUE(op_named("sum").apply_probe(c, Probe{"mantissa", {13}, 0.01, {}}, rng).ok());
  bool pos = false, neg = false;
  for (double v : c.t("x").to_doubles()) {
    const double frac = (std::fabs(v) - 1) * 8192;  // j
    EXPECT_EQ(frac, std::round(frac));
    EXPECT_EQ(std::fmod(frac, 2.0), 1.0);  // odd j: exactly 13 fraction bits
    EXPECT_NE(round_to(v, DType::kF16), v);
    EXPECT_NE(round_to(v, DType::kBF16), v);
    EXPECT_NE(round_to(v, DType::kTF32), v);
    EXPECT_EQ(round_to(v, DType::kF32), v);
    (v > 0 ? pos : neg) = true;
  }
  EXPECT_TRUE(pos && neg);
}

TEST(Probe, SubnormalDensity) {
  Call c = call_for("sum", {{"n", "200"}});
  Rng rng(4);
  op_named("sum").fill(c, FillSpec{FillSpec::Kind::kUniform, 1, 2}, rng);
  ASSERT_TRUE(op_named("sum").apply_probe(c, Probe{"subnormal", {}, 0.1, {}}, rng).ok());
  int sub = 0;
  for (double v : c.t("x").to_doubles()) {
    if (std::fabs(v) < 0x1p-126) {
      EXPECT_NE(v, 0);
      ++sub;
    }
  }
  EXPECT_EQ(sub, 20);
  // An explicit v: +-v * [1, 2).
  Call d = call_for("sum", {{"n", "10"}});
  ASSERT_TRUE(op_named("sum").apply_probe(d, Probe{"subnormal", {0x1p-140}, 1.0, {}}, rng).ok());
  for (double v : d.t("x").to_doubles()) {
    EXPECT_GE(std::fabs(v), 0x1p-140);
    EXPECT_LT(std::fabs(v), 0x1p-139);
  }
}

TEST(Probe, InfNegInfZeroAndErrors) {
  Call c = call_for("softmax", {{"rows", "2"}, {"cols", "4"}});
  Rng rng(8);
  op_named("softmax").fill(c, FillSpec{}, rng);
  ASSERT_TRUE(op_named("softmax").apply_probe(c, Probe{"neg_inf", {}, 0.25, {}}, rng).ok());
  int n = 0;
  for (double v : c.t("x").to_doubles()) n += v == -kInf;
  EXPECT_EQ(n, 2);
  ASSERT_TRUE(op_named("softmax").apply_probe(c, Probe{"zero", {}, 0.01, {}}, rng).ok());
  for (double v : c.t("x").to_doubles()) EXPECT_EQ(v, 0);
  EXPECT_EQ(op_named("softmax").apply_probe(c, Probe{"bogus", {}, 0.01, {}}, rng).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(op_named("softmax").apply_probe(c, Probe{"oob", {}, 0.01, {}}, rng).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(op_named("softmax").apply_probe(c, Probe{"nan", {}, 0.01, {"nope"}}, rng).ok());
}

TEST(Probe, SaturationOnSumReachesFourV) {
  Call c = call_for("sum", {{"n", "256"}});
  Rng rng(1);
  ASSERT_TRUE(op_named("sum").apply_probe(c, Probe{"saturation", {1000}, 0.01, {}}, rng).ok());
  const double y = run_oracle("sum", c)[0];
  EXPECT_GT(y, 3500);
  EXPECT_LT(y, 4500);
}

// ---- blas1 and sum

TEST(Blas1Oracle, DotWithStrides) {
  Call c = call_for("dot", {{"n", "3"}, {"incx", "2"}, {"incy", "3"}});
  EXPECT_EQ(c.t("x").storage_elems(), 5);
  EXPECT_EQ(c.t("y").storage_elems(), 7);
  c.t("x").fill_storage(kNaN);  // the gaps must not be read
  c.t("y").fill_storage(kNaN);
  set_matrix(c.t("x"), {1, 2, 3});
  set_matrix(c.t("y"), {4, -5, 6});
  EXPECT_EQ(run_oracle("dot", c), (std::vector<double>{4 - 10 + 18}));
  EXPECT_EQ(*op_named("dot").magnitude(c, "out"), (std::vector<double>{4 + 10 + 18}));
  EXPECT_EQ(op_named("dot").accumulation_length(c), 3);
  EXPECT_EQ(op_named("dot").expr_vars(c).at("N"), 3);
}

TEST(Blas1Oracle, AsumSumScal) {
  Call a = call_for("asum", {{"n", "3"}});
  set_matrix(a.t("x"), {-1, 2, -3.5});
  EXPECT_EQ(run_oracle("asum", a), (std::vector<double>{6.5}));
  Call s = call_for("sum", {{"n", "3"}});
  set_matrix(s.t("x"), {-1, 2, -3.5});
  EXPECT_EQ(run_oracle("sum", s), (std::vector<double>{-2.5}));
  EXPECT_EQ(*op_named("sum").magnitude(s, "out"), (std::vector<double>{6.5}));
  Call x = call_for("scal", {{"n", "2"}, {"alpha", "-3"}});
  set_matrix(x.t("x"), {1.5, 2});
  EXPECT_EQ(run_oracle("scal", x), (std::vector<double>{-4.5, -6}));
  // alpha reaches the oracle rounded to the call's precision, as sscal's REAL SA.
  Call y = call_for("scal", {{"n", "1"}, {"alpha", "0.1"}});
  set_matrix(y.t("x"), {1});
  EXPECT_EQ(run_oracle("scal", y)[0], static_cast<double>(0.1f));
  EXPECT_EQ(op_named("scal").signature()[0].role, Role::kInOut);
}

TEST(Blas1Oracle, Nrm2IsScaledAgainstOverflow) {
  Call c = call_for("nrm2", {{"n", "2"}});
  set_matrix(c.t("x"), {0x3p100, -0x4p100});  // squares overflow fp32
  EXPECT_EQ(run_oracle("nrm2", c)[0], 0x5p100);
  Call d = call_for("nrm2", {{"n", "2"}}, DType::kF64);
  set_matrix(d.t("x"), {3e200, 4e200});
  EXPECT_DOUBLE_EQ(run_oracle("nrm2", d)[0], 5e200);
  set_matrix(d.t("x"), {0, 0});
  EXPECT_EQ(run_oracle("nrm2", d)[0], 0);
  set_matrix(d.t("x"), {kInf, kNaN});
  EXPECT_TRUE(std::isnan(run_oracle("nrm2", d)[0]));
  set_matrix(d.t("x"), {kInf, 1});
  EXPECT_EQ(run_oracle("nrm2", d)[0], kInf);
}

TEST(Blas1Oracle, IamaxFollowsReferenceBlas) {
  Call c = call_for("iamax", {{"n", "5"}});
  EXPECT_EQ(c.t("out").dtype(), DType::kI64);
  set_matrix(c.t("x"), {1, -7, 3, 7, 2});
  EXPECT_EQ(run_oracle("iamax", c)[0], 1);  // first of the ties
  set_matrix(c.t("x"), {kNaN, 1, 9, 3, 2});
  EXPECT_EQ(run_oracle("iamax", c)[0], 0);  // NaN at x_0 wins
  set_matrix(c.t("x"), {1, kNaN, 9, 3, 2});
  EXPECT_EQ(run_oracle("iamax", c)[0], 2);  // NaN elsewhere is never chosen
  set_matrix(c.t("x"), {1, 2, -kInf, 3, kInf});
  EXPECT_EQ(run_oracle("iamax", c)[0], 2);
}

// ---- softmax

TEST(SoftmaxOracle, HandComputedRows) {
  // FP64 tensors so log(3) is stored without an fp32 rounding.
  Call c = call_for("softmax", {{"rows", "2"}, {"cols", "2"}}, DType::kF64);
  set_matrix(c.t("x"), {0, std::log(3.0), 1000, 1000});
  const auto y = run_oracle("softmax", c);
  EXPECT_DOUBLE_EQ(y[0], 0.25);
  EXPECT_DOUBLE_EQ(y[1], 0.75);
  EXPECT_DOUBLE_EQ(y[2], 0.5);  // max subtraction: no overflow at 1000
  EXPECT_DOUBLE_EQ(y[3], 0.5);
  Call l = call_for("log_softmax", {{"rows", "2"}, {"cols", "2"}}, DType::kF64);
  set_matrix(l.t("x"), {0, std::log(3.0), 1000, 1000});
  const auto ly = run_oracle("log_softmax", l);
  EXPECT_NEAR(ly[0], std::log(0.25), 1e-15);
  EXPECT_NEAR(ly[1], std::log(0.75), 1e-15);
  EXPECT_NEAR(ly[2], -std::log(2.0), 1e-15);
  const auto mag = *op_named("log_softmax").magnitude(l, "y");
  EXPECT_NEAR(mag[0], 1 + std::log(4.0), 1e-15);
  EXPECT_EQ(op_named("softmax").accumulation_length(c), 2);
}

TEST(SoftmaxOracle, AllNegInfRowIsNaNAndNaNPropagates) {
  Call c = call_for("softmax", {{"rows", "3"}, {"cols", "2"}});
  set_matrix(c.t("x"), {-kInf, -kInf, 1, kNaN, -kInf, 0});
  const auto y = run_oracle("softmax", c);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]));
  EXPECT_EQ(y[4], 0);
  EXPECT_EQ(y[5], 1);
}

}  // namespace
}  // namespace kc
