// The evidence's counters agree with themselves: for every failure kind the
// engine can record, the per-config failure counts add up to the case's
// total, and a violation always has failures to show. (The raise kinds are
// checked the same way in engine_test.cpp, on kernels that raise on purpose.)
#include <gtest/gtest.h>

#include <string>

#include "kc/engine.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

std::string path(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/contracts/" + rel; }

struct Kind {
  const char* name;      ///< the failure kind, for the test name
  const char* file;      ///< contract file under contracts/
  const char* contract;
  const char* impl;
  const char* signature; ///< a signature the case must carry
};

class EvidenceCounts : public ::testing::TestWithParam<Kind> {};

TEST_P(EvidenceCounts, PerConfigFailuresAddUpToTheCaseTotal) {
  const Kind& k = GetParam();
  const CaseResult r = trio::check_one_in(path(k.file), k.contract, k.impl);
  ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  bool named = false;
  for (const auto& s : r.signatures) named = named || s.name == k.signature;
  EXPECT_TRUE(named) << k.signature << " not among the signatures: " << r.reason;
  std::int64_t sum = 0;
  for (const auto& ce : r.evidence.per_config) sum += ce.failures;
  EXPECT_EQ(sum, r.evidence.failures) << r.reason;
  EXPECT_GT(r.evidence.failures, 0) << r.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Engine, EvidenceCounts,
    ::testing::Values(
        Kind{"numeric", "classes/C-PRC-01.kc", "C-PRC-01", "calib.matmul_fp16_blockacc", "SATURATION"},
        Kind{"unwritten", "incidents/INC-REWARD-HACK.kc", "INC-REWARD-01", "incident.matmul_no_write",
             "OUTPUT_NOT_WRITTEN"},
        Kind{"input_mutated", "incidents/INC-REWARD-HACK.kc", "INC-REWARD-01", "incident.matmul_mutates_input",
             "INPUT_MUTATED"},
        Kind{"stale_output", "incidents/INC-REWARD-HACK.kc", "INC-REWARD-01", "incident.matmul_address_cache",
             "STALE_OUTPUT"},
        Kind{"timing", "incidents/INC-REWARD-HACK.kc", "INC-REWARD-02", "incident.matmul_memo",
             "TIMING_IMPLAUSIBLE"},
        Kind{"policy", "classes/C-EXC-01.kc", "C-EXC-01", "calib.relu_fmaxf", "NAN_SWALLOWED"},
        Kind{"oob_policy", "classes/C-EXC-02.kc", "C-EXC-02", "calib.gather_unchecked", "OOB_UNDECLARED"},
        Kind{"nondeterministic", "classes/C-ORD-02.kc", "C-ORD-02", "calib.sum_atomic", "NONDETERMINISTIC"},
        Kind{"property", "transformer/KC-SOFTMAX-PROPS.kc", "KC-SOFTMAX-SUM", "calib.softmax_tile7",
             "PROPERTY_VIOLATED"}),
    [](const ::testing::TestParamInfo<Kind>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kc::engine
