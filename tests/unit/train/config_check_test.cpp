// kc config-check: the training-configuration algebra on YAML configs
// (kc/train_config.h, docs/transformer-training.md).
#include <gtest/gtest.h>

#include <string>

#include "kc/train_config.h"

namespace kc::train {
namespace {

std::string example(const std::string& name) {
  return std::string(KC_SOURCE_DIR) + "/examples/train-config/" + name;
}

/// A config that holds every obligation, with one line replaceable.
std::string config(const std::string& replace_from = {}, const std::string& replace_to = {}) {
  std::string s =
      "model:\n"
      "  parameters: 1000000\n"
      "data:\n"
      "  sequences: 100000\n"
      "  sequence_length: 512\n"
      "training:\n"
      "  batch_size: 16\n"
      "  gradient_accumulation: 4\n"
      "  epochs: 2\n"
      "  max_steps: 3000\n"
      "schedule:\n"
      "  peak_lr: 3.0e-4\n"
      "  warmup_steps: 300\n"
      "  decay: cosine\n";
  if (!replace_from.empty()) {
    const auto at = s.find(replace_from);
    EXPECT_NE(at, std::string::npos) << replace_from;
    if (at != std::string::npos) s.replace(at, replace_from.size(), replace_to);
  }
  return s;
}

std::vector<std::string> names(const ConfigCheck& c) {
  std::vector<std::string> out;
  for (const auto& f : c.findings) out.push_back(f.name);
  return out;
}

TEST(ConfigCheck, GoodExampleHoldsEveryObligation) {
  const ConfigCheck c = check_train_config_file(example("good.yaml"));
  ASSERT_TRUE(c.parsed) << c.render();
  EXPECT_TRUE(c.findings.empty()) << c.render();
  EXPECT_EQ(c.exit_code(), 0);
  EXPECT_EQ(c.quantities.steps_per_epoch, 7812);  // floor(2e6 / 32 / 8)
  EXPECT_EQ(c.quantities.steps_run, 20000);
}

TEST(ConfigCheck, TooFewEpochsIsNamedAtTheEpochsValue) {
  const ConfigCheck c = check_train_config_file(example("too-few-epochs.yaml"));
  ASSERT_TRUE(c.parsed) << c.render();
  ASSERT_EQ(names(c), std::vector<std::string>{"TOO_FEW_EPOCHS"}) << c.render();
  const auto& d = c.findings[0].diagnostic;
  EXPECT_EQ(d.loc.line, 12);
  EXPECT_EQ(d.loc.column, 11);
  EXPECT_NE(d.line_text.find("epochs: 2"), std::string::npos);
  EXPECT_NE(d.message.find("needs epochs >= 3"), std::string::npos) << d.message;
  EXPECT_EQ(c.exit_code(), 1);
}

TEST(ConfigCheck, StepsPerEpochIsFloorOfSequencesOverBatchOverAccumulation) {
  // 100000 / 16 = 6250, / 4 = 1562.5 -> 1562; 1562 x 2 >= 3000.
  ConfigCheck c = check_train_config(config(), "t.yaml");
  ASSERT_TRUE(c.parsed) << c.render();
  EXPECT_EQ(c.quantities.steps_per_epoch, 1562);
  EXPECT_TRUE(c.findings.empty()) << c.render();
  // One step more than two epochs hold.
  c = check_train_config(config("max_steps: 3000", "max_steps: 3125"), "t.yaml");
  EXPECT_EQ(names(c), std::vector<std::string>{"TOO_FEW_EPOCHS"}) << c.render();
  c = check_train_config(config("max_steps: 3000", "max_steps: 3124"), "t.yaml");
  EXPECT_TRUE(c.findings.empty()) << c.render();
  // A stated steps_per_epoch must agree with the formula.
  c = check_train_config(config("  epochs: 2\n", "  epochs: 2\n  steps_per_epoch: 1563\n"), "t.yaml");
  EXPECT_EQ(names(c), std::vector<std::string>{"STEPS_PER_EPOCH_MISMATCH"}) << c.render();
}

TEST(ConfigCheck, EmptyEpoch) {
  const ConfigCheck c = check_train_config(config("sequences: 100000", "sequences: 63"), "t.yaml");
  ASSERT_FALSE(c.findings.empty());
  EXPECT_EQ(c.findings[0].name, "EMPTY_EPOCH") << c.render();
}

TEST(ConfigCheck, WarmupMustCompleteAndThePeakMustBeReached) {
  ConfigCheck c = check_train_config(config("warmup_steps: 300", "warmup_steps: 3001"), "t.yaml");
  EXPECT_EQ(names(c), (std::vector<std::string>{"WARMUP_INCOMPLETE", "PEAK_LR_NOT_REACHED"})) << c.render();
  // Warmup fits max_steps, but the data runs out before it ends.
  c = check_train_config(config("epochs: 2", "epochs: 0"), "t.yaml");
  EXPECT_NE(std::find(names(c).begin(), names(c).end(), "PEAK_LR_NOT_REACHED"), names(c).end()) << c.render();
  // Exactly at the boundary: warmup_steps = steps run reaches the peak.
  c = check_train_config(config("warmup_steps: 300", "warmup_steps: 3000"), "t.yaml");
  EXPECT_TRUE(c.findings.empty()) << c.render();
  EXPECT_DOUBLE_EQ(c.quantities.max_lr_reached, 3.0e-4);
  // A peak that is not above the floor is never a peak.
  c = check_train_config(config("  decay: cosine\n", "  decay: cosine\n  min_lr: 3.0e-4\n"), "t.yaml");
  EXPECT_EQ(names(c), std::vector<std::string>{"PEAK_LR_NOT_REACHED"}) << c.render();
}

TEST(ConfigCheck, TokensAtLeastTenTimesParameters) {
  // 3000 steps x 64 sequences x 512 tokens = 98.3e6 tokens; 9.9e6 parameters
  // need 99e6.
  ConfigCheck c = check_train_config(config("parameters: 1000000", "parameters: 9900000"), "t.yaml");
  EXPECT_EQ(names(c), std::vector<std::string>{"TOO_FEW_TOKENS"}) << c.render();
  c = check_train_config(config("parameters: 1000000", "parameters: 9830400"), "t.yaml");
  EXPECT_TRUE(c.findings.empty()) << c.render();
}

TEST(ConfigCheck, ScheduleRisesThroughWarmupAndDecaysToTheFloor) {
  ConfigQuantities q;
  q.peak_lr = 1;
  q.min_lr = 0.1;
  q.warmup_steps = 10;
  q.decay_steps = 110;
  EXPECT_DOUBLE_EQ(scheduled_lr(q, 0), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr(q, 9), 1.0);
  EXPECT_DOUBLE_EQ(scheduled_lr(q, 10), 1.0);
  EXPECT_NEAR(scheduled_lr(q, 60), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(scheduled_lr(q, 110), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr(q, 500), 0.1);
}

TEST(ConfigCheck, MalformedInputGetsPositionsAndSuggestions) {
  ConfigCheck c = check_train_config(config("  epochs: 2\n", "  epochz: 2\n"), "t.yaml");
  EXPECT_FALSE(c.parsed);
  EXPECT_EQ(c.exit_code(), 2);
  ASSERT_FALSE(c.diagnostics.empty());
  EXPECT_EQ(c.diagnostics[0].loc.line, 9);
  EXPECT_EQ(c.diagnostics[0].suggestion, "epochs") << c.render();

  c = check_train_config(config("batch_size: 16", "batch_size: sixteen"), "t.yaml");
  ASSERT_FALSE(c.diagnostics.empty());
  EXPECT_EQ(c.diagnostics[0].loc.line, 7);
  EXPECT_EQ(c.diagnostics[0].loc.column, 15);
  EXPECT_NE(c.diagnostics[0].message.find("must be an integer"), std::string::npos);

  c = check_train_config("model: [1, 2\n", "t.yaml");
  EXPECT_FALSE(c.parsed);
  ASSERT_FALSE(c.diagnostics.empty());
  EXPECT_NE(c.diagnostics[0].message.find("malformed YAML"), std::string::npos);

  c = check_train_config_file(example("does-not-exist.yaml"));
  EXPECT_EQ(c.exit_code(), 2);
}

}  // namespace
}  // namespace kc::train
