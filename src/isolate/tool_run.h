// kc — running an external checker (compute-sanitizer, valgrind) over a kc
// process: in a process group of its own, its output to a file, killed as a
// group at a deadline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kc/status.h"

namespace kc::isolate::detail {

struct ToolRun {
  int status = 0;          ///< waitpid status
  bool timed_out = false;  ///< killed at the deadline
};

/// Runs `argv` (argv[0] a path) with stdout and stderr to `out_path`; kills
/// its whole process group after `timeout_s`. `who` names the tool in errors.
Result<ToolRun> run_tool(const std::vector<std::string>& argv, const std::string& out_path, double timeout_s,
                         std::string_view who);

}  // namespace kc::isolate::detail
