// kc — NVIDIA compute-sanitizer behind one flag (the validation layer;
// docs/verify.md "compute-sanitizer", docs/backends/cuda.md).
//
// `kc check ... --compute-sanitizer memcheck|initcheck|racecheck` grades the
// selected case as usual, then runs the same `kc check` again under
// compute-sanitizer (--tool T --target-processes all --error-exitcode), and
// when the sanitizer reports errors the case becomes an error verdict with
// the signature SANITIZER(<tool>, <n> errors), the first findings as
// evidence. Without the binary or without an NVIDIA GPU the run is refused
// with a message (exit 2); it never hangs: the sanitizer run has a deadline.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/engine.h"
#include "kc/status.h"

namespace kc::sanitizer {

enum class Tool { kMemcheck, kInitcheck, kRacecheck };

/// "memcheck" | "initcheck" | "racecheck" -> Tool; anything else nullopt.
std::optional<Tool> parse_tool(std::string_view name);
const char* tool_name(Tool tool);

/// What a compute-sanitizer log says.
struct Report {
  bool summary_seen = false;          ///< an "ERROR SUMMARY" line was found
  long errors = 0;                    ///< summed over every "ERROR SUMMARY: N errors" line (one per process)
  std::vector<std::string> findings;  ///< first findings, one line each: headline; location; thread
};

/// Parses compute-sanitizer text output (lines prefixed "========= ").
/// Keeps at most `max_findings` findings.
Report parse_report(std::string_view text, std::size_t max_findings = 5);

/// The compute-sanitizer binary: $KC_COMPUTE_SANITIZER, $CUDA_HOME/bin,
/// $CUDA_PATH/bin, /usr/local/cuda/bin, /usr/local/cuda-*/bin, then PATH.
/// nullopt when none is executable.
std::optional<std::string> find_binary();

/// Whether this machine shows an NVIDIA GPU (/dev/nvidiactl and a /dev/nvidiaN).
bool gpu_present();

/// Why `--compute-sanitizer` cannot run here, or nullopt when it can.
std::optional<std::string> unavailable_reason();

/// Runs `argv` (argv[0] a path) under `binary` with the tool, following every
/// child process, the log in a temporary directory; kills it after
/// `timeout_s`. Returns the parsed log (kDeadlineExceeded on timeout).
Result<Report> run(const std::string& binary, Tool tool, const std::vector<std::string>& argv, double timeout_s);

/// Turns a report with errors into an error verdict on `c`: verdict kError,
/// SANITIZER(<tool>, <n> errors) first among the signatures, the findings
/// appended to the reason. A report without errors leaves `c` as it was.
void apply(const Report& report, Tool tool, engine::CaseResult& c);

}  // namespace kc::sanitizer
