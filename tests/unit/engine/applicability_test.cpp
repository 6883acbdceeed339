// stack, version and flag preconditions are checked against what an impl
// records (its declaration and its backend's probe): an unmet or unrecordable
// one makes the case not_applicable with its reason, never a silent pass.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "../../../backends/blas/blas_backend.h"
#include "kc/engine.h"
#include "kc/lang.h"
#include "kc/plan.h"

namespace kc::engine {
namespace {

/// A sum kernel accumulating in FP32, in index order.
Status fp32_sum(Call& call) {
  const Tensor& x = call.t("x");
  const auto n = call.get_int("n");
  const auto inc = x.strides()[0];
  float acc = 0;
  for (std::int64_t i = 0; i < n; ++i) acc += x.data<float>()[i * inc];
  call.t("out").data<float>()[0] = acc;
  return ok_status();
}

class SumImpl : public Impl {
 public:
  explicit SumImpl(std::string name, std::string backend = "test") {
    decl_.name = std::move(name);
    decl_.op = "sum";
    decl_.backend = std::move(backend);
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fp32_sum(call); }
  Declaration decl_;
};

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

/// A sum contract with `extra` added to its pre clause.
Contract sum_contract(const std::string& extra) {
  return parse_one(R"(
contract T-APPLY {
  scope      sum
  pre        precision(x) in {FP32} and n in {100})" +
                   (extra.empty() ? std::string() : " and " + extra) + R"(
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(n + 1, P) * |x|
  reference  higher_precision FP64
  measure    sample 2 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
}
)");
}

const BackendInfo kOpenBlasLike{"test", true,
                                "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64, core "
                                "Cooperlake",
                                "", ""};

CaseResult judge(const std::string& extra, const Impl& impl, const BackendInfo& info = kOpenBlasLike) {
  return run_case(sum_contract(extra), "t.kc", impl, info, CheckRequest{});
}

TEST(EngineVersions, CompareDottedNumbersComponentByComponent) {
  EXPECT_LT(*compare_versions("0.3.21", "0.3.100"), 0);
  EXPECT_GT(*compare_versions("0.3.100", "0.3.21"), 0);
  EXPECT_EQ(*compare_versions("1.2", "1.2.0"), 0);
  EXPECT_LT(*compare_versions("9", "12.1"), 0);
  EXPECT_FALSE(compare_versions("1.x", "1.0"));
  EXPECT_FALSE(compare_versions("", "1"));
  EXPECT_FALSE(compare_versions("1..2", "1"));
}

TEST(EngineVersions, ReadFromWhatTheBackendRecords) {
  Declaration d;
  d.name = "x.impl";
  d.backend = "x";
  std::string why;
  auto version = [&](const std::string& line, const std::string& hint = "") {
    why.clear();
    return recorded_version(d, {"x", true, line, "", ""}, hint, &why).value_or("none");
  };
  EXPECT_EQ(version(kOpenBlasLike.version), "0.3.21");
  EXPECT_EQ(version("BLIS 0.9.0, arch zen3"), "0.9.0");
  EXPECT_EQ(version("Eigen 3.4.0"), "3.4.0");
  EXPECT_EQ(version("Open MPI v4.1.4"), "4.1.4");
  EXPECT_EQ(version("kc_torch libtorch 1.13.0, ABI 1"), "1.13.0");
  EXPECT_EQ(version("2.6.3, CPU runtime OpenMP"), "2.6.3");
  // Several libraries on one line: the part naming the impl's compiler, or the contract's stack.
  EXPECT_EQ(version("clang++ 14.0.6 ; g++ 12.2.0"), "none");
  EXPECT_NE(why.find("impl does not record its version"), std::string::npos) << why;
  d.extra["compiler"] = "g++";
  EXPECT_EQ(version("clang++ 14.0.6 ; g++ 12.2.0"), "12.2.0");
  d.extra["compiler"] = "clang++";
  EXPECT_EQ(version("clang++ 14.0.6 ; g++ 12.2.0"), "14.0.6");
  d.extra.clear();
  EXPECT_EQ(version("CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.19.0", "cublas"), "13.1.0");
  // No number at all: not recorded, and said so.
  EXPECT_EQ(version("builtin"), "none");
  EXPECT_EQ(why, "impl does not record its version: x.impl (backend x) records 'builtin', with no version number");
  EXPECT_EQ(version(""), "none");
  EXPECT_NE(why.find("impl does not record its version"), std::string::npos);
  // A declared version comes first.
  d.extra["version"] = "2.1.7";
  EXPECT_EQ(version("builtin"), "2.1.7");
}

TEST(EngineApplicability, AnUnmetVersionIsNotApplicableWithItsReasonAndAMetOneJudges) {
  const SumImpl impl("t.sum");
  const CaseResult high = judge("version >= 99", impl);
  EXPECT_EQ(high.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(high.reason, "contract applies to version >= 99; t.sum records version 0.3.21");
  // Dotted numeric, not text: 0.3.21 < 0.3.100.
  EXPECT_EQ(judge("version >= 0.3.100", impl).verdict, Verdict::kNotApplicable);
  EXPECT_EQ(judge("version < 0.3.100", impl).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("version >= 0.3.9", impl).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("version = 0.3.21", impl).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("version != 0.3.21", impl).verdict, Verdict::kNotApplicable);
}

TEST(EngineApplicability, AnImplThatRecordsNoVersionIsNotApplicableNotPassed) {
  const SumImpl impl("t.sum");
  const CaseResult r = judge("version >= 0.1", impl, {"test", true, "builtin", "", ""});
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(r.reason.rfind("impl does not record its version", 0), 0u) << r.reason;
}

TEST(EngineApplicability, AVersionThatIsNotANumberIsAContractProblem) {
  const SumImpl impl("t.sum");
  const CaseResult r = judge("version >= twelve", impl);
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified);
  EXPECT_NE(r.reason.find("dotted number"), std::string::npos) << r.reason;
}

TEST(EngineApplicability, StackInASetMatchesAnyOfIts) {
  const SumImpl impl("t.sum");
  EXPECT_EQ(judge("stack in {cublas, openblas}", impl).verdict, Verdict::kConforming);
  const CaseResult none = judge("stack in {cublas, blis}", impl);
  EXPECT_EQ(none.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(none.reason.rfind("contract is for stack {cublas, blis}; t.sum records test, OpenBLAS", 0), 0u)
      << none.reason;
  auto printed = lang::parse_kc(lang::print_kc([] {
                                  Document d;
                                  d.contracts = lang::parse_kc("contract T-1 {\n  pre stack in {a, b}\n}\n", "t.kc")
                                                    .document.contracts;
                                  return d;
                                }()),
                                "p.kc");
  ASSERT_FALSE(printed.has_errors());
  ASSERT_EQ(printed.document.contracts.at(0).pre.size(), 1u);
  EXPECT_EQ(printed.document.contracts[0].pre[0].kind, Predicate::Kind::kStack);
  EXPECT_EQ(printed.document.contracts[0].pre[0].values, (std::vector<std::string>{"a", "b"}));
}

TEST(EngineApplicability, StackMatchesBackendLibraryVendorAndDeviceNames) {
  const SumImpl impl("t.sum");
  EXPECT_EQ(judge("stack = test", impl).verdict, Verdict::kConforming);       // kc's backend name
  EXPECT_EQ(judge("stack = openblas", impl).verdict, Verdict::kConforming);   // the library its backend records
  EXPECT_EQ(judge("stack = Cooperlake", impl).verdict, Verdict::kConforming); // the core it runs on
  const CaseResult other = judge("stack = cublas", impl);
  EXPECT_EQ(other.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(other.reason.rfind("contract is for stack cublas; t.sum records test, OpenBLAS", 0), 0u) << other.reason;
  SumImpl device("t.dev");
  device.decl_.extra["vendor"] = "NVIDIA";
  device.decl_.extra["device"] = "H100";
  EXPECT_EQ(judge("stack = nvidia", device, {"test", true, "", "", ""}).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("stack = H100", device, {"test", true, "", "", ""}).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("stack = AMD", device, {"test", true, "", "", ""}).verdict, Verdict::kNotApplicable);
  // With several libraries on the backend's line, `stack` says whose version is meant.
  const BackendInfo cuda{"test", true, "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.19.0", "", ""};
  EXPECT_EQ(judge("stack = cublas and version >= 13.1", impl, cuda).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("stack = cudnn and version >= 13.1", impl, cuda).verdict, Verdict::kNotApplicable);
}

TEST(EngineApplicability, FlagsAreReadFromDeclaredKeysAndBuildFlags) {
  SumImpl o2("t.o2"), ofast("t.ofast"), fused("t.fused"), bare("t.bare"), declared("t.declared");
  o2.decl_.extra["flags"] = "-O2";
  ofast.decl_.extra["flags"] = "-Ofast";
  fused.decl_.extra["flags"] = "-O3 -march=x86-64-v3 -ffp-contract=fast";
  declared.decl_.extra["math_mode"] = "CUBLAS_PEDANTIC_MATH";
  // fast_math: off by default, on under -Ofast (GCC: -Ofast enables -ffast-math).
  EXPECT_EQ(judge("flag(fast_math) = off", o2).verdict, Verdict::kConforming);
  const CaseResult fast = judge("flag(fast_math) = off", ofast);
  EXPECT_EQ(fast.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(fast.reason, "contract applies to flag(fast_math) = off; t.ofast records on");
  EXPECT_EQ(judge("flag(fast_math) = on", ofast).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("flag(fp_contract) = fast", fused).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("flag(fp_contract) = off", fused).verdict, Verdict::kNotApplicable);
  EXPECT_EQ(judge("flag(O) = 3", fused).verdict, Verdict::kConforming);
  EXPECT_EQ(judge("flag(O) = 3", o2).verdict, Verdict::kNotApplicable);
  EXPECT_EQ(judge("flag(math_mode) = CUBLAS_PEDANTIC_MATH", declared).verdict, Verdict::kConforming);
  // Nothing recorded about the flag: not applicable, with the reason.
  const CaseResult none = judge("flag(fast_math) = off", bare);
  EXPECT_EQ(none.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(none.reason.rfind("impl does not record flag fast_math", 0), 0u) << none.reason;
  const CaseResult unnamed = judge("flag(fp_contract) = off", o2);
  EXPECT_EQ(unnamed.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(unnamed.reason.rfind("impl does not record flag fp_contract", 0), 0u) << unnamed.reason;
}

TEST(EngineApplicability, TheDeclaredShapeClassSelects) {
  SumImpl any("t.any"), tiled("t.tiled");
  tiled.decl_.shape_class = "multiple_of(16)";
  EXPECT_EQ(judge("declared shape_class = any", any).verdict, Verdict::kConforming);
  const CaseResult r = judge("declared shape_class = any", tiled);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
  EXPECT_NE(r.reason.find("t.tiled declares multiple_of(16)"), std::string::npos) << r.reason;
}

// The real OpenBLAS: its version line gives the version a contract is held to.
TEST(EngineApplicability, OpenBlasVersionSelects) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.add(backends::make_openblas_backend()).ok());
  const std::vector<BackendInfo> infos = registry.infos();
  if (infos.empty() || !infos[0].available) GTEST_SKIP() << "openblas unavailable";
  const auto impl = registry.find_impl("openblas.sdot");
  ASSERT_NE(impl, nullptr);
  std::string why;
  const auto version = recorded_version(impl->declaration(), infos[0], "", &why);
  ASSERT_TRUE(version) << why;
  const Contract dot99 = parse_one(R"(
contract T-DOT-99 {
  scope      dot
  pre        precision(x, y) in {FP32} and n in {1000} and stack = openblas and version >= 99
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(n + 1, P) * |x|
  reference  higher_precision FP64
  measure    sample 2 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  signature TOLERANCE_EXCEEDED
}
)");
  const CaseResult r = run_case(dot99, "t.kc", *impl, infos[0], CheckRequest{});
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);
  EXPECT_EQ(r.reason, "contract applies to version >= 99; openblas.sdot records version " + *version);
  Contract dot_now = dot99;
  dot_now.pre.back().values = {*version};  // version >= what this OpenBLAS records
  EXPECT_EQ(run_case(dot_now, "t.kc", *impl, infos[0], CheckRequest{}).verdict, Verdict::kConforming);
  Contract other_stack = dot_now;
  other_stack.pre[other_stack.pre.size() - 2].values = {"blis"};
  EXPECT_EQ(run_case(other_stack, "t.kc", *impl, infos[0], CheckRequest{}).verdict, Verdict::kNotApplicable);
}

}  // namespace
}  // namespace kc::engine

namespace kc::engine {
namespace {

// `declared_policy KEY in {...}` names the declared policies a contract holds
// impls to: an impl that declares another is not applicable, with both named,
// never judged as if the set were not there.
TEST(EngineApplicability, ADeclaredPolicyOutsideThePolicySetIsNotApplicable) {
  const Contract c = parse_one(R"(
contract T-POLICY {
  scope      sum
  pre        precision(x) in {FP32} and n in {100}
  post       declared_policy nan in {IEEE_PROPAGATE, RAISE}
  tolerance  none
  reference  higher_precision FP64
  measure    inject nan(x) at density 0.1; observe propagation
}
)");
  SumImpl masking("t.masking_sum");
  masking.decl_.nan = NanPolicy::kMask;
  std::string why;
  ASSERT_TRUE(make_plan(c, masking.declaration(), CheckRequest{}, &why).ok());
  EXPECT_EQ(why, "t.masking_sum declares nan = MASK; this contract holds impls to nan in {IEEE_PROPAGATE, RAISE}");
  SumImpl propagating("t.sum");
  propagating.decl_.nan = NanPolicy::kIeeePropagate;
  why.clear();
  ASSERT_TRUE(make_plan(c, propagating.declaration(), CheckRequest{}, &why).ok());
  EXPECT_EQ(why, "");
}

}  // namespace
}  // namespace kc::engine
