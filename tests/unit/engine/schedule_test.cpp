// Cases on several threads (--jobs): results keep plan order, cases that
// measure time or determinism run alone, and the verdicts are those of a
// one-job run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/schedule.h"
#include "kc/backend.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

TEST(RunOrdered, RecordsInPlanOrderAndSerialCasesRunAlone) {
  constexpr std::size_t n = 60;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::vector<char> finished(n, 0);
  std::vector<std::size_t> recorded;
  bool serial_overlapped = false, recorded_early = false;
  std::mutex mu;
  auto serial = [](std::size_t i) { return i % 7 == 3; };
  run_ordered(
      n, 3, serial,
      [&](std::size_t i) {
        const int now = ++running;
        int seen = max_running.load();
        while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
        }
        // Later cases finish first, so recording in order has to wait for earlier ones.
        std::this_thread::sleep_for(std::chrono::microseconds(200 * ((n - i) % 5)));
        if (serial(i) && running.load() != 1) serial_overlapped = true;
        {
          std::lock_guard lk(mu);
          finished[i] = 1;
        }
        --running;
      },
      [&](std::size_t i) {
        std::lock_guard lk(mu);
        if (!finished[i]) recorded_early = true;
        recorded.push_back(i);
      });
  ASSERT_EQ(recorded.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(recorded[i], i);
  EXPECT_FALSE(serial_overlapped);
  EXPECT_FALSE(recorded_early);
  EXPECT_GT(max_running.load(), 1) << "nothing ran in parallel";
  EXPECT_LE(max_running.load(), 3);
}

TEST(CaseSchedule, DeterminismAndTimingContractsRunAlone) {
  BackendRegistry reg;
  ASSERT_TRUE(register_builtin_backends(reg).ok());
  LoadedContracts loaded = load_contracts({std::string(KC_SOURCE_DIR) + "/contracts"});
  auto impl = reg.find_impl("openblas.sgemm");
  if (!impl) impl = reg.find_impl("ref.matmul");
  ASSERT_TRUE(impl);
  CheckRequest req;
  int serial = 0, parallel = 0;
  for (const Contract& c : loaded.contracts) {
    const CaseSchedule s = case_schedule(c, *impl, req);
    bool names_time_or_determinism = false;
    for (const auto& sig : c.violation.signatures)
      names_time_or_determinism |= sig.name == "TIMING_IMPLAUSIBLE" || sig.name == "NONDETERMINISTIC";
    if (names_time_or_determinism || c.post.kind == Postcondition::Kind::kBitwiseIdentical) {
      EXPECT_FALSE(s.parallel) << c.id;
    }
    (s.parallel ? parallel : serial)++;
  }
  EXPECT_GT(serial, 0);
  EXPECT_GT(parallel, 0);
  req.isolation = isolate::Mode::kNone;
  for (const Contract& c : loaded.contracts) EXPECT_FALSE(case_schedule(c, *impl, req).parallel) << c.id;
}

TEST(RunCheck, ManyJobsGiveTheVerdictsOfOneJobInTheSameOrder) {
  BackendRegistry reg;
  ASSERT_TRUE(register_builtin_backends(reg).ok());
  CheckRequest req;
  req.paths = {std::string(KC_SOURCE_DIR) + "/contracts/classes"};
  req.contracts = {"C-PRC-01", "C-CMP-01"};
  req.impls = {"ref.*", "openblas.*", "calib.*"};
  req.samples = 2;
  req.jobs = 1;
  const CheckResult one = run_check(req, reg);
  req.jobs = 4;
  const CheckResult many = run_check(req, reg);
  ASSERT_EQ(one.cases.size(), many.cases.size());
  ASSERT_GT(one.cases.size(), 4u);
  for (std::size_t i = 0; i < one.cases.size(); ++i) {
    EXPECT_EQ(one.cases[i].contract_id, many.cases[i].contract_id);
    EXPECT_EQ(one.cases[i].impl, many.cases[i].impl);
    EXPECT_EQ(one.cases[i].verdict, many.cases[i].verdict)
        << one.cases[i].contract_id << " " << one.cases[i].impl << ": " << many.cases[i].reason;
    EXPECT_EQ(one.cases[i].input_hash, many.cases[i].input_hash);
  }
}

// Inputs and oracle answers are shared across the impls of a run
// (engine/sample_cache.h): each sample is generated and each oracle run once,
// and every impl's evidence is what it is when the impl runs alone.
/// Every case of `together` has the verdict and evidence of its impl run alone.
void expect_same_as_alone(const CheckRequest& req, BackendRegistry& reg, const CheckResult& together) {
  for (const CaseResult& c : together.cases) {
    CheckRequest alone = req;
    alone.impls = {c.impl};
    const CheckResult a = run_check(alone, reg);
    ASSERT_EQ(a.cases.size(), 1u);
    EXPECT_EQ(a.reuse.oracles_reused, 0);
    EXPECT_EQ(a.cases[0].verdict, c.verdict) << c.impl;
    EXPECT_EQ(a.cases[0].input_hash, c.input_hash) << c.impl;
    EXPECT_EQ(a.cases[0].evidence.max, c.evidence.max) << c.impl;
    EXPECT_EQ(a.cases[0].evidence.elements, c.evidence.elements) << c.impl;
  }
}

TEST(RunCheck, ImplsShareInputsAndOracleAnswersWithoutChangingEvidence) {
  BackendRegistry reg;
  ASSERT_TRUE(register_builtin_backends(reg).ok());
  CheckRequest req;
  req.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc"};
  req.impls = {"ref.matmul", "openblas.sgemm", "blis.sgemm"};
  req.samples = 2;
  req.jobs = 1;  // two jobs may both miss a key and both compute it: counts would vary
  const CheckResult together = run_check(req, reg);
  ASSERT_EQ(together.cases.size(), 3u);
  EXPECT_GT(together.reuse.oracles_reused, 0);
  EXPECT_GT(together.reuse.inputs_reused, 0);
  // Three impls, the same samples: two of every three lookups are hits.
  EXPECT_EQ(together.reuse.oracles_reused, 2 * together.reuse.oracles_computed);
  expect_same_as_alone(req, reg, together);
}

// One contract, two ops (layernorm has beta, rmsnorm does not): their samples
// share a config string and a seed but never inputs.
TEST(RunCheck, OpsOfOneContractNeverShareInputs) {
  BackendRegistry reg;
  ASSERT_TRUE(register_builtin_backends(reg).ok());
  CheckRequest req;
  req.paths = {std::string(KC_SOURCE_DIR) + "/contracts/transformer/KC-NORM-PROPS.kc"};
  req.contracts = {"KC-NORM-LARGE"};
  req.impls = {"ref.layernorm", "ref.rmsnorm", "calib.layernorm_unbiased"};
  req.jobs = 1;
  const CheckResult together = run_check(req, reg);
  ASSERT_EQ(together.cases.size(), 3u);
  for (const CaseResult& c : together.cases) {
    if (c.impl.rfind("ref.", 0) == 0) {
      EXPECT_EQ(c.verdict, Verdict::kConforming) << c.impl << ": " << c.reason;
    }
  }
  EXPECT_GT(together.reuse.oracles_reused, 0);  // the two layernorm impls
  expect_same_as_alone(req, reg, together);
}

}  // namespace
}  // namespace kc::engine
