// kc — the process exit codes every command shares, in one table that
// `kc --help` and docs print from.
#pragma once

#include <span>

#include "kc/enum_table.h"

namespace kc {

enum class ExitCode : int {
  kOk = 0,             ///< every judged case conforming (or not applicable)
  kViolation = 1,      ///< at least one violation or error verdict, or a wrong calibration state
  kUsage = 2,          ///< usage error, a selection that matches nothing, a malformed contract
  kInternal = 3,       ///< kc itself failed (a report or trace it could not write)
  kNothingJudged = 4,  ///< the run judged no case (all not_applicable / under_specified / skipped)
  /// SIGINT or SIGTERM stopped the run (128 + SIGINT, the shell's own code for
  /// Ctrl-C, for either signal): what it recorded stays valid and --resume continues it.
  kInterrupted = 130,
};

std::span<const EnumEntry<ExitCode>> exit_code_table();

constexpr int exit_value(ExitCode c) { return static_cast<int>(c); }

}  // namespace kc
