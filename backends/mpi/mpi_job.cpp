// kc — the mpirun job behind the mpi backend (see mpi_job.h).
#include "backends/mpi/mpi_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "kc/message.h"

extern char** environ;

namespace kc::backends::mpi {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Waits up to `seconds` for `events` on fd; false on timeout or error.
bool wait_fd(int fd, short events, double seconds) {
  pollfd p{fd, events, 0};
  const int ms = static_cast<int>(seconds * 1000);
  while (true) {
    const int rc = ::poll(&p, 1, ms);
    if (rc < 0 && errno == EINTR) continue;
    return rc > 0;
  }
}

/// Sends all bytes, or false (peer gone, or nothing moved for `seconds`).
bool send_all(int fd, const void* p, std::size_t bytes, double seconds) {
  const auto* c = static_cast<const char*>(p);
  while (bytes > 0) {
    if (!wait_fd(fd, POLLOUT, seconds)) return false;
    const ssize_t put = ::send(fd, c, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (put <= 0) return false;
    c += put;
    bytes -= static_cast<std::size_t>(put);
  }
  return true;
}

enum class Recv { kOk, kClosed, kTimeout };

Recv recv_all(int fd, void* p, std::size_t bytes, double seconds) {
  auto* c = static_cast<char*>(p);
  while (bytes > 0) {
    if (!wait_fd(fd, POLLIN, seconds)) return Recv::kTimeout;
    const ssize_t got = ::recv(fd, c, bytes, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got <= 0) return Recv::kClosed;
    c += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return Recv::kOk;
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::vector<std::string> mpirun_argv(const JobOptions& o, int world, const std::string& socket_path) {
  std::vector<std::string> a = {o.mpirun};
  // OpenMPI refuses to start as root unless told (mpirun(1), "--allow-run-as-root").
  if (::geteuid() == 0) a.push_back("--allow-run-as-root");
  // More ranks than cores (32 ranks on 2 cores): --oversubscribe also makes idle
  // ranks yield (mpirun(1), "Oversubscribing nodes"); --bind-to none keeps 32
  // ranks from being pinned to 2 cores' worth of slots.
  a.insert(a.end(), {"--oversubscribe", "--bind-to", "none", "-np", std::to_string(world),
                     // One machine: shared memory (vader) and self only, no network
                     // probing; ob1 is the PML that drives them. No single-copy
                     // (CMA/ptrace) mechanism, which containers often forbid.
                     "--mca", "btl", "self,vader", "--mca", "pml", "ob1", "--mca",
                     "btl_vader_single_copy_mechanism", "none",
                     // Lets a request force coll/tuned's algorithm (kc_mpi_worker.cc).
                     "--mca", "coll_tuned_use_dynamic_rules", "1", o.worker, socket_path});
  return a;
}

Job::~Job() {
  std::lock_guard<std::mutex> lock(mu_);
  stop(true);
}

std::string Job::log_tail() const {
  std::ifstream f(dir_ + "/mpirun.log");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  if (s.size() > 1500) s = "..." + s.substr(s.size() - 1500);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "(mpirun printed nothing)" : s;
}

Status Job::fail(StatusCode code, const std::string& what) {
  const std::string tail = dir_.empty() ? "" : log_tail();
  stop(false);
  return Status(code, what + (tail.empty() ? "" : "; mpirun output: " + tail));
}

Status Job::start(int world) {
  const auto t0 = Clock::now();
  char tmpl[] = "/tmp/kc-mpi-XXXXXX";
  if (!::mkdtemp(tmpl)) return unavailable(errno_text("mkdtemp /tmp/kc-mpi-XXXXXX"));
  dir_ = tmpl;
  const std::string sock_path = dir_ + "/socket";
  const int lfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock_path.c_str(), sizeof addr.sun_path - 1);
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 1) != 0) {
    const std::string e = errno_text("cannot listen on a Unix socket");
    if (lfd >= 0) ::close(lfd);
    return fail(StatusCode::kUnavailable, e);
  }

  const std::vector<std::string> args = mpirun_argv(options_, world, sock_path);
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  const std::string log = dir_ + "/mpirun.log";
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a stuck job is killed whole (mpirun and ranks).
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const int rc = ::posix_spawn(&pid_, options_.mpirun.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    pid_ = -1;
    ::close(lfd);
    return fail(StatusCode::kUnavailable, "cannot start " + options_.mpirun + ": " + std::strerror(rc));
  }
  ++launches_;

  // Rank 0 connects once MPI_Init is done; meanwhile mpirun may fail and exit.
  while (true) {
    if (wait_fd(lfd, POLLIN, 0.1)) break;
    int wstatus = 0;
    if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      ::close(lfd);
      return fail(StatusCode::kUnavailable, "mpirun exited before kc-mpi-worker connected");
    }
    if (since(t0) > options_.start_timeout_s) {
      ::close(lfd);
      return fail(StatusCode::kDeadlineExceeded, "kc-mpi-worker did not connect within " +
                                                     std::to_string(static_cast<int>(options_.start_timeout_s)) + " s");
    }
  }
  fd_ = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(lfd);
  if (fd_ < 0) return fail(StatusCode::kUnavailable, errno_text("accept"));
  world_ = world;
  const double took = since(t0);
  launch_seconds_ += took;
  if (options_.verbose) {
    char line[128];
    std::snprintf(line, sizeof line, "mpi: started an mpirun job of %d ranks in %.2f s (launch %d)", world, took,
                  launches_);
    say(line);
  }
  return ok_status();
}

Status Job::shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string problem = stop(true);
  return problem.empty() ? ok_status() : Status(StatusCode::kCrashed, problem);
}

std::string Job::stop(bool graceful) {
  std::string problem;
  if (fd_ >= 0 && graceful) {
    mpi_wire::RequestHeader bye;  // collective 0 = shutdown
    send_all(fd_, &bye, sizeof bye, 1.0);
  }
  if (fd_ >= 0) ::close(fd_);  // rank 0 reads EOF: the job shuts down in any case
  fd_ = -1;
  if (pid_ > 0) {
    const auto t0 = Clock::now();
    int wstatus = 0;
    bool reaped = false;
    while (graceful && since(t0) < 10) {
      if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
        reaped = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!reaped) {
      // SIGTERM first: mpirun forwards it to the ranks and reaps them (its
      // local ranks may sit in process groups of their own); then the group.
      ::kill(pid_, SIGTERM);
      const auto t1 = Clock::now();
      while (since(t1) < 3) {
        if (::waitpid(pid_, &wstatus, WNOHANG) == pid_) {
          reaped = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (!reaped) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, &wstatus, 0);
      }
      if (graceful) problem = "mpirun did not exit within 10 s of the shutdown request";
    } else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      problem = WIFEXITED(wstatus) ? "mpirun exited with status " + std::to_string(WEXITSTATUS(wstatus))
                                   : "mpirun ended by signal " + std::to_string(WTERMSIG(wstatus));
    }
    if (!problem.empty() && !dir_.empty()) problem += "; mpirun output: " + log_tail();
  }
  pid_ = -1;
  world_ = 0;
  if (!dir_.empty()) {
    ::unlink((dir_ + "/socket").c_str());
    ::unlink((dir_ + "/mpirun.log").c_str());
    ::rmdir(dir_.c_str());
    dir_.clear();
  }
  return problem;
}

Result<std::vector<float>> Job::run(mpi_wire::Collective collective, int ranks, int n, int algorithm,
                                    mpi_wire::WireType wire, std::span<const float> in) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ranks < 1 || n < 0 || in.size() != static_cast<std::size_t>(ranks) * static_cast<std::size_t>(n))
    return invalid_argument("mpi job: input is not ranks x n floats");
  if (fd_ >= 0 && world_ < ranks) stop(true);  // a bigger job replaces this one
  if (fd_ < 0) KC_RETURN_IF_ERROR(start(std::max(ranks, options_.world)));

  mpi_wire::RequestHeader h;
  h.collective = static_cast<std::int32_t>(collective);
  h.ranks = ranks;
  h.n = n;
  h.algorithm = algorithm;
  h.wire = static_cast<std::int32_t>(wire);
  if (!send_all(fd_, &h, sizeof h, options_.timeout_s) ||
      !send_all(fd_, in.data(), in.size() * sizeof(float), options_.timeout_s))
    return fail(StatusCode::kCrashed, "the mpirun job stopped taking requests");
  mpi_wire::ReplyHeader r;
  Recv got = recv_all(fd_, &r, sizeof r, options_.timeout_s);
  if (got == Recv::kTimeout)
    return fail(StatusCode::kDeadlineExceeded,
                "no reply from the mpirun job within " + std::to_string(static_cast<int>(options_.timeout_s)) + " s");
  if (got == Recv::kClosed || r.magic != mpi_wire::kMagic || r.count < 0 || r.count > (std::int64_t{1} << 32))
    return fail(StatusCode::kCrashed, "the mpirun job ended (or garbled its reply) during the collective");
  if (r.status != 0) {
    std::string text(static_cast<std::size_t>(r.count), '\0');
    if (recv_all(fd_, text.data(), text.size(), options_.timeout_s) != Recv::kOk)
      return fail(StatusCode::kCrashed, "the mpirun job ended while reporting an error");
    return kernel_raised(r.status < 0 ? "kc-mpi-worker rejected the request: " + text
                                      : "MPI error class " + std::to_string(r.status) + ": " + text);
  }
  std::vector<float> out(static_cast<std::size_t>(r.count));
  got = recv_all(fd_, out.data(), out.size() * sizeof(float), options_.timeout_s);
  if (got != Recv::kOk) return fail(StatusCode::kCrashed, "the mpirun job ended while sending its result");
  return out;
}

}  // namespace kc::backends::mpi
