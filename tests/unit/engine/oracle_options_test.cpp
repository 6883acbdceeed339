// `reference higher_precision P with key = value`: an op's oracle honours the
// options it declares (Op::oracle_options) and the engine judges a contract
// whose option it does not declare under_specified, never against an oracle
// that would ignore the option. accumulator = FP32 and
// softmax_stabilization = none change the oracle, and so the verdict.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/oracle_options.h"

namespace kc::engine {
namespace {

class Fp32Impl : public Impl {
 public:
  Fp32Impl(std::string name, std::string op, std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = std::move(name);
    decl_.op = std::move(op);
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fn_(call); }
  Declaration decl_;

 private:
  std::function<Status(Call&)> fn_;
};

const BackendInfo kTest{"test", true, "", "", ""};

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

/// In-order FP32 running sum (what `accumulator = FP32` asks the oracle for).
Status fp32_sum(Call& call) {
  const Tensor& x = call.t("x");
  float acc = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) acc += x.data<float>()[i * x.strides()[0]];
  call.t("out").data<float>()[0] = acc;
  return ok_status();
}

/// Max-subtracted FP32 softmax: finite on any finite row.
Status stable_softmax(Call& call) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x.data<float>() + r * cols;
    float* out = y.data<float>() + r * cols;
    float m = in[0];
    for (std::int64_t c = 1; c < cols; ++c) m = std::max(m, in[c]);
    float s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::exp(in[c] - m);
    for (std::int64_t c = 0; c < cols; ++c) out[c] = std::exp(in[c] - m) / s;
  }
  return ok_status();
}

CaseResult judge_sum(const std::string& reference) {
  const Contract c = parse_one(R"(
contract T-ACC {
  scope      sum
  pre        precision(x, out) in {FP32} and value_range(x) in [0, 1] and n in {65536}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  ulp 0
  reference  )" + reference + R"(
  measure    sample 1 random inputs per config; compute max ulp; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
})");
  Fp32Impl impl("t.fp32_sum", "sum", fp32_sum);
  return run_case(c, "t.kc", impl, kTest, CheckRequest{});
}

CaseResult judge_softmax(const std::string& reference) {
  const Contract c = parse_one(R"(
contract T-STAB {
  scope      softmax
  pre        precision(x, y) in {FP32} and value_range(x) in [720, 730] and cols in {128}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(cols + 2 * max|x| + 4, P) * |y|
  reference  )" + reference + R"(
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  signature ERROR_BOUND_EXCEEDED
})");
  Fp32Impl impl("t.stable_softmax", "softmax", stable_softmax);
  return run_case(c, "t.kc", impl, kTest, CheckRequest{});
}

TEST(OracleOptions, TheOpsThatReadOptionsDeclareThem) {
  const std::vector<std::pair<std::string, std::string>> read = {
      {"fused_matmul", "intermediates"}, {"adamw_step", "weight_decay"},   {"adamw_step", "bias_correction"},
      {"cross_entropy", "gradient"},     {"kd_loss", "t2_scaling"},        {"kd_loss", "kl_direction"},
      {"grad_accum", "average"},         {"slerp", "interpolation"},       {"prune_wanda", "score"},
      {"relu", "inf_policy"},            {"softmax", "accumulator"},       {"attention", "softmax_stabilization"},
      {"matmul", "accumulator"},         {"sum", "accumulator"},           {"log_softmax", "softmax_stabilization"},
  };
  for (const auto& [op, key] : read) {
    const Op* o = builtin_ops().find(op);
    ASSERT_NE(o, nullptr) << op;
    EXPECT_NE(find_oracle_option(*o, key), nullptr) << op << " " << key;
  }
  EXPECT_EQ(find_oracle_option(*builtin_ops().find("attention"), "summation"), nullptr);
}

TEST(OracleOptions, AnUndeclaredKeyIsUnderSpecifiedNeverJudged) {
  const CaseResult r = judge_softmax("higher_precision FP64 with summation = pairwise");
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << r.reason;
  EXPECT_NE(r.reason.find("summation"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("softmax_stabilization"), std::string::npos) << r.reason;  // the known keys
  const CaseResult v = judge_softmax("higher_precision FP64 with accumulator = FP16");
  EXPECT_EQ(v.verdict, Verdict::kUnderSpecified) << v.reason;
  EXPECT_NE(v.reason.find("FP64 | FP32"), std::string::npos) << v.reason;
}

TEST(OracleOptions, ReductionOrderNamesTheOracleOwnOrder) {
  // The oracle sums in index order: naming that order is judged, another is not.
  const CaseResult r = judge_softmax("higher_precision FP64 with reduction_order = row_major");
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  const CaseResult s = judge_sum("higher_precision FP64 with accumulator = FP32, reduction_order = sequential");
  EXPECT_EQ(s.verdict, Verdict::kConforming) << s.reason;
  const CaseResult t = judge_sum("higher_precision FP64 with accumulator = FP32, reduction_order = tree");
  EXPECT_EQ(t.verdict, Verdict::kUnderSpecified) << t.reason;
  EXPECT_NE(t.reason.find("row_major | sequential"), std::string::npos) << t.reason;
}

TEST(OracleOptions, AReferencePrecisionNoWiderThanTheConfigIsUnderSpecified) {
  const CaseResult r = judge_softmax("higher_precision FP32");
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << r.reason;
  EXPECT_NE(r.reason.find("not higher than the config's FP32"), std::string::npos) << r.reason;
}

/// FP16 in, FP16 out; the sum runs in FP32 in index order and is rounded once.
Status fp16_sum_fp32_acc(Call& call) {
  const Tensor& x = call.t("x");
  float acc = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) acc += static_cast<float>(x.at(i * x.strides()[0]));
  call.t("out").set(0, acc);
  return ok_status();
}

TEST(OracleOptions, AnFp32ReferenceJudgesAnFp16Config) {
  // Before FP32 references were executable this case was under_specified;
  // now the oracle's FP32 in-order sum, rounded to FP32, is the reference and
  // the FP16 result is within one FP16 ulp of it.
  const Contract c = parse_one(R"(
contract T-HALF {
  scope      sum
  pre        precision(x, out) in {FP16} and value_range(x) in [0, 1] and n in {4096}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  ulp 1
  reference  higher_precision FP32 with accumulator = FP32, reduction_order = sequential
  measure    sample 2 random inputs per config; compute max ulp; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
})");
  Fp32Impl impl("t.fp16_sum", "sum", fp16_sum_fp32_acc);
  impl.decl_.dtypes = {DType::kF16};
  const CaseResult r = run_case(c, "t.kc", impl, kTest, CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  // The same contract with an FP16 reference precision names nothing higher.
  Contract narrow = c;
  narrow.reference.precision = DType::kF16;
  const CaseResult n = run_case(narrow, "t.kc", impl, kTest, CheckRequest{});
  EXPECT_EQ(n.verdict, Verdict::kUnderSpecified) << n.reason;
}

TEST(OracleOptions, StabilizationNoneOverflowsWhereMaxSubtractionDoesNot) {
  auto call = builtin_ops().find("softmax")->make_call(Config{{{"rows", "1"}, {"cols", "4"}}, DType::kF32});
  ASSERT_TRUE(call.ok());
  for (std::int64_t i = 0; i < 4; ++i) call->t("x").set(i, 720.0 + static_cast<double>(i));
  OracleOptions stable, naive;
  naive.with["softmax_stabilization"] = "none";
  auto s = builtin_ops().find("softmax")->oracle(*call, stable);
  auto n = builtin_ops().find("softmax")->oracle(*call, naive);
  ASSERT_TRUE(s.ok() && n.ok());
  EXPECT_TRUE(std::isfinite(s->outputs[0][3]));
  EXPECT_NEAR(s->outputs[0][3], 1 / (1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0)), 1e-15);
  EXPECT_TRUE(std::isnan(n->outputs[0][3]));  // exp(723) overflows FP64: inf / inf
  // On small logits the two agree.
  for (std::int64_t i = 0; i < 4; ++i) call->t("x").set(i, static_cast<double>(i));
  s = builtin_ops().find("softmax")->oracle(*call, stable);
  n = builtin_ops().find("softmax")->oracle(*call, naive);
  EXPECT_NEAR(s->outputs[0][3], n->outputs[0][3], 1e-15);

  // And the verdict follows: a stable FP32 kernel conforms to the stabilised
  // oracle and not to the naive one on logits around 725.
  const CaseResult ok = judge_softmax("higher_precision FP64 with softmax_stabilization = max_subtraction");
  EXPECT_EQ(ok.verdict, Verdict::kConforming) << ok.reason;
  const CaseResult bad = judge_softmax("higher_precision FP64 with softmax_stabilization = none");
  EXPECT_EQ(bad.verdict, Verdict::kViolation) << bad.reason;
}

TEST(OracleOptions, Fp32AccumulatorChangesALongReduction) {
  const std::int64_t n = 1 << 20;
  auto call = builtin_ops().find("sum")->make_call(Config{{{"n", std::to_string(n)}}, DType::kF32});
  ASSERT_TRUE(call.ok());
  for (std::int64_t i = 0; i < n; ++i) call->t("x").set(i, 0.1 + 0.8 * static_cast<double>(i % 97) / 97);
  OracleOptions wide, fp32;
  fp32.with["accumulator"] = "FP32";
  const double w = builtin_ops().find("sum")->oracle(*call, wide)->outputs[0][0];
  const double f = builtin_ops().find("sum")->oracle(*call, fp32)->outputs[0][0];
  // Near 5e5 an FP32 ulp is 2^-4, so each addition may round by up to 2^-5:
  // over 2^20 additions the FP32 sum drifts far from the wide one.
  EXPECT_GT(std::fabs(w - f) / w, 1e-6) << w << " " << f;
  EXPECT_EQ(f, static_cast<double>(static_cast<float>(f)));  // an FP32 value
  float acc = 0;
  for (std::int64_t i = 0; i < n; ++i) acc += call->t("x").data<float>()[i];
  EXPECT_EQ(f, static_cast<double>(acc));  // exactly the in-order FP32 sum

  // The verdict follows: at ulp 0 the in-order FP32 kernel is exactly the
  // FP32-accumulator oracle and not the FP64 one.
  const CaseResult same = judge_sum("higher_precision FP64 with accumulator = FP32");
  EXPECT_EQ(same.verdict, Verdict::kConforming) << same.reason;
  const CaseResult wider = judge_sum("higher_precision FP64 with accumulator = FP64");
  EXPECT_EQ(wider.verdict, Verdict::kViolation) << wider.reason;
}

TEST(OracleOptions, Fp32AccumulatorChangesALongDotProduct) {
  const Op* mm = builtin_ops().find("matmul");
  auto call = mm->make_call(Config{{{"M", "1"}, {"N", "1"}, {"K", "100000"}}, DType::kF32});
  ASSERT_TRUE(call.ok());
  for (std::int64_t i = 0; i < 100000; ++i) {
    call->t("A").set(i, 1.0 + static_cast<double>(i % 13) / 13);
    call->t("B").set(i, 0.5 + static_cast<double>(i % 7) / 7);
  }
  OracleOptions fp32;
  fp32.with["accumulator"] = "FP32";
  const double w = mm->oracle(*call, {})->outputs[0][0];
  const double f = mm->oracle(*call, fp32)->outputs[0][0];
  EXPECT_GT(std::fabs(w - f) / w, 1e-6) << w << " " << f;
}

}  // namespace
}  // namespace kc::engine
