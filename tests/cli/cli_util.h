// Runs a command line for the end-to-end tests: its exit status and what it
// printed on stdout and stderr together.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kc_cli_test {

struct CommandRun {
  int code = -1;  ///< the exit status; -1 when it did not exit normally
  std::string out;
};

inline CommandRun run_command(const std::string& cmd) {
  CommandRun r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// `kc ARGS` with the binary under test.
inline CommandRun run_kc(const std::string& args) { return run_command(std::string(KC_BIN) + " " + args); }

}  // namespace kc_cli_test
