// Capability declarations (kc/capability.h) and their judges
// (engine/capability.cpp): the shape class and layouts read against a call,
// path patterns, the path a kernel reports travelling through the worker, and
// `declared_policy unsupported` / `declared_policy path` deciding the
// behaviours a kernel can show outside and inside its capability.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kc/capability.h"
#include "kc/engine.h"
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
  c.tensors = {Tensor(DType::kF32, {m, k}, {k + lda_pad, 1}), Tensor(DType::kF32, {k, n}),
               Tensor(DType::kF32, {m, n})};
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
  kRight,          ///< a correct GEMM on every shape
  kWholeTiles,     ///< the 16-tile kernel on every shape: remainders lost, no error
  kRaise,          ///< raises outside multiples of 16
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

}  // namespace
}  // namespace kc::engine
