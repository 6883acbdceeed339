// The training contracts (contracts/transformer/, docs/transformer-training.md):
// ref conforms; each seeded bug of calibration/train.cpp is caught with its
// named signature; the trios calibrate.
#include <gtest/gtest.h>

#include <string>

#include "kc/calibrate.h"
#include "kc/engine.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

// The whole folder: several contracts share a file (KC-XENT-02.kc holds KC-XENT-03).
std::string path(const std::string&) { return std::string(KC_SOURCE_DIR) + "/contracts/transformer"; }

// In-process (--isolate none): these kernels are kc's own, and the AdamW
// contract's 128 configs would otherwise pay a worker start each.
CaseResult check(const std::string& id, const std::string& impl) {
  CheckRequest request;
  request.paths = {path(id)};
  request.contracts = {id};
  request.impls = {impl};
  request.isolation = isolate::Mode::kNone;
  const CheckResult r = run_check(request);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : r.cases)
    if (c.impl == impl && c.contract_id == id) return c;
  ADD_FAILURE() << impl << " was not run against " << id;
  return {};
}

struct Caught {
  const char* contract;
  const char* impl;
  const char* signature;  ///< the first signature, as printed
};

class SeededBug : public ::testing::TestWithParam<Caught> {};

TEST_P(SeededBug, IsCaughtWithItsSignature) {
  const Caught& e = GetParam();
  const CaseResult r = check(e.contract, e.impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), e.signature) << r.reason;
  EXPECT_TRUE(r.signature_expected) << r.signatures.front().to_string() << " is not listed by " << e.contract;
  EXPECT_FALSE(r.repro.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Train, SeededBug,
    ::testing::Values(Caught{"KC-ADAMW-01", "calib.adamw_coupled_decay", "COUPLED_WEIGHT_DECAY"},
                      Caught{"KC-ADAMW-01", "calib.adamw_fixed_beta2", "HYPERPARAMETER_IGNORED(beta2)"},
                      Caught{"KC-ADAMW-01", "calib.adamw_no_bias_correction", "NO_BIAS_CORRECTION"},
                      Caught{"KC-XENT-01", "calib.xent_no_softmax", "GRADIENT_WITHOUT_SOFTMAX"},
                      Caught{"KC-KD-01", "calib.kd_no_t2", "MISSING_T2_SCALING"},
                      Caught{"KC-BPE-01", "calib.bpe_drop_invalid", "BYTES_DROPPED(597)"},
                      // The same defects against the algebraic obligations (docs/obligations.md).
                      Caught{"KC-ADAMW-02", "calib.adamw_coupled_decay", "PROPERTY_VIOLATED(adamw.decoupled_decay)"},
                      Caught{"KC-ADAMW-03", "calib.adamw_no_bias_correction",
                             "PROPERTY_VIOLATED(adamw.zero_moment_first_step)"},
                      Caught{"KC-ADAMW-04", "calib.adamw_fixed_beta2",
                             "PROPERTY_VIOLATED(adamw.hyperparameters_reach_update)"},
                      Caught{"KC-XENT-03", "calib.xent_no_softmax", "PROPERTY_VIOLATED(cross_entropy.gradient_identity)"},
                      Caught{"KC-KD-03", "calib.kd_no_t2", "PROPERTY_VIOLATED(kd_loss.t2_scaling)"},
                      // An ignored alpha is trivially affine in alpha (KC-KD-04 cannot see it); the
                      // CE term does not scale like T² KL, so KC-KD-03 does.
                      Caught{"KC-KD-03", "calib.kd_ce_only", "PROPERTY_VIOLATED(kd_loss.t2_scaling)"},
                      Caught{"KC-ACCUM-01", "calib.grad_accum_sum", "ACCUMULATION_NOT_AVERAGED"},
                      Caught{"KC-ACCUM-02", "calib.grad_accum_sum", "PROPERTY_VIOLATED(grad_accum.matches_full_batch)"},
                      Caught{"KC-SLERP-01", "calib.slerp_lerp", "LERP_NOT_SLERP"},
                      Caught{"KC-SLERP-02", "calib.slerp_lerp", "PROPERTY_VIOLATED(slerp.on_sphere)"},
                      Caught{"KC-PRUNE-01", "calib.wanda_magnitude_only", "SCORE_IGNORES_ACTIVATIONS"},
                      Caught{"KC-PRUNE-03", "calib.prune_rescaled", "PROPERTY_VIOLATED(prune.kept_unchanged)"}),
    [](const ::testing::TestParamInfo<Caught>& info) {
      std::string name = std::string(info.param.contract) + "_" + info.param.impl;
      for (char& c : name)
        if (c == '.' || c == '-') c = '_';
      return name;
    });

class RefConforms : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(RefConforms, OnItsContract) {
  const CaseResult r = check(GetParam().first, GetParam().second);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  EXPECT_GT(r.evidence.elements, 0);
}

INSTANTIATE_TEST_SUITE_P(Train, RefConforms,
                         ::testing::Values(std::pair{"KC-ADAMW-01", "ref.adamw_step"},
                                           std::pair{"KC-XENT-01", "ref.cross_entropy"},
                                           std::pair{"KC-KD-01", "ref.kd_loss"},
                                           std::pair{"KC-BPE-01", "ref.bpe_roundtrip"},
                                           std::pair{"KC-ADAMW-02", "ref.adamw_step"},
                                           std::pair{"KC-ADAMW-03", "ref.adamw_step"},
                                           std::pair{"KC-ADAMW-04", "ref.adamw_step"},
                                           std::pair{"KC-XENT-02", "ref.cross_entropy"},
                                           std::pair{"KC-XENT-03", "ref.cross_entropy"},
                                           std::pair{"KC-KD-02", "ref.kd_loss"},
                                           std::pair{"KC-KD-03", "ref.kd_loss"},
                                           std::pair{"KC-KD-04", "ref.kd_loss"},
                                           std::pair{"KC-ACCUM-01", "ref.grad_accum"},
                                           std::pair{"KC-ACCUM-02", "ref.grad_accum"},
                                           std::pair{"KC-SLERP-01", "ref.slerp"},
                                           std::pair{"KC-SLERP-02", "ref.slerp"},
                                           std::pair{"KC-SLERP-03", "ref.slerp"},
                                           std::pair{"KC-PRUNE-01", "ref.prune_magnitude"},
                                           std::pair{"KC-PRUNE-01", "ref.prune_wanda"},
                                           std::pair{"KC-PRUNE-02", "ref.prune_magnitude"},
                                           std::pair{"KC-PRUNE-02", "ref.prune_wanda"},
                                           std::pair{"KC-PRUNE-03", "ref.prune_magnitude"},
                                           std::pair{"KC-PRUNE-03", "ref.prune_wanda"}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.first) + "_" + info.param.second;
                           for (char& c : name)
                             if (c == '.' || c == '-') c = '_';
                           return name;
                         });

TEST(Slerp, LinearInterpolationIsRightAtTheEndpointsOnly) {
  // lerp and slerp agree at t = 0 and t = 1: the endpoint obligation holds for
  // calib.slerp_lerp, and the sweep's interior t values are what catch it.
  EXPECT_EQ(check("KC-SLERP-03", "calib.slerp_lerp").verdict, Verdict::kConforming);
  const CaseResult r = check("KC-SLERP-01", "calib.slerp_lerp");
  for (const auto& ce : r.evidence.per_config) {
    const auto at = ce.config.find(" t=");
    ASSERT_NE(at, std::string::npos) << ce.config;
    const std::string t = ce.config.substr(at + 3, ce.config.find(' ', at + 3) - (at + 3));
    const bool endpoint = t == "0" || t == "1";
    EXPECT_EQ(ce.failures == 0, endpoint) << ce.config;
  }
}

TEST(GradAccum, TheAccumulatedBoundIsNeverLooserThanOnePass) {
  // L = B / A + A + F + 2 <= B + F + 3 for every A dividing B = 64.
  for (int a : {1, 2, 4, 8, 16, 32, 64}) EXPECT_LE(64 / a + a + 16 + 2, 64 + 16 + 3) << a;
}

TEST(Bpe, TheDroppingDecoderIsRightOnTextAndWrongExactlyWhereBytesAreNotUtf8) {
  const CaseResult r = check("KC-BPE-01", "calib.bpe_drop_invalid");
  ASSERT_EQ(r.evidence.per_config.size(), 5u);
  for (const auto& ce : r.evidence.per_config) {
    const bool textual = ce.config.find("pattern=text") != std::string::npos ||
                         ce.config.find("pattern=utf8") != std::string::npos;
    EXPECT_EQ(ce.failures == 0, textual) << ce.config;
  }
}

TEST(AdamW, AWrongBeta2IsCaughtOnlyWhereItDiffers) {
  // calib.adamw_fixed_beta2 always uses 0.999: conforming configs are exactly
  // those with beta2 = 0.999, which is what the sweep of every
  // hyper-parameter relies on.
  const CaseResult r = check("KC-ADAMW-01", "calib.adamw_fixed_beta2");
  ASSERT_FALSE(r.evidence.per_config.empty());
  for (const auto& ce : r.evidence.per_config) {
    const bool default_beta2 = ce.config.find("beta2=0.999") != std::string::npos;
    EXPECT_EQ(ce.failures == 0, default_beta2) << ce.config;
  }
}

class TrainTrio : public ::testing::TestWithParam<trio::Expected> {};

TEST_P(TrainTrio, SeparatesBaselineBadAndGood) {
  // trio::expect_three_states reads contracts/classes/; these live in transformer/.
  const trio::Expected& e = GetParam();
  CheckRequest request;
  request.paths = {path(e.contract)};
  request.contracts = {e.contract};
  request.isolation = isolate::Mode::kNone;
  const CalibrationResult result = run_calibration(request);
  ASSERT_EQ(result.rows.size(), 3u) << render_calibration(result, false);
  EXPECT_FALSE(result.rows[0].visible.pass);
  EXPECT_TRUE(result.rows[1].visible.pass) << result.rows[1].visible.detail;
  ASSERT_FALSE(result.rows[1].contract_result.signatures.empty());
  EXPECT_EQ(result.rows[1].contract_result.signatures.front().name, e.signature);
  EXPECT_EQ(result.rows[2].contract_result.verdict, Verdict::kConforming) << result.rows[2].contract_result.reason;
  EXPECT_EQ(result.exit_code(), 0) << render_calibration(result, false);
}

INSTANTIATE_TEST_SUITE_P(Train, TrainTrio,
                         ::testing::Values(trio::Expected{"KC-ADAMW-01", "COUPLED_WEIGHT_DECAY"},
                                           trio::Expected{"KC-KD-01", "MISSING_T2_SCALING"},
                                           trio::Expected{"KC-BPE-01", "BYTES_DROPPED"},
                                           trio::Expected{"KC-ACCUM-01", "ACCUMULATION_NOT_AVERAGED"}),
                         trio::param_name);

}  // namespace
}  // namespace kc::engine
