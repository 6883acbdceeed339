// The compiler-induced (C-CMP-01..03) and exceptional-value (C-EXC-01..02)
// class contracts, each run against its calibration trio: the baseline fails
// the visible test, the bad impl passes it and is caught with the contract's
// signature, the good impl conforms (test the tester).
#include <gtest/gtest.h>

#include <string>

#include "calibration/calibration_backend.h"
#include "kc/calibrate.h"
#include "tests/unit/engine/trio.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

using trio::check_one;
using trio::contract_path;
using trio::Expected;

class CmpExcCalibration : public ::testing::TestWithParam<Expected> {};

TEST_P(CmpExcCalibration, TrioShowsItsThreeStates) {
  const Expected& e = GetParam();
  trio::expect_three_states(e);
}

INSTANTIATE_TEST_SUITE_P(Classes, CmpExcCalibration,
                         ::testing::Values(Expected{"C-CMP-01", "FUSION_DIVERGENCE"},
                                           Expected{"C-CMP-02", "SCHEDULE_OUTLIER"},
                                           Expected{"C-CMP-03", "TILE_REMAINDER"},
                                           Expected{"C-EXC-01", "NAN_SWALLOWED"},
                                           Expected{"C-EXC-02", "OOB_UNDECLARED"}),
                         trio::param_name);


TEST(CmpExcSignatures, FusionDivergenceNamesTheSubstitutedActivation) {
  const CaseResult r = check_one("C-CMP-01", "calib.fused_gelu_tanh");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "FUSION_DIVERGENCE(gelu_tanh)");
  // Only the gelu_erf configs break: silu and relu epilogues are faithful.
  for (const auto& ce : r.evidence.per_config)
    EXPECT_EQ(ce.failures > 0, ce.config.find("activation=gelu_erf") != std::string::npos) << ce.config;
}

TEST(CmpExcSignatures, ScheduleOutlierNamesTheBrokenSchedule) {
  const CaseResult r = check_one("C-CMP-02", "calib.matmul_splitk_fp16ws");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "SCHEDULE_OUTLIER(split_k8)");
}

TEST(CmpExcSignatures, TileRemainderNamesTheTile) {
  const CaseResult r = check_one("C-CMP-03", "calib.matmul_tile16_noremainder");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "TILE_REMAINDER(16)");
  // Configs whose M, N and K are all multiples of 16 pass: the benchmarked shapes.
  std::int64_t passing = 0;
  for (const auto& ce : r.evidence.per_config) passing += ce.failures == 0;
  EXPECT_EQ(passing, 2 * 2 * 2 * 2);  // M in {16, 64}, N in {16, 48}, K in {16, 64}, lda_pad in {0, 3}
}

TEST(CmpExcSignatures, UncheckedGatherMatchesNoPolicy) {
  const CaseResult r = check_one("C-EXC-02", "calib.gather_unchecked");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "OOB_UNDECLARED(matches none of RAISE/CLAMP/ZERO)");
}

TEST(CmpExcSignatures, OobPolicyMismatchIsNamedAndUndefinedIsNotHeldToAPromise) {
  const LoadedContracts loaded = load_contracts({contract_path("C-EXC-02")});
  ASSERT_EQ(loaded.contracts.size(), 1u);
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  const auto checked = registry.find_impl("calib.gather_checked");
  ASSERT_TRUE(checked);
  const BackendInfo info{"calibration", true, "built-in", "", ""};
  auto run_declared = [&](OobPolicy oob) {
    Declaration d = checked->declaration();
    d.name = "test.gather_checked_declared";
    d.oob = oob;
    const calibration::FnImpl impl(d, [&](Call& call) { return checked->run(call); });
    return run_case(loaded.contracts[0], loaded.files[0], impl, info, CheckRequest{});
  };
  // The raising kernel declared CLAMP: a policy, but not the declared one.
  const CaseResult clamp = run_declared(OobPolicy::kClamp);
  EXPECT_EQ(clamp.verdict, Verdict::kViolation) << clamp.reason;
  ASSERT_FALSE(clamp.signatures.empty());
  EXPECT_EQ(clamp.signatures.front().to_string(), "OOB_POLICY(RAISE)");
  // UNDEFINED promises nothing: the contract does not apply.
  EXPECT_EQ(run_declared(OobPolicy::kUndefined).verdict, Verdict::kNotApplicable);
}

}  // namespace
}  // namespace kc::engine
