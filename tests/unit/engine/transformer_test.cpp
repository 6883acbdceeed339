// The transformer-kernel contracts (contracts/transformer/): every contract
// conforms on `ref`, and each seeded bug (calibration/transformer.cpp, and
// the C-PRC-02 baseline for a missing normalisation) is caught by the
// obligation about it, with that obligation's named signature. Under --fast
// attention keeps its verdicts and signatures.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  request.samples = 1;  // every contract and config once: the CI-time version of `kc check contracts/transformer`
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


// `kc check --fast` on attention (docs/verify.md "Attention"): sampled query
// rows decide where they pass, with the full check's verdict; a flagged sample
// is re-judged by the oracle, so a bad kernel keeps its verdict and signatures.
CaseResult check_attention(const std::string& path, const std::string& contract, const std::string& impl,
                           bool fast) {
  CheckRequest request;
  request.paths = {path};
  request.contracts = {contract};
  request.impls = {impl};
  request.fast = fast;
  const CheckResult r = run_check(request);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : r.cases)
    if (c.impl == impl && c.contract_id == contract) return c;
  ADD_FAILURE() << impl << " was not run against " << contract;
  return {};
}

std::vector<std::string> signature_strings(const CaseResult& r) {
  std::vector<std::string> out;
  for (const auto& s : r.signatures) out.push_back(s.to_string());
  return out;
}

TEST(FastCheck, RefAttentionKeepsItsVerdictAndTheSampledRowsDecide) {
  const std::string path = transformer_path("KC-ATTN.kc");
  const CaseResult full = check_attention(path, "KC-ATTN-01", "ref.attention", false);
  const CaseResult fast = check_attention(path, "KC-ATTN-01", "ref.attention", true);
  EXPECT_EQ(full.verdict, Verdict::kConforming) << full.reason;
  EXPECT_EQ(fast.verdict, full.verdict) << fast.reason;
  EXPECT_EQ(full.evidence.method, "full_oracle");
  EXPECT_EQ(fast.evidence.method, "sampled");
  ASSERT_EQ(fast.evidence.per_config.size(), full.evidence.per_config.size());
  // The sampled rows are the oracle's rows judged with the same bound: their
  // worst ratio is one of the full check's ratios, so never above its maximum.
  EXPECT_GT(fast.evidence.max, 0);
  EXPECT_LE(fast.evidence.max, full.evidence.max);
  EXPECT_LE(fast.evidence.elements, full.evidence.elements);
}

TEST(FastCheck, BadAttentionIsStillAViolationWithItsSignatures) {
  struct Bad {
    std::string path;
    const char* contract;
    const char* impl;
  };
  const Bad bads[] = {
      {transformer_path("KC-ATTN.kc"), "KC-ATTN-01", "calib.attention_mask_off_by_one"},
      {std::string(KC_SOURCE_DIR) + "/contracts/incidents/INC-FA3.kc", "INC-FA3-SHAPE",
       "incident.attention_hdim_silent"},
  };
  for (const Bad& b : bads) {
    const CaseResult full = check_attention(b.path, b.contract, b.impl, false);
    const CaseResult fast = check_attention(b.path, b.contract, b.impl, true);
    EXPECT_EQ(full.verdict, Verdict::kViolation) << b.impl << ": " << full.reason;
    EXPECT_EQ(fast.verdict, full.verdict) << b.impl << ": " << fast.reason;
    EXPECT_FALSE(full.signatures.empty()) << b.impl;
    EXPECT_EQ(signature_strings(fast), signature_strings(full)) << b.impl;
    // The same case, re-run with the verifier that flagged it.
    const std::size_t at = full.repro.find(" --config");
    ASSERT_NE(at, std::string::npos) << full.repro;
    EXPECT_EQ(fast.repro, full.repro.substr(0, at) + " --fast" + full.repro.substr(at)) << b.impl;
    EXPECT_EQ(fast.evidence.method, "full_oracle after fast flag") << b.impl;
  }
}

}  // namespace
}  // namespace kc::engine
