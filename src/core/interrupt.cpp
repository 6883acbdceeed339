// SIGINT/SIGTERM: a flag the engine reads between cases, and a thread that
// ends the processes kc started (a worker runs in its own process group, so
// the terminal's Ctrl-C never reaches it; kc has to end it).
#include "kc/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "kc/child.h"

namespace kc {

namespace {

std::atomic<int> g_signal{0};
int g_wake[2] = {-1, -1};  // the handler writes one byte; the watcher reads it

void on_signal(int sig) {
  const int saved = errno;
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  if (g_wake[1] >= 0) {
    const char b = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_wake[1], &b, 1);
  }
  errno = saved;
}

/// SIGKILL to every child of this process and its process group (a worker
/// leads its own group; the kernel process under it dies with it through its
/// parent-death signal).
void end_children() {
  const long self = getpid();
  for_each_process([&](long pid, long ppid, long pgrp) {
    if (ppid != self) return;
    if (pgrp == pid) kill(-static_cast<pid_t>(pid), SIGKILL);
    kill(static_cast<pid_t>(pid), SIGKILL);
  });
}

void watch() {
  char b = 0;
  for (;;) {
    const ssize_t n = ::read(g_wake[0], &b, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return;
  }
  // A case already past its worker's start may start another (its next
  // config): keep ending children until kc exits.
  for (;;) {
    end_children();
    usleep(20 * 1000);
  }
}

}  // namespace

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (pipe2(g_wake, O_CLOEXEC) != 0) g_wake[0] = g_wake[1] = -1;
    if (g_wake[0] >= 0) std::thread(watch).detach();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    // A second Ctrl-C has the default action: kc ends at once (the trace is
    // still whole records up to at most one cut line, which --resume cuts).
    sa.sa_flags = SA_RESTART | SA_RESETHAND;
    // A signal kc was started ignoring (nohup, a shell's background job) stays ignored.
    for (int sig : {SIGINT, SIGTERM}) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      sigaction(sig, &sa, nullptr);
    }
  });
}

bool interrupted() { return g_signal.load(std::memory_order_seq_cst) != 0; }

int interrupt_signal() { return g_signal.load(); }

}  // namespace kc
