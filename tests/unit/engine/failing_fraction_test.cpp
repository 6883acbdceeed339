// `compute failing_fraction METRIC; pass if <= p`: the engine counts, per
// config, the samples with an element beyond the tolerance, exactly, and
// passes only when that count is at most p times the samples judged. Impls
// that corrupt a known set of samples are judged against 1% (2% fails, 0.5%
// passes), at the exact boundary, and with a failure that is not an accuracy
// miss (a NaN), which no fraction excuses. Lint and the engine agree on where
// the statistic cannot be enforced.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>

#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/plan.h"

namespace kc::engine {
namespace {

class FakeImpl : public Impl {
 public:
  FakeImpl(std::string name, std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = std::move(name);
    decl_.op = "matmul";
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

/// C = A B (no transposes, alpha 1, beta 0) in FP32.
void gemm(Call& call) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  const auto m = call.get_int("M"), n = call.get_int("N"), k = call.get_int("K");
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p)
        acc += a.data<float>()[i * a.strides()[0] + p] * b.data<float>()[p * b.strides()[0] + j];
      c.data<float>()[i * c.strides()[0] + j] = acc;
    }
}

/// An honest GEMM that adds 1e-2 to C[0] whenever A[0] exceeds `threshold`
/// (a normal(0, 1) draw: 2.054 is exceeded by 2% of samples, 2.576 by 0.5%),
/// or writes NaN there with `nan`. `corrupted` collects the inputs it spoilt.
std::unique_ptr<FakeImpl> corrupting(double threshold, std::shared_ptr<std::set<std::uint64_t>> corrupted,
                                     bool nan = false) {
  return std::make_unique<FakeImpl>("t.corrupting", [=](Call& call) {
    gemm(call);
    const float a0 = call.t("A").data<float>()[0];
    if (a0 > threshold) {
      corrupted->insert(call.t("A").hash());
      float& c0 = call.t("C").data<float>()[0];
      c0 = nan ? std::numeric_limits<float>::quiet_NaN() : c0 + 1e-2f;
    }
    return ok_status();
  });
}

std::string contract(const std::string& allowed, int samples = 1000) {
  return "contract T-FRAC-01 {\n"
         "  scope      matmul\n"
         "  pre        precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)\n"
         "             and M in {4} and N in {4} and K in {8}\n"
         "  post       output C satisfies elementwise_close(C, ref(C))\n"
         "  tolerance  bound gamma(K + 2, P) * |A||B|\n"
         "  reference  higher_precision FP64\n"
         "  measure    sample " +
         std::to_string(samples) + " random inputs per config; compute failing_fraction bound_ratio; pass if <= " +
         allowed +
         "\n"
         "  violation  \"more samples beyond the bound than allowed\" signature ERROR_BOUND_EXCEEDED\n"
         "}\n";
}

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

CaseResult run(const std::string& text, const Impl& impl) {
  CheckRequest req;
  req.isolation = isolate::Mode::kNone;  // the corrupted set lives in this process
  const Contract c = parse_one(text);
  EXPECT_TRUE(c.executable()) << c.measure_info.gap;
  return run_case(c, "t.kc", impl, {"test", true, "1", "", ""}, req);
}

std::string count_text(std::size_t failing, int samples) {
  return std::to_string(failing) + " of " + std::to_string(samples) + " samples";
}

TEST(FailingFraction, TwoPercentFailingSamplesBreakAOnePercentRule) {
  auto corrupted = std::make_shared<std::set<std::uint64_t>>();
  const auto impl = corrupting(2.054, corrupted);
  const CaseResult r = run(contract("0.01"), *impl);
  ASSERT_GT(corrupted->size(), 10u) << "the seed drew too few tail samples for this test";
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  // The verdict states the measured count and the allowed fraction.
  EXPECT_NE(r.reason.find(count_text(corrupted->size(), 1000)), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("at most 1% of each config's samples"), std::string::npos) << r.reason;
  EXPECT_FALSE(r.repro.empty());
}

TEST(FailingFraction, HalfAPercentFailingSamplesMeetAOnePercentRule) {
  auto corrupted = std::make_shared<std::set<std::uint64_t>>();
  const auto impl = corrupting(2.576, corrupted);
  const CaseResult r = run(contract("0.01"), *impl);
  ASSERT_GT(corrupted->size(), 0u) << "no sample was corrupted: the test would prove nothing";
  ASSERT_LE(corrupted->size(), 10u);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  EXPECT_NE(r.reason.find(count_text(corrupted->size(), 1000)), std::string::npos) << r.reason;
  // The same impl fails the every-sample rule: the fraction is what lets it pass.
  const std::string every = "contract T-FRAC-01 {\n  scope matmul\n"
                            "  pre precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)\n"
                            "      and M in {4} and N in {4} and K in {8}\n"
                            "  post output C satisfies elementwise_close(C, ref(C))\n"
                            "  tolerance bound gamma(K + 2, P) * |A||B|\n  reference higher_precision FP64\n"
                            "  measure sample 1000 random inputs per config; compute max bound_ratio; pass if <= 1\n"
                            "  violation \"x\" signature ERROR_BOUND_EXCEEDED\n}\n";
  EXPECT_EQ(run(every, *impl).verdict, Verdict::kViolation);
}

TEST(FailingFraction, TheCountIsExactAtTheBoundary) {
  auto corrupted = std::make_shared<std::set<std::uint64_t>>();
  const auto impl = corrupting(2.054, corrupted);
  run(contract("0.01", 400), *impl);
  const std::size_t k = corrupted->size();
  ASSERT_GT(k, 1u);
  // k of 400 failing: p = k / 400 passes, (k - 1) / 400 does not.
  char at[32], below[32];
  std::snprintf(at, sizeof at, "%.17g", static_cast<double>(k) / 400);
  std::snprintf(below, sizeof below, "%.17g", static_cast<double>(k - 1) / 400);
  corrupted->clear();
  const CaseResult pass = run(contract(at, 400), *impl);
  EXPECT_EQ(pass.verdict, Verdict::kConforming) << pass.reason;
  EXPECT_EQ(corrupted->size(), k);
  const CaseResult fail = run(contract(below, 400), *impl);
  EXPECT_EQ(fail.verdict, Verdict::kViolation) << fail.reason;
  EXPECT_NE(fail.reason.find(count_text(k, 400)), std::string::npos) << fail.reason;
}

TEST(FailingFraction, ANonFiniteResultIsNotExcusedByTheFraction) {
  auto corrupted = std::make_shared<std::set<std::uint64_t>>();
  const auto impl = corrupting(2.576, corrupted, /*nan=*/true);
  const CaseResult r = run(contract("0.01"), *impl);
  ASSERT_GT(corrupted->size(), 0u);
  ASSERT_LE(corrupted->size(), 10u);  // within the fraction, but a NaN for a finite reference
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  EXPECT_NE(r.reason.find("other than an accuracy miss"), std::string::npos) << r.reason;
}

TEST(FailingFraction, AnHonestImplHasNoFailingSample) {
  auto corrupted = std::make_shared<std::set<std::uint64_t>>();
  const auto impl = corrupting(std::numeric_limits<double>::infinity(), corrupted);
  const CaseResult r = run(contract("0", 200), *impl);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  EXPECT_NE(r.reason.find("no sample of 200"), std::string::npos) << r.reason;
}

// Where the engine cannot count failing samples, the contract is descriptive
// (lint lists the gap) and never judged under another rule.
TEST(FailingFraction, UnenforceableUsesAreDescriptive) {
  struct Case {
    const char* post;
    const char* measure;
    const char* gap;
  };
  const Case cases[] = {
      {"bitwise_identical across 3 invocations", "sample 10 random inputs per config; compute failing_fraction "
                                                 "bound_ratio; pass if <= 0.01",
       "post clause must be"},
      {"output C satisfies elementwise_close(C, ref(C))", "sweep K in {8, 16}; compute failing_fraction bound_ratio; "
                                                          "pass if <= 0.01",
       "draws no random samples"},
      {"output C satisfies elementwise_close(C, ref(C))",
       "sample 10 random inputs per config; compute failing_fraction bound_ratio", "needs the allowed fraction"},
      {"output C satisfies elementwise_close(C, ref(C))",
       "sample 10 random inputs per config; compute failing_fraction bound_ratio; pass if <= 1.5", "not a fraction"},
  };
  for (const Case& k : cases) {
    const std::string text = std::string("contract T-FRAC-02 {\n  scope matmul\n  pre precision(A, B, C) in {FP32}\n") +
                             "  post " + k.post + "\n  tolerance bound gamma(K + 2, P) * |A||B|\n" +
                             "  reference higher_precision FP64\n  measure " + k.measure +
                             "\n  violation \"x\"\n}\n";
    const Contract c = parse_one(text);
    EXPECT_FALSE(c.executable()) << k.measure;
    EXPECT_NE(c.measure_info.gap.find(k.gap), std::string::npos) << c.measure_info.gap;
    // The same contract handed to the engine as if executable: the plan refuses it.
    Contract forced = c;
    forced.measure_info.gap.clear();
    forced.post_info.gap.clear();
    FakeImpl impl("t.any", [](Call& call) {
      gemm(call);
      return ok_status();
    });
    std::string na;
    EXPECT_FALSE(make_plan(forced, impl.declaration(), CheckRequest{}, &na).ok()) << k.measure;
  }
}

// The clause prints back as written, and the YAML front end reaches the same
// verdict on where it can be enforced.
TEST(FailingFraction, RoundTripsThroughFmtAndYaml) {
  const std::string text = contract("0.01");
  const lang::ParseResult p = lang::parse_kc(text, "t.kc");
  ASSERT_FALSE(p.has_errors());
  const std::string kc = lang::print_kc(p.document);
  EXPECT_NE(kc.find("compute failing_fraction bound_ratio; pass if <= 0.01"), std::string::npos) << kc;
  EXPECT_EQ(lang::print_kc(lang::parse_kc(kc, "t.kc").document), kc);
  const lang::ParseResult y = lang::parse_yaml(lang::print_yaml(p.document), "t.yaml");
  ASSERT_FALSE(y.has_errors()) << (y.diagnostics.empty() ? "" : y.diagnostics[0].render());
  ASSERT_EQ(y.document.contracts.size(), 1u);
  EXPECT_TRUE(y.document.contracts[0].executable()) << y.document.contracts[0].measure_info.gap;
  EXPECT_EQ(lang::print_kc(y.document), kc);
  // A determinism post under the same measure: descriptive from YAML as from .kc.
  lang::ParseResult bad = lang::parse_kc(text, "t.kc");
  std::string yaml = lang::print_yaml(bad.document);
  const std::string post = "output C satisfies elementwise_close(C, ref(C))";
  ASSERT_NE(yaml.find(post), std::string::npos) << yaml;
  yaml.replace(yaml.find(post), post.size(), "bitwise_identical across 3 invocations");
  const lang::ParseResult yb = lang::parse_yaml(yaml, "t.yaml");
  ASSERT_EQ(yb.document.contracts.size(), 1u);
  EXPECT_FALSE(yb.document.contracts[0].executable());
  EXPECT_NE(yb.document.contracts[0].measure_info.gap.find("post clause must be"), std::string::npos)
      << yb.document.contracts[0].measure_info.gap;
}

}  // namespace
}  // namespace kc::engine
