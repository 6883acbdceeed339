// The memory budget of concurrent workers (docs/isolation.md "Memory budget"):
// jobs x the per-worker limit never exceeds it, and where a cgroup memory
// controller is writable, one kc cgroup limited to it holds every worker.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/schedule.h"
#include "kc/engine.h"
#include "kc/isolate.h"

namespace kc::isolate {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

class FnImpl : public Impl {
 public:
  explicit FnImpl(std::function<Status(Call&)> fn) : fn_(std::move(fn)) {
    decl_.name = "budget.scal";
    decl_.op = "scal";
    decl_.backend = "plugin";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return fn_(call); }

 private:
  Declaration decl_;
  std::function<Status(Call&)> fn_;
};

Call scal_call() {
  Call c;
  c.op = "scal";
  c.names = {"x"};
  c.roles = {Role::kInOut};
  c.tensors.emplace_back(DType::kF32, std::vector<std::int64_t>{8});
  return c;
}

/// The thread name of this test process's hogs. It holds the test's PID
/// (read here, before any fork: inside a PID namespace the worker is PID 1),
/// so the watch never counts the hogs of a test running beside this one.
const std::string& hog_name() {
  static const std::string name = "kc-hog-" + std::to_string(getpid() % 10000000);
  return name;
}
const bool kHogNamedBeforeAnyFork = !hog_name().empty();

/// A kernel that takes `bytes` of memory of its own (touched, so resident),
/// holds it for `hold_ms`, and gives it back.
Status hog(Call& c, std::int64_t bytes, int hold_ms) {
  prctl(PR_SET_NAME, hog_name().c_str());
  std::vector<char*> chunks;
  for (std::int64_t got = 0; got < bytes; got += kMiB) {
    char* p = new char[kMiB];
    std::memset(p, 1, kMiB);
    chunks.push_back(p);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
  for (char* p : chunks) delete[] p;
  c.t("x").set(0, 1.0);
  return ok_status();
}

/// Bytes private to the processes with a thread named hog_name() (their
/// own pages, not the pages they share with kc), summed; and how many there are.
std::int64_t hogs_private_bytes(int* count) {
  std::int64_t sum = 0;
  *count = 0;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    // The kernel runs on a thread of the worker: the name is that thread's.
    bool named = false;
    if (DIR* t = opendir((dir + "/task").c_str())) {
      while (const dirent* te = readdir(t)) {
        std::ifstream comm(dir + "/task/" + te->d_name + "/comm");
        std::string name;
        std::getline(comm, name);
        named |= name == hog_name();
      }
      closedir(t);
    }
    if (!named) continue;
    ++*count;
    std::ifstream rollup(dir + "/smaps_rollup");
    for (std::string line; std::getline(rollup, line);) {
      long long kib = 0;
      if (std::sscanf(line.c_str(), "Private_Clean: %lld kB", &kib) == 1 ||
          std::sscanf(line.c_str(), "Private_Dirty: %lld kB", &kib) == 1)
        sum += kib * 1024;
    }
  }
  closedir(d);
  return sum;
}

TEST(MemoryBudget, JobsTimesTheLimitFitTheBudget) {
  Limits limits;
  limits.memory_bytes = 64 * kMiB;
  limits.budget_bytes = 128 * kMiB;
  MemoryBudget b = memory_budget(3, limits);
  EXPECT_EQ(b.jobs, 2);
  EXPECT_EQ(b.memory_bytes, 64 * kMiB);
  EXPECT_NE(b.note.find("2 of the 3 jobs"), std::string::npos) << b.note;

  limits.budget_bytes = 1024 * kMiB;
  b = memory_budget(3, limits);
  EXPECT_EQ(b.jobs, 3);
  EXPECT_EQ(b.note, "");

  // One worker's limit above the budget: one at a time, limited to the budget.
  limits.memory_bytes = 256 * kMiB;
  limits.budget_bytes = 128 * kMiB;
  b = memory_budget(4, limits);
  EXPECT_EQ(b.jobs, 1);
  EXPECT_EQ(b.memory_bytes, 128 * kMiB);
  EXPECT_NE(b.note.find("below the per-worker limit"), std::string::npos) << b.note;

  // The default budget is the available memory: some, and not more than the machine has.
  limits.budget_bytes = 0;
  limits.memory_bytes = 64 * kMiB;
  b = memory_budget(1, limits);
  EXPECT_GT(b.bytes, 0);
  memory_budget(1, Limits{});  // leave no cgroup for the next test's workers
}

TEST(MemoryBudget, ThreeHogsAtJobsThreeTakeNoMoreThanTheBudget) {
  // Three kernels of 48 MiB each (3 x 48 > 128), a 64 MiB limit per worker,
  // a 128 MiB budget: two run at once.
  constexpr std::int64_t kHog = 48 * kMiB, kBudget = 128 * kMiB;
  engine::CheckRequest request;
  request.limits.memory_bytes = 64 * kMiB;
  request.limits.budget_bytes = kBudget;
  std::vector<std::string> notes;
  const int jobs = engine::budgeted_jobs(3, request, &notes);
  EXPECT_EQ(jobs, 2);
  ASSERT_FALSE(notes.empty());

  std::atomic<bool> done{false};
  std::int64_t peak = 0;
  int most = 0;
  std::thread watch([&] {
    while (!done) {
      int n = 0;
      peak = std::max(peak, hogs_private_bytes(&n));
      most = std::max(most, n);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const FnImpl impl([&](Call& c) { return hog(c, kHog, 300); });
  std::vector<Outcome> outcomes(3);
  std::vector<Call> calls(3, scal_call());
  engine::run_ordered(
      3, jobs, [](std::size_t) { return false; },
      [&](std::size_t i) {
        Worker w(impl, Mode::kProcess, request.limits);
        outcomes[i] = w.run(calls[i]);
      },
      [](std::size_t) {});
  done = true;
  watch.join();
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(outcomes[i].failure) << outcomes[i].status.message();
    EXPECT_EQ(calls[i].t("x").at(0), 1.0);
  }
  EXPECT_GE(peak, kHog) << "the watch never saw a hog";
  EXPECT_LE(most, 2) << "more workers ran at once than the budget holds";
  EXPECT_LE(peak, kBudget) << "the hogs together took more than the budget";
  memory_budget(1, Limits{});
}

TEST(MemoryBudget, TheCgroupHoldsWhatNoPerWorkerLimitWatches) {
  // No per-worker limit at all: only the kc cgroup can stop a kernel that
  // takes 256 MiB under a 64 MiB budget.
  Limits limits;
  limits.memory_bytes = 0;
  limits.budget_bytes = 64 * kMiB;
  limits.timeout_s = 20;
  const MemoryBudget b = memory_budget(1, limits);
  if (b.cgroup.empty()) GTEST_SKIP() << "no writable cgroup memory controller here: " << b.cgroup_why_not;
  const FnImpl impl([](Call& c) { return hog(c, 256 * kMiB, 10); });
  Call call = scal_call();
  {
    Worker w(impl, Mode::kProcess, limits);
    const Outcome o = w.run(call);
    ASSERT_TRUE(o.failure) << "a 256 MiB kernel ran under a 64 MiB cgroup";
    EXPECT_EQ(o.failure->to_string(), "MEMORY_LIMIT(64MiB)") << o.status.message();
    EXPECT_NE(o.status.message().find("memory-budget cgroup"), std::string::npos) << o.status.message();
  }
  memory_budget(1, Limits{});
}

}  // namespace
}  // namespace kc::isolate
