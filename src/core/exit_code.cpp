#include "kc/exit_code.h"

#include <array>

namespace kc {

namespace {
constexpr std::array<EnumEntry<ExitCode>, 6> kExitCodes{{
    {ExitCode::kOk, "ok", "every judged case conforming (not applicable cases aside)"},
    {ExitCode::kViolation, "violation",
     "at least one violation or error verdict (a kernel that crashed, hung or failed); "
     "calibrate: a wrong state or a contract without a trio"},
    {ExitCode::kUsage, "usage",
     "usage error, a selection (--contract, --impl, --plugin, paths) that matches nothing or fails "
     "to load, or a contract with errors"},
    {ExitCode::kInternal, "internal", "internal error in kc (a report or trace it could not write)"},
    {ExitCode::kNothingJudged, "nothing_judged",
     "no case was judged: every case not_applicable, under_specified or skipped (--allow-empty makes this 0)"},
    {ExitCode::kInterrupted, "interrupted",
     "interrupted by SIGINT (Ctrl-C) or SIGTERM: no new case started, every worker ended, the trace "
     "holds whole records only; `--resume` continues the run (kc says the command on stderr)"},
}};
}  // namespace

std::span<const EnumEntry<ExitCode>> exit_code_table() { return kExitCodes; }

}  // namespace kc
