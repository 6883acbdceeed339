// The ordering class contracts (C-ORD-01..03), each run against its
// calibration trio: the baseline fails the visible test, the bad impl passes
// it and is caught with the contract's signature, the good impl conforms
// (test the tester). Plus the signatures' details and the wire
// precision classifier on its own.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "calibration/calibration_backend.h"
#include "engine/classify.h"
#include "kc/calibrate.h"
#include "tests/unit/engine/trio.h"
#include "kc/engine.h"
#include "kc/lang.h"
#include "ops/collective/collective.h"

namespace kc::engine {
namespace {

using trio::check_one;
using trio::contract_path;
using trio::Expected;

class OrdCalibration : public ::testing::TestWithParam<Expected> {};

TEST_P(OrdCalibration, TrioShowsItsThreeStates) {
  const Expected& e = GetParam();
  if (std::string(e.contract) == "C-ORD-02" && std::thread::hardware_concurrency() < 2)
    GTEST_SKIP() << "the atomic-add sum needs two hardware threads to interleave";
  trio::expect_three_states(e);
}

INSTANTIATE_TEST_SUITE_P(Classes, OrdCalibration,
                         ::testing::Values(Expected{"C-ORD-01", "SCHEDULE_OUTLIER"},
                                           Expected{"C-ORD-02", "NONDETERMINISTIC"},
                                           Expected{"C-ORD-03", "WIRE_PRECISION"}),
                         trio::param_name);


TEST(OrdSignatures, OrderBoundNamesTheLowPrecisionSchedule) {
  const CaseResult r = check_one("C-ORD-01", "calib.mean_fp16_partials");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "SCHEDULE_OUTLIER(threads8)");
  // Exactly the threads8 configs fail, at both reduction lengths.
  for (const auto& ce : r.evidence.per_config)
    EXPECT_EQ(ce.failures > 0, ce.config.find("schedule=threads8") != std::string::npos) << ce.config;
}

TEST(OrdSignatures, AtomicSumDiffersAcrossInvocations) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two hardware threads";
  const CaseResult r = check_one("C-ORD-02", "calib.sum_atomic");
  ASSERT_FALSE(r.signatures.empty());
  ASSERT_EQ(r.signatures.front().name, "NONDETERMINISTIC");
  ASSERT_EQ(r.signatures.front().args.size(), 1u);
  EXPECT_NE(r.signatures.front().args[0].find(" of 99"), std::string::npos);
  // The same kernel declared NONE promises nothing: not applicable.
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  const auto atomic = registry.find_impl("calib.sum_atomic");
  ASSERT_TRUE(atomic);
  Declaration d = atomic->declaration();
  d.name = "test.sum_atomic_declared_none";
  d.determinism = Determinism::kNone;
  const calibration::FnImpl honest(d, [&](Call& call) { return atomic->run(call); });
  const LoadedContracts loaded = load_contracts({contract_path("C-ORD-02")});
  ASSERT_EQ(loaded.contracts.size(), 1u);
  const BackendInfo info{"calibration", true, "built-in", "", ""};
  EXPECT_EQ(run_case(loaded.contracts[0], loaded.files[0], honest, info, CheckRequest{}).verdict,
            Verdict::kNotApplicable);
}

TEST(OrdSignatures, Fp16WireIsNamedAtEveryRankCount) {
  const CaseResult r = check_one("C-ORD-03", "calib.allreduce_fp16_wire");
  ASSERT_FALSE(r.signatures.empty());
  EXPECT_EQ(r.signatures.front().to_string(), "WIRE_PRECISION(fp16)");
  ASSERT_EQ(r.evidence.per_config.size(), 10u);  // ranks {2..32} x schedules {ring, tree}
  for (const auto& ce : r.evidence.per_config) EXPECT_GT(ce.failures, 0) << ce.config;
}

// ------------------------------------------------ the wire precision classifier

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "test.kc");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.empty() ? Contract{} : r.document.contracts[0];
}

/// A ring all-reduce (kc's own simulator) whose messages travel in `wire`.
calibration::FnImpl simulated_all_reduce(DType wire) {
  Declaration d = calibration::calib_decl("test.allreduce_wire", "all_reduce", "ring all-reduce, given wire");
  return calibration::FnImpl(d, [wire](Call& call) {
    const Tensor& x = call.t("x");
    const int ranks = static_cast<int>(x.dim(0)), n = static_cast<int>(x.dim(1));
    std::vector<float> in(static_cast<std::size_t>(ranks) * n), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(x.at(static_cast<std::int64_t>(i)));
    ops::simulate_all_reduce(in, ranks, n, call.get("schedule", "ring"), wire, out);
    for (std::size_t i = 0; i < out.size(); ++i) call.t("out").set(static_cast<std::int64_t>(i), out[i]);
    return ok_status();
  });
}

TEST(WirePrecision, NamesTheWireFormat) {
  const Contract c = parse_one(R"(
contract T-WIRE {
  scope      collective
  pre        precision(x, out) in {FP32} and value_range(x) normal(0, 1) and ranks in {2}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(K, P) * |x|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config
  violation  signature WIRE_PRECISION
})");
  const BackendInfo info{"calibration", true, "built-in", "", ""};
  CheckRequest request;
  const std::vector<std::pair<DType, std::string>> wires = {{DType::kF16, "WIRE_PRECISION(fp16)"},
                                                             {DType::kBF16, "WIRE_PRECISION(bf16)"}};
  for (const auto& [wire, name] : wires) {
    const CaseResult r = run_case(c, "t.kc", simulated_all_reduce(wire), info, request);
    ASSERT_EQ(r.verdict, Verdict::kViolation) << r.reason;
    ASSERT_FALSE(r.signatures.empty());
    EXPECT_EQ(r.signatures.front().to_string(), name);
  }
  EXPECT_EQ(run_case(c, "t.kc", simulated_all_reduce(DType::kF32), info, request).verdict, Verdict::kConforming);
}

TEST(WirePrecision, LeavesOtherOpsAndUnexplainedErrorsAlone) {
  const Op* sum = builtin_ops().find("sum");
  const Op* all_reduce = builtin_ops().find("all_reduce");
  ASSERT_TRUE(sum && all_reduce);
  Config config;
  config.params = {{"ranks", "4"}, {"n", "8"}};
  auto call = all_reduce->make_call(config);
  ASSERT_TRUE(call.ok());
  Rng rng(7);
  all_reduce->fill(*call, FillSpec{}, rng);
  auto oracle = all_reduce->oracle(*call, {});
  ASSERT_TRUE(oracle.ok());
  Observation obs;
  obs.output = "out";
  obs.ref = oracle->outputs[0];
  obs.got = obs.ref;
  obs.allowed.assign(obs.ref.size(), 0.0);
  obs.got[3] += 1.0;  // an error no rounding of a message explains
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  ops::classify_wire_precision(*all_reduce, *call, obs, &sigs, &notes);
  EXPECT_TRUE(sigs.empty());
  obs.got[3] = obs.ref[3] * (1 + 1e-3);  // within an fp16 message rounding
  ops::classify_wire_precision(*all_reduce, *call, obs, &sigs, &notes);
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].to_string(), "WIRE_PRECISION(fp16)");
  // The collectives bring the classifier (Op::classifiers, before the generic
  // accumulator test); a sum, not a collective, does not.
  const auto own = all_reduce->classifiers();
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].stage, OpClassifier::Stage::kPrecision);
  EXPECT_TRUE(sum->classifiers().empty());
}

}  // namespace
}  // namespace kc::engine
