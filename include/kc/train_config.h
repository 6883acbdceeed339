// kc — training-configuration algebra (docs/transformer-training.md).
//
// A YAML training config is checked before any compute is spent:
//   steps_per_epoch = floor(sequences / batch_size / gradient_accumulation)
//   epochs * steps_per_epoch >= max_steps                 (else TOO_FEW_EPOCHS)
//   warmup_steps <= max_steps                             (else WARMUP_INCOMPLETE)
//   the schedule reaches peak_lr within the steps run     (else PEAK_LR_NOT_REACHED)
//   tokens seen >= min_tokens_per_parameter * parameters  (else TOO_FEW_TOKENS, default 10)
// plus EMPTY_EPOCH (steps_per_epoch = 0) and STEPS_PER_EPOCH_MISMATCH (a stated
// steps_per_epoch that disagrees with the formula). The optimizer section
// (AdamW's hyper-parameters, the keys train_loop takes) adds
//   optimizer.lr, when stated, equals schedule.peak_lr     (else OPTIMIZER_LR_MISMATCH)
//   0 <= beta1, beta2 < 1                                   (else BETA_OUT_OF_RANGE)
//   eps > 0                                                 (else EPS_NOT_POSITIVE)
//   weight_decay >= 0 and peak_lr * weight_decay < 1        (else DECAY_FACTOR_OUT_OF_RANGE)
// and the schedule's warmup fraction f: 0 <= f < 1 (else WARMUP_FRACTION_OUT_OF_RANGE);
// alone it sets warmup_steps = ceil(f max_steps), beside warmup_steps the two
// must agree (else WARMUP_FRACTION_MISMATCH). Findings are diagnostics
// at file:line:col of the value that has to change, like the contract parser's.
//
//   model:    {parameters: N}
//   data:     {sequences: N, sequence_length: N}
//   training: {batch_size: N, gradient_accumulation: N (1), epochs: N, max_steps: N,
//              steps_per_epoch: N (optional, checked)}
//   schedule: {peak_lr: X, warmup_steps: N (0), warmup_fraction: X, decay: cosine|linear|constant (cosine),
//              decay_steps: N (max_steps), min_lr: X (0)}
//   optimizer: {name: adamw, lr: X (peak_lr), beta1: X (0.9), beta2: X (0.999), eps: X (1e-8),
//               weight_decay: X (0.01)}      (optional; defaults are torch.optim.AdamW's)
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
  double warmup_fraction = -1;  ///< schedule.warmup_fraction; < 0 when not stated
  /// The optimizer section (AdamW): what reaches the optimizer. lr is the
  /// schedule's peak_lr (optimizer.lr, when stated, must equal it).
  bool optimizer = false;  ///< the section is present
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
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
