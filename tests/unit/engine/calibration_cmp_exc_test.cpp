// The compiler-induced (C-CMP-01..03) and exceptional-value (C-EXC-01..02)
// class contracts, each run against its calibration trio: the baseline fails
// the visible test, the bad impl passes it and is caught with the contract's
// signature, the good impl conforms (test the tester, STYLE.md).
#include <gtest/gtest.h>

#include <string>

#include "calibration/calibration_backend.h"
#include "kc/calibrate.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

std::string contract_path(const std::string& id) {
  return std::string(KC_SOURCE_DIR) + "/contracts/classes/" + id + ".kc";
}

struct Expected {
  const char* contract;
  const char* signature;  ///< name the bad impl's first signature must have
};

class CmpExcCalibration : public ::testing::TestWithParam<Expected> {};

TEST_P(CmpExcCalibration, TrioShowsItsThreeStates) {
  const Expected& e = GetParam();
  CheckRequest request;
  request.paths = {contract_path(e.contract)};
  const CalibrationResult result = run_calibration(request);
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_TRUE(result.missing.empty());
  ASSERT_EQ(result.rows.size(), 3u) << render_calibration(result, false);

  const CalibrationRow& baseline = result.rows[0];
  const CalibrationRow& bad = result.rows[1];
  const CalibrationRow& good = result.rows[2];
  ASSERT_EQ(baseline.role, TrioRole::kBaseline);
  ASSERT_EQ(bad.role, TrioRole::kBad);
  ASSERT_EQ(good.role, TrioRole::kGood);

  EXPECT_FALSE(baseline.visible.pass) << baseline.impl;

  EXPECT_TRUE(bad.visible.pass) << bad.impl << ": " << bad.visible.detail;
  EXPECT_EQ(bad.contract_result.verdict, Verdict::kViolation) << bad.contract_result.reason;
  ASSERT_FALSE(bad.contract_result.signatures.empty()) << bad.contract_result.reason;
  EXPECT_EQ(bad.contract_result.signatures.front().name, e.signature) << bad.contract_result.reason;
  EXPECT_TRUE(bad.contract_result.signature_expected);
  EXPECT_FALSE(bad.contract_result.repro.empty());

  EXPECT_TRUE(good.visible.pass) << good.impl << ": " << good.visible.detail;
  EXPECT_EQ(good.contract_result.verdict, Verdict::kConforming) << good.contract_result.reason;

  for (const auto& row : result.rows) EXPECT_TRUE(row.state_ok) << row.impl << ": " << row.problem;
  EXPECT_EQ(result.exit_code(), 0) << render_calibration(result, false);
}

INSTANTIATE_TEST_SUITE_P(Classes, CmpExcCalibration,
                         ::testing::Values(Expected{"C-CMP-01", "FUSION_DIVERGENCE"},
                                           Expected{"C-CMP-02", "SCHEDULE_OUTLIER"},
                                           Expected{"C-CMP-03", "TILE_REMAINDER"},
                                           Expected{"C-EXC-01", "NAN_SWALLOWED"},
                                           Expected{"C-EXC-02", "OOB_UNDECLARED"}),
                         [](const ::testing::TestParamInfo<Expected>& info) {
                           std::string name = info.param.contract;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

/// Runs one class contract against one calibration impl.
CaseResult check_one(const std::string& contract, const std::string& impl) {
  CheckRequest request;
  request.paths = {contract_path(contract)};
  request.impls = {impl};
  const CheckResult r = run_check(request);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : r.cases)
    if (c.impl == impl) return c;
  ADD_FAILURE() << impl << " was not run against " << contract;
  return {};
}

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
