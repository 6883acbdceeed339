// A hostile kernel cannot reach kc (docs/isolation.md). Each test is one
// attack, really carried out by a kernel in a worker: it asserts that kc (this
// test process) survives, the outcome the attack gets, and that nothing the
// kernel started is left running. Each runs twice: with the worker's
// namespaces, and with the fallback a host that refuses them gets
// (KC_ISOLATE_NO_NAMESPACES=1: one process group, a stricter seccomp filter).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "isolate/sandbox.h"
#include "kc/isolate.h"
#include "kc/report.h"

namespace kc::isolate {
namespace {

class HostileImpl : public Impl {
 public:
  /// backend "plugin": the strict profile (an allow-list); "opencl": a
  /// profile that allows everything but a list of refusals.
  /// `sandbox`: the profile its runtime declares (kc/declaration.h RuntimeTraits).
  explicit HostileImpl(std::function<Status(Call&)> fn, std::string_view sandbox = "strict") : fn_(std::move(fn)) {
    decl_.name = "hostile.scal";
    decl_.op = "scal";
    decl_.backend = "plugin";
    decl_.runtime.sandbox = sandbox;
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fn_(call); }

 private:
  Declaration decl_;
  std::function<Status(Call&)> fn_;
};

Call scal_call(std::int64_t n) {
  Call c;
  c.op = "scal";
  c.names = {"x"};
  c.roles = {Role::kInOut};
  c.tensors.emplace_back(DType::kF32, std::vector<std::int64_t>{n});
  for (std::int64_t i = 0; i < n; ++i) c.tensors[0].set(i, static_cast<double>(i));
  return c;
}

/// Processes named `comm` still running (zombies, already dead, not counted).
int running_named(const std::string& comm) {
  int found = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char buf[512];
    const std::string stat = std::string("/proc/") + e->d_name + "/stat";
    std::FILE* f = std::fopen(stat.c_str(), "r");
    if (!f) continue;
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* lp = std::strchr(buf, '(');
    const char* rp = std::strrchr(buf, ')');
    if (!lp || !rp || rp < lp) continue;
    if (std::string(lp + 1, rp) == comm && rp[2] != 'Z') ++found;
  }
  closedir(d);
  return found;
}

/// Polls for up to a second: kc's sweeps and PID 1's kill are asynchronous to /proc.
bool none_left(const std::string& comm) {
  for (int i = 0; i < 100; ++i) {
    if (running_named(comm) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// What the worker of this test mode gets: "namespaces" or "fallback".
class Hostile : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    fallback_ = std::string(GetParam()) == "fallback";
    if (fallback_) setenv("KC_ISOLATE_NO_NAMESPACES", "1", 1);
    else unsetenv("KC_ISOLATE_NO_NAMESPACES");
  }
  void TearDown() override { unsetenv("KC_ISOLATE_NO_NAMESPACES"); }
  bool fallback_ = false;
};

// Records errno of a failed call in x[slot] (0 when it succeeded).
void record(Call& c, std::int64_t slot, int rc) { c.t("x").set(slot, rc == 0 ? 0.0 : static_cast<double>(errno)); }

TEST_P(Hostile, KillingOrStoppingKcFails) {
  const pid_t kc = getpid();
  const HostileImpl impl([kc](Call& c) {
    c.t("x").set(0, static_cast<double>(getppid()));
    record(c, 1, kill(kc, SIGSTOP));  // kc's pid, as kc knows it
    record(c, 2, kill(kc, SIGKILL));
    record(c, 3, getppid() > 0 ? kill(getppid(), SIGKILL) : -1);
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  ASSERT_FALSE(o.failure) << o.status.message();
  // Still here, and not stopped: this line runs.
  if (!fallback_) {
    EXPECT_EQ(call.t("x").at(0), 0.0) << "kc is visible as the parent inside the namespace";
    EXPECT_EQ(call.t("x").at(1), ESRCH);  // no such process in the namespace
    EXPECT_EQ(call.t("x").at(2), ESRCH);
  } else if (detail::seccomp_built()) {
    EXPECT_EQ(call.t("x").at(1), EPERM);
    EXPECT_EQ(call.t("x").at(2), EPERM);
    EXPECT_EQ(call.t("x").at(3), EPERM);
  }
}

TEST_P(Hostile, KillingItsProcessGroupEndsOnlyTheWorker) {
  const HostileImpl impl([](Call&) {
    kill(0, SIGKILL);
    kill(-getpgrp(), SIGKILL);
    if (getpid() == 1) kill(-1, SIGKILL);  // everything, inside a namespace only
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  // PID 1 of a namespace survives signals sent from inside it; a worker
  // without one dies by its own hand. Either way kc carries on.
  if (o.failure) EXPECT_EQ(o.failure->to_string(), "CRASH(SIGKILL)") << o.status.message();
  else EXPECT_FALSE(fallback_ && !detail::seccomp_built());
}

TEST_P(Hostile, ADaemonDoesNotOutliveTheCall) {
  const std::string comm = std::string("kc-daemon-") + (GetParam()[0] == 'f' ? "f" : "n");
  auto daemon = [comm](Call& c) {
    const pid_t d = fork();
    if (d == 0) {
      setsid();  // refused: it stays where kc can end it
      prctl(PR_SET_NAME, comm.c_str());
      if (fork() == 0) prctl(PR_SET_NAME, comm.c_str());  // and a grandchild
      for (;;) {
        std::printf("still here\n");
        std::fflush(stdout);
        usleep(1000);
      }
    }
    c.t("x").set(0, d > 0 ? 1.0 : -static_cast<double>(errno));
    usleep(20000);  // let it start
    return ok_status();
  };
  {
    // The strict profile's allow-list has threads, not processes: fork is EPERM.
    const HostileImpl impl(daemon);
    Call call = scal_call(8);
    Worker w(impl, Mode::kProcess, Limits{});
    const Outcome o = w.run(call);
    ASSERT_FALSE(o.failure) << o.status.message();
    if (detail::seccomp_built()) {
      EXPECT_EQ(call.t("x").at(0), -EPERM) << "fork was not refused";
    }
    EXPECT_TRUE(none_left(comm));
  }
  // A profile that allows fork (opencl): the daemon is ended with the call.
  const HostileImpl impl(daemon, "opencl");  // the sandbox profile OpenCL impls declare
  Call call = scal_call(8);
  {
    Worker w(impl, Mode::kProcess, Limits{});
    const Outcome o = w.run(call);
    ASSERT_FALSE(o.failure) << o.status.message();
    EXPECT_EQ(call.t("x").at(0), 1.0);
    EXPECT_TRUE(none_left(comm)) << "a process the kernel forked outlived its call";
    // The worker still serves the next call.
    Call again = scal_call(8);
    EXPECT_FALSE(w.run(again).failure);
    EXPECT_TRUE(none_left(comm));
  }
  EXPECT_TRUE(none_left(comm)) << "a process the kernel forked outlived its worker";
}

TEST_P(Hostile, AWriteAfterReturnIsALateWrite) {
  // A thread left running writes the output 10 ms after the call returned.
  const HostileImpl impl([](Call& c) {
    float* x = c.t("x").data<float>();
    std::thread([x] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      x[1] = 12345.0f;
    }).detach();
    return ok_status();
  });
  {
    // Within the settle window: this call's verdict.
    Limits limits;
    limits.settle_s = 0.1;
    Call call = scal_call(8);
    Worker w(impl, Mode::kProcess, limits);
    const Outcome o = w.run(call);
    ASSERT_TRUE(o.failure);
    EXPECT_EQ(o.failure->to_string(), "LATE_WRITE(x)") << o.status.message();
  }
  {
    // After it: the worker's next call reports it.
    Limits limits;
    limits.settle_s = 0.001;
    Call call = scal_call(8);
    Worker w(impl, Mode::kProcess, limits);
    const Outcome first = w.run(call);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const Outcome second = w.run(call);
    const Outcome& late = first.failure ? first : second;  // a slow machine may catch it at once
    ASSERT_TRUE(late.failure);
    EXPECT_EQ(late.failure->to_string(), "LATE_WRITE(x)") << late.status.message();
  }
}

float* g_alarm_target = nullptr;
void write_on_alarm(int) {
  if (g_alarm_target) g_alarm_target[1] = 12345.0f;
}

TEST_P(Hostile, AWriteFromATimerArmedInTheCallIsALateWriteOnThatCall) {
  // No thread is left running, but an interval timer is armed: its handler
  // writes the output 20 ms after the call returned, within the settle window.
  const HostileImpl impl([](Call& c) {
    g_alarm_target = c.t("x").data<float>();
    struct sigaction sa {};
    sa.sa_handler = write_on_alarm;
    sigaction(SIGALRM, &sa, nullptr);
    itimerval t{};
    t.it_value.tv_usec = 20000;
    setitimer(ITIMER_REAL, &t, nullptr);
    return ok_status();
  });
  Limits limits;
  limits.settle_s = 0.5;
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, limits);
  const Outcome o = w.run(call);
  ASSERT_TRUE(o.failure) << "the reply did not wait for the armed timer";
  EXPECT_EQ(o.failure->to_string(), "LATE_WRITE(x)") << o.status.message();
}

TEST_P(Hostile, AReplyWaitsNoSettleWindowWhenNothingIsLeftRunning) {
  // A kernel that starts nothing: three calls, each of which would wait 3 s
  // if the window applied, take much less than one window together.
  const HostileImpl impl([](Call& c) {
    c.t("x").data<float>()[0] = 1.0f;
    return ok_status();
  });
  Limits limits;
  limits.settle_s = 3.0;
  Worker w(impl, Mode::kProcess, limits);
  Call call = scal_call(8);
  ASSERT_FALSE(w.run(call).failure);  // the worker's start is not counted
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(w.run(call).failure);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
}

TEST_P(Hostile, ALateWriteToAnEarlierLayoutsBufferIsStillCaught) {
  // The running worker takes on the next layout while a thread the kernel
  // left behind is still asleep; its write to the old buffer is a late write.
  const HostileImpl impl([](Call& c) {
    float* x = c.t("x").data<float>();
    if (c.t("x").numel() == 8) {
      std::thread([x] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        x[1] = 12345.0f;
      }).detach();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
    }
    return ok_status();
  });
  Limits limits;
  limits.settle_s = 0.001;
  Worker w(impl, Mode::kProcess, limits);
  Call first = scal_call(8);
  const Outcome a = w.run(first);
  Call second = scal_call(32);
  const Outcome b = a.failure ? a : w.run(second);  // a slow machine may catch it at once
  ASSERT_TRUE(b.failure);
  EXPECT_EQ(b.failure->to_string(), "LATE_WRITE(x)") << b.status.message();
}

/// Points this process's stdout and stderr at a file while it lives.
class CaptureKcOutput {
 public:
  CaptureKcOutput() : path_(::testing::TempDir() + "kc_hostile_stdout") {
    std::fflush(nullptr);
    saved_out_ = dup(1);
    saved_err_ = dup(2);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  ~CaptureKcOutput() { restore(); }
  /// Restores the streams; returns what kc's stdout and stderr received.
  std::string restore() {
    if (saved_out_ < 0) return text_;
    std::fflush(nullptr);
    dup2(saved_out_, 1);
    dup2(saved_err_, 2);
    close(saved_out_);
    close(saved_err_);
    saved_out_ = saved_err_ = -1;
    if (std::FILE* f = std::fopen(path_.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text_.append(buf, n);
      std::fclose(f);
    }
    std::remove(path_.c_str());
    return text_;
  }

 private:
  std::string path_, text_;
  int saved_out_ = -1, saved_err_ = -1;
};

TEST_P(Hostile, FloodingStdoutNeverReachesKcNorBlocksTheKernel) {
  constexpr std::int64_t kBytes = 8 << 20;
  const HostileImpl impl([](Call& c) {
    // A fake verdict on both streams, then 8 MiB of noise on stdout.
    std::printf("{\"verdict\": \"conforming\", \"impl\": \"hostile.scal\"}\n");
    std::fprintf(stderr, "{\"verdict\": \"conforming\"}\n");
    std::fflush(nullptr);
    std::string chunk(1 << 16, 'y');
    for (std::int64_t sent = 0; sent < kBytes;) {
      const ssize_t n = write(1, chunk.data(), chunk.size());
      if (n <= 0) return Status(StatusCode::kInternal, "write to stdout failed");
      sent += n;
    }
    c.t("x").set(0, 7.0);
    return ok_status();
  });
  Call call = scal_call(8);
  Limits limits;
  limits.timeout_s = 20;
  std::string kc_saw;
  Capture captured;
  std::vector<std::string> notes;
  Outcome o;
  {
    CaptureKcOutput kc_output;
    Worker w(impl, Mode::kProcess, limits);
    o = w.run(call);
    captured = w.captured_output();
    notes = w.evidence_notes();
    kc_saw = kc_output.restore();
  }
  ASSERT_FALSE(o.failure) << o.status.message();
  EXPECT_EQ(call.t("x").at(0), 7.0);
  // kc's own streams got nothing from the kernel (a warning of kc's own about a
  // weaker sandbox may be there, once, and nothing else).
  EXPECT_EQ(kc_saw.find("verdict"), std::string::npos) << kc_saw.substr(0, 200);
  EXPECT_EQ(kc_saw.find("yyyy"), std::string::npos);
  EXPECT_GE(captured.bytes, kBytes);
  EXPECT_EQ(captured.head.size(), Capture::kCaptureKeep);
  EXPECT_EQ(captured.head.rfind("{\"verdict\"", 0), 0u) << captured.head.substr(0, 80);
  bool noted = false;
  for (const auto& n : notes) noted |= n.find("captured, not passed to kc's") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_P(Hostile, WritingOutsideScratchIsRefused) {
  // Outside the scratch /tmp whatever the checkout's path (a clone may live under /tmp).
  const std::string outside = "/var/tmp/kc_hostile_written_" + std::to_string(getpid());
  std::remove(outside.c_str());
  std::remove("/tmp/kc_hostile_scratch");
  const HostileImpl impl([outside](Call& c) {
    const int fd = open(outside.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    c.t("x").set(0, fd >= 0 ? 0.0 : static_cast<double>(errno));
    if (fd >= 0) close(fd);
    // The private scratch directory works (namespaces) or is refused too (fallback).
    const int s = open("/tmp/kc_hostile_scratch", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    c.t("x").set(1, s >= 0 ? 0.0 : static_cast<double>(errno));
    if (s >= 0) close(s);
    c.t("x").set(2, unlink(outside.c_str()) == 0 ? 0.0 : static_cast<double>(errno));
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  ASSERT_FALSE(o.failure) << o.status.message();
  if (!fallback_ || detail::seccomp_built()) {
    EXPECT_NE(call.t("x").at(0), 0.0) << "a file outside the scratch directory was opened for writing";
    struct stat st {};
    EXPECT_NE(stat(outside.c_str(), &st), 0) << outside << " exists";
  }
  if (!fallback_) {
    EXPECT_EQ(call.t("x").at(0), EROFS);
    EXPECT_EQ(call.t("x").at(1), 0.0) << "the scratch /tmp is not writable";
    struct stat st {};
    EXPECT_NE(stat("/tmp/kc_hostile_scratch", &st), 0) << "the scratch /tmp is kc's /tmp";
  } else if (detail::seccomp_built()) {
    EXPECT_EQ(call.t("x").at(0), EPERM);
    EXPECT_EQ(call.t("x").at(1), EPERM);
  }
  std::remove(outside.c_str());
}

TEST_P(Hostile, NoNetwork) {
  const HostileImpl impl([](Call& c) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    c.t("x").set(0, s >= 0 ? 0.0 : static_cast<double>(errno));
    if (s >= 0) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(80);
      addr.sin_addr.s_addr = htonl(0x7f000001);
      c.t("x").set(1, connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0.0 : errno);
      close(s);
    }
    const int u = socket(AF_UNIX, SOCK_STREAM, 0);
    c.t("x").set(2, u >= 0 ? 0.0 : static_cast<double>(errno));
    if (u >= 0) close(u);
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  ASSERT_FALSE(o.failure) << o.status.message();
  if (!detail::seccomp_built()) GTEST_SKIP() << "built without libseccomp: sockets are not filtered";
  EXPECT_EQ(call.t("x").at(0), EPERM);
  EXPECT_EQ(call.t("x").at(2), EPERM);
}

TEST_P(Hostile, KcsMemoryAndCommandLineAreOutOfReach) {
  const pid_t kc = getpid();
  const HostileImpl impl([kc](Call& c) {
    const std::string proc = "/proc/" + std::to_string(kc);
    const int mem = open((proc + "/mem").c_str(), O_RDONLY);
    c.t("x").set(0, mem >= 0 ? 0.0 : static_cast<double>(errno));
    if (mem >= 0) close(mem);
    const int cmd = open((proc + "/cmdline").c_str(), O_RDONLY);
    c.t("x").set(1, cmd >= 0 ? 0.0 : static_cast<double>(errno));
    if (cmd >= 0) close(cmd);
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, Limits{});
  const Outcome o = w.run(call);
  ASSERT_FALSE(o.failure) << o.status.message();
  if (!fallback_) {
    EXPECT_EQ(call.t("x").at(0), ENOENT) << "kc's /proc/PID/mem is visible";
    EXPECT_EQ(call.t("x").at(1), ENOENT) << "kc's /proc/PID/cmdline is visible";
  } else if (geteuid() == 0) {
    // The kernel runs as nobody: kc's memory needs kc's user or CAP_SYS_PTRACE.
    EXPECT_NE(call.t("x").at(0), 0.0) << "kc's /proc/PID/mem opened from a worker";
  }
}

TEST_P(Hostile, TheWorkerSaysWhatItsSandboxLacks) {
  const HostileImpl impl([](Call&) { return ok_status(); });
  Call call = scal_call(8);
  std::string kc_saw;
  std::vector<std::string> notes;
  {
    CaptureKcOutput kc_output;
    Worker w(impl, Mode::kProcess, Limits{});
    EXPECT_FALSE(w.run(call).failure);
    notes = w.evidence_notes();
    kc_saw = kc_output.restore();
  }
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  if (fallback_) {
    EXPECT_NE(all.find("no PID namespace"), std::string::npos) << all;
    EXPECT_NE(all.find("KC_ISOLATE_NO_NAMESPACES"), std::string::npos) << all;
    if (detail::seccomp_built()) {
      EXPECT_EQ(all.find("no seccomp filter"), std::string::npos) << all;
    }
  } else if (geteuid() == 0 && detail::seccomp_built()) {
    EXPECT_EQ(all, "") << "root with libseccomp gets the whole strict profile";
  }
}

/// Whether a process named `comm` is stopped (state T or t).
bool stopped_named(const std::string& comm) {
  DIR* d = opendir("/proc");
  if (!d) return false;
  bool found = false;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char buf[512];
    const std::string stat = std::string("/proc/") + e->d_name + "/stat";
    std::FILE* f = std::fopen(stat.c_str(), "r");
    if (!f) continue;
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* lp = std::strchr(buf, '(');
    const char* rp = std::strrchr(buf, ')');
    if (lp && rp && rp > lp && std::string(lp + 1, rp) == comm && (rp[2] == 'T' || rp[2] == 't')) found = true;
  }
  closedir(d);
  return found;
}

TEST_P(Hostile, AKernelThatStopsItselfIsATimeoutNotASilentKc) {
  // SIGSTOP cannot be caught: a stopped worker never answers. kc's deadline
  // does not depend on the worker's cooperation, so the call ends as TIMEOUT
  // (a namespace's PID 1 ignores a stop sent from inside: the call goes on).
  const std::string comm = std::string("kc-stopped-") + (fallback_ ? "f" : "n");
  const HostileImpl impl([comm](Call& c) {
    prctl(PR_SET_NAME, comm.c_str());
    kill(getpid(), SIGSTOP);
    raise(SIGSTOP);
    c.t("x").set(0, 1.0);  // reached only if the stops were ignored
    return ok_status();
  });
  Limits limits;
  limits.timeout_s = 0.5;
  Call call = scal_call(8);
  Worker w(impl, Mode::kProcess, limits);
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = w.run(call);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, limits.timeout_s + 3.0) << "kc waited on a stopped worker";
  if (o.failure) {
    EXPECT_EQ(o.failure->to_string(), "TIMEOUT(0.5s)") << o.status.message();
  } else {
    EXPECT_FALSE(fallback_) << "a worker without a PID namespace stopped itself and still answered";
    EXPECT_EQ(call.t("x").at(0), 1.0);
  }
  if (fallback_) {
    ASSERT_TRUE(o.failure);
  }
  for (int i = 0; i < 100 && stopped_named(comm); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(stopped_named(comm)) << "a stopped worker was left behind";
  // The next call gets a worker that runs.
  const HostileImpl honest([](Call& c) {
    c.t("x").set(0, 2.0);
    return ok_status();
  });
  Worker w2(honest, Mode::kProcess, limits);
  Call again = scal_call(8);
  EXPECT_FALSE(w2.run(again).failure);
  EXPECT_EQ(again.t("x").at(0), 2.0);
}

TEST_P(Hostile, ALeftoverThreadCannotRewriteTheTrace) {
  // kc's trace, outside the worker's scratch /tmp (a checkout may live under /tmp).
  const std::string dir = "/var/tmp/kc_hostile_trace_" + std::to_string(getpid()) + (fallback_ ? "_f" : "_n");
  const std::string path = dir + "/trace.jsonl";
  std::filesystem::remove_all(dir);
  auto trace = report::TraceWriter::open(path);
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  ASSERT_TRUE(trace->append_body("{\"record\":1}").ok());
  ASSERT_TRUE(trace->append_body("{\"record\":2}").ok());
  const auto read_all = [&] {
    std::string text;
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    return text;
  };
  const std::string written = read_all();

  // The kernel knows the path (the worker is a copy of kc's memory). It tries
  // at once, then leaves a thread that keeps trying after the call returned,
  // and tries to fork a process that would outlive the call.
  static std::atomic<int> opened{0};
  opened = 0;
  auto attack = [path, dir] {
    const int flags[] = {O_WRONLY | O_APPEND, O_WRONLY | O_TRUNC, O_RDWR, O_WRONLY | O_CREAT | O_TRUNC};
    for (int f : flags) {
      const int fd = open(path.c_str(), f | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ++opened;
        const char junk[] = "{\"prev\":\"forged\"}\n";
        if (write(fd, junk, sizeof junk - 1) < 0) {
        }
        close(fd);
      }
    }
    const std::string fake = dir + "/forged.jsonl";
    const int fd = open(fake.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ++opened;
      close(fd);
    }
    if (rename(fake.c_str(), path.c_str()) == 0) ++opened;
    if (unlink(path.c_str()) == 0) ++opened;
    if (truncate(path.c_str(), 0) == 0) ++opened;
  };
  const HostileImpl impl([attack](Call& c) {
    attack();
    std::thread([attack] {
      for (int i = 0; i < 30; ++i) {
        attack();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }).detach();
    const pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 30; ++i) {
        attack();
        usleep(10000);
      }
      _exit(0);
    }
    c.t("x").set(0, child > 0 ? 1.0 : 0.0);
    c.t("x").set(1, static_cast<double>(opened.load()));
    return ok_status();
  });
  Call call = scal_call(8);
  {
    Worker w(impl, Mode::kProcess, Limits{});
    const Outcome o = w.run(call);
    ASSERT_FALSE(o.failure) << o.status.message();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the leftover thread has given up
    Call again = scal_call(8);
    EXPECT_FALSE(w.run(again).failure);
  }
  if (!fallback_ || detail::seccomp_built()) {
    EXPECT_EQ(call.t("x").at(0), 0.0) << "the strict profile let the kernel fork";
    EXPECT_EQ(call.t("x").at(1), 0.0) << "the kernel opened, renamed or removed the trace";
    EXPECT_EQ(read_all(), written) << "the trace is not as kc wrote it";
    // kc appends on, and the chain holds.
    ASSERT_TRUE(trace->append_body("{\"record\":3}").ok());
    auto n = report::verify_trace(path);
    ASSERT_TRUE(n.ok()) << n.status().to_string();
    EXPECT_EQ(*n, 3u);
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Sandbox, Hostile, ::testing::Values("namespaces", "fallback"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFtzDaz = (1u << 15) | (1u << 6);

// --isolate none: the kernel runs on kc's thread and sets FTZ and DAZ; kc's
// own arithmetic after the call is IEEE again, and the case's evidence says so.
TEST(HostileInProcess, FtzLeftSetDoesNotBecomeKcs) {
  const HostileImpl impl([](Call& c) {
    _mm_setcsr(_mm_getcsr() | kFtzDaz);
    c.t("x").set(0, 1.0);
    return ok_status();
  });
  Call call = scal_call(8);
  Worker w(impl, Mode::kNone, Limits{});
  ASSERT_FALSE(w.run(call).failure);
  EXPECT_EQ(_mm_getcsr() & kFtzDaz, 0u) << "the kernel's FTZ/DAZ leaked into kc's thread";
  volatile double tiny = 1e-310;  // subnormal: flushed under FTZ/DAZ
  EXPECT_NE(tiny * 1.0, 0.0);
  std::string all;
  for (const auto& n : w.evidence_notes()) all += n;
  EXPECT_NE(all.find("FTZ set"), std::string::npos) << all;
}

TEST(HostileInProcess, FpEnvScopeGivesKcTheDefaultAndRestores) {
  const unsigned before = _mm_getcsr();
  _mm_setcsr(before | kFtzDaz);
  {
    const FpEnvScope scope;
    EXPECT_EQ(_mm_getcsr() & kFtzDaz, 0u);
    EXPECT_FALSE(fp_env_changed());
    volatile float tiny = 1e-40f;
    EXPECT_NE(tiny * 1.0f, 0.0f);
  }
  EXPECT_EQ(_mm_getcsr() & kFtzDaz, kFtzDaz);
  _mm_setcsr(before);
}
#endif

}  // namespace
}  // namespace kc::isolate
