// `reference spec IEEE754-2019`: the correctly rounded f(x) in the output's
// format (MPFR), with the standard's special values exact whatever the
// tolerance (kc/oracles.h, src/ops/elementwise/spec.cpp). Built without MPFR,
// such a case is not_applicable ("built without MPFR"), never judged against
// the FP64 oracle instead.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/oracles.h"

namespace kc::engine {
namespace {

class Fp32Impl : public Impl {
 public:
  Fp32Impl(std::string name, std::string op, std::function<float(float)> f) : f_(std::move(f)) {
    decl_.name = std::move(name);
    decl_.op = std::move(op);
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    for (std::int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = f_(x.data<float>()[i]);
    return ok_status();
  }
  Declaration decl_;

 private:
  std::function<float(float)> f_;
};

const BackendInfo kTest{"test", true, "", "", ""};
constexpr double kInf = std::numeric_limits<double>::infinity();

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

/// FP32 `op` within `tolerance`, on normal(0, 1) data with NaN, +inf and -inf
/// injected (2% of 4096 elements, in turn over the three samples).
CaseResult judge(const std::string& op, const std::string& tolerance, const std::string& reference,
                 const Impl& impl) {
  const Contract c = parse_one(R"(
contract T-SPEC {
  scope      )" + op + R"(
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 1)
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  )" + tolerance + R"(
  reference  )" + reference + R"(
  measure    inject nonfinite at density 0.02; compute max ulp; pass if <= 1
  violation  signature SPECIAL_VALUE, ZERO_SIGN
})");
  return run_case(c, "t.kc", impl, kTest, CheckRequest{});
}

Result<OracleResult> spec_of(const std::string& op, DType t, const std::vector<double>& x) {
  auto call = builtin_ops().find(op)->make_call(Config{{{"n", std::to_string(x.size())}}, t});
  if (!call.ok()) return call.status();
  for (std::size_t i = 0; i < x.size(); ++i) call->t("x").set(static_cast<std::int64_t>(i), x[i]);
  const NamedOracle* row = find_named_oracle(Reference::Kind::kSpec, "IEEE754-2019", op);
  if (!row) row = find_named_oracle(Reference::Kind::kSpec, "correctly_rounded", op);
  if (!row) return not_found("no spec row for " + op);
  return row->oracle(*call, {});
}

float float_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Correct rounding, checked on values whose rounding is derived by hand:
//  e = 2.718281828459045..., between the FP32 neighbours 0x402DF854
//  (2.71828174591064453125, 8.3e-8 below) and 0x402DF855 (1.6e-7 above);
//  ln 2 = 0.693147180559945..., 1.9e-9 below 0x3F317218 (0.693147182464599609375)
//  and ulp 6e-8; e^-100 = 26.547... * 2^-149 in FP32's subnormal range rounds
//  to 27 * 2^-149; e^100 > FLT_MAX rounds to +inf; in FP64, exp(1) is the
//  double nearest e (M_E).
TEST(SpecOracle, ResultsAreCorrectlyRoundedIntoTheOutputFormat) {
  if (!built_with_mpfr()) GTEST_SKIP() << "built without MPFR";
  auto exp32 = spec_of("exp", DType::kF32, {1.0, -100.0, 100.0});
  ASSERT_TRUE(exp32.ok()) << exp32.status().to_string();
  EXPECT_EQ(exp32->outputs[0][0], static_cast<double>(float_bits(0x402DF854u)));
  EXPECT_EQ(exp32->outputs[0][1], 27 * std::ldexp(1.0, -149));
  EXPECT_EQ(exp32->outputs[0][2], kInf);
  auto log32 = spec_of("log", DType::kF32, {2.0});
  ASSERT_TRUE(log32.ok());
  EXPECT_EQ(log32->outputs[0][0], static_cast<double>(float_bits(0x3F317218u)));
  auto exp64 = spec_of("exp", DType::kF64, {1.0});
  ASSERT_TRUE(exp64.ok());
  EXPECT_EQ(exp64->outputs[0][0], 2.718281828459045090795598298427648842334747314453125);  // M_E
}

// The special values of IEEE 754-2019 §9.2.1 (and C's for erf), exact and
// marked so: a zero's sign included.
TEST(SpecOracle, SpecialValuesAreTheStandardsAndMarkedExact) {
  if (!built_with_mpfr()) GTEST_SKIP() << "built without MPFR";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* op;
    double x, y;
  };
  const Case cases[] = {
      {"exp", kInf, kInf},    {"exp", -kInf, 0.0},    {"exp", 0.0, 1.0},      {"exp", -0.0, 1.0},
      {"log", 0.0, -kInf},    {"log", -0.0, -kInf},   {"log", 1.0, 0.0},      {"log", -1.0, nan},
      {"log", -kInf, nan},    {"log", kInf, kInf},    {"tanh", kInf, 1.0},    {"tanh", -kInf, -1.0},
      {"tanh", -0.0, -0.0},   {"tanh", 0.0, 0.0},     {"erf", kInf, 1.0},     {"erf", -kInf, -1.0},
      {"erf", -0.0, -0.0},    {"exp", nan, nan},      {"tanh", nan, nan},
  };
  for (const Case& k : cases) {
    auto r = spec_of(k.op, DType::kF32, {k.x});
    ASSERT_TRUE(r.ok()) << k.op;
    const double y = r->outputs[0][0];
    ASSERT_EQ(r->exact.size(), 1u);
    EXPECT_EQ(r->exact[0][0], 1) << k.op << "(" << k.x << ")";
    if (std::isnan(k.y)) {
      EXPECT_TRUE(std::isnan(y)) << k.op << "(" << k.x << ") = " << y;
    } else {
      EXPECT_EQ(y, k.y) << k.op << "(" << k.x << ")";
      EXPECT_EQ(std::signbit(y), std::signbit(k.y)) << k.op << "(" << k.x << ") = " << y;
    }
  }
  auto ordinary = spec_of("tanh", DType::kF32, {0.5});
  ASSERT_TRUE(ordinary.ok());
  EXPECT_EQ(ordinary->exact[0][0], 0);
}

// tanh in double rounded to float is within one ulp of the correctly rounded
// FP32 tanh: glibc's tanh errs by under one FP64 ulp (2^-29 FP32 ulps), and
// the rounding to float adds at most half an FP32 ulp. So it conforms under
// `ulp 1` against both references. Returning 0.99999994 (one ulp below 1)
// for tanh(+inf) is also within `ulp 1` of 1, so the FP64 oracle passes it;
// the spec fixes tanh(+inf) = 1 exactly, so against it the case is a
// violation named SPECIAL_VALUE.
TEST(SpecOracle, TanhOfInfinityMustBeExactlyOne) {
  if (!built_with_mpfr()) GTEST_SKIP() << "built without MPFR";
  const Fp32Impl good("t.tanh_via_double", "tanh", [](float x) { return static_cast<float>(std::tanh(double{x})); });
  const Fp32Impl almost("t.tanh_inf_almost_one", "tanh", [](float x) {
    return std::isinf(x) && x > 0 ? float_bits(0x3F7FFFFFu) : static_cast<float>(std::tanh(double{x}));
  });
  ASSERT_EQ(float_bits(0x3F7FFFFFu), 0.99999994f);

  const CaseResult good_spec = judge("tanh", "ulp 1", "spec IEEE754-2019", good);
  EXPECT_EQ(good_spec.verdict, Verdict::kConforming) << notes(good_spec);
  EXPECT_NE(good_spec.reason.find("[oracle: spec IEEE754-2019]"), std::string::npos) << good_spec.reason;
  EXPECT_EQ(good_spec.evidence.method, "spec");
  const CaseResult good_fp64 = judge("tanh", "ulp 1", "higher_precision FP64", good);
  EXPECT_EQ(good_fp64.verdict, Verdict::kConforming) << notes(good_fp64);

  const CaseResult almost_fp64 = judge("tanh", "ulp 1", "higher_precision FP64", almost);
  EXPECT_EQ(almost_fp64.verdict, Verdict::kConforming) << notes(almost_fp64);
  const CaseResult almost_spec = judge("tanh", "ulp 1", "spec IEEE754-2019", almost);
  ASSERT_EQ(almost_spec.verdict, Verdict::kViolation) << notes(almost_spec);
  ASSERT_FALSE(almost_spec.signatures.empty());
  EXPECT_EQ(almost_spec.signatures[0].name, "SPECIAL_VALUE") << notes(almost_spec);
  EXPECT_NE(notes(almost_spec).find("= 0.99999994 for x = +inf, the spec gives 1"), std::string::npos)
      << notes(almost_spec);
}

// A real library: PoCL's OpenCL tanh (the builtin, backends/opencl/kernels.cc)
// returns 0.99999994 for tanh(+inf), where C99 Annex F (which OpenCL C adopts
// for its builtins' special values) and IEEE 754 give exactly 1. One ulp below
// 1, it passes `ulp 1` against the FP64 oracle; the spec names it.
TEST(SpecOracle, PoclTanhOfInfinityIsOneUlpBelowOne) {
  if (!built_with_mpfr()) GTEST_SKIP() << "built without MPFR";
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  BackendInfo opencl;
  for (const BackendInfo& b : registry.infos())
    if (b.name == "opencl") opencl = b;
  const auto tanh = registry.find_impl("opencl.tanh");
  if (!opencl.available || !tanh || opencl.version.find("PoCL") == std::string::npos)
    GTEST_SKIP() << "the opencl backend on PoCL is not here";
  const Contract spec = parse_one(R"(
contract T-POCL {
  scope      tanh
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 1)
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 1
  reference  spec IEEE754-2019
  measure    inject inf at density 0.02; compute max ulp; pass if <= 1
  violation  signature SPECIAL_VALUE
})");
  Contract fp64 = spec;
  fp64.reference = parse_one(R"(
contract T {
  scope      tanh
  pre        precision(x, y) in {FP32}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 1
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max ulp; pass if <= 1
  violation  signature SPECIAL_VALUE
})").reference;
  const CaseResult against_spec = run_case(spec, "t.kc", *tanh, opencl, CheckRequest{});
  const CaseResult against_fp64 = run_case(fp64, "t.kc", *tanh, opencl, CheckRequest{});
  EXPECT_EQ(against_fp64.verdict, Verdict::kConforming) << notes(against_fp64);
  ASSERT_EQ(against_spec.verdict, Verdict::kViolation) << notes(against_spec);
  EXPECT_EQ(against_spec.signatures.at(0).name, "SPECIAL_VALUE") << notes(against_spec);
  EXPECT_NE(notes(against_spec).find("= 0.99999994 for x = +inf, the spec gives 1"), std::string::npos)
      << notes(against_spec);
}

// exp(-inf) = -0: equal to +0 under `ulp 1` (IEEE comparison), so both
// references pass it there; under `ulp 1 signed` the spec's +0 is exact and
// the sign wrong: SPECIAL_VALUE, and ZERO_SIGN as for the FP64 oracle.
TEST(SpecOracle, ExpOfMinusInfinityIsPlusZeroWhereTheSignCounts) {
  if (!built_with_mpfr()) GTEST_SKIP() << "built without MPFR";
  const Fp32Impl neg_zero("t.exp_neg_zero", "exp", [](float x) {
    return std::isinf(x) && x < 0 ? -0.0f : static_cast<float>(std::exp(double{x}));
  });
  const CaseResult plain = judge("exp", "ulp 1", "spec IEEE754-2019", neg_zero);
  EXPECT_EQ(plain.verdict, Verdict::kConforming) << notes(plain);
  const CaseResult spec = judge("exp", "ulp 1 signed", "spec IEEE754-2019", neg_zero);
  ASSERT_EQ(spec.verdict, Verdict::kViolation) << notes(spec);
  bool special = false, zero_sign = false;
  for (const auto& s : spec.signatures) {
    special = special || s.name == "SPECIAL_VALUE";
    zero_sign = zero_sign || s.name == "ZERO_SIGN";
  }
  EXPECT_TRUE(special && zero_sign) << notes(spec);
  EXPECT_NE(notes(spec).find("= -0 for x = -inf, the spec gives +0"), std::string::npos) << notes(spec);
  const CaseResult fp64 = judge("exp", "ulp 1 signed", "higher_precision FP64", neg_zero);
  EXPECT_EQ(fp64.verdict, Verdict::kViolation) << notes(fp64);
}

// A spec the op does not have is under_specified with the spec's names for
// it: erf is not one of IEEE 754-2019's §9.2 operations.
TEST(SpecOracle, ASpecTheOpDoesNotHaveIsAnError) {
  const Fp32Impl erf("t.erf", "erf", [](float x) { return static_cast<float>(std::erf(double{x})); });
  const CaseResult r = judge("erf", "ulp 1", "spec IEEE754-2019", erf);
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << r.reason;
  EXPECT_NE(r.reason.find("applies to exp, log, tanh, not erf (for erf: correctly_rounded)"), std::string::npos)
      << r.reason;
  const Fp32Impl exp("t.exp", "exp", [](float x) { return static_cast<float>(std::exp(double{x})); });
  const CaseResult typo = judge("exp", "ulp 1", "spec IEEE-754-2018", exp);
  EXPECT_EQ(typo.verdict, Verdict::kUnderSpecified) << typo.reason;
  EXPECT_NE(typo.reason.find("did you mean IEEE754-2019?"), std::string::npos) << typo.reason;
  if (built_with_mpfr()) {
    const CaseResult cr = judge("erf", "ulp 1", "spec correctly_rounded", erf);
    EXPECT_EQ(cr.verdict, Verdict::kConforming) << notes(cr);
  }
}

// Without MPFR the spec oracle does not exist: the case says so.
TEST(SpecOracle, WithoutMpfrTheCaseIsNotApplicable) {
  if (built_with_mpfr()) GTEST_SKIP() << "built with MPFR: the not_applicable path is the other build's";
  const Fp32Impl good("t.tanh_via_double", "tanh", [](float x) { return static_cast<float>(std::tanh(double{x})); });
  const CaseResult r = judge("tanh", "ulp 1", "spec IEEE754-2019", good);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable) << r.reason;
  EXPECT_NE(r.reason.find("built without MPFR"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace kc::engine
