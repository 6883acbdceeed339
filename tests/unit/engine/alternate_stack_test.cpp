// `reference alternate_stack S`: the oracle is another impl, run in a worker of
// its own on the same inputs and compared under the contract's tolerance
// (ulp 0: bit for bit). A name that matches nothing is not_applicable, never
// a silent fallback to the FP64 oracle.
#include <gtest/gtest.h>

#include <csignal>
#include <functional>
#include <string>

#include "../../../backends/compilers/compilers_backend.h"
#include "engine/sample_cache.h"
#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::engine {
namespace {

class SumImpl : public Impl {
 public:
  SumImpl(std::string name, std::string backend, std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = std::move(name);
    decl_.op = "sum";
    decl_.backend = std::move(backend);
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fn_(call); }
  Declaration decl_;

 private:
  std::function<Status(Call&)> fn_;
};

/// Sums x in index order with a float accumulator, or (wide) a double one.
Status sum_kernel(Call& call, bool wide) {
  const Tensor& x = call.t("x");
  const auto n = call.get_int("n");
  const auto inc = x.strides()[0];
  float acc = 0;
  double wide_acc = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    acc += x.data<float>()[i * inc];
    wide_acc += x.data<float>()[i * inc];
  }
  call.t("out").data<float>()[0] = wide ? static_cast<float>(wide_acc) : acc;
  return ok_status();
}

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

/// A bitwise sum contract against `reference`.
Contract bitwise_sum(const std::string& reference) {
  return parse_one(R"(
contract T-SUM-BITWISE {
  scope      sum
  pre        precision(x) in {FP32} and n in {1000, 4099}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  ulp 0
  reference  )" + reference + R"(
  measure    sample 3 random inputs per config; compute max ulp; pass if <= 0
  violation  signature TOLERANCE_EXCEEDED
}
)");
}

const BackendInfo kTest{"test", true, "", "", ""};

std::string notes(const CaseResult& r) {
  std::string out;
  for (const auto& n : r.evidence.notes) out += n + "\n";
  return r.reason + "\n" + out;
}

/// The fake stacks: an FP32 index-order sum (two builds of it) and a wide one.
struct FakeStacks {
  std::shared_ptr<SumImpl> narrow_a = std::make_shared<SumImpl>("a.sum", "stack_a", [](Call& c) { return sum_kernel(c, false); });
  std::shared_ptr<SumImpl> narrow_b = std::make_shared<SumImpl>("b.sum", "stack_b", [](Call& c) { return sum_kernel(c, false); });
  std::shared_ptr<SumImpl> wide = std::make_shared<SumImpl>("w.sum", "stack_w", [](Call& c) { return sum_kernel(c, true); });
  CheckRequest request(std::vector<std::shared_ptr<SumImpl>> refs) const {
    auto available = std::make_shared<std::vector<ReferenceImpl>>();
    for (auto& r : refs) available->push_back({r, {r->decl_.backend, true, "", "", ""}});
    CheckRequest req;
    req.reference_impls = available;
    return req;
  }
};

TEST(EngineAlternateStack, TheNamedImplIsTheOracleAndBothSidesAreNamed) {
  FakeStacks s;
  const CheckRequest req = s.request({s.narrow_a, s.narrow_b, s.wide});
  // b's bits equal a's: conforming bitwise; the FP64 oracle under ulp 0 says otherwise.
  const CaseResult same = run_case(bitwise_sum("alternate_stack a.sum"), "t.kc", *s.narrow_b, kTest, req);
  EXPECT_EQ(same.verdict, Verdict::kConforming) << notes(same);
  EXPECT_EQ(same.evidence.method, "alternate_stack");
  EXPECT_NE(same.reason.find("[oracle: alternate stack a.sum]"), std::string::npos) << same.reason;
  EXPECT_GT(same.evidence.elements, 0);
  const CaseResult fp64 = run_case(bitwise_sum("higher_precision FP64"), "t.kc", *s.narrow_b, kTest, req);
  EXPECT_EQ(fp64.verdict, Verdict::kViolation) << notes(fp64);
  // The wide sum differs from a's bits: a violation against a, naming a.
  const CaseResult differs = run_case(bitwise_sum("alternate_stack a.sum"), "t.kc", *s.wide, kTest, req);
  EXPECT_EQ(differs.verdict, Verdict::kViolation) << notes(differs);
  EXPECT_EQ(differs.impl, "w.sum");
  EXPECT_NE(notes(differs).find("oracle: alternate stack a.sum = a.sum (stack_a)"), std::string::npos) << notes(differs);
}

TEST(EngineAlternateStack, TheReferenceAnswersOnceForEveryImplOfTheRun) {
  FakeStacks s;
  CheckRequest req = s.request({s.narrow_a, s.narrow_b, s.wide});
  req.sample_cache = std::make_shared<SampleCache>();
  const Contract c = bitwise_sum("alternate_stack a.sum");
  const CaseResult first = run_case(c, "t.kc", *s.narrow_b, kTest, req);
  const std::int64_t reused = req.sample_cache->stats().oracles_reused;
  const CaseResult second = run_case(c, "t.kc", *s.wide, kTest, req);
  EXPECT_GT(req.sample_cache->stats().oracles_reused, reused);
  EXPECT_EQ(first.verdict, Verdict::kConforming) << notes(first);
  EXPECT_EQ(second.verdict, Verdict::kViolation) << notes(second);
  // A reused answer is still the reference impl's, and still named.
  EXPECT_EQ(second.evidence.method, "alternate_stack");
  EXPECT_NE(second.reason.find("[oracle: alternate stack a.sum]"), std::string::npos) << second.reason;
}

TEST(EngineAlternateStack, ABackendNameAndAGlobMatchAndTheChoiceIsSaid) {
  FakeStacks s;
  const CheckRequest req = s.request({s.narrow_a, s.narrow_b, s.wide});
  // By backend name.
  EXPECT_EQ(run_case(bitwise_sum("alternate_stack stack_a"), "t.kc", *s.narrow_b, kTest, req).verdict,
            Verdict::kConforming);
  // A glob naming several: tried by name (a.sum before w.sum); the impl under test is never its own oracle.
  const CaseResult r = run_case(bitwise_sum("alternate_stack *.sum"), "t.kc", *s.narrow_b, kTest, req);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << notes(r);
  EXPECT_NE(notes(r).find("names 2 impls (a.sum, w.sum)"), std::string::npos) << notes(r);
  std::string why;
  const auto order = alternate_stack_impls("*.sum", s.wide->decl_, *req.reference_impls, &why);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0].impl->declaration().name, "a.sum");
  EXPECT_EQ(order[1].impl->declaration().name, "b.sum");
}

TEST(EngineAlternateStack, ANameThatMatchesNothingIsNotApplicableNeverTheFp64Oracle) {
  FakeStacks s;
  const CheckRequest req = s.request({s.narrow_a, s.wide});
  const CaseResult none = run_case(bitwise_sum("alternate_stack cublas"), "t.kc", *s.narrow_b, kTest, req);
  EXPECT_EQ(none.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(none.reason,
            "alternate stack cublas matches no available impl of op sum (by name, backend, compiler, library, "
            "vendor or device)");
  const CaseResult itself = run_case(bitwise_sum("alternate_stack b.sum"), "t.kc", *s.narrow_b, kTest,
                                     s.request({s.narrow_b}));
  EXPECT_EQ(itself.verdict, Verdict::kNotApplicable);
  EXPECT_NE(itself.reason.find("not its own arbiter"), std::string::npos) << itself.reason;
  // run_case alone, given no impls to choose among.
  const CaseResult alone = run_case(bitwise_sum("alternate_stack a.sum"), "t.kc", *s.narrow_b, kTest, CheckRequest{});
  EXPECT_EQ(alone.verdict, Verdict::kNotApplicable);
  EXPECT_NE(alone.reason.find("no impls were given"), std::string::npos) << alone.reason;
}

TEST(EngineAlternateStack, TheReferenceIsUntrustedToo) {
  FakeStacks s;
  auto crashes = std::make_shared<SumImpl>("crash.sum", "crash", [](Call&) -> Status {
    std::raise(SIGSEGV);
    return ok_status();
  });
  auto lazy = std::make_shared<SumImpl>("lazy.sum", "lazy", [](Call&) { return ok_status(); });
  auto raises = std::make_shared<SumImpl>("raise.sum", "raise", [](Call&) { return kernel_raised("no"); });
  const CheckRequest req = s.request({crashes, lazy, raises});
  const CaseResult crashed = run_case(bitwise_sum("alternate_stack crash.sum"), "t.kc", *s.narrow_a, kTest, req);
  EXPECT_EQ(crashed.verdict, Verdict::kError);
  EXPECT_NE(crashed.reason.find("the alternate stack's impl crash.sum failed: CRASH(SIGSEGV)"), std::string::npos)
      << crashed.reason;
  const CaseResult unwritten = run_case(bitwise_sum("alternate_stack lazy.sum"), "t.kc", *s.narrow_a, kTest, req);
  EXPECT_EQ(unwritten.verdict, Verdict::kError);
  EXPECT_NE(unwritten.reason.find("left 1 of 1 elements of out unwritten"), std::string::npos) << unwritten.reason;
  const CaseResult raised = run_case(bitwise_sum("alternate_stack raise.sum"), "t.kc", *s.narrow_a, kTest, req);
  EXPECT_EQ(raised.verdict, Verdict::kError);
  EXPECT_NE(raised.reason.find("did not answer"), std::string::npos) << raised.reason;
}

TEST(EngineAlternateStack, APostconditionThatComparesNoOutputsTakesNoAlternateStack) {
  FakeStacks s;
  const Contract c = parse_one(R"(
contract T-SUM-DET {
  scope      sum
  pre        precision(x) in {FP32} and n in {100}
  post       bitwise_identical across 4 invocations
  tolerance  none
  reference  alternate_stack a.sum
  measure    sample 1 random inputs per config; compute max mismatches; pass if <= 0
  violation  signature NONDETERMINISTIC
}
)");
  const CaseResult r = run_case(c, "t.kc", *s.narrow_b, kTest, s.request({s.narrow_a}));
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified);
  EXPECT_NE(r.reason.find("the post clause must be"), std::string::npos) << r.reason;
}

// Two compiler builds of one kernel, bitwise against each other: the verdict
// differs from the one against the FP64 oracle.
TEST(EngineAlternateStack, CompilerBuildsArbitrateEachOther) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.add(backends::make_compilers_backend()).ok());
  const std::vector<BackendInfo> infos = registry.infos();
  if (infos.empty() || !infos[0].available) GTEST_SKIP() << "compilers backend unavailable";
  const auto o2 = registry.find_impl("compilers.gcc_O2.sum");
  const auto ofast = registry.find_impl("compilers.gcc_Ofast.sum");
  const auto off = registry.find_impl("compilers.gcc_O3_v3_contract_off.sum");
  if (!o2 || !ofast) GTEST_SKIP() << "the gcc builds are not there";
  CheckRequest req;
  req.reference_impls = available_impls(registry);
  // -Ofast reassociates the sum: its bits differ from -O2's, though it keeps the FP64 bound.
  const Contract vs_o2 = bitwise_sum("alternate_stack compilers.gcc_O2");
  const CaseResult fast = run_case(vs_o2, "t.kc", *ofast, infos[0], req);
  EXPECT_EQ(fast.verdict, Verdict::kViolation) << notes(fast);
  EXPECT_NE(notes(fast).find("oracle: alternate stack compilers.gcc_O2 = compilers.gcc_O2.sum (compilers"),
            std::string::npos)
      << notes(fast);
  Contract bound = bitwise_sum("higher_precision FP64");
  bound.tolerance = parse_one(R"(
contract T {
  scope      sum
  pre        precision(x) in {FP32}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(n + 1, P) * |x|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
}
)").tolerance;
  EXPECT_EQ(run_case(bound, "t.kc", *ofast, infos[0], req).verdict, Verdict::kConforming);
  // A value-safe build agrees with -O2 bit for bit, where the FP64 oracle under ulp 0 finds it off.
  // (-march=x86-64-v3: skipped on a CPU without AVX2.)
  if (off) {
    const CaseResult same = run_case(vs_o2, "t.kc", *off, infos[0], req);
    if (same.verdict != Verdict::kSkipped) {
      EXPECT_EQ(same.verdict, Verdict::kConforming) << notes(same);
      EXPECT_EQ(run_case(bitwise_sum("higher_precision FP64"), "t.kc", *off, infos[0], req).verdict,
                Verdict::kViolation);
    }
  }
}

}  // namespace
}  // namespace kc::engine
