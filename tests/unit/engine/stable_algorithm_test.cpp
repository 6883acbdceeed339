// `reference stable_algorithm NAME`: the named algorithm, evaluated in FP64
// operation by operation, is the oracle (kc/oracles.h). A name kc does not
// hold for the contract's op is under_specified with the nearest name, never
// a silent fallback to the default oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/oracles.h"

namespace kc::engine {
namespace {

class Fp64Impl : public Impl {
 public:
  Fp64Impl(std::string name, std::string op, std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = std::move(name);
    decl_.op = std::move(op);
    decl_.backend = "test";
    decl_.dtypes = {DType::kF64};
    decl_.accumulator = DType::kF64;
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

std::string notes(const CaseResult& r) {
  std::string out = r.reason + "\n";
  for (const auto& n : r.evidence.notes) out += n + "\n";
  return out;
}

// The input: x_0 = 1 followed by 2^14 terms of 2^-66, so the exact sum is
// 1 + 2^14 * 2^-66 = 1 + 2^-52, the double right after 1 (exactly
// representable: its correctly rounded value is itself).
//  - Recursive summation loses every tiny term: 1 + 2^-66 rounds back to 1
//    in FP64 (half an ulp of 1 is 2^-53) and in x87 long double too (64-bit
//    significand: half an ulp of 1 is 2^-64 > 2^-66). So a naive FP64 kernel
//    returns 1, and so does kc's default oracle (long double, in order).
//  - Kahan summation keeps them: the compensation c collects -k 2^-66
//    exactly while y = k 2^-66 stays at or below 2^-53 (t = s + y rounds back
//    to 1, ties to even at k = 2^13); at k = 2^13 + 1, y exceeds half an ulp and
//    s becomes 1 + 2^-52 with c = 2^-53 - 2^-66; from there s + y stays nearer
//    to 1 + 2^-52 than to 1 (y > -(2^-53)) and c absorbs the rest. Result
//    1 + 2^-52.
//  - Pairwise (split at n/2): the half holding x_0 has 8191 tiny terms whose
//    partial sums (at most 2^12 * 2^-66 = 2^-54 next to the 1) are each below
//    half an ulp, so it is 1; the other half is 8193 * 2^-66 exactly, and
//    1 + 2^-53 + 2^-66 rounds up to 1 + 2^-52.
constexpr std::int64_t kTiny = 16384;
const double kTinyTerm = std::ldexp(1.0, -66);
const double kExact = 1 + std::ldexp(1.0, -52);

void kahan_input(Call& call) {
  Tensor& x = call.t("x");
  x.set(0, 1.0);
  for (std::int64_t i = 1; i < x.numel(); ++i) x.set(i, kTinyTerm);
}

Status naive_sum(Call& call) {
  double s = 0;
  for (double v : call.t("x").to_doubles()) s += v;
  call.t("out").set(0, s);
  return ok_status();
}

Status kahan_sum(Call& call) {
  double s = 0, c = 0;
  for (double v : call.t("x").to_doubles()) {
    const double y = v - c;
    const double t = s + y;
    c = (t - s) - y;
    s = t;
  }
  call.t("out").set(0, s);
  return ok_status();
}

Contract sum_contract(const std::string& reference) {
  return parse_one(R"(
contract T-KAHAN {
  scope      sum
  pre        precision(x, out) in {FP64} and n in {16385}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  ulp 0
  reference  )" + reference + R"(
  measure    sample 1 random inputs per config; compute max ulp; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
})");
}

CaseResult judge_sum(const std::string& reference, const Impl& impl) {
  CheckRequest req;
  req.prepare_inputs = kahan_input;
  return run_case(sum_contract(reference), "t.kc", impl, kTest, req);
}

TEST(StableAlgorithm, TheSumOraclesGiveWhatTheirAlgorithmsGive) {
  auto call = builtin_ops().find("sum")->make_call(Config{{{"n", "16385"}}, DType::kF64});
  ASSERT_TRUE(call.ok());
  kahan_input(*call);
  const NamedOracle* kahan = find_named_oracle(Reference::Kind::kStableAlgorithm, "kahan_sum", "sum");
  const NamedOracle* pairwise = find_named_oracle(Reference::Kind::kStableAlgorithm, "pairwise_sum", "sum");
  ASSERT_TRUE(kahan && pairwise);
  EXPECT_EQ(kahan->oracle(*call, {})->outputs[0][0], kExact);
  EXPECT_EQ(pairwise->oracle(*call, {})->outputs[0][0], kExact);
  Call naive = *call;
  ASSERT_TRUE(naive_sum(naive).ok());
  EXPECT_EQ(naive.t("out").at(0), 1.0);
}

// The verdict changes both ways. A naive FP64 kernel agrees with the default
// oracle, which sums the same way in long double and loses the same terms:
// conforming there (a green that rests on an oracle as blind as the kernel),
// a 1-ulp violation against Kahan. A Kahan kernel is the other way round.
TEST(StableAlgorithm, KahanSumChangesTheVerdictOnTermsBelowHalfAnUlp) {
  if (std::numeric_limits<long double>::digits != 64)
    GTEST_SKIP() << "the default oracle's verdict here is derived for the x87 64-bit significand";
  const Fp64Impl naive("t.sum_naive_fp64", "sum", naive_sum);
  const Fp64Impl kahan("t.sum_kahan_fp64", "sum", kahan_sum);

  const CaseResult naive_default = judge_sum("higher_precision FP64", naive);
  EXPECT_EQ(naive_default.verdict, Verdict::kConforming) << notes(naive_default);
  const CaseResult naive_kahan = judge_sum("stable_algorithm kahan_sum", naive);
  EXPECT_EQ(naive_kahan.verdict, Verdict::kViolation) << notes(naive_kahan);
  EXPECT_NE(naive_kahan.reason.find("[oracle: stable_algorithm kahan_sum]"), std::string::npos) << notes(naive_kahan);
  EXPECT_EQ(naive_kahan.evidence.method, "stable_algorithm");
  ASSERT_TRUE(naive_kahan.evidence.worst.has_value());
  EXPECT_EQ(naive_kahan.evidence.worst->value, 1.0);
  EXPECT_EQ(naive_kahan.evidence.worst->reference, kExact);

  const CaseResult kahan_kahan = judge_sum("stable_algorithm kahan_sum", kahan);
  EXPECT_EQ(kahan_kahan.verdict, Verdict::kConforming) << notes(kahan_kahan);
  const CaseResult kahan_pairwise = judge_sum("stable_algorithm pairwise_sum", kahan);
  EXPECT_EQ(kahan_pairwise.verdict, Verdict::kConforming) << notes(kahan_pairwise);
  const CaseResult kahan_default = judge_sum("higher_precision FP64", kahan);
  EXPECT_EQ(kahan_default.verdict, Verdict::kViolation) << notes(kahan_default);
}

// Large logits: x = (1000, 1000) in FP64. The naive exp(1000) overflows
// (log(DBL_MAX) ~ 709.78) and inf / inf is NaN; max subtraction gives
// exp(0) / (1 + 1) = 0.5 exactly, and log_softmax (0 - 0) - log 2.
TEST(StableAlgorithm, MaxSubtractionStaysFiniteWhereTheNaiveFormulaOverflows) {
  for (const char* op : {"softmax", "log_softmax"}) {
    auto call = builtin_ops().find(op)->make_call(Config{{{"rows", "1"}, {"cols", "2"}}, DType::kF64});
    ASSERT_TRUE(call.ok());
    call->t("x").set(0, 1000.0);
    call->t("x").set(1, 1000.0);
    const NamedOracle* row = find_named_oracle(Reference::Kind::kStableAlgorithm, "max_subtraction", op);
    ASSERT_TRUE(row) << op;
    auto y = row->oracle(*call, {});
    ASSERT_TRUE(y.ok());
    const double want = std::string(op) == "softmax" ? 0.5 : -std::log(2.0);
    EXPECT_EQ(y->outputs[0][0], want) << op;
    EXPECT_EQ(y->outputs[0][1], want) << op;
  }
  EXPECT_TRUE(std::isnan(std::exp(1000.0) / (std::exp(1000.0) + std::exp(1000.0))));
  // log_sum_exp(1000, 1000) = 1000 + log 2 under both of its names.
  auto lse = builtin_ops().find("log_sum_exp")->make_call(Config{{{"rows", "1"}, {"cols", "2"}}, DType::kF64});
  ASSERT_TRUE(lse.ok());
  lse->t("x").set(0, 1000.0);
  lse->t("x").set(1, 1000.0);
  for (const char* name : {"shifted_logsumexp", "max_subtraction"}) {
    const NamedOracle* row = find_named_oracle(Reference::Kind::kStableAlgorithm, name, "log_sum_exp");
    ASSERT_TRUE(row) << name;
    EXPECT_EQ(row->oracle(*lse, {})->outputs[0][0], 1000.0 + std::log(2.0)) << name;
  }
}

// Variance of (1e8 + 1, 1e8 - 1, 1e8 + 1, 1e8 - 1): V = 1. Two-pass: the sum
// 4e8 and the mean 1e8 are exact, the deviations +-1 too: V = 4 / 4 = 1
// exactly. Welford: the running mean is 1e8 + 1 after the first term, 1e8
// after the second, with M2 = 2; the third step rounds 1e8 + 1/3 (ulp 2^-26),
// and the fourth takes the mean back to 1e8 (its rounding error r from step 3
// enters M2 as (1 - r) + (1 + r)): V within a few ulps of 1. The one-pass E[x^2] - E[x]^2 in FP64
// needs (1e8 +- 1)^2 = 1e16 +- 2e8 + 1, and the + 1 is below half an ulp of
// 1e16 (ulp 2): each square rounds to an even number, and the difference of
// the means is 0 (the + 1s lost), nowhere near 1.
TEST(StableAlgorithm, TheVarianceOraclesAreTheNamedAlgorithms) {
  auto call = builtin_ops().find("variance")->make_call(Config{{{"rows", "1"}, {"cols", "4"}}, DType::kF64});
  ASSERT_TRUE(call.ok());
  const double x[4] = {1e8 + 1, 1e8 - 1, 1e8 + 1, 1e8 - 1};
  for (int i = 0; i < 4; ++i) call->t("x").set(i, x[i]);
  const NamedOracle* two_pass =
      find_named_oracle(Reference::Kind::kStableAlgorithm, "two_pass_variance", "variance");
  const NamedOracle* welford = find_named_oracle(Reference::Kind::kStableAlgorithm, "Welford variance", "variance");
  ASSERT_TRUE(two_pass && welford);
  EXPECT_EQ(two_pass->oracle(*call, {})->outputs[0][0], 1.0);
  EXPECT_NEAR(welford->oracle(*call, {})->outputs[0][0], 1.0, 8 * std::numeric_limits<double>::epsilon());
  double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += v * v;
  }
  EXPECT_EQ(s2 / 4 - (s / 4) * (s / 4), 0.0);  // the naive one-pass formula loses V entirely
}

// A name kc does not hold for the op is under_specified, with the nearest
// known name; a name of another op's algorithm says which ops it applies to.
TEST(StableAlgorithm, AnUnknownOrMisfittingNameIsAnErrorWithTheNearestName) {
  const Fp64Impl naive("t.sum_naive_fp64", "sum", naive_sum);
  const CaseResult typo = judge_sum("stable_algorithm kahan", naive);
  EXPECT_EQ(typo.verdict, Verdict::kUnderSpecified) << typo.reason;
  EXPECT_NE(typo.reason.find("did you mean kahan_sum?"), std::string::npos) << typo.reason;
  const CaseResult other_op = judge_sum("stable_algorithm welford_variance", naive);
  EXPECT_EQ(other_op.verdict, Verdict::kUnderSpecified) << other_op.reason;
  EXPECT_NE(other_op.reason.find("applies to variance, not sum (for sum: kahan_sum, pairwise_sum)"), std::string::npos)
      << other_op.reason;
  EXPECT_EQ(named_oracle_error(Reference::Kind::kStableAlgorithm, "max_subtraction", "variance"),
            "stable_algorithm max_subtraction applies to log_softmax, log_sum_exp, softmax, not variance "
            "(for variance: two_pass_variance, welford_variance)");
  EXPECT_EQ(named_oracle_error(Reference::Kind::kStableAlgorithm, "Kahan summation", "sum"),
            "no stable_algorithm 'Kahan summation' (did you mean kahan_sum?) (for sum: kahan_sum, pairwise_sum)");
  // Spelling: case, '-', '_' and blanks do not matter.
  EXPECT_NE(find_named_oracle(Reference::Kind::kStableAlgorithm, "Kahan-Sum", "sum"), nullptr);
}

// Every row names an op kc has, and every stable algorithm has an oracle.
TEST(StableAlgorithm, TheTableNamesRealOps) {
  for (const NamedOracle& row : named_oracles()) {
    EXPECT_NE(builtin_ops().find(row.op), nullptr) << row.name << " / " << row.op;
    if (row.kind == Reference::Kind::kStableAlgorithm) {
      EXPECT_NE(row.oracle, nullptr) << row.name;
    }
  }
  const auto names = named_oracle_names(Reference::Kind::kStableAlgorithm);
  for (const char* n : {"kahan_sum", "pairwise_sum", "max_subtraction", "shifted_logsumexp", "two_pass_variance",
                        "welford_variance"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

}  // namespace
}  // namespace kc::engine
