// kc — the memory budget of concurrent workers (see kc/isolate.h MemoryBudget,
// docs/isolation.md "Memory budget").
//
// Two layers. The schedule runs at most budget / per-worker-limit workers at
// once, so the limits kc enforces on each worker add up to no more than the
// budget. Where a cgroup memory controller can be written (v2 memory.max, or
// v1 memory.limit_in_bytes), every worker also joins one kc cgroup whose limit
// is the budget, so the kernel holds the sum even where the per-worker watch
// does not reach (pages touched between two polls, processes a kernel forks,
// its scratch tmpfs).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

#include "isolate/sandbox.h"
#include "kc/isolate.h"

namespace kc::isolate {

namespace {

bool write_text(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

/// MemAvailable of /proc/meminfo, in bytes (0 if unknown).
std::int64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  long long kib = 0;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return static_cast<std::int64_t>(kib) * 1024;
  }
  return 0;
}

/// Where this process's cgroup of a hierarchy lies on disk: v2 ("" controller)
/// or the v1 hierarchy holding `controller`; empty if not mounted.
std::string own_cgroup_dir(bool v2, const std::string& controller) {
  std::string rel;
  {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string ctrls = line.substr(a + 1, b - a - 1);
      bool match = v2 ? (line.substr(0, a) == "0" && ctrls.empty()) : false;
      if (!v2) {
        std::stringstream ss(ctrls);
        for (std::string c; std::getline(ss, c, ',');) match |= c == controller;
      }
      if (match) rel = line.substr(b + 1);
    }
  }
  if (rel.empty()) return {};
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // id parent major:minor root mount-point options ... - fstype source super-options
    std::stringstream ss(line);
    std::string id, parent, dev, root, point;
    ss >> id >> parent >> dev >> root >> point;
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::stringstream tail(line.substr(dash + 3));
    std::string fstype, source, super;
    tail >> fstype >> source >> super;
    if (v2 ? fstype != "cgroup2" : (fstype != "cgroup" || ("," + super + ",").find("," + controller + ",") == std::string::npos))
      continue;
    std::string sub = rel;
    if (root != "/" && sub.rfind(root, 0) == 0) sub = sub.substr(root.size());
    return point + (sub == "/" ? "" : sub);
  }
  return {};
}

struct CgroupState {
  std::mutex mu;
  bool tried = false;
  std::string dir;        ///< the kc cgroup ("" if none could be made)
  std::string limit_file; ///< memory.max or memory.limit_in_bytes
  std::string why_not;
};
CgroupState& cgroup_state() {
  static CgroupState s;
  return s;
}

void remove_cgroup() {
  CgroupState& s = cgroup_state();
  if (!s.dir.empty()) ::rmdir(s.dir.c_str());  // empty by now: every worker has ended
}

/// Removes the empty kc-<pid> cgroups of kc processes that ended without
/// removing theirs (killed by a signal). rmdir refuses a cgroup that still
/// holds a process, so a live one is never touched.
void remove_stale(const std::string& base) {
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "kc-", 3) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(e->d_name + 3, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::rmdir((base + "/" + e->d_name).c_str());
  }
  ::closedir(d);
}

/// Makes (once per kc process) a cgroup for kc's workers under this process's
/// own cgroup, v2 first; the limit is written by memory_budget.
void make_cgroup(CgroupState& s) {
  s.tried = true;
  if (const char* off = std::getenv("KC_NO_CGROUP"); off && *off && std::strcmp(off, "0") != 0) {
    s.why_not = "turned off by KC_NO_CGROUP";
    return;
  }
  const std::string name = "/kc-" + std::to_string(::getpid());
  struct Kind {
    bool v2;
    const char* limit;
  };
  std::string tried;
  for (const Kind k : {Kind{true, "memory.max"}, Kind{false, "memory.limit_in_bytes"}}) {
    const std::string base = own_cgroup_dir(k.v2, "memory");
    if (base.empty()) continue;
    remove_stale(base);
    const std::string dir = base + name;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      tried += (tried.empty() ? "" : "; ") + std::string("mkdir ") + dir + ": " + std::strerror(errno);
      continue;
    }
    // v2: the parent must hand the memory controller down.
    if (k.v2 && !exists(dir + "/" + k.limit)) write_text(base + "/cgroup.subtree_control", "+memory");
    if (!exists(dir + "/" + k.limit)) {
      tried += (tried.empty() ? "" : "; ") + dir + ": no " + k.limit + " (memory controller not enabled)";
      ::rmdir(dir.c_str());
      continue;
    }
    s.dir = dir;
    s.limit_file = dir + "/" + k.limit;
    std::atexit(remove_cgroup);
    return;
  }
  s.why_not = tried.empty() ? "no cgroup memory controller is mounted" : tried;
}

}  // namespace

MemoryBudget memory_budget(int jobs, const Limits& limits) {
  MemoryBudget b;
  b.jobs = std::max(1, jobs);
  b.memory_bytes = limits.memory_bytes;
  const std::int64_t avail = available_memory();
  b.bytes = limits.budget_bytes > 0 ? limits.budget_bytes : avail;
  if (b.bytes <= 0) return b;  // nothing known
  const std::string budget = format_bytes(b.bytes);
  if (limits.memory_bytes <= 0) {
    // No per-worker limit: only a cgroup can hold the sum.
  } else if (limits.memory_bytes > b.bytes) {
    b.memory_bytes = b.bytes;
    b.jobs = 1;
    b.note = "memory budget " + budget + (limits.budget_bytes > 0 ? "" : " (available memory)") +
             " is below the per-worker limit " + format_bytes(limits.memory_bytes) +
             ": one worker at a time, each limited to " + budget;
  } else if (static_cast<std::int64_t>(b.jobs) * limits.memory_bytes > b.bytes) {
    const int fit = static_cast<int>(b.bytes / limits.memory_bytes);
    b.note = "memory budget " + budget + (limits.budget_bytes > 0 ? "" : " (available memory)") + " holds " +
             std::to_string(fit) + " worker(s) of " + format_bytes(limits.memory_bytes) + ": " +
             std::to_string(fit) + " of the " + std::to_string(b.jobs) + " jobs run at once";
    b.jobs = fit;
  }
  if (b.jobs > 1 || limits.budget_bytes > 0) {
    CgroupState& s = cgroup_state();
    const std::lock_guard<std::mutex> lock(s.mu);
    if (!s.tried) make_cgroup(s);
    if (!s.dir.empty() && write_text(s.limit_file, std::to_string(b.bytes))) {
      b.cgroup = s.dir;
      // No swapping out of the budget where the file exists (v2; v1 with swap accounting).
      write_text(s.dir + "/memory.swap.max", "0");
    } else {
      b.cgroup_why_not = s.dir.empty() ? s.why_not : s.limit_file + ": cannot write the limit";
    }
  }
  detail::set_worker_cgroup(b.cgroup);
  return b;
}

namespace detail {

namespace {
std::mutex g_cgroup_mu;
std::string g_cgroup_procs;  ///< cgroup.procs of the kc cgroup workers join ("" none)
}  // namespace

void set_worker_cgroup(const std::string& dir) {
  const std::lock_guard<std::mutex> lock(g_cgroup_mu);
  g_cgroup_procs = dir.empty() ? std::string() : dir + "/cgroup.procs";
}

std::int64_t cgroup_oom_kills(std::int64_t* budget) {
  std::string dir;
  {
    const std::lock_guard<std::mutex> lock(g_cgroup_mu);
    if (g_cgroup_procs.empty()) return -1;
    dir = g_cgroup_procs.substr(0, g_cgroup_procs.size() - std::string("/cgroup.procs").size());
  }
  const bool v2 = exists(dir + "/memory.events");
  if (budget) {
    std::ifstream lim(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    long long v = 0;
    *budget = (lim >> v) ? v : 0;
  }
  std::ifstream in(dir + (v2 ? "/memory.events" : "/memory.oom_control"));
  std::string key;
  long long n = 0;
  while (in >> key >> n)
    if (key == "oom_kill") return n;
  return -1;
}

std::string worker_cgroup_procs() {
  const std::lock_guard<std::mutex> lock(g_cgroup_mu);
  return g_cgroup_procs;
}

bool join_cgroup(const std::string& procs) {
  if (procs.empty()) return true;
  const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "0", 1) == 1;
  return ::close(fd) == 0 && ok;
}

}  // namespace detail

}  // namespace kc::isolate
