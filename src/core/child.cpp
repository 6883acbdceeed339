#include "kc/child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace kc {

Result<std::string> run_in_child(const std::function<Result<std::string>()>& fn, double timeout_s,
                                 std::string_view what, ChildEnd* end) {
  const std::string who(what);
  ChildEnd ignored;
  if (!end) end = &ignored;
  *end = ChildEnd{};
  const pid_t parent = getpid();
  int fds[2];
  if (pipe(fds) != 0) return internal_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return internal_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    // Its own process group (kc ends what it starts with it), and no life past kc's.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    Result<std::string> r = fn();
    // One code byte (0 = OK, else the StatusCode), then the text.
    const std::string text = r.ok() ? *r : r.status().message();
    std::string out(1, static_cast<char>(r.ok() ? 0 : static_cast<int>(r.status().code())));
    out += text;
    std::size_t off = 0;
    while (off < out.size()) {
      const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    // The device runtime's teardown is not ours to run, and the parent's
    // buffered output is not ours to repeat.
    _exit(0);
  }
  close(fds[1]);
  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  std::string got;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = poll(&p, 1, static_cast<int>(left.count()));
    if (pr <= 0) continue;  // EINTR or the deadline: the loop head decides
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(-pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // what the child started and left behind
  end->timed_out = timed_out;
  end->answered = !got.empty();
  if (!timed_out && WIFSIGNALED(ws)) end->signal = WTERMSIG(ws);
  if (!timed_out && WIFEXITED(ws)) end->exit_code = WEXITSTATUS(ws);
  if (timed_out) return unavailable(who + " gave no answer within " + std::to_string(timeout_s) + " s");
  if (WIFSIGNALED(ws))
    return unavailable(who + " died with signal " + std::to_string(WTERMSIG(ws)) + " (" + strsignal(WTERMSIG(ws)) +
                       ")");
  if (got.empty()) return unavailable(who + " exited without an answer");
  const int code = static_cast<unsigned char>(got[0]);
  std::string text = got.substr(1);
  if (code == 0) return text;
  if (code > static_cast<int>(StatusCode::kInternal)) return internal_error(text);
  return Status(static_cast<StatusCode>(code), text);
}

namespace {

std::atomic<ChildSandbox> g_sandbox{nullptr};

// The noted library files: append-only slots without a lock, since a forked
// child reads them while a thread of kc may have been noting one.
constexpr int kMaxLibraryFiles = 256;
std::atomic<const std::string*> g_files[kMaxLibraryFiles];
std::atomic<int> g_file_count{0};
int g_pinned[kMaxLibraryFiles];  // in a sandboxed child only: the descriptor, or -1
bool g_pinned_any = false;

/// Whether a sandbox would lose sight of `path`: it lies under /tmp, or
/// another user (nobody) cannot search a directory above it or read it.
bool needs_pin(const std::string& path) {
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real)) return false;
  const std::string r = real;
  if (r.rfind("/tmp/", 0) == 0) return true;
  struct stat st {};
  if (stat(real, &st) != 0 || !(st.st_mode & S_IROTH)) return true;
  for (std::size_t slash = r.rfind('/'); slash != std::string::npos && slash > 0; slash = r.rfind('/', slash - 1)) {
    if (stat(r.substr(0, slash).c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return true;
  }
  return false;
}

}  // namespace

Result<std::string> run_sandboxed_here(const std::function<Result<std::string>()>& fn) {
  const ChildSandbox sandbox = g_sandbox.load();
  return sandbox ? sandbox(fn) : fn();
}

void set_child_sandbox(ChildSandbox sandbox) { g_sandbox.store(sandbox); }

void for_each_process(const std::function<void(long pid, long ppid, long pgrp)>& fn) {
  const long self = getpid();
  DIR* d = opendir("/proc");
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    char path[64], buf[512];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const char* rp = std::strrchr(buf, ')');
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (rp && std::sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3) fn(pid, ppid, pgrp);
  }
  closedir(d);
}

void note_library_file(const std::string& path) {
  const int n = std::min(g_file_count.load(std::memory_order_acquire), kMaxLibraryFiles);
  for (int i = 0; i < n; ++i) {
    const std::string* p = g_files[i].load(std::memory_order_acquire);
    if (p && *p == path) return;
  }
  const int slot = g_file_count.fetch_add(1, std::memory_order_acq_rel);
  if (slot < kMaxLibraryFiles) g_files[slot].store(new std::string(path), std::memory_order_release);
}

void pin_library_files() {
  const int n = std::min(g_file_count.load(std::memory_order_acquire), kMaxLibraryFiles);
  for (int i = 0; i < kMaxLibraryFiles; ++i) g_pinned[i] = -1;
  for (int i = 0; i < n; ++i) {
    const std::string* p = g_files[i].load(std::memory_order_acquire);
    if (!p || !needs_pin(*p)) continue;
    g_pinned[i] = open(p->c_str(), O_RDONLY | O_CLOEXEC);
    g_pinned_any = g_pinned_any || g_pinned[i] >= 0;
  }
}

std::string library_path(const std::string& path) {
  if (!g_pinned_any) return path;
  const int n = std::min(g_file_count.load(std::memory_order_acquire), kMaxLibraryFiles);
  for (int i = 0; i < n; ++i) {
    const std::string* p = g_files[i].load(std::memory_order_acquire);
    if (p && *p == path && g_pinned[i] >= 0) return "/proc/self/fd/" + std::to_string(g_pinned[i]);
  }
  return path;
}

namespace {

std::mutex& started_mutex() {
  static std::mutex m;
  return m;
}

std::set<std::string, std::less<>>& started() {
  static std::set<std::string, std::less<>> s;
  return s;
}

}  // namespace

void note_runtime_started(std::string_view runtime) {
  std::lock_guard<std::mutex> lock(started_mutex());
  started().emplace(runtime);
}

bool runtime_started(std::string_view runtime) {
  std::lock_guard<std::mutex> lock(started_mutex());
  return started().find(runtime) != started().end();
}

}  // namespace kc
