// The thread-count impls (openblas.sgemm_t1/_t2, blis.sgemm_t1/_t2) really run
// on that many threads. Not a timing test: it reads how much CPU time each
// thread of this process spent during one large call (/proc/self/task/*/
// schedstat, nanoseconds), which does not depend on how loaded the machine is.
//
// BLIS: bli_thread_set_num_threads only changes anything in a multithreaded
// build (blis-openmp, blis-pthread); Debian's default alternative is
// blis-openmp. OpenBLAS (openblas-pthread) keeps a pool of threads made at load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "../../../backends/blas/blas_backend.h"
#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/op.h"

namespace kc {
namespace {

/// CPU nanoseconds per thread id of this process.
std::map<std::string, std::int64_t> thread_cpu_ns() {
  std::map<std::string, std::int64_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "schedstat");
    std::int64_t ns = 0;
    if (f >> ns) out[e.path().filename().string()] = ns;
  }
  return out;
}

/// CPU nanoseconds each thread spent during `fn`, largest first.
template <typename Fn>
std::vector<std::int64_t> cpu_per_thread_during(Fn fn) {
  const auto before = thread_cpu_ns();
  fn();
  const auto after = thread_cpu_ns();
  std::vector<std::int64_t> spent;
  for (const auto& [tid, ns] : after) {
    auto it = before.find(tid);
    spent.push_back(ns - (it == before.end() ? 0 : it->second));
  }
  std::sort(spent.rbegin(), spent.rend());
  return spent;
}

Call big_gemm() {
  // beta = 0.5 so the library reads C as well; N(0, 1) inputs from the op's fill.
  return backend_test::make_call("matmul", {{"M", "1536"}, {"N", "1536"}, {"K", "1536"}, {"beta", "0.5"}});
}

class ThreadKnob : public ::testing::TestWithParam<std::string> {};

// One thread does (nearly) all the work with _t1; with _t2 a second thread
// does a real share (at least a quarter of what the busiest one did).
TEST_P(ThreadKnob, PinnedThreadCountIsTheNumberOfThreadsThatWork) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: two threads cannot be told apart";
  // This library's backend alone, not the whole table: other backends start
  // threads of their own (OpenCL, OpenMP runtimes) that would blur the count.
  std::unique_ptr<Backend> backend =
      GetParam() == "openblas" ? backends::make_openblas_backend() : backends::make_blis_backend();
  const BackendInfo info = backend->probe();
  if (!info.available) GTEST_SKIP() << GetParam() << ": " << info.reason;
  std::shared_ptr<const Impl> t1, t2;
  for (const auto& impl : backend->impls()) {
    if (impl->declaration().name == GetParam() + ".sgemm_t1") t1 = impl;
    if (impl->declaration().name == GetParam() + ".sgemm_t2") t2 = impl;
  }
  ASSERT_NE(t1, nullptr);
  ASSERT_NE(t2, nullptr);
  // _t1 first: no pool thread has been woken yet in this process.
  Call c1 = big_gemm();
  const auto one = cpu_per_thread_during([&] { ASSERT_TRUE(t1->run(c1).ok()); });
  Call c2 = big_gemm();
  const auto two = cpu_per_thread_during([&] { ASSERT_TRUE(t2->run(c2).ok()); });
  ASSERT_GE(one.size(), 1u);
  ASSERT_GE(two.size(), 2u) << GetParam() << ".sgemm_t2 left a single thread in the process";
  std::printf("[ measured ] %s.sgemm_t1: busiest thread %.1f ms, next %.1f ms; %s.sgemm_t2: %.1f ms, %.1f ms\n",
              GetParam().c_str(), one[0] / 1e6, one.size() > 1 ? one[1] / 1e6 : 0.0, GetParam().c_str(),
              two[0] / 1e6, two[1] / 1e6);
  EXPECT_GT(one[0], 50'000'000) << "the call is too small to tell threads apart";
  if (one.size() > 1) {
    EXPECT_LT(one[1] * 10, one[0]) << GetParam() << ".sgemm_t1 ran on a second thread";
  }
  EXPECT_GT(two[1] * 4, two[0]) << GetParam() << ".sgemm_t2 left its second thread idle";
}

INSTANTIATE_TEST_SUITE_P(Libraries, ThreadKnob, ::testing::Values("openblas", "blis"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kc
