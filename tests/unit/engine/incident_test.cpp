// The incident replays (contracts/incidents/, docs/incidents.md): each bad
// impl reproduces one mechanism and is caught by the right contract with its
// own signature; each good impl conforms.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "kc/engine.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

std::string incident_path(const std::string& file) {
  return std::string(KC_SOURCE_DIR) + "/contracts/incidents/" + file;
}

CaseResult check_one(const std::string& file, const std::string& contract, const std::string& impl) {
  return trio::check_one_in(incident_path(file), contract, impl);
}

struct Caught {
  const char* contract;
  const char* impl;
  const char* signature;  ///< the first signature, as printed
};

class RewardHack : public ::testing::TestWithParam<Caught> {};

TEST_P(RewardHack, EachMechanismHasItsOwnSignature) {
  const Caught& e = GetParam();
  const CaseResult r = check_one("INC-REWARD-HACK.kc", e.contract, e.impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), e.signature) << r.reason;
  EXPECT_TRUE(r.signature_expected) << "the contract does not list " << r.signatures.front().to_string();
  EXPECT_FALSE(r.repro.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Incidents, RewardHack,
    ::testing::Values(Caught{"INC-REWARD-01", "incident.matmul_no_write", "OUTPUT_NOT_WRITTEN"},
                      Caught{"INC-REWARD-01", "incident.matmul_mutates_input", "INPUT_MUTATED"},
                      Caught{"INC-REWARD-01", "incident.matmul_address_cache", "STALE_OUTPUT"},
                      Caught{"INC-REWARD-01", "calib.matmul_tile16_noremainder", "TILE_REMAINDER(16)"},
                      Caught{"INC-REWARD-02", "incident.matmul_memo", "TIMING_IMPLAUSIBLE"}),
    [](const ::testing::TestParamInfo<Caught>& info) {
      std::string name = info.param.impl;
      for (char& c : name)
        if (c == '.') c = '_';
      return name;
    });

TEST(RewardHack, ConstantOutputIsNamedWithItsValue) {
  const CaseResult r = check_one("INC-REWARD-HACK.kc", "INC-REWARD-01", "incident.matmul_constant");
  EXPECT_EQ(r.verdict, Verdict::kViolation);
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().name, "CONSTANT_OUTPUT");
  ASSERT_EQ(r.signatures.front().args.size(), 1u);  // the value it wrote everywhere
}

TEST(RewardHack, TheMemoisingKernelIsRightOnValuesAndOnlyTheClockGivesItAway) {
  // Every value it returns is correct: the accuracy contract passes it...
  EXPECT_EQ(check_one("INC-REWARD-HACK.kc", "INC-REWARD-01", "incident.matmul_memo").verdict,
            Verdict::kConforming);
  // ...and the honest kernel passes the timing contract the memo kernel fails.
  const CaseResult honest = check_one("INC-REWARD-HACK.kc", "INC-REWARD-02", "incident.matmul_honest");
  EXPECT_EQ(honest.verdict, Verdict::kConforming) << honest.reason;
}

TEST(RewardHack, TheHonestKernelConformsToEveryIncidentContract) {
  for (const char* c : {"INC-REWARD-01", "INC-REWARD-02"}) {
    const CaseResult r = check_one("INC-REWARD-HACK.kc", c, "incident.matmul_honest");
    EXPECT_EQ(r.verdict, Verdict::kConforming) << c << ": " << r.reason;
  }
}

TEST(OobIncident, UncheckedGatherIsAnUndeclaredPolicyAndShowsWhatCameBack) {
  const CaseResult bad = check_one("INC-OOB.kc", "INC-OOB-01", "calib.gather_unchecked");
  EXPECT_EQ(bad.verdict, Verdict::kViolation) << bad.reason;
  ASSERT_FALSE(bad.signatures.empty());
  EXPECT_EQ(bad.signatures.front().name, "OOB_UNDECLARED");
  EXPECT_TRUE(bad.signature_expected);
  const CaseResult good = check_one("INC-OOB.kc", "INC-OOB-01", "calib.gather_checked");
  EXPECT_EQ(good.verdict, Verdict::kConforming) << good.reason;
}

TEST(PrecisionCoercion, AnFp16AccumulatorSaturates) {
  const CaseResult bad = check_one("INC-PRECISION-COERCION.kc", "INC-COERCE-01", "calib.matmul_fp16_blockacc");
  EXPECT_EQ(bad.verdict, Verdict::kViolation);
  ASSERT_FALSE(bad.signatures.empty());
  EXPECT_EQ(bad.signatures.front().to_string(), "SATURATION(65504)");
  EXPECT_EQ(check_one("INC-PRECISION-COERCION.kc", "INC-COERCE-01", "calib.matmul_fp32acc").verdict,
            Verdict::kConforming);
}

TEST(PrecisionCoercion, TheFingerprintNamesTheNarrowerType) {
  for (const auto& [impl, type] : {std::pair{"incident.matmul_tf32_inputs", "tf32"},
                                   std::pair{"incident.matmul_bf16_inputs", "bf16"},
                                   std::pair{"incident.matmul_fp16_inputs", "fp16"}}) {
    const CaseResult r = check_one("INC-PRECISION-COERCION.kc", "INC-COERCE-02", impl);
    EXPECT_EQ(r.verdict, Verdict::kViolation) << impl;
    ASSERT_FALSE(r.signatures.empty()) << impl;
    EXPECT_EQ(r.signatures.front().to_string(), std::string("PRECISION_FINGERPRINT(") + type + ")") << impl;
  }
  EXPECT_EQ(check_one("INC-PRECISION-COERCION.kc", "INC-COERCE-02", "incident.matmul_honest").verdict,
            Verdict::kConforming);
}

TEST(PrecisionCoercion, TypesTheInputsCannotTellApartAreBothNamed) {
  // On ordinary magnitudes tf32 and fp16 round alike (10 bits): kc says so
  // rather than guessing.
  const CaseResult r = check_one("INC-PRECISION-COERCION.kc", "INC-COERCE-01", "incident.matmul_fp16_inputs");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "PRECISION_FINGERPRINT(tf32|fp16)");
}

}  // namespace
}  // namespace kc::engine
