// Tests of the `ref` backend (backends/ref): declarations, the BLAS alpha/beta
// rules, and every impl against its op's oracle under the op's error model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../../../backends/ref/ref_backend.h"
#include "kc/metrics.h"
#include "kc/op.h"

namespace kc {
namespace {

const double kNaN = std::nan("");

std::shared_ptr<const Impl> ref_impl(const std::string& op) {
  static auto backend = backends::make_ref_backend();
  static auto impls = backend->impls();
  for (const auto& i : impls)
    if (i->declaration().op == op) return i;
  return nullptr;
}

Call make(const std::string& op, std::map<std::string, std::string> params) {
  Config c;
  c.params = std::move(params);
  auto r = builtin_ops().find(op)->make_call(c);
  KC_CHECK_MSG(r.ok(), "make_call failed");
  return std::move(r).value();
}

TEST(RefBackend, AvailableWithDeclaredPolicies) {
  auto b = backends::make_ref_backend();
  EXPECT_EQ(b->name(), "ref");
  EXPECT_TRUE(b->probe().available);
  const auto impls = b->impls();
  // Nine core ops, five unary elementwise ops (FP32, FP16, BF16), then the
  // transformer and training kernels (ref_transformer.cpp, train_kernels.cpp).
  ASSERT_GE(impls.size(), 14u);
  for (const auto& i : impls) {
    const Declaration& d = i->declaration();
    EXPECT_EQ(d.name, "ref." + d.op);
    EXPECT_EQ(d.backend, "ref");
    EXPECT_NE(builtin_ops().find(d.op), nullptr) << d.op;
    // The five unary kernels of ref_elementwise.cpp run in FP32, FP16 and BF16;
    // the activations of ref_transformer.cpp (gelu_erf, gelu_tanh, silu) in FP32.
    const bool multi_precision =
        d.op == "relu" || d.op == "exp" || d.op == "log" || d.op == "tanh" || d.op == "erf";
    const std::vector<DType> want =
        multi_precision ? std::vector<DType>{DType::kF32, DType::kF16, DType::kBF16} : std::vector<DType>{DType::kF32};
    EXPECT_EQ(d.dtypes, want) << d.name;
    EXPECT_EQ(d.accumulator, DType::kF32);
    EXPECT_EQ(d.determinism, Determinism::kBitwise);
    EXPECT_EQ(d.nan, NanPolicy::kIeeePropagate);
    EXPECT_EQ(d.denormal, DenormalPolicy::kIeee);
    EXPECT_EQ(d.source.rfind("kc in-project reference kernel", 0), 0u) << d.source;
  }
}

TEST(RefBackend, RejectsOtherDtypesAndOps) {
  Config c;
  c.dtype = DType::kF16;
  auto call = builtin_ops().find("matmul")->make_call(c);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(ref_impl("matmul")->can_implement(*call).code(), StatusCode::kUnimplemented);
  Call dot = make("dot", {});
  EXPECT_EQ(ref_impl("matmul")->can_implement(dot).code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(ref_impl("dot")->can_implement(dot).ok());
}

TEST(RefMatmul, BetaZeroIgnoresNaNInCAndAlphaZeroIgnoresA) {
  Call c = make("matmul", {{"M", "2"}, {"N", "2"}, {"K", "2"}});
  for (int i = 0; i < 4; ++i) {
    c.t("A").set(i, i + 1);
    c.t("B").set(i, 1);
  }
  c.t("C").fill_storage(kNaN);
  ASSERT_TRUE(ref_impl("matmul")->run(c).ok());
  EXPECT_EQ(c.t("C").to_doubles(), (std::vector<double>{3, 3, 7, 7}));

  Call z = make("matmul", {{"M", "1"}, {"N", "2"}, {"K", "2"}, {"alpha", "0"}, {"beta", "0.5"}});
  z.t("A").fill_storage(kNaN);
  z.t("B").fill_storage(kNaN);
  z.t("C").set(0, 4);
  z.t("C").set(1, -2);
  ASSERT_TRUE(ref_impl("matmul")->run(z).ok());
  EXPECT_EQ(z.t("C").to_doubles(), (std::vector<double>{2, -1}));
}

TEST(RefMatmul, LeavesPaddingAlone) {
  Call c = make("matmul", {{"M", "2"}, {"N", "2"}, {"K", "2"}, {"ldc_pad", "3"}});
  c.t("C").fill_storage(-9);
  Rng rng(1);
  builtin_ops().find("matmul")->fill(c, FillSpec{}, rng);
  ASSERT_TRUE(ref_impl("matmul")->run(c).ok());
  for (std::int64_t off : {2, 3, 4}) EXPECT_EQ(c.t("C").load(off), -9);
}

/// One op and config for the oracle-agreement sweep.
struct Case {
  std::string op;
  std::map<std::string, std::string> params;
  FillSpec fill;
};

class RefMatchesOracle : public ::testing::TestWithParam<Case> {};

// Every ref kernel must sit inside its op's own error model: componentwise
// |got - ref| <= gamma(L, FP32) * magnitude + u |ref| (the engine's `bound 1`
// tolerance), with L the op's accumulation length, plus a small constant
// number of extra roundings for the transcendental ops.
TEST_P(RefMatchesOracle, WithinGammaBound) {
  const Case& k = GetParam();
  const Op& op = *builtin_ops().find(k.op);
  Call call = make(k.op, k.params);
  Rng rng(derive_seed(11, std::hash<std::string>{}(k.op)));
  op.fill(call, k.fill, rng);
  auto oracle = op.oracle(call, OracleOptions{});
  ASSERT_TRUE(oracle.ok());
  ASSERT_TRUE(ref_impl(k.op)->run(call).ok());
  const double u = unit_roundoff(DType::kF32);
  const bool transcendental = k.op == "softmax" || k.op == "log_softmax" || k.op == "nrm2";
  const double L = op.accumulation_length(call) + (transcendental ? 8 : 0);
  for (std::size_t o = 0; o < oracle->output_names.size(); ++o) {
    const std::string& name = oracle->output_names[o];
    const auto got = call.t(name).to_doubles();
    const auto& ref = oracle->outputs[o];
    auto mag = op.magnitude(call, name);
    ASSERT_TRUE(mag.ok());
    std::vector<double> allowed(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) allowed[i] = gamma(L, DType::kF32) * (*mag)[i] + u * std::fabs(ref[i]);
    const ResidualStats s = summarize(bound_ratios(got, ref, allowed));
    EXPECT_LE(s.max, 1.0) << k.op << " worst element " << s.worst_index;
    EXPECT_EQ(s.nonfinite, 0);
    // And it must not be exact by accident of a trivial output.
    bool any_nonzero = false;
    for (double v : ref) any_nonzero |= v != 0;
    EXPECT_TRUE(any_nonzero);
  }
}

const FillSpec kNormal{};
INSTANTIATE_TEST_SUITE_P(
    RefBackend, RefMatchesOracle,
    ::testing::Values(
        Case{"matmul", {{"M", "17"}, {"N", "9"}, {"K", "33"}}, kNormal},
        Case{"matmul", {{"M", "5"}, {"N", "7"}, {"K", "64"}, {"trans_a", "T"}, {"alpha", "-1.25"}, {"beta", "0.5"}},
             kNormal},
        Case{"matmul", {{"M", "6"}, {"N", "4"}, {"K", "19"}, {"trans_b", "T"}, {"lda_pad", "2"}, {"ldb_pad", "5"},
                        {"ldc_pad", "1"}, {"beta", "1"}},
             kNormal},
        Case{"dot", {{"n", "1000"}, {"incx", "3"}, {"incy", "2"}}, kNormal},
        Case{"asum", {{"n", "777"}}, kNormal},
        Case{"nrm2", {{"n", "513"}, {"incx", "2"}}, kNormal},
        Case{"scal", {{"n", "100"}, {"alpha", "0.3"}}, kNormal},
        Case{"sum", {{"n", "4096"}}, kNormal},
        Case{"softmax", {{"rows", "4"}, {"cols", "300"}}, FillSpec{FillSpec::Kind::kUniform, -30, 30}},
        Case{"log_softmax", {{"rows", "4"}, {"cols", "300"}}, FillSpec{FillSpec::Kind::kUniform, -30, 30}}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return info.param.op + "_" + std::to_string(info.index);
    });

TEST(RefExact, IntegerFillsAndIamaxAreBitExact) {
  // Small integers: every partial sum is an integer below 2^24, so fp32 is exact.
  Call s = make("sum", {{"n", "1000"}});
  Rng rng(2);
  builtin_ops().find("sum")->fill(s, FillSpec{FillSpec::Kind::kInteger, -8, 8}, rng);
  const double want = builtin_ops().find("sum")->oracle(s, {})->outputs[0][0];
  ASSERT_TRUE(ref_impl("sum")->run(s).ok());
  EXPECT_EQ(s.t("out").at(0), want);

  Call m = make("iamax", {{"n", "50"}, {"incx", "2"}});
  builtin_ops().find("iamax")->fill(m, FillSpec{}, rng);
  m.t("x").set(0, kNaN);  // reference rule: NaN at x_0 wins
  const double wi = builtin_ops().find("iamax")->oracle(m, {})->outputs[0][0];
  ASSERT_TRUE(ref_impl("iamax")->run(m).ok());
  EXPECT_EQ(m.t("out").at(0), wi);
  EXPECT_EQ(wi, 0);
  m.t("x").set(0, 0);
  m.t("x").set(31, 100);
  ASSERT_TRUE(ref_impl("iamax")->run(m).ok());
  EXPECT_EQ(m.t("out").at(0), 31);
}

TEST(RefExact, SoftmaxPropagatesNaNAndAllNegInfRowIsNaN) {
  Call c = make("softmax", {{"rows", "2"}, {"cols", "3"}});
  for (int i = 0; i < 3; ++i) c.t("x").set(i, -std::numeric_limits<double>::infinity());
  c.t("x").set(3, 1);
  c.t("x").set(4, kNaN);
  c.t("x").set(5, 2);
  ASSERT_TRUE(ref_impl("softmax")->run(c).ok());
  for (double v : c.t("y").to_doubles()) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace kc
