// The hwy backend: Highway's contrib/math built once per SIMD target; each
// build runs the target its label names (HWY_STATIC_TARGET, read from the
// library), declares the header's Max Error over its valid range, and keeps
// it on the finite edge inputs; the contracts that need special values do
// not apply (Highway documents a valid range, not special values).
#include <gtest/gtest.h>

#include <string>

#include "../../../backends/variants/variant_backend.h"
#include "backend_test_util.h"

namespace kc::backend_test {
namespace {

class HwyBackend : public BackendTest {
 protected:
  HwyBackend() : BackendTest("hwy") {}
  /// The targets this CPU runs.
  static std::vector<std::string> loaded_targets() {
    std::vector<std::string> out;
    for (const char* t : {"scalar", "sse4", "avx2", "avx3"}) {
      auto impl = registry().find_impl(std::string("hwy.") + t + ".exp");
      if (impl && impl->can_implement(make_call("exp", {{"n", "8"}})).ok()) out.push_back(t);
    }
    return out;
  }
};

TEST_F(HwyBackend, EachBuildRunsTheTargetItIsNamedFor) {
  const BackendInfo i = backend_info("hwy");
  EXPECT_EQ(i.version.rfind("Highway 1.", 0), 0u) << i.version;
  const struct {
    const char* label;
    const char* simd;
  } rows[] = {{"scalar", "SCALAR"}, {"sse4", "SSE4"}, {"avx2", "AVX2"}, {"avx3", "AVX3"}};
  const std::vector<std::string> loaded = loaded_targets();
  EXPECT_FALSE(loaded.empty()) << i.reason;
  for (const auto& r : rows) {
    if (std::find(loaded.begin(), loaded.end(), r.label) == loaded.end()) continue;
    EXPECT_NE(i.reason.find(std::string(r.label) + ": loaded (SIMD: " + r.simd + ")"), std::string::npos) << i.reason;
  }
  const struct {
    const char* op;
    const char* bound;
  } fns[] = {{"exp", "1"}, {"log", "4"}, {"tanh", "4"}};
  for (const char* t : {"scalar", "sse4", "avx2", "avx3"}) {
    for (const auto& f : fns) {
      auto impl = registry().find_impl(std::string("hwy.") + t + "." + f.op);
      ASSERT_NE(impl, nullptr) << t << "." << f.op;
      EXPECT_EQ(impl->declaration().extra.at("ulp_bound"), f.bound);
      EXPECT_EQ(impl->declaration().extra.at("ulp_domain"), "FINITE");
    }
  }
}

TEST_F(HwyBackend, KeepsTheDocumentedBoundOnFiniteEdgeInputs) {
  for (const std::string& t : loaded_targets()) {
    expect_conforming(smoke_check("contracts/elementwise/KC-ELEM-EDGE.kc", "KC-ELEM-EDGE-F1", "hwy." + t + ".exp")[0]);
    expect_conforming(smoke_check("contracts/elementwise/KC-ELEM-EDGE.kc", "KC-ELEM-EDGE-F7", "hwy." + t + ".log")[0]);
    expect_conforming(smoke_check("contracts/elementwise/KC-ELEM-EDGE.kc", "KC-ELEM-EDGE-F7", "hwy." + t + ".tanh")[0]);
  }
}

// NaN, infinities and log(x <= 0) are outside Highway's documented valid
// ranges: the special-value contracts do not apply to it, and say why.
TEST_F(HwyBackend, SpecialValueContractsDoNotApply) {
  const auto cases = smoke_check("contracts/elementwise/KC-ELEM-EDGE.kc", "KC-ELEM-EDGE-1", "hwy.scalar.exp");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].verdict, engine::Verdict::kNotApplicable) << describe(cases[0]);
  EXPECT_NE(cases[0].reason.find("ulp_domain"), std::string::npos) << cases[0].reason;
}

// A target the CPU lacks is listed, never loaded, and graded `skipped`.
TEST_F(HwyBackend, TargetTheCpuLacksIsSkippedNotLoaded) {
  auto has = backends::cpu_has("avx512bw");
  ASSERT_TRUE(has.ok());
  if (*has) GTEST_SKIP() << "this CPU has AVX-512 F/BW/DQ/VL: every target loads";
  const auto cases = smoke_check("contracts/elementwise/KC-ELEM-EDGE.kc", "KC-ELEM-EDGE-F1", "hwy.avx3.exp");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].verdict, engine::Verdict::kSkipped) << describe(cases[0]);
}

}  // namespace
}  // namespace kc::backend_test
