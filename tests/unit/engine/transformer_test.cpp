// The transformer-kernel contracts (contracts/transformer/): every contract
// conforms on `ref`, and each seeded bug (calibration/transformer.cpp, and
// the C-PRC-02 baseline for a missing normalisation) is caught by the
// obligation about it, with that obligation's named signature.
#include <gtest/gtest.h>

#include <string>

#include "kc/engine.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

std::string transformer_path(const std::string& file) {
  return std::string(KC_SOURCE_DIR) + "/contracts/transformer/" + file;
}

TEST(TransformerContracts, EveryContractConformsOnRef) {
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/transformer"};
  request.impls = {"ref.*"};
  const CheckResult r = run_check(request);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  int conforming = 0;
  for (const auto& c : r.cases) {
    EXPECT_TRUE(c.verdict == Verdict::kConforming || c.verdict == Verdict::kNotApplicable)
        << c.contract_id << " x " << c.impl << ": " << verdict_name(c.verdict) << " " << c.reason;
    conforming += c.verdict == Verdict::kConforming;
  }
  EXPECT_GE(conforming, 40);
}

struct Caught {
  const char* file;
  const char* contract;
  const char* impl;
  const char* signature;
};

class SeededBug : public ::testing::TestWithParam<Caught> {};

TEST_P(SeededBug, IsCaughtByItsObligation) {
  const Caught& e = GetParam();
  const CaseResult r = trio::check_one_in(transformer_path(e.file), e.contract, e.impl);
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), e.signature) << r.reason;
  EXPECT_TRUE(r.signature_expected);
  EXPECT_FALSE(r.repro.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Transformer, SeededBug,
    ::testing::Values(
        Caught{"KC-SOFTMAX-PROPS.kc", "KC-SOFTMAX-SUM", "calib.softmax_unnormalized",
               "PROPERTY_VIOLATED(softmax.sums_to_one)"},
        Caught{"KC-SOFTMAX-PROPS.kc", "KC-SOFTMAX-SHIFT", "calib.softmax_naive",
               "PROPERTY_VIOLATED(softmax.translation_invariance)"},
        Caught{"KC-NORM-PROPS.kc", "KC-NORM-STANDARDIZED", "calib.layernorm_unbiased",
               "PROPERTY_VIOLATED(norm.standardized)"},
        Caught{"KC-ATTN.kc", "KC-ATTN-CAUSAL", "calib.attention_mask_off_by_one",
               "PROPERTY_VIOLATED(attention.causal)"},
        Caught{"KC-ROPE.kc", "KC-ROPE-NORM", "calib.rope_swapped_pairing", "PROPERTY_VIOLATED(rope.pair_norm)"}),
    [](const ::testing::TestParamInfo<Caught>& info) {
      std::string name = info.param.impl;
      for (char& c : name)
        if (c == '.') c = '_';
      return name;
    });

TEST(SeededBug, ObligationsAreSpecific) {
  // A consistent but wrong variance convention is still idempotent: only the
  // statistics of the output (norm.standardized) can see it.
  EXPECT_EQ(trio::check_one_in(transformer_path("KC-NORM-PROPS.kc"), "KC-NORM-IDEMPOTENT", "calib.layernorm_unbiased")
                .verdict,
            Verdict::kConforming);
  // The off-by-one mask is invisible to a non-causal call and to normalisation.
  EXPECT_EQ(trio::check_one_in(transformer_path("KC-ATTN.kc"), "KC-ATTN-GQA", "calib.attention_mask_off_by_one").verdict,
            Verdict::kConforming);
  // The other pairing is a rotation too: relative positions are preserved.
  EXPECT_EQ(trio::check_one_in(transformer_path("KC-ROPE.kc"), "KC-ROPE-RELATIVE", "calib.rope_swapped_pairing").verdict,
            Verdict::kConforming);
  // The unnormalised softmax is still monotone and positive.
  EXPECT_EQ(trio::check_one_in(transformer_path("KC-SOFTMAX-PROPS.kc"), "KC-SOFTMAX-MONO", "calib.softmax_unnormalized")
                .verdict,
            Verdict::kConforming);
}

}  // namespace
}  // namespace kc::engine
