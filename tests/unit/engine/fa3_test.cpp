// The FlashAttention-3 replay (contracts/incidents/INC-FA3.kc, docs/incidents.md):
// three independent contracts on the attention op. The kernel that silently
// reuses the 64 kernel for head dim 96 passes the numerical and determinism
// contracts and is caught by the shape contract alone, with HELD_OUT_SHAPE;
// the tiled online-softmax kernel, which raises on head dims it was not built
// for, and the reference attention conform to all three.
#include <gtest/gtest.h>

#include <string>

#include "kc/engine.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

CaseResult check_fa3(const std::string& contract, const std::string& impl) {
  return trio::check_one_in(std::string(KC_SOURCE_DIR) + "/contracts/incidents/INC-FA3.kc", contract, impl);
}

TEST(Fa3Incident, SilentHeadDimIsCaughtByTheShapeContractAloneWithItsSignature) {
  const CaseResult shape = check_fa3("INC-FA3-SHAPE", "incident.attention_hdim_silent");
  EXPECT_EQ(shape.contract_id, "INC-FA3-SHAPE");
  EXPECT_EQ(shape.verdict, Verdict::kViolation) << shape.reason;
  ASSERT_FALSE(shape.signatures.empty()) << shape.reason;
  EXPECT_EQ(shape.signatures.front().to_string(), "HELD_OUT_SHAPE(head_dim=96)") << shape.reason;
  EXPECT_TRUE(shape.signature_expected);
  EXPECT_NE(shape.repro.find("head_dim=96"), std::string::npos) << shape.repro;
  // Right on every other head dim: only the 96 config has failures.
  for (const auto& ce : shape.evidence.per_config)
    EXPECT_EQ(ce.failures > 0, ce.config.find("head_dim=96") != std::string::npos) << ce.config;

  // The benchmarked head dims are right, and the kernel is deterministic:
  // the other two contracts pass it — the promises are independent.
  for (const char* c : {"INC-FA3-NUM", "INC-FA3-DET"}) {
    const CaseResult r = check_fa3(c, "incident.attention_hdim_silent");
    EXPECT_EQ(r.verdict, Verdict::kConforming) << c << ": " << r.reason;
  }
}

TEST(Fa3Incident, TiledKernelRaisesOnUnsupportedHeadDimsAndConformsEverywhere) {
  for (const char* c : {"INC-FA3-NUM", "INC-FA3-SHAPE", "INC-FA3-DET"}) {
    const CaseResult r = check_fa3(c, "incident.attention_tiled");
    EXPECT_EQ(r.verdict, Verdict::kConforming) << c << ": " << r.reason;
  }
  const CaseResult shape = check_fa3("INC-FA3-SHAPE", "incident.attention_tiled");
  int raised = 0;
  for (const auto& ce : shape.evidence.per_config) {
    const bool unsupported = ce.config.find("head_dim=32 ") != std::string::npos ||
                             ce.config.find("head_dim=96 ") != std::string::npos;
    EXPECT_EQ(ce.note.find("raised (accepted") == 0, unsupported) << ce.config << ": " << ce.note;
    raised += unsupported;
  }
  EXPECT_EQ(raised, 2);
}

TEST(Fa3Incident, ReferenceAttentionConformsToAllThree) {
  for (const char* c : {"INC-FA3-NUM", "INC-FA3-SHAPE", "INC-FA3-DET"}) {
    const CaseResult r = check_fa3(c, "ref.attention");
    EXPECT_EQ(r.verdict, Verdict::kConforming) << c << ": " << r.reason;
  }
}

}  // namespace
}  // namespace kc::engine
