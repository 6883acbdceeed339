// kc — the gate between oracles in memory and forked workers (kc/isolate.h, OracleScope).
#include <condition_variable>
#include <mutex>

#include "kc/isolate.h"

namespace kc::isolate {

namespace {

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int scopes = 0;          // OracleScopes held, all threads
  int forks_waiting = 0;
  bool forking = false;
};
Gate& gate() {
  static Gate g;
  return g;
}
thread_local int t_scopes = 0;  // OracleScopes this thread holds

}  // namespace

OracleScope::OracleScope() {
  Gate& g = gate();
  std::unique_lock lk(g.mu);
  // A thread that already holds a scope never waits (it would wait on itself).
  if (t_scopes == 0) g.cv.wait(lk, [&] { return !g.forking && g.forks_waiting == 0; });
  ++g.scopes;
  ++t_scopes;
}

OracleScope::~OracleScope() {
  Gate& g = gate();
  std::lock_guard lk(g.mu);
  --g.scopes;
  --t_scopes;
  g.cv.notify_all();
}

namespace detail {

ForkExclusive::ForkExclusive() {
  Gate& g = gate();
  std::unique_lock lk(g.mu);
  ++g.forks_waiting;
  // A thread forking while it holds a scope itself (a worker restarted in the
  // middle of a sample) waits only for other forks: waiting for the other
  // threads' scopes could deadlock against a second such thread.
  g.cv.wait(lk, [&] { return !g.forking && (t_scopes > 0 || g.scopes == 0); });
  --g.forks_waiting;
  g.forking = true;
}

ForkExclusive::~ForkExclusive() {
  if (!owned_) return;
  Gate& g = gate();
  std::lock_guard lk(g.mu);
  g.forking = false;
  g.cv.notify_all();
}

}  // namespace detail

}  // namespace kc::isolate
