// kc — training-configuration algebra (issue #6, docs/transformer-training.md).
//
// A YAML training config is checked before any compute is spent:
//   steps_per_epoch = floor(sequences / batch_size / gradient_accumulation)
//   epochs * steps_per_epoch >= max_steps                 (else TOO_FEW_EPOCHS)
//   warmup_steps <= max_steps                             (else WARMUP_INCOMPLETE)
//   the schedule reaches peak_lr within the steps run     (else PEAK_LR_NOT_REACHED)
//   tokens seen >= min_tokens_per_parameter * parameters  (else TOO_FEW_TOKENS, default 10)
// plus EMPTY_EPOCH (steps_per_epoch = 0) and STEPS_PER_EPOCH_MISMATCH (a stated
// steps_per_epoch that disagrees with the formula). Findings are diagnostics
// at file:line:col of the value that has to change, like the contract parser's.
//
//   model:    {parameters: N}
//   data:     {sequences: N, sequence_length: N}
//   training: {batch_size: N, gradient_accumulation: N (1), epochs: N, max_steps: N,
//              steps_per_epoch: N (optional, checked)}
//   schedule: {peak_lr: X, warmup_steps: N (0), decay: cosine|linear|constant (cosine),
//              decay_steps: N (max_steps), min_lr: X (0)}
//   checks:   {min_tokens_per_parameter: X (10)}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kc/lang.h"

namespace kc::train {

/// One failed obligation: its name and the diagnostic that places it.
struct ConfigFinding {
  std::string name;  ///< TOO_FEW_EPOCHS, WARMUP_INCOMPLETE, ...
  lang::Diagnostic diagnostic;
};

/// The quantities the algebra derives (valid when `parsed`).
struct ConfigQuantities {
  std::int64_t parameters = 0, sequences = 0, sequence_length = 0;
  std::int64_t batch_size = 0, accumulation = 1, epochs = 0, max_steps = 0;
  std::int64_t warmup_steps = 0, decay_steps = 0;
  double peak_lr = 0, min_lr = 0, min_tokens_per_parameter = 10;
  std::string decay = "cosine";
  std::int64_t steps_per_epoch = 0;  ///< floor(sequences / batch_size / accumulation)
  std::int64_t steps_run = 0;        ///< min(max_steps, epochs * steps_per_epoch)
  double tokens = 0;                 ///< steps_run * batch_size * accumulation * sequence_length
  double max_lr_reached = 0;         ///< the schedule's maximum over the steps run
};

struct ConfigCheck {
  std::string file;                          ///< the config's name, as given
  bool parsed = false;                       ///< false: malformed (diagnostics say why)
  std::vector<lang::Diagnostic> diagnostics; ///< malformed-input errors
  std::vector<ConfigFinding> findings;       ///< failed obligations
  ConfigQuantities quantities;
  /// 0 every obligation holds, 1 some finding, 2 malformed config.
  int exit_code() const;
  /// Diagnostics, findings and the derived quantities, for the terminal.
  std::string render() const;
};

/// The learning rate of optimizer step t (0-based): linear warmup to peak_lr
/// over warmup_steps (peak at t = warmup_steps - 1), then decay to min_lr at
/// decay_steps.
double scheduled_lr(const ConfigQuantities& q, std::int64_t t);

/// Checks YAML text; never throws.
ConfigCheck check_train_config(std::string_view text, std::string_view file_name);
/// Reads and checks a file; a read failure is a diagnostic.
ConfigCheck check_train_config_file(const std::string& path);

}  // namespace kc::train
