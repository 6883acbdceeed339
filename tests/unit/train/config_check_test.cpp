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

// The optimizer section appended to config(): lines 15.. (line 15 is "optimizer:").
std::string with_optimizer(const std::string& body, const std::string& base = config()) {
  return base + "optimizer:\n" + body;
}

TEST(ConfigCheck, OptimizerSectionWithinItsRulesHolds) {
  const ConfigCheck c = check_train_config(
      with_optimizer("  name: adamw\n  lr: 3.0e-4\n  beta1: 0.9\n  beta2: 0.95\n  eps: 1.0e-8\n  weight_decay: 0.1\n"),
      "t.yaml");
  ASSERT_TRUE(c.parsed) << c.render();
  EXPECT_TRUE(c.findings.empty()) << c.render();
  EXPECT_TRUE(c.quantities.optimizer);
  EXPECT_DOUBLE_EQ(c.quantities.beta2, 0.95);
  EXPECT_DOUBLE_EQ(c.quantities.weight_decay, 0.1);
  EXPECT_NE(c.render().find("AdamW lr 0.0003 (the schedule's), betas (0.9, 0.95)"), std::string::npos) << c.render();
}

TEST(ConfigCheck, EachOptimizerRuleIsNamedAtItsValue) {
  struct Case {
    const char* body;
    const char* finding;
    int line, column;
  };
  const Case cases[] = {
      {"  lr: 1.0e-3\n", "OPTIMIZER_LR_MISMATCH", 16, 7},
      {"  beta1: 1.0\n", "BETA_OUT_OF_RANGE", 16, 10},
      {"  beta2: 0.95\n  beta1: -0.5\n", "BETA_OUT_OF_RANGE", 17, 10},
      {"  eps: 0\n", "EPS_NOT_POSITIVE", 16, 8},
      {"  weight_decay: 4000\n", "DECAY_FACTOR_OUT_OF_RANGE", 16, 17},
      {"  weight_decay: -0.01\n", "DECAY_FACTOR_OUT_OF_RANGE", 16, 17},
  };
  for (const Case& k : cases) {
    const ConfigCheck c = check_train_config(with_optimizer(k.body), "t.yaml");
    ASSERT_TRUE(c.parsed) << c.render();
    ASSERT_EQ(names(c), std::vector<std::string>{k.finding}) << k.body << c.render();
    EXPECT_EQ(c.exit_code(), 1);
    EXPECT_EQ(c.findings[0].diagnostic.loc.line, k.line) << k.body;
    EXPECT_EQ(c.findings[0].diagnostic.loc.column, k.column) << k.body;
  }
  // peak_lr x weight_decay just below 1 is a factor in (0, 1]: it holds.
  EXPECT_TRUE(check_train_config(with_optimizer("  weight_decay: 3333\n"), "t.yaml").findings.empty());
}

TEST(ConfigCheck, OptimizerTyposGetSuggestions) {
  ConfigCheck c = check_train_config(with_optimizer("  betas1: 0.9\n"), "t.yaml");
  EXPECT_EQ(c.exit_code(), 2);
  ASSERT_FALSE(c.diagnostics.empty());
  EXPECT_EQ(c.diagnostics[0].loc.line, 16);
  EXPECT_EQ(c.diagnostics[0].suggestion, "beta1") << c.render();
  c = check_train_config(with_optimizer("  name: adamv\n"), "t.yaml");
  EXPECT_EQ(c.exit_code(), 2);
  ASSERT_FALSE(c.diagnostics.empty());
  EXPECT_EQ(c.diagnostics[0].suggestion, "adamw") << c.render();
  c = check_train_config(with_optimizer("  eps: tiny\n"), "t.yaml");
  EXPECT_EQ(c.exit_code(), 2);
}

TEST(ConfigCheck, BadOptimizerExampleNamesEachValueToChange) {
  const ConfigCheck c = check_train_config_file(example("bad-optimizer.yaml"));
  ASSERT_TRUE(c.parsed) << c.render();
  ASSERT_EQ(names(c), (std::vector<std::string>{"WARMUP_FRACTION_MISMATCH", "OPTIMIZER_LR_MISMATCH", "BETA_OUT_OF_RANGE"}))
      << c.render();
  EXPECT_EQ(c.findings[0].diagnostic.loc.line, 20);
  EXPECT_EQ(c.findings[1].diagnostic.loc.line, 25);
  EXPECT_EQ(c.findings[2].diagnostic.loc.line, 27);
  EXPECT_EQ(c.findings[2].diagnostic.loc.column, 10);
  EXPECT_EQ(c.exit_code(), 1);
}

TEST(ConfigCheck, WarmupFractionSetsOrMustMatchWarmupSteps) {
  // max_steps 3000: a fraction of 0.1 is ceil(300) = 300 warmup steps.
  ConfigCheck c = check_train_config(config("  warmup_steps: 300\n", "  warmup_fraction: 0.1\n"), "t.yaml");
  ASSERT_TRUE(c.parsed) << c.render();
  EXPECT_TRUE(c.findings.empty()) << c.render();
  EXPECT_EQ(c.quantities.warmup_steps, 300);
  c = check_train_config(config("  warmup_steps: 300\n", "  warmup_fraction: 0.0001\n"), "t.yaml");
  EXPECT_EQ(c.quantities.warmup_steps, 1);  // ceil(0.3)
  // Both stated and agreeing: fine; disagreeing: named at the fraction.
  c = check_train_config(config("  warmup_steps: 300\n", "  warmup_steps: 300\n  warmup_fraction: 0.1\n"), "t.yaml");
  EXPECT_TRUE(c.findings.empty()) << c.render();
  c = check_train_config(config("  warmup_steps: 300\n", "  warmup_steps: 300\n  warmup_fraction: 0.2\n"), "t.yaml");
  ASSERT_EQ(names(c), std::vector<std::string>{"WARMUP_FRACTION_MISMATCH"}) << c.render();
  EXPECT_EQ(c.findings[0].diagnostic.loc.line, 14);
  EXPECT_EQ(c.findings[0].diagnostic.loc.column, 20);
  EXPECT_NE(c.findings[0].diagnostic.message.find("ceil(0.2 x 3000) = 600"), std::string::npos) << c.render();
  // A fraction of 1 or more never leaves warmup.
  c = check_train_config(config("  warmup_steps: 300\n", "  warmup_fraction: 1\n"), "t.yaml");
  ASSERT_FALSE(c.findings.empty()) << c.render();
  EXPECT_EQ(c.findings[0].name, "WARMUP_FRACTION_OUT_OF_RANGE");
  EXPECT_EQ(c.findings[0].diagnostic.loc.line, 13);
}

}  // namespace
}  // namespace kc::train
