// kc — case scheduling: which cases may share the machine, and an ordered
// parallel runner (src/engine/schedule.h, kc/engine.h case_schedule).
#include "engine/schedule.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kc/engine.h"
#include "kc/isolate.h"
#include "kc/message.h"
#include "kc/plan.h"
#include "kc/signature.h"

namespace kc::engine {

int effective_jobs(int jobs) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // GCC 12's sanitizer runtimes do not make fork() safe while other threads
  // allocate: a worker forked then can deadlock inside the allocator (seen as
  // TIMEOUT(60s) verdicts in the ASan test run). Sanitizer builds run cases
  // one at a time; the verdicts are the same (cases are independent).
  (void)jobs;
  return 1;
#else
  if (jobs > 0) return jobs;
  // A job is two processes taking turns, kc's thread (inputs, oracle,
  // judgement) and its worker (the kernel), and both also wait: for a
  // worker's start and exit, and in the settle window after a call. With one
  // job per hardware thread those waits leave cores idle; half as many jobs
  // again fill them. Cases that must have the machine to themselves run alone
  // whatever the count (case_schedule).
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return threads + (threads + 1) / 2;
#endif
}

int budgeted_jobs(int jobs, CheckRequest& request, std::vector<std::string>* notes) {
  // In-process kernels have no worker to hold to a budget.
  if (request.isolation == isolate::Mode::kNone) return jobs;
  const isolate::MemoryBudget b = isolate::memory_budget(jobs, request.limits);
  request.limits.memory_bytes = b.memory_bytes;
  std::vector<std::string> said;
  if (!b.note.empty()) said.push_back(b.note);
  if (!b.cgroup.empty()) {
    said.push_back("workers share the cgroup " + b.cgroup + " limited to the memory budget " +
                   isolate::format_bytes(b.bytes));
  } else if (!b.note.empty() || request.limits.budget_bytes > 0) {
    said.push_back("no cgroup holds the memory budget (" + b.cgroup_why_not +
                   "): it is kept by running fewer workers at once, each under its own limit");
  }
  // Said as it happens (kc/message.h) when the budget changed something or was
  // asked for; always in the report.
  const bool tell = !b.note.empty() || request.limits.budget_bytes > 0;
  for (const auto& n : said) {
    if (tell) say_once(n);
    if (notes) notes->push_back(n);
  }
  return b.jobs;
}

void run_ordered(std::size_t n, int jobs, const std::function<bool(std::size_t)>& serial,
                 const std::function<void(std::size_t)>& work, const std::function<void(std::size_t)>& record) {
  if (jobs <= 1) {
    for (std::size_t i = 0; i < n; ++i) {
      work(i);
      record(i);
    }
    return;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<char> done(n, 0);
  std::deque<std::size_t> queue;
  int running = 0;  // queued or executing on a pool thread
  bool stop = false;
  std::size_t next_record = 0;

  std::vector<std::thread> pool;
  for (int t = 0; t < jobs; ++t) {
    pool.emplace_back([&] {
      std::unique_lock lk(mu);
      for (;;) {
        cv.wait(lk, [&] { return stop || !queue.empty(); });
        if (queue.empty()) return;
        const std::size_t i = queue.front();
        queue.pop_front();
        lk.unlock();
        work(i);
        lk.lock();
        done[i] = 1;
        --running;
        cv.notify_all();
      }
    });
  }
  // Records every finished case at the head of the order; called with lk held.
  auto drain = [&](std::unique_lock<std::mutex>& lk) {
    while (next_record < n && done[next_record]) {
      const std::size_t i = next_record++;
      lk.unlock();
      record(i);
      lk.lock();
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    const bool alone = serial(i);
    std::unique_lock lk(mu);
    for (;;) {
      drain(lk);
      if (alone ? running == 0 : running < jobs) break;
      cv.wait(lk);
    }
    if (alone) {
      lk.unlock();
      work(i);
      lk.lock();
      done[i] = 1;
      drain(lk);
    } else {
      ++running;
      queue.push_back(i);
      cv.notify_all();
    }
  }
  {
    std::unique_lock lk(mu);
    for (;;) {
      drain(lk);
      if (next_record == n) break;
      cv.wait(lk);
    }
    stop = true;
    cv.notify_all();
  }
  for (auto& th : pool) th.join();
}

CaseSchedule case_schedule(const Contract& contract, const Impl& impl, const CheckRequest& request) {
  const Declaration& decl = impl.declaration();
  // In-process kernels share kc's address space and threads: nothing contains
  // them, and two at once could disturb each other.
  if (request.isolation == isolate::Mode::kNone) return {false, "in-process (--isolate=none)"};
  if (!isolate::runtime_traits(decl).survives_fork) return {false, "in-process (runtime not fork-safe)"};
  if (request.timing_calls > 0) return {false, "timed (--timing)"};
  // Measurements other cases would disturb: time (the contract names
  // TIMING_IMPLAUSIBLE or aggregates a time metric) and determinism (repeated
  // invocations compared bitwise, "varied concurrency" being the contract's to set).
  for (const auto& sig : contract.violation.signatures)
    if (sig.name == sig::kTimingImplausible || sig.name == sig::kNondeterministic) return {false, "measures " + sig.name};
  if (contract.measure.aggregate) {
    const std::string& m = contract.measure.aggregate->metric;
    for (const char* word : {"time", "seconds", "latency", "throughput", "speed"})
      if (m.find(word) != std::string::npos) return {false, "measures time (" + m + ")"};
  }
  if (contract.executable()) {
    std::string why_not;
    auto plan = make_plan(contract, decl, request, &why_not);
    if (plan.ok() && why_not.empty() && plan->invocations > 1) return {false, "repeated invocations (determinism)"};
  }
  return {true, ""};
}

}  // namespace kc::engine
