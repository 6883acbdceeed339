// Capability declarations (kc/capability.h) and their judges
// (engine/capability.cpp): the shape class and layouts read against a call,
// path patterns, the path a kernel reports travelling through the worker, and
// `declared_policy unsupported` / `declared_policy path` deciding the
// behaviours a kernel can show outside and inside its capability.
#include "kc/capability.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kc/cpu_features.h"
#include "kc/engine.h"
#include "kc/isolate.h"
#include "kc/lang.h"

namespace kc::engine {
namespace {

/// A matmul call (trans N) of the given sizes; lda_pad pads A's rows.
Call matmul_call(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda_pad = 0) {
  Call c;
  c.op = "matmul";
  c.config.params = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
  c.names = {"A", "B", "C"};
  c.roles = {Role::kIn, Role::kIn, Role::kOut};
  c.tensors = {Tensor(DType::kF32, {m, k}, {k + lda_pad, 1}), Tensor(DType::kF32, {k, n}), Tensor(DType::kF32, {m, n})};
  return c;
}

TEST(CapabilityDeclaration, ParsesShapeClassesAndRejectsMalformedOnes) {
  auto any = parse_shape_class("any");
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->any());
  auto two = parse_shape_class("multiple_of(16, M, K) and at_most(64)");
  ASSERT_TRUE(two.ok()) << two.status().message();
  ASSERT_EQ(two->conditions.size(), 2u);
  EXPECT_EQ(two->conditions[0].kind, ShapeCondition::Kind::kMultipleOf);
  EXPECT_EQ(two->conditions[0].n, 16);
  EXPECT_EQ(two->conditions[0].sizes, (std::vector<std::string>{"M", "K"}));
  EXPECT_EQ(two->conditions[1].kind, ShapeCondition::Kind::kAtMost);
  EXPECT_TRUE(two->conditions[1].sizes.empty());
  for (const char* bad : {"multiple(16)", "multiple_of(x)", "multiple_of(0)", "multiple_of(16", "at_most(4, )"}) {
    auto r = parse_shape_class(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("shape_class"), std::string::npos) << r.status().message();
  }
}

TEST(CapabilityDeclaration, TheGapNamesTheSizeOnePastTheBoundary) {
  Declaration d;
  d.shape_class = "multiple_of(16, K)";
  auto inside = capability_gap(d, matmul_call(17, 17, 16));  // only K is in the class
  ASSERT_TRUE(inside.ok());
  EXPECT_TRUE(inside->inside()) << inside->why;
  auto outside = capability_gap(d, matmul_call(16, 16, 17));
  ASSERT_TRUE(outside.ok());
  EXPECT_EQ(outside->key, "shape_class");
  EXPECT_NE(outside->why.find("K = 17 is not a multiple of 16"), std::string::npos) << outside->why;
  // Without size names the condition holds for every dimension of every tensor.
  d.shape_class = "at_most(32)";
  EXPECT_TRUE(capability_gap(d, matmul_call(32, 8, 32))->inside());
  auto big = capability_gap(d, matmul_call(33, 8, 32));
  EXPECT_NE(big->why.find("A dimension 0 = 33 is not at most 32"), std::string::npos) << big->why;
  // A size the call does not set is a declaration kc cannot judge, not "inside".
  d.shape_class = "multiple_of(8, head_dim)";
  EXPECT_FALSE(capability_gap(d, matmul_call(16, 16, 16)).ok());
}

TEST(CapabilityDeclaration, ContiguousLayoutsExcludeAPaddedLeadingDimension) {
  Declaration d;
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16, 3))->inside());  // nothing declared: every layout
  d.extra["layouts"] = "STRIDED";
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16, 3))->inside());
  d.extra["layouts"] = "CONTIGUOUS";
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16, 0))->inside());
  auto padded = capability_gap(d, matmul_call(16, 16, 16, 3));
  EXPECT_EQ(padded->key, "layouts");
  EXPECT_NE(padded->why.find("A has strides (19, 1)"), std::string::npos) << padded->why;
  d.extra["layouts"] = "TILED";
  EXPECT_FALSE(capability_gap(d, matmul_call(16, 16, 16)).ok());
}

TEST(CapabilityDeclaration, DeviceCapabilityNamesFeaturesOfTheOneTable) {
  Declaration d;
  EXPECT_TRUE(declared_device_capability(d)->empty());  // undeclared: no need
  d.extra["device_capability"] = "any";
  EXPECT_TRUE(declared_device_capability(d)->empty());
  d.extra["device_capability"] = "SSE2 and fma, avx512f";  // any case, `and` or commas
  const auto three = declared_device_capability(d);
  ASSERT_TRUE(three.ok()) << three.status().message();
  EXPECT_EQ(three->cpu, (std::vector<CpuFeature>{CpuFeature::kSse2, CpuFeature::kFma, CpuFeature::kAvx512F}));
  EXPECT_FALSE(three->gpu);
  d.extra["device_capability"] = "avx1024";
  const auto unknown = declared_device_capability(d);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'avx1024' is not a CPU feature kc knows"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("nor a CUDA architecture"), std::string::npos);
  EXPECT_FALSE(capability_gap(d, matmul_call(16, 16, 16)).ok());  // cannot judge, not "inside"
  d.extra["device_capability"] = "any and avx2";
  EXPECT_FALSE(declared_device_capability(d).ok());
  for (const CpuFeatureInfo& f : cpu_feature_table()) EXPECT_EQ(find_cpu_feature(f.name), f.feature) << f.name;
}

TEST(CapabilityDeclaration, ACudaArchitectureIsReadAsNvccNamesIt) {
  Declaration d;
  d.extra["device_capability"] = "SM_80";
  auto sm80 = declared_device_capability(d);
  ASSERT_TRUE(sm80.ok()) << sm80.status().message();
  ASSERT_TRUE(sm80->gpu);
  EXPECT_TRUE(sm80->cpu.empty());
  EXPECT_EQ(sm80->gpu->name(), "sm_80");
  EXPECT_FALSE(sm80->gpu->runs_on(75));
  EXPECT_TRUE(sm80->gpu->runs_on(80));
  EXPECT_TRUE(sm80->gpu->runs_on(90));      // PTX for later devices
  d.extra["device_capability"] = "sm_90a";  // architecture-specific: 9.0 only
  auto sm90a = declared_device_capability(d);
  ASSERT_TRUE(sm90a.ok());
  EXPECT_EQ(sm90a->gpu->name(), "sm_90a");
  EXPECT_TRUE(sm90a->gpu->runs_on(90));
  EXPECT_FALSE(sm90a->gpu->runs_on(100));
  d.extra["device_capability"] = "sm_100 and avx2";  // a host part may need CPU features too
  auto both = declared_device_capability(d);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->gpu->cc, 100);
  EXPECT_EQ(both->cpu, std::vector<CpuFeature>{CpuFeature::kAvx2});
  for (const char* bad : {"sm_80 and sm_90", "sm_", "sm_8x", "sm_08", "sm_1000"}) {
    d.extra["device_capability"] = bad;
    EXPECT_FALSE(declared_device_capability(d).ok()) << bad;
  }
}

TEST(CapabilityDeclaration, AGpuBelowTheDeclaredArchitectureIsOutside) {
  Declaration d;
  d.name = "plugin.gemm";
  d.backend = "plugin";
  d.extra["device_capability"] = "sm_80";
  // No device reported for the impl: kc cannot place the call, so it does not judge it.
  const auto unknown = capability_gap(d, matmul_call(16, 16, 16));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("reports no CUDA device"), std::string::npos) << unknown.status().message();
  d.runtime.device_cc = 75;
  const auto below = capability_gap(d, matmul_call(16, 16, 16));
  ASSERT_TRUE(below.ok()) << below.status().message();
  EXPECT_EQ(below->key, "device_capability");
  EXPECT_NE(below->why.find("this GPU is sm_75, where the kernels need sm_80 or newer"), std::string::npos)
      << below->why;
  d.runtime.device_cc = 90;
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16))->inside());
  d.extra["device_capability"] = "sm_80a";
  const auto exact = capability_gap(d, matmul_call(16, 16, 16));
  ASSERT_TRUE(exact.ok());
  EXPECT_NE(exact->why.find("need sm_80a exactly"), std::string::npos) << exact->why;
}

TEST(CapabilityDeclaration, ACpuWithoutADeclaredFeatureIsOutside) {
  Declaration d;
  d.extra["device_capability"] = "sse2";  // every x86-64 CPU
#if defined(__x86_64__)
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16))->inside());
#endif
  const CpuFeatureInfo* absent = nullptr;
  for (const CpuFeatureInfo& f : cpu_feature_table())
    if (!cpu_has(f.feature)) absent = &f;
  if (!absent) GTEST_SKIP() << "this CPU has every feature kc names";
  d.extra["device_capability"] = std::string("sse2 and ") + absent->name;
  const auto gap = capability_gap(d, matmul_call(16, 16, 16));
  ASSERT_TRUE(gap.ok()) << gap.status().message();
  EXPECT_EQ(gap->key, "device_capability");
  EXPECT_NE(gap->why.find("this CPU lacks"), std::string::npos) << gap->why;
  EXPECT_EQ(missing_cpu_features({CpuFeature::kSse2, absent->feature}).find("SSE2"), std::string::npos);
}

TEST(CapabilityDeclaration, PathPatternsMatchWholeNamesWithStarsAndAlternatives) {
  EXPECT_TRUE(path_matches("*bf16*|*amx*", "brg:avx512_core_bf16"));
  EXPECT_TRUE(path_matches("*bf16*|*amx*", "brg:avx512_core_amx"));
  EXPECT_FALSE(path_matches("*bf16*|*amx*", "brg:avx512_core"));
  EXPECT_TRUE(path_matches("HASWELL", "Haswell"));  // openblas_get_corename's spelling
  EXPECT_FALSE(path_matches("HASWELL", "Haswell2"));
  EXPECT_FALSE(path_matches("", "anything"));
  EXPECT_TRUE(path_matches("gemm:*", "gemm:jit"));
}

TEST(CapabilityDeclaration, AReportedPathIsTakenOnce) {
  report_selected_path("tile16", "why");
  SelectedPath p = take_selected_path();
  EXPECT_EQ(p.path, "tile16");
  EXPECT_EQ(p.reason, "why");
  EXPECT_TRUE(take_selected_path().path.empty());
}

// --- The judges, through run_case.

enum class Behaviour {
  kRight,       ///< a correct GEMM on every shape
  kWholeTiles,  ///< the 16-tile kernel on every shape: remainders lost, no error
  kRaise,       ///< raises outside multiples of 16
};

/// A matmul impl with a declaration the test writes and a kernel of one behaviour.
class CapImpl : public Impl {
 public:
  CapImpl(Behaviour b, std::string path_inside, std::string path_outside) : b_(b) {
    decl_.name = "test.cap";
    decl_.op = "matmul";
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
    decl_.shape_class = "multiple_of(16, M, N, K)";
    inside_ = std::move(path_inside);
    outside_ = std::move(path_outside);
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    Tensor& c = call.t("C");
    const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    const bool tile = m % 16 == 0 && n % 16 == 0 && k % 16 == 0;
    if (!tile && b_ == Behaviour::kRaise) return kernel_raised("unsupported shape");
    const std::int64_t k_end = b_ == Behaviour::kWholeTiles ? k / 16 * 16 : k;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t p = 0; p < k_end; ++p)
          acc += static_cast<double>(a.data<float>()[i * a.strides()[0] + p]) * b.data<float>()[p * b.strides()[0] + j];
        c.data<float>()[i * c.strides()[0] + j] = static_cast<float>(acc);
      }
    const std::string& path = tile ? inside_ : outside_;
    if (!path.empty()) report_selected_path(path, tile ? "" : "not a multiple of 16");
    return ok_status();
  }
  Declaration decl_;

 private:
  Behaviour b_;
  std::string inside_, outside_;
};

Contract cap_contract(const std::string& post, const std::string& tolerance) {
  auto r = lang::parse_kc(R"(
contract T-CAP {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)
             and M in {16} and N in {16} and K in {16, 17}
  post       )" + post + R"(
  tolerance  )" + tolerance + R"(
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max policy_mismatches; pass if <= 0
  violation  signature CAPABILITY_VIOLATION, SILENT_FALLBACK, MISSING_RAISE, UNEXPECTED_RAISE
}
)",
                          "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

CaseResult judge(const std::string& post, const Impl& impl, isolate::Mode mode = isolate::Mode::kProcess) {
  CheckRequest request;
  request.isolation = mode;
  BackendInfo backend;
  backend.name = "test";
  backend.available = true;
  return run_case(cap_contract(post, "bound gamma(K + 2, P) * |A||B|"), "t.kc", impl, backend, request);
}

bool has_signature(const CaseResult& r, const std::string& name, const std::string& arg = "") {
  for (const auto& s : r.signatures)
    if (s.name == name && (arg.empty() || (!s.args.empty() && s.args[0] == arg))) return true;
  return false;
}

std::string why(const CaseResult& r) {
  std::string s = r.reason;
  for (const auto& n : r.evidence.notes) s += "\n  " + n;
  return s;
}

constexpr char kUnsupported[] = "declared_policy unsupported in {RAISE, FALLBACK}";
constexpr char kPath[] = "declared_policy path in {DECLARED}";

TEST(CapabilityJudge, AWrongResultOutsideTheClassIsACapabilityViolation) {
  CapImpl impl(Behaviour::kWholeTiles, "tile16", "tile16");
  impl.decl_.extra["unsupported"] = "RAISE";
  const CaseResult r = judge(kUnsupported, impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << why(r);
  EXPECT_TRUE(has_signature(r, "CAPABILITY_VIOLATION", "shape_class")) << why(r);
}

TEST(CapabilityJudge, RaisingOutsideTheClassIsWhatRaiseDeclares) {
  CapImpl impl(Behaviour::kRaise, "tile16", "");
  impl.decl_.extra["unsupported"] = "raise";  // any case, as an impl block may write it
  EXPECT_EQ(judge(kUnsupported, impl).verdict, Verdict::kConforming);
  // The same raise where a fallback is declared breaks the declaration.
  impl.decl_.extra["unsupported"] = "FALLBACK";
  const CaseResult r = judge(kUnsupported, impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << why(r);
  EXPECT_TRUE(has_signature(r, "UNEXPECTED_RAISE")) << why(r);
}

TEST(CapabilityJudge, ARightResultWhereRaiseIsDeclaredIsAnUndeclaredFallback) {
  CapImpl impl(Behaviour::kRight, "tile16", "scalar");
  impl.decl_.extra["unsupported"] = "RAISE";
  const CaseResult r = judge(kUnsupported, impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << why(r);
  EXPECT_TRUE(has_signature(r, "MISSING_RAISE")) << why(r);
  // The path the worker carried back names it.
  EXPECT_TRUE(has_signature(r, "SILENT_FALLBACK", "scalar")) << why(r);
}

TEST(CapabilityJudge, TheDeclaredFallbackConformsAndAnotherPathDoesNot) {
  CapImpl impl(Behaviour::kRight, "tile16", "scalar");
  impl.decl_.extra["unsupported"] = "FALLBACK";
  impl.decl_.extra["fallback"] = "scalar";
  impl.decl_.extra["path"] = "tile16";
  EXPECT_EQ(judge(kUnsupported, impl).verdict, Verdict::kConforming);
  EXPECT_EQ(judge(kPath, impl).verdict, Verdict::kConforming);
  impl.decl_.extra["fallback"] = "ref";
  for (const char* post : {kUnsupported, kPath}) {
    const CaseResult r = judge(post, impl);
    EXPECT_EQ(r.verdict, Verdict::kViolation) << post << ": " << why(r);
    EXPECT_TRUE(has_signature(r, "SILENT_FALLBACK", "scalar")) << post << ": " << why(r);
  }
}

TEST(CapabilityJudge, APathOtherThanTheDeclaredOneInsideTheClassIsASilentFallback) {
  // In a worker process and in kc's own: the path reaches the judge either way.
  for (isolate::Mode mode : {isolate::Mode::kProcess, isolate::Mode::kNone}) {
    CapImpl impl(Behaviour::kRight, "scalar", "scalar");
    impl.decl_.extra["unsupported"] = "FALLBACK";
    impl.decl_.extra["fallback"] = "scalar";
    impl.decl_.extra["path"] = "tile16";
    const CaseResult r = judge(kPath, impl, mode);
    EXPECT_EQ(r.verdict, Verdict::kViolation) << why(r);
    EXPECT_TRUE(has_signature(r, "SILENT_FALLBACK", "scalar")) << why(r);
    EXPECT_NE(why(r).find("that is its declared fallback scalar"), std::string::npos) << why(r);
    // Listing FALLBACK in the contract's set accepts the declared fallback.
    EXPECT_EQ(judge("declared_policy path in {DECLARED, FALLBACK}", impl, mode).verdict, Verdict::kConforming);
  }
}

TEST(CapabilityJudge, AnImplThatReportsNoPathCannotBeJudgedOnIt) {
  CapImpl impl(Behaviour::kRight, "", "");
  impl.decl_.extra["unsupported"] = "FALLBACK";
  impl.decl_.extra["path"] = "tile16";
  const CaseResult r = judge(kPath, impl);
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << why(r);
  EXPECT_NE(r.reason.find("reports no implementation path"), std::string::npos) << r.reason;
}

/// A GEMM contract with `time latency across` STEP; sizes 16 (too small to time).
Contract latency_contract(const std::string& step) {
  auto r = lang::parse_kc(R"(
contract T-LAT {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)
             and M in {16} and N in {16} and K in {16}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1; time latency across )" +
                              step + R"(
  violation  signature SILENT_FALLBACK, ERROR_BOUND_EXCEEDED
}
)",
                          "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

TEST(CapabilityLatency, TheStepNeedsASizeOfTheOpAndCallsLargeEnoughToTime) {
  CapImpl impl(Behaviour::kRight, "", "");
  impl.decl_.extra["path"] = "tile16";
  CheckRequest request;
  BackendInfo backend;
  backend.name = "test";
  backend.available = true;
  const CaseResult unknown = run_case(latency_contract("Q + 1"), "t.kc", impl, backend, request);
  EXPECT_EQ(unknown.verdict, Verdict::kUnderSpecified) << why(unknown);
  EXPECT_NE(unknown.reason.find("time latency across Q + 1: 'Q' is not a parameter of op matmul"), std::string::npos)
      << unknown.reason;
  // 16 x 16 x 16 is a few thousand multiply-adds: under the host's floor.
  const CaseResult small = run_case(latency_contract("K + 1"), "t.kc", impl, backend, request);
  EXPECT_EQ(small.verdict, Verdict::kUnderSpecified) << why(small);
  EXPECT_NE(small.reason.find("time latency across K + 1: "), std::string::npos) << small.reason;
  EXPECT_NE(small.reason.find("too small to time"), std::string::npos) << small.reason;
}

TEST(CapabilityLanguage, PolicySetsTakeTheirOwnValues) {
  auto parse = [](const std::string& post) {
    return lang::parse_kc("contract T {\n  scope matmul\n  pre precision(A, B, C) in {FP32}\n  post " + post +
                              "\n  tolerance none\n  reference higher_precision FP64\n  measure sample 1 random "
                              "inputs per config; compute max policy_mismatches; pass if <= 0\n  violation signature "
                              "SILENT_FALLBACK\n}\n",
                          "t.kc");
  };
  for (const char* ok : {"declared_policy path in {DECLARED, FALLBACK}", "declared_policy unsupported in {RAISE}"}) {
    auto r = parse(ok);
    for (const auto& d : r.diagnostics) ADD_FAILURE() << ok << ": " << d.render();
    ASSERT_EQ(r.document.contracts.size(), 1u);
    EXPECT_TRUE(r.document.contracts[0].executable()) << ok << ": " << r.document.contracts[0].post_info.gap;
  }
  // A value the policy does not take leaves the clause descriptive (never a
  // silent clause), with what it takes and the nearest word.
  const std::pair<const char*, const char*> bad[] = {
      {"declared_policy path in {RAISE}", "bad value 'RAISE' for policy path"},
      {"declared_policy unsupported in {RAIS}", "did you mean 'RAISE'?"},
      {"declared_policy unsuported in {RAISE}", "unsupported"}};
  for (const auto& [text, expect] : bad) {
    auto r = parse(text);
    ASSERT_EQ(r.document.contracts.size(), 1u);
    const Contract& c = r.document.contracts[0];
    EXPECT_FALSE(c.executable()) << text;
    std::string said = c.post_info.gap;
    for (const auto& d : r.diagnostics) said += "\n" + d.render();
    EXPECT_NE(said.find(expect), std::string::npos) << text << ":\n" << said;
  }
}

// --- Alignment: placement of a call's tensors, the gap, the judge.

Call placed_call(std::map<std::string, std::string> placement) {
  Call c = matmul_call(16, 16, 16);
  for (auto& [k, v] : placement) c.config.params[k] = v;
  return c;
}

TEST(CapabilityAlignment, APlacementGuaranteesItsLowestSetBit) {
  EXPECT_EQ(placed_alignment(std::nullopt), kDefaultAlignment);
  EXPECT_EQ(placed_alignment(0), kPlacementBase);
  EXPECT_EQ(placed_alignment(4), 4u);
  EXPECT_EQ(placed_alignment(8), 8u);
  EXPECT_EQ(placed_alignment(48), 16u);
  EXPECT_TRUE(is_placement_key("misalign_A", {"A", "B", "C"}));
  EXPECT_FALSE(is_placement_key("misalign_X", {"A", "B", "C"}));
  EXPECT_FALSE(is_placement_key("A", {"A", "B", "C"}));
  for (const char* bad : {"64", "-4", "four", ""}) {
    auto r = requested_placement(placed_call({{"misalign_A", bad}}), 0);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("misalign_A"), std::string::npos) << r.status().message();
  }
}

TEST(CapabilityAlignment, TheGapNamesTheMisplacedTensorAndTheDeclaredAlignment) {
  Declaration d;
  EXPECT_TRUE(capability_gap(d, placed_call({{"misalign_A", "4"}}))->inside());  // nothing declared
  d.extra["alignment"] = "16";
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16))->inside());  // kc's default is 16-byte aligned
  EXPECT_TRUE(capability_gap(d, placed_call({{"misalign_A", "32"}, {"misalign_C", "0"}}))->inside());
  auto off = capability_gap(d, placed_call({{"misalign_A", "0"}, {"misalign_C", "4"}}));
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->key, "alignment");
  EXPECT_NE(off->why.find("C starts 4 bytes past a 64-byte boundary (4-byte aligned), where alignment = 16 needs 16"),
            std::string::npos)
      << off->why;
  // 64 is more than kc's default placement gives: an unplaced tensor is outside.
  d.extra["alignment"] = "64";
  auto unplaced = capability_gap(d, matmul_call(16, 16, 16));
  EXPECT_EQ(unplaced->key, "alignment") << unplaced->why;
  EXPECT_NE(unplaced->why.find("by default, 16-byte aligned"), std::string::npos) << unplaced->why;
  // any: every element-aligned placement, not a half element.
  d.extra["alignment"] = "ANY";
  EXPECT_TRUE(capability_gap(d, placed_call({{"misalign_A", "4"}, {"misalign_B", "8"}}))->inside());
  auto half = capability_gap(d, placed_call({{"misalign_A", "2"}}));
  EXPECT_EQ(half->key, "alignment");
  EXPECT_NE(half->why.find("not a multiple of its 4-byte element"), std::string::npos) << half->why;
  // What kc cannot probe or read is not "inside".
  for (const char* bad : {"128", "12", "sixteen"}) {
    d.extra["alignment"] = bad;
    EXPECT_FALSE(capability_gap(d, matmul_call(16, 16, 16)).ok()) << bad;
  }
  d.extra["alignment"] = "16";
  EXPECT_FALSE(capability_gap(d, placed_call({{"misalign_A", "70"}})).ok());
}

/// Writes, for each of A, B and C, its address modulo 64 into C[0..2]; with
/// `overrun`, also one element past C's end.
class AddressImpl : public Impl {
 public:
  explicit AddressImpl(bool overrun) : overrun_(overrun) {
    decl_.name = "test.address";
    decl_.op = "matmul";
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    float* c = call.t("C").data<float>();
    const char* names[] = {"A", "B", "C"};
    for (int i = 0; i < 3; ++i)
      c[i] = static_cast<float>(reinterpret_cast<std::uintptr_t>(call.t(names[i]).raw()) % kPlacementBase);
    if (overrun_) c[call.t("C").storage_elems()] = 1.0f;
    return ok_status();
  }

 private:
  Declaration decl_;
  bool overrun_;
};

TEST(CapabilityAlignment, TheKernelSeesEachTensorAtItsPlacementInAWorkerAndInProcess) {
  for (isolate::Mode mode : {isolate::Mode::kProcess, isolate::Mode::kNone}) {
    AddressImpl impl(false);
    isolate::Worker worker(impl, mode, isolate::Limits{});
    Call call = placed_call({{"misalign_A", "4"}, {"misalign_B", "0"}, {"misalign_C", "40"}});
    call.t("A").set(5, 2.5);
    const isolate::Outcome o = worker.run(call);
    ASSERT_TRUE(o.status.ok()) << o.status.to_string();
    ASSERT_FALSE(o.failure) << o.failure->to_string();
    EXPECT_EQ(call.t("C").at(0), 4) << isolate::mode_name(mode);
    EXPECT_EQ(call.t("C").at(1), 0) << isolate::mode_name(mode);
    EXPECT_EQ(call.t("C").at(2), 40) << isolate::mode_name(mode);
    // The call's own tensors are back, with the inputs as they were.
    EXPECT_EQ(call.t("A").at(5), 2.5);
    EXPECT_FALSE(call.t("A").is_view());
  }
}

TEST(CapabilityAlignment, APlacedTensorKeepsItsGuards) {
  AddressImpl impl(true);
  isolate::Worker worker(impl, isolate::Mode::kProcess, isolate::Limits{});
  for (const char* at : {"0", "4", "36"}) {
    Call call = placed_call({{"misalign_C", at}});
    const isolate::Outcome o = worker.run(call);
    ASSERT_TRUE(o.failure.has_value()) << "misalign_C = " << at << ": a write past C went unseen";
    EXPECT_EQ(o.failure->name, "GUARD_OVERWRITTEN") << o.failure->to_string();
    ASSERT_FALSE(o.failure->args.empty());
    EXPECT_EQ(o.failure->args[0], "C") << o.failure->to_string();
  }
}

enum class Aligned { kSilent, kRaise, kAny, kAnyButWrong };

/// A GEMM declaring an alignment; off 16 bytes it reads A from the boundary
/// below (kSilent), raises (kRaise), or computes (kAny; kAnyButWrong drops
/// the last K term there).
class AlignImpl : public Impl {
 public:
  AlignImpl(Aligned b, const char* alignment, const char* unsupported) : b_(b) {
    decl_.name = "test.align";
    decl_.op = "matmul";
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
    decl_.extra["alignment"] = alignment;
    decl_.extra["unsupported"] = unsupported;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    Tensor& c = call.t("C");
    const auto addr = reinterpret_cast<std::uintptr_t>(a.raw());
    const bool off = addr % 16 != 0;
    if (off && b_ == Aligned::kRaise) return kernel_raised("A is not 16-byte aligned");
    const float* pa = off && b_ == Aligned::kSilent ? reinterpret_cast<const float*>(addr / 16 * 16) : a.data<float>();
    const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    const std::int64_t k_end = off && b_ == Aligned::kAnyButWrong ? k - 1 : k;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t p = 0; p < k_end; ++p) acc += static_cast<double>(pa[i * k + p]) * b.data<float>()[p * n + j];
        c.data<float>()[i * n + j] = static_cast<float>(acc);
      }
    return ok_status();
  }

 private:
  Declaration decl_;
  Aligned b_;
};

CaseResult judge_alignment(const Impl& impl, isolate::Mode mode = isolate::Mode::kProcess) {
  auto r = lang::parse_kc(R"(
contract T-ALIGN {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B) normal(0, 1)
             and M in {16} and N in {16} and K in {16}
             and misalign_A in {0, 4, 8, 32} and misalign_B in {0} and misalign_C in {0}
  post       declared_policy unsupported in {RAISE, FALLBACK, UNDEFINED}
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max policy_mismatches; pass if <= 0
  violation  signature CAPABILITY_VIOLATION, MISSING_RAISE, UNEXPECTED_RAISE, TOLERANCE_EXCEEDED
}
)",
                          "t.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  CheckRequest request;
  request.isolation = mode;
  BackendInfo backend;
  backend.name = "test";
  backend.available = true;
  return run_case(r.document.contracts.at(0), "t.kc", impl, backend, request);
}

TEST(CapabilityAlignment, AMisalignedOperandReadFromTheWrongAddressIsACapabilityViolation) {
  for (isolate::Mode mode : {isolate::Mode::kProcess, isolate::Mode::kNone}) {
    const CaseResult r = judge_alignment(AlignImpl(Aligned::kSilent, "16", "RAISE"), mode);
    EXPECT_EQ(r.verdict, Verdict::kViolation) << why(r);
    EXPECT_TRUE(has_signature(r, "CAPABILITY_VIOLATION", "alignment")) << why(r);
    EXPECT_NE(why(r).find("A starts 4 bytes past a 64-byte boundary"), std::string::npos) << why(r);
    EXPECT_EQ(judge_alignment(AlignImpl(Aligned::kRaise, "16", "RAISE"), mode).verdict, Verdict::kConforming);
  }
}

TEST(CapabilityAlignment, AnyAlignmentHoldsEveryPlacementToTheBound) {
  EXPECT_EQ(judge_alignment(AlignImpl(Aligned::kAny, "any", "RAISE")).verdict, Verdict::kConforming);
  // Right on aligned operands, wrong on the others: inside `any`, so beyond the bound.
  const CaseResult wrong = judge_alignment(AlignImpl(Aligned::kAnyButWrong, "any", "RAISE"));
  EXPECT_EQ(wrong.verdict, Verdict::kViolation) << why(wrong);
  EXPECT_TRUE(has_signature(wrong, "TOLERANCE_EXCEEDED")) << why(wrong);
  // Raising where it claims any alignment breaks the claim.
  const CaseResult raised = judge_alignment(AlignImpl(Aligned::kRaise, "any", "RAISE"));
  EXPECT_EQ(raised.verdict, Verdict::kViolation) << why(raised);
  EXPECT_TRUE(has_signature(raised, "UNEXPECTED_RAISE")) << why(raised);
  EXPECT_NE(why(raised).find("inside its declared capability (shape_class any, alignment any)"), std::string::npos)
      << why(raised);
  // UNDEFINED outside: the misaligned calls are not judged.
  EXPECT_EQ(judge_alignment(AlignImpl(Aligned::kSilent, "16", "UNDEFINED")).verdict, Verdict::kConforming);
}

// --- Workspace: the tensor a call carries, the declared need, the gap.

TEST(CapabilityWorkspace, ACallCarriesTheWorkspaceItsConfigAsksFor) {
  Call none = matmul_call(16, 16, 16);
  ASSERT_TRUE(add_workspace(none).ok());
  EXPECT_EQ(call_workspace(none), nullptr);
  Call c = placed_call({{"workspace_bytes", "1020"}});
  ASSERT_TRUE(add_workspace(c).ok());
  ASSERT_NE(call_workspace(c), nullptr);
  EXPECT_EQ(call_workspace(c)->nbytes(), 1020u);
  EXPECT_EQ(c.roles.back(), Role::kInOut);
  ASSERT_TRUE(add_workspace(c).ok());  // once only
  EXPECT_EQ(c.tensors.size(), 4u);
  for (const char* bad : {"-4", "lots", ""}) {
    Call b = placed_call({{"workspace_bytes", bad}});
    EXPECT_FALSE(add_workspace(b).ok()) << bad;
  }
}

TEST(CapabilityWorkspace, TheGapComparesTheGivenBytesWithTheDeclaredNeed) {
  Declaration d;
  d.extra["workspace"] = "4 * M * N";
  auto need = declared_workspace(d, matmul_call(16, 8, 3));
  ASSERT_TRUE(need.ok()) << need.status().message();
  EXPECT_EQ(**need, 4 * 16 * 8);
  Call enough = placed_call({{"workspace_bytes", "1024"}});
  ASSERT_TRUE(add_workspace(enough).ok());
  EXPECT_TRUE(capability_gap(d, enough)->inside());
  Call short_one = placed_call({{"workspace_bytes", "1020"}});
  ASSERT_TRUE(add_workspace(short_one).ok());
  auto gap = capability_gap(d, short_one);
  ASSERT_TRUE(gap.ok());
  EXPECT_EQ(gap->key, "workspace");
  EXPECT_NE(gap->why.find("the call gives 1020 bytes of workspace, where workspace = 4 * M * N needs 1024"),
            std::string::npos)
      << gap->why;
  // A call without a workspace: the impl's own business, not judged.
  EXPECT_TRUE(capability_gap(d, matmul_call(16, 16, 16))->inside());
  d.extra["workspace"] = "2048";
  EXPECT_EQ(**declared_workspace(d, enough), 2048);
  for (const char* bad : {"4 * head_dim", "4 *", "4x * M"}) {
    d.extra["workspace"] = bad;
    EXPECT_FALSE(declared_workspace(d, enough).ok()) << bad;
    EXPECT_FALSE(capability_gap(d, enough).ok()) << bad;
  }
}

}  // namespace
}  // namespace kc::engine
