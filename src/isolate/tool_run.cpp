// kc — see tool_run.h.
#include "isolate/tool_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace kc::isolate::detail {

Result<ToolRun> run_tool(const std::vector<std::string>& argv, const std::string& out_path, double timeout_s,
                         std::string_view who) {
  if (argv.empty()) return invalid_argument(std::string(who) + ": nothing to run");
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return internal_error(std::string(who) + ": fork failed");
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so the deadline kills the whole tree
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  ToolRun r;
  for (;;) {
    const pid_t w = waitpid(pid, &r.status, WNOHANG);
    if (w == pid) break;
    if (w < 0) return internal_error(std::string(who) + ": waitpid failed");
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &r.status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return r;
}

}  // namespace kc::isolate::detail
