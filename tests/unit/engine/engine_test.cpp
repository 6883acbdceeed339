// The engine judged on impls whose behaviour we control: test the tester.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::engine {
namespace {

/// An impl whose kernel is a lambda over the call.
class FakeImpl : public Impl {
 public:
  FakeImpl(std::string name, std::string op, std::function<Status(Call&)> fn)
      : fn_(std::move(fn)) {
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

/// Row-major C = alpha A B + beta C (no transposes) with a pluggable accumulator.
Status gemm(Call& call, const std::function<float(float, float)>& add) {
  const Tensor& A = call.t("A");
  const Tensor& B = call.t("B");
  Tensor& C = call.t("C");
  const auto M = call.get_int("M"), N = call.get_int("N"), K = call.get_int("K");
  const float alpha = static_cast<float>(call.get_double("alpha", 1));
  const float beta = static_cast<float>(call.get_double("beta", 0));
  const auto lda = A.strides()[0], ldb = B.strides()[0], ldc = C.strides()[0];
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc = add(acc, A.data<float>()[i * lda + k] * B.data<float>()[k * ldb + j]);
      float& c = C.data<float>()[i * ldc + j];
      c = alpha * acc + (beta == 0 ? 0.f : beta * c);
    }
  return ok_status();
}

float add_fp32(float a, float b) { return a + b; }
float add_fp16(float a, float b) { return static_cast<float>(round_to(static_cast<double>(a) + b, DType::kF16)); }

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "test.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

const char* kPrc01 = R"(
contract C-PRC-01 {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and declared accumulator = FP32
             and M in {8} and N in {8} and K in {1024}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  relative 1e-5
  reference  higher_precision FP64
  measure    inject saturation(65504) at density 1; observe max rel_error
  violation  signature SATURATION(65504)
}
)";

const char* kBound = R"(
contract KC-GEMM-T {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)
             and M in {5, 16} and K in {7, 64}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64
  measure    sample 2 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  signature PRECISION_FINGERPRINT(bf16)
}
)";

BackendInfo info() { return {"test", true, "1", "", ""}; }

/// The per-config failure counts add up to the case's total, and a violation has failures.
void expect_counts_agree(const CaseResult& r) {
  std::int64_t sum = 0;
  for (const auto& ce : r.evidence.per_config) sum += ce.failures;
  EXPECT_EQ(sum, r.evidence.failures) << r.reason;
  EXPECT_GT(r.evidence.failures, 0) << r.reason;
}

TEST(Engine, HonestFp32GemmConformsToBoundAndSaturationContracts) {
  FakeImpl good("t.good", "matmul", [](Call& c) { return gemm(c, add_fp32); });
  CheckRequest req;
  EXPECT_EQ(run_case(parse_one(kBound), "t.kc", good, info(), req).verdict, Verdict::kConforming);
  CaseResult r = run_case(parse_one(kPrc01), "t.kc", good, info(), req);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  EXPECT_TRUE(r.repro.empty());
}

// An exp a few ulp off everywhere matches no specific pattern; the contract
// names the plain exceedance, so the violation carries it with the worst ratio.
TEST(Engine, PlainExceedanceGetsTheGenericSignatureTheContractNames) {
  const char* text = R"(
contract KC-EXP-T {
  scope      exp
  pre        precision(x, y) in {FP32} and value_range(x) in [-4, 4] and n in {64}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 1
  reference  higher_precision FP64
  measure    sample 2 random inputs per config; compute max ulp; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
}
)";
  auto exp_off_by = [](int ulps) {
    return [ulps](Call& c) {
      const Tensor& x = c.t("x");
      Tensor& y = c.t("y");
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        float v = std::exp(static_cast<float>(x.at(i)));
        for (int k = 0; k < ulps; ++k) v = std::nextafter(v, std::numeric_limits<float>::infinity());
        y.set(i, v);
      }
      return ok_status();
    };
  };
  CheckRequest req;
  FakeImpl off("t.exp3", "exp", exp_off_by(3));
  const CaseResult r = run_case(parse_one(text), "t.kc", off, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_EQ(r.signatures.size(), 1u);
  EXPECT_EQ(r.signatures[0].name, "TOLERANCE_EXCEEDED");
  EXPECT_EQ(r.signatures[0].to_string(), "TOLERANCE_EXCEEDED(" + r.signatures[0].args[0] + ")");
  EXPECT_GE(std::stod(r.signatures[0].args[0]), 2.0);
  EXPECT_TRUE(r.signature_expected);
  FakeImpl honest("t.exp", "exp", exp_off_by(0));
  EXPECT_EQ(run_case(parse_one(text), "t.kc", honest, info(), req).verdict, Verdict::kConforming);
}

TEST(Engine, Fp16AccumulatorIsNamedSaturation) {
  FakeImpl bad("t.fp16acc", "matmul", [](Call& c) { return gemm(c, add_fp16); });
  CheckRequest req;
  CaseResult r = run_case(parse_one(kPrc01), "t.kc", bad, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures[0].to_string(), "SATURATION(65504)");
  EXPECT_TRUE(r.signature_expected);
  EXPECT_NE(r.repro.find("--impl t.fp16acc"), std::string::npos) << r.repro;
  EXPECT_NE(r.repro.find("--config"), std::string::npos) << r.repro;
  ASSERT_TRUE(r.evidence.worst.has_value());
  EXPECT_TRUE(std::isinf(r.evidence.worst->value) || std::fabs(r.evidence.worst->value) <= 65504.0);
}

TEST(Engine, Bf16InputRoundingIsFingerprinted) {
  FakeImpl bf16("t.bf16in", "matmul", [](Call& c) {
    for (const char* n : {"A", "B"}) {
      Tensor& t = c.t(n);
      for (std::int64_t i = 0; i < t.storage_elems(); ++i) t.store(i, round_to(t.load(i), DType::kBF16));
    }
    return gemm(c, add_fp32);
  });
  CheckRequest req;
  CaseResult r = run_case(parse_one(kBound), "t.kc", bf16, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  // The impl mutated its inputs in place (a second finding) and rounded them to bf16.
  bool fingerprint = false, mutated = false;
  for (const auto& s : r.signatures) {
    fingerprint = fingerprint || s.to_string() == "PRECISION_FINGERPRINT(bf16)";
    mutated = mutated || s.name == "INPUT_MUTATED";
  }
  EXPECT_TRUE(mutated);
  EXPECT_TRUE(fingerprint) << r.reason;
}

TEST(Engine, UnwrittenOutputAndConstantOutputAreNamed) {
  const char* text = R"(
contract KC-SM {
  scope      softmax
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 1)
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  relative 1e-3
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature CONSTANT_OUTPUT
})";
  FakeImpl lazy("t.lazy", "softmax", [](Call&) { return ok_status(); });
  FakeImpl constant("t.const", "softmax", [](Call& c) {
    c.t("y").fill_storage(1.0 / c.get_int("cols", 128));
    return ok_status();
  });
  CheckRequest req;
  CaseResult a = run_case(parse_one(text), "t.kc", lazy, info(), req);
  ASSERT_EQ(a.verdict, Verdict::kViolation);
  EXPECT_EQ(a.signatures.at(0).name, "OUTPUT_NOT_WRITTEN");
  CaseResult b = run_case(parse_one(text), "t.kc", constant, info(), req);
  ASSERT_EQ(b.verdict, Verdict::kViolation);
  EXPECT_EQ(b.signatures.at(0).name, "CONSTANT_OUTPUT");
}

TEST(Engine, AWrittenNanIsToldApartFromAnUnwrittenOutput) {
  const char* text = R"(
contract KC-SM {
  scope      softmax
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 1)
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  relative 1e-3
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature NAN_INTRODUCED, OUTPUT_NOT_WRITTEN
})";
  // Writes NaN (computed, as 0/0 would give) into every element.
  FakeImpl nan_writer("t.nan", "softmax", [](Call& c) {
    Tensor& y = c.t("y");
    volatile float zero = 0;
    for (std::int64_t i = 0; i < y.numel(); ++i) y.data<float>()[y.offset_of_flat(i)] = zero / zero;
    return ok_status();
  });
  FakeImpl lazy("t.lazy", "softmax", [](Call&) { return ok_status(); });
  // Writes the first half of the output correctly and leaves the rest.
  FakeImpl half("t.half", "softmax", [](Call& c) {
    const auto rows = c.get_int("rows", 1), cols = c.get_int("cols", 1);
    const Tensor& x = c.t("x");
    Tensor& y = c.t("y");
    for (std::int64_t r = 0; r < rows / 2; ++r) {
      double mx = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, x.at(r * cols + j));
      for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(x.at(r * cols + j) - mx);
      for (std::int64_t j = 0; j < cols; ++j) y.set(r * cols + j, std::exp(x.at(r * cols + j) - mx) / sum);
    }
    return ok_status();
  });
  CheckRequest req;
  const CaseResult w = run_case(parse_one(text), "t.kc", nan_writer, info(), req);
  ASSERT_EQ(w.verdict, Verdict::kViolation);
  EXPECT_EQ(w.signatures.at(0).name, "NAN_INTRODUCED") << w.reason;
  const CaseResult u = run_case(parse_one(text), "t.kc", lazy, info(), req);
  ASSERT_EQ(u.verdict, Verdict::kViolation);
  EXPECT_EQ(u.signatures.at(0).to_string(), "OUTPUT_NOT_WRITTEN") << u.reason;
  const CaseResult h = run_case(parse_one(text), "t.kc", half, info(), req);
  ASSERT_EQ(h.verdict, Verdict::kViolation);
  ASSERT_FALSE(h.signatures.empty()) << h.reason;
  EXPECT_EQ(h.signatures.at(0).name, "OUTPUT_NOT_WRITTEN") << h.reason;
  ASSERT_EQ(h.signatures.at(0).args.size(), 1u);
  EXPECT_NE(h.signatures.at(0).args[0].find(" of "), std::string::npos);
  for (const auto& s : h.signatures) EXPECT_NE(s.name, "NAN_INTRODUCED") << "the unwritten half is not a NaN it wrote";
}

TEST(Engine, AnUnwrittenElementFailsEvenWhereTheReferenceIsNan) {
  const char* text = R"(
contract KC-EXP {
  scope      exp
  pre        precision(x, y) in {FP32}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 4
  reference  higher_precision FP64
  measure    inject nan(x) at density 0.5; observe propagation
  violation  signature OUTPUT_NOT_WRITTEN
})";
  // Right everywhere, except that it skips NaN inputs (leaving the output as it was).
  FakeImpl skip_nan("t.skip_nan", "exp", [](Call& c) {
    const Tensor& x = c.t("x");
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < x.numel(); ++i)
      if (!std::isnan(x.at(i))) y.set(i, std::exp(x.at(i)));
    return ok_status();
  });
  CheckRequest req;
  const CaseResult r = run_case(parse_one(text), "t.kc", skip_nan, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  EXPECT_EQ(r.signatures.at(0).name, "OUTPUT_NOT_WRITTEN") << r.reason;
}

TEST(Engine, AFlushToZeroIsNamedAsSuchNotAsAConstantOutput) {
  const char* text = R"(
contract KC-EXP {
  scope      exp
  pre        precision(x, y) in {FP32} and value_range(x) in [-100, -90]
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 4
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature FTZ_OBSERVED
})";
  // exp(x) for x in [-100, -90] is subnormal in FP32 (below 1.2e-38): flushed to +0.
  FakeImpl ftz("t.ftz", "exp", [](Call& c) {
    const Tensor& x = c.t("x");
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      const float v = std::exp(static_cast<float>(x.at(i)));
      y.set(i, std::fabs(v) < std::numeric_limits<float>::min() ? 0.0 : v);
    }
    return ok_status();
  });
  CheckRequest req;
  const CaseResult r = run_case(parse_one(text), "t.kc", ftz, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  EXPECT_EQ(r.signatures.at(0).name, "FTZ_OBSERVED") << r.reason;
  for (const auto& s : r.signatures) EXPECT_NE(s.name, "CONSTANT_OUTPUT");
}

TEST(Engine, NondeterminismIsCountedAgainstDeclaredBitwise) {
  const char* text = R"(
contract C-ORD-02 {
  scope      sum
  pre        precision(x) in {FP32} and declared determinism = BITWISE and n in {100}
  post       bitwise_identical across 10 invocations
  tolerance  none
  reference  algebraic determinism
  measure    sample 1 random inputs per config
  violation  signature NONDETERMINISTIC
})";
  int calls = 0;
  FakeImpl flaky("t.flaky", "sum", [&calls](Call& c) {
    const Tensor& x = c.t("x");
    float s = 0;
    for (std::int64_t i = 0; i < x.numel(); ++i) s += static_cast<float>(x.at(i));
    if (++calls % 3 == 0) s = std::nextafter(s, 1e30f);  // every third run differs in the last bit
    c.t("out").set(0, s);
    return ok_status();
  });
  flaky.decl_.extra["reentrant"] = "false";  // its call counter is shared state: invoked one at a time
  CheckRequest req;
  CaseResult r = run_case(parse_one(text), "t.kc", flaky, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation);
  EXPECT_EQ(r.signatures.at(0).to_string(), "NONDETERMINISTIC(3 of 9)");
  flaky.decl_.determinism = Determinism::kNone;
  EXPECT_EQ(run_case(parse_one(text), "t.kc", flaky, info(), req).verdict, Verdict::kNotApplicable);
}

// `ulp 0` counts +0 and -0 as equal (IEEE comparison); `ulp 0 signed` does not.
TEST(Engine, SignedUlpToleranceTellsTheSignOfZero) {
  const std::string text = R"(
contract KC-TANH {
  scope      tanh
  pre        precision(x, y) in {FP32} and value_range(x) in [0, 0]
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 0 SIGNED
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature ZERO_SIGN
})";
  // tanh(+0) = +0; this kernel's x == 0 branch returns a literal -0.
  FakeImpl neg_zero("t.negzero", "tanh", [](Call& c) {
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      const double x = c.t("x").at(i);
      y.set(i, x == 0 ? -0.0 : std::tanh(x));
    }
    return ok_status();
  });
  CheckRequest req;
  std::string plain = text;
  plain.replace(plain.find(" SIGNED"), 7, "");
  EXPECT_EQ(run_case(parse_one(plain), "t.kc", neg_zero, info(), req).verdict, Verdict::kConforming);
  std::string signed_text = text;
  signed_text.replace(signed_text.find("SIGNED"), 6, "signed");
  const CaseResult r = run_case(parse_one(signed_text), "t.kc", neg_zero, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  EXPECT_EQ(r.signatures.at(0).name, "ZERO_SIGN") << r.reason;
}

// `declared_policy determinism`: each impl is held to the class it declares,
// BITWISE to identical bits, RUN_TO_RUN to relative 1e-7 between invocations.
TEST(Engine, DeterminismIsJudgedByTheDeclaredClass) {
  const char* text = R"(
contract T-DET {
  scope      sum
  pre        precision(x) in {FP32} and n in {100}
  post       declared_policy determinism in {BITWISE, RUN_TO_RUN, NONE}
  tolerance  none
  reference  algebraic determinism
  measure    sample 1 random inputs per config
  violation  signature NONDETERMINISTIC
})";
  // Every other run moves the sum by `ulps` units in the last place (an FP32
  // ulp is 2^-23 ~ 1.2e-7 relative at most, 6e-8 at least).
  auto wobbly = [](const std::string& name, int ulps) {
    return FakeImpl(name, "sum", [ulps, calls = 0](Call& c) mutable {
      const Tensor& x = c.t("x");
      float s = 1000;  // away from 0, so one ulp is ~6e-8 relative
      for (std::int64_t i = 0; i < x.numel(); ++i) s += static_cast<float>(x.at(i));
      if (++calls % 2 == 0)
        for (int u = 0; u < ulps; ++u) s = std::nextafter(s, 1e30f);
      c.t("out").set(0, s);
      return ok_status();
    });
  };
  CheckRequest req;
  FakeImpl one_ulp = wobbly("t.one_ulp", 1);
  one_ulp.decl_.extra["reentrant"] = "false";  // a call counter: invoked one at a time
  one_ulp.decl_.determinism = Determinism::kRunToRun;
  const CaseResult close = run_case(parse_one(text), "t.kc", one_ulp, info(), req);
  EXPECT_EQ(close.verdict, Verdict::kConforming) << close.reason;
  one_ulp.decl_.determinism = Determinism::kBitwise;
  const CaseResult bitwise = run_case(parse_one(text), "t.kc", one_ulp, info(), req);
  ASSERT_EQ(bitwise.verdict, Verdict::kViolation) << bitwise.reason;
  EXPECT_EQ(bitwise.signatures.at(0).name, "NONDETERMINISTIC");
  FakeImpl many_ulps = wobbly("t.many_ulps", 64);  // ~4e-6 relative
  many_ulps.decl_.extra["reentrant"] = "false";
  many_ulps.decl_.determinism = Determinism::kRunToRun;
  const CaseResult far = run_case(parse_one(text), "t.kc", many_ulps, info(), req);
  ASSERT_EQ(far.verdict, Verdict::kViolation) << far.reason;
  EXPECT_NE(far.reason.find("RUN_TO_RUN"), std::string::npos) << far.reason;
}

// A kernel that keeps its running sum in a global is deterministic when
// invoked alone and wrong when two requests run at once: the concurrency sweep
// finds it, unless the impl declares that it must not be invoked concurrently.
TEST(Engine, TheConcurrencySweepFindsAKernelThatIsNotReentrant) {
  const char* text = R"(
contract T-REENTRANT {
  scope      sum
  pre        precision(x) in {FP32} and declared determinism = BITWISE and n in {4096}
  post       bitwise_identical across 12 invocations
  tolerance  none
  reference  algebraic determinism
  measure    sample 1 random inputs per config
  violation  signature NONDETERMINISTIC
})";
  static double global_sum = 0;  // shared by every invocation in the process
  FakeImpl global("t.global_sum", "sum", [](Call& c) {
    const Tensor& x = c.t("x");
    global_sum = 0;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      global_sum = global_sum + x.at(i);
      if (i % 32 == 0) std::this_thread::yield();  // another request may run here
    }
    c.t("out").set(0, global_sum);
    return ok_status();
  });
  CheckRequest req;
  const CaseResult swept = run_case(parse_one(text), "t.kc", global, info(), req);
  ASSERT_EQ(swept.verdict, Verdict::kViolation) << swept.reason;
  EXPECT_EQ(swept.signatures.at(0).name, "NONDETERMINISTIC");
  EXPECT_NE(swept.reason.find("alone: 0 of 5"), std::string::npos) << swept.reason;
  // 12 invocations: 6 alone (the first is the reference), then 3 at each other level.
  const std::size_t two = swept.reason.find(", 2 at once: ");
  const std::size_t four = swept.reason.find(", 4 at once: ");
  ASSERT_NE(two, std::string::npos) << swept.reason;
  ASSERT_NE(four, std::string::npos) << swept.reason;
  EXPECT_NE(swept.reason.substr(two, four - two).find(" of 3"), std::string::npos) << swept.reason;
  EXPECT_NE(swept.reason.substr(four).find(" of 3)"), std::string::npos) << swept.reason;
  global.decl_.extra["reentrant"] = "false";
  const CaseResult alone = run_case(parse_one(text), "t.kc", global, info(), req);
  EXPECT_EQ(alone.verdict, Verdict::kConforming) << alone.reason;
  bool noted = false;
  for (const auto& n : alone.evidence.notes) noted = noted || n.find("no concurrency sweep") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A violation rests on a promise: an impl whose library documents no accuracy
// is measured, not condemned, for finite results outside a derived bound; a
// NaN it writes is still a violation.
TEST(Engine, UndocumentedAccuracyIsMeasuredNotCondemnedButNanStillIs) {
  const char* text = R"(
contract KC-EXPX {
  scope      exp
  pre        precision(x, y) in {FP32} and value_range(x) in [-4, 4]
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 1
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature TOLERANCE_EXCEEDED, NAN_INTRODUCED
})";
  // A few ulps off everywhere: a cheap exp approximation.
  FakeImpl rough("t.rough_exp", "exp", [](Call& c) {
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < y.numel(); ++i) y.set(i, std::exp(c.t("x").at(i)) * (1 + 3e-6));
    return ok_status();
  });
  CheckRequest req;
  EXPECT_EQ(run_case(parse_one(text), "t.kc", rough, info(), req).verdict, Verdict::kViolation);
  rough.decl_.extra["accuracy"] = "UNDOCUMENTED";
  const CaseResult measured = run_case(parse_one(text), "t.kc", rough, info(), req);
  EXPECT_EQ(measured.verdict, Verdict::kUnderSpecified) << measured.reason;
  EXPECT_NE(measured.reason.find("measured, not judged"), std::string::npos) << measured.reason;
  EXPECT_TRUE(measured.signatures.empty());
  EXPECT_GT(measured.evidence.max, 1);  // the measurement is kept
  FakeImpl nan_out("t.nan_exp", "exp", [](Call& c) {
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < y.numel(); ++i) y.set(i, i == 7 ? std::nan("") : std::exp(c.t("x").at(i)));
    return ok_status();
  });
  nan_out.decl_.extra["accuracy"] = "UNDOCUMENTED";
  const CaseResult nan = run_case(parse_one(text), "t.kc", nan_out, info(), req);
  ASSERT_EQ(nan.verdict, Verdict::kViolation) << nan.reason;
  EXPECT_EQ(nan.signatures.at(0).name, "NAN_INTRODUCED") << nan.reason;
}

// Evidence states only facts: exp(NaN) = +Inf is a swallowed NaN, and the note
// says the outputs are infinite, not "finite".
TEST(Engine, ANanTurnedIntoInfinityIsNotCalledFinite) {
  const char* text = R"(
contract T-EXC {
  scope      exp
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 1)
  post       declared_policy nan in {IEEE_PROPAGATE, MASK, RAISE}
  tolerance  none
  reference  spec IEEE754-2019
  measure    inject nonfinite at density 0.02; observe propagation
  violation  signature NAN_SWALLOWED
})";
  FakeImpl nan_to_inf("t.exp_nan_inf", "exp", [](Call& c) {
    Tensor& y = c.t("y");
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      const double x = c.t("x").at(i);
      y.set(i, std::isnan(x) ? INFINITY : std::exp(x));
    }
    return ok_status();
  });
  CheckRequest req;
  const CaseResult r = run_case(parse_one(text), "t.kc", nan_to_inf, info(), req);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  EXPECT_EQ(r.signatures.at(0).name, "NAN_SWALLOWED") << r.reason;
  bool said_inf = false;
  for (const auto& n : r.evidence.notes) {
    EXPECT_EQ(n.find("outputs are finite"), std::string::npos) << n;
    said_inf = said_inf || n.find("are +-Inf") != std::string::npos;
  }
  EXPECT_TRUE(said_inf) << r.reason;
}

TEST(Declaration, RunToRunAgreementIsRelative1e7) {
  EXPECT_TRUE(runs_agree(1.0, 1.0 + 0.9e-7, DType::kF64, Determinism::kRunToRun));
  EXPECT_FALSE(runs_agree(1.0, 1.0 + 1.1e-7, DType::kF64, Determinism::kRunToRun));
  EXPECT_FALSE(runs_agree(1.0, 1.0 + 1e-12, DType::kF64, Determinism::kBitwise));
  EXPECT_TRUE(runs_agree(0.0, -0.0, DType::kF32, Determinism::kRunToRun));
  EXPECT_FALSE(runs_agree(0.0, -0.0, DType::kF32, Determinism::kBitwise));
  EXPECT_TRUE(runs_agree(NAN, NAN, DType::kF32, Determinism::kRunToRun));
  EXPECT_FALSE(runs_agree(NAN, 1.0, DType::kF32, Determinism::kRunToRun));
  EXPECT_TRUE(runs_agree(1.0, 2.0, DType::kF32, Determinism::kNone));
}

// In a scope of several ops, `n in {...}` sizes the ops that have an n (the
// reductions) and leaves matmul (M, N, K) at its own configs; a parameter no
// scoped op has still keeps the contract from running.
TEST(Engine, AParameterClauseAppliesToTheScopedOpsThatHaveIt) {
  const char* text = R"(
contract T-ORD {
  scope      matmul, reduction
  pre        precision(A, B, C, x) in {FP32} and n in {100, 300}
  post       bitwise_identical across 3 invocations
  tolerance  none
  reference  algebraic determinism
  measure    sample 1 random inputs per config
  violation  signature NONDETERMINISTIC
})";
  FakeImpl sum("t.sum", "sum", [](Call& c) {
    const Tensor& x = c.t("x");
    float s = 0;
    for (std::int64_t i = 0; i < x.numel(); ++i) s += static_cast<float>(x.at(i));
    c.t("out").set(0, s);
    return ok_status();
  });
  FakeImpl mm("t.mm", "matmul", [](Call& c) { return gemm(c, add_fp32); });
  CheckRequest req;
  const CaseResult rs = run_case(parse_one(text), "t.kc", sum, info(), req);
  ASSERT_EQ(rs.verdict, Verdict::kConforming) << rs.reason;
  ASSERT_EQ(rs.evidence.per_config.size(), 2u);
  EXPECT_NE(rs.evidence.per_config[0].config.find("n=100"), std::string::npos) << rs.evidence.per_config[0].config;
  EXPECT_NE(rs.evidence.per_config[1].config.find("n=300"), std::string::npos) << rs.evidence.per_config[1].config;
  const CaseResult rm = run_case(parse_one(text), "t.kc", mm, info(), req);
  EXPECT_EQ(rm.verdict, Verdict::kConforming) << rm.reason;
  ASSERT_FALSE(rm.evidence.per_config.empty());
  EXPECT_EQ(rm.evidence.per_config[0].config.find("n="), std::string::npos) << rm.evidence.per_config[0].config;

  std::string typo = text;
  typo.replace(typo.find("n in"), 4, "nn in");
  const CaseResult bad = run_case(parse_one(typo), "t.kc", sum, info(), req);
  EXPECT_EQ(bad.verdict, Verdict::kUnderSpecified);  // the contract cannot run as written
  EXPECT_NE(bad.reason.find("'nn' is not a parameter of op sum or of any other op in scope"), std::string::npos)
      << bad.reason;
}

TEST(Engine, OutOfScopeAndUndeclaredAreNotApplicableAndProseIsUnderSpecified) {
  FakeImpl good("t.good", "matmul", [](Call& c) { return gemm(c, add_fp32); });
  good.decl_.accumulator = DType::kF16;  // honest declaration of an fp16 accumulator
  CheckRequest req;
  CaseResult r = run_case(parse_one(kPrc01), "t.kc", good, info(), req);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
  EXPECT_NE(r.reason.find("accumulator"), std::string::npos) << r.reason;

  auto prose = lang::parse_kc("contract C-P {\n  scope matmul\n  pre all inputs are finite\n}\n", "p.kc");
  ASSERT_FALSE(prose.has_errors());
  EXPECT_EQ(run_case(prose.document.contracts.at(0), "p.kc", good, info(), req).verdict,
            Verdict::kUnderSpecified);
}

TEST(Engine, KernelThatRaisesUnexpectedlyIsAViolationAndUnavailableBackendSkips) {
  FakeImpl raiser("t.raise", "matmul", [](Call&) { return kernel_raised("refused"); });
  CheckRequest req;
  CaseResult r = run_case(parse_one(kBound), "t.kc", raiser, info(), req);
  EXPECT_EQ(r.verdict, Verdict::kViolation);
  EXPECT_EQ(r.signatures.at(0).name, "UNEXPECTED_RAISE");
  expect_counts_agree(r);
  // The reverse: a contract that expects a raise, and a kernel that returns normally.
  std::string must_raise = kBound;
  must_raise.replace(must_raise.find("post "), must_raise.find('\n', must_raise.find("post ")) - must_raise.find("post "),
                     "post       raise ValueError");
  FakeImpl quiet("t.quiet", "matmul", [](Call& c) { return gemm(c, add_fp32); });
  const CaseResult m = run_case(parse_one(must_raise), "t.kc", quiet, info(), req);
  ASSERT_EQ(m.verdict, Verdict::kViolation) << m.reason;
  EXPECT_EQ(m.signatures.at(0).name, "MISSING_RAISE");
  expect_counts_agree(m);
  BackendInfo down{"test", false, "", "library missing", ""};
  EXPECT_EQ(run_case(parse_one(kBound), "t.kc", raiser, down, req).verdict, Verdict::kSkipped);
}

TEST(Engine, SameSeedSameInputsAcrossImpls) {
  std::vector<std::uint64_t> seen;
  FakeImpl a("t.a", "matmul", [&](Call& c) {
    seen.push_back(c.t("A").hash());
    return gemm(c, add_fp32);
  });
  CheckRequest req;
  req.samples = 1;
  req.isolation = isolate::Mode::kNone;  // `seen` lives in this process
  run_case(parse_one(kBound), "t.kc", a, info(), req);
  const auto first = seen;
  seen.clear();
  a.decl_.name = "t.b";
  run_case(parse_one(kBound), "t.kc", a, info(), req);
  EXPECT_EQ(first, seen);
  EXPECT_FALSE(first.empty());
}

TEST(Engine, GlobMatch) {
  EXPECT_TRUE(glob_match("openblas.*", "openblas.sgemm"));
  EXPECT_TRUE(glob_match("C-?\?\?-0*", "C-PRC-01"));
  EXPECT_FALSE(glob_match("ref.*", "refblas.sgemm"));
  EXPECT_TRUE(glob_match("*", ""));
}

}  // namespace
}  // namespace kc::engine
