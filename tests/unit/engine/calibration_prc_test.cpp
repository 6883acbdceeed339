// The precision class contracts (C-PRC-01..04), each run against its
// calibration trio: the baseline fails the visible test, the bad impl passes
// it and is caught with the contract's signature, the good impl conforms
// (test the tester). Plus the `offset` probe the C-PRC-02 protocol
// uses, and the denormal judge seen from both declarations.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "calibration/calibration_backend.h"
#include "engine/classify.h"
#include "kc/calibrate.h"
#include "tests/unit/engine/trio.h"
#include "kc/engine.h"
#include "kc/rng.h"

namespace kc::engine {
namespace {

using trio::check_one;
using trio::contract_path;
using trio::Expected;

class PrcCalibration : public ::testing::TestWithParam<Expected> {};

TEST_P(PrcCalibration, TrioShowsItsThreeStates) {
  const Expected& e = GetParam();
  trio::expect_three_states(e);
}

INSTANTIATE_TEST_SUITE_P(Classes, PrcCalibration,
                         ::testing::Values(Expected{"C-PRC-01", "SATURATION"},
                                           Expected{"C-PRC-02", "OVERFLOW_TO_INF"},
                                           Expected{"C-PRC-03", "FTZ_OBSERVED"},
                                           Expected{"C-PRC-04", "SCALE_DEPENDENT"}),
                         trio::param_name);


TEST(PrcSignatures, Fp16BlockAccumulatorSaturatesAtTheFp16Maximum) {
  const CaseResult r = check_one("C-PRC-01", "calib.matmul_fp16_blockacc");
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), "SATURATION(65504)");
  // Every output's reference (~4 * 65504) is past the fp16 maximum: all fail.
  EXPECT_EQ(r.evidence.failures, r.evidence.elements);
}

// C-PRC-01's baseline (a bf16 accumulator over K) is named by its
// accumulator: every output a bf16 value, each within a bf16 sum's bound.
TEST(PrcSignatures, Bf16AccumulatorIsNamedByItsOutputGrid) {
  const CaseResult r = check_one("C-PRC-01", "calib.matmul_bf16acc");
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), "ACCUMULATOR_PRECISION(bf16)");
}

// The accumulator detector needs both the grid and the bound, and leaves
// data whose references are on the grid themselves alone.
TEST(PrcSignatures, AccumulatorPrecisionNeedsTheGridAndTheBound) {
  const Op* matmul = builtin_ops().find("matmul");
  ASSERT_NE(matmul, nullptr);
  auto observe = [&](FillSpec fill, auto&& make_got) {
    Config config;
    config.params = {{"M", "8"}, {"N", "8"}, {"K", "64"}};
    auto call = matmul->make_call(config);
    EXPECT_TRUE(call.ok());
    Rng rng(5);
    matmul->fill(*call, fill, rng);
    auto oracle = matmul->oracle(*call, {});
    EXPECT_TRUE(oracle.ok());
    Observation obs;
    obs.output = "C";
    obs.ref = oracle->outputs[0];
    obs.allowed.assign(obs.ref.size(), 0.0);
    for (double v : obs.ref) obs.got.push_back(make_got(v));
    std::vector<Signature> sigs;
    std::vector<std::string> notes;
    classify_accumulator_precision(*matmul, *call, obs, &sigs, &notes);
    return sigs.empty() ? std::string() : sigs.front().to_string();
  };
  // On the fp16 grid (not the bf16 one) and within the fp16 bound: named.
  EXPECT_EQ(observe(FillSpec{}, [](double v) { return round_to(v, DType::kF16); }), "ACCUMULATOR_PRECISION(fp16)");
  EXPECT_EQ(observe(FillSpec{}, [](double v) { return round_to(v, DType::kBF16); }), "ACCUMULATOR_PRECISION(bf16)");
  // On the grid but far beyond what an fp16 sum allows (twice the value): not named.
  EXPECT_EQ(observe(FillSpec{}, [](double v) { return round_to(2 * v, DType::kF16); }), "");
  // Within the bound but off the grid (an FP32 value a little off): not named.
  EXPECT_EQ(observe(FillSpec{}, [](double v) { return static_cast<float>(v * (1 + 1e-4)); }), "");
  // Integer data: the references are on every grid, so the grid says nothing.
  FillSpec ints;
  ints.kind = FillSpec::Kind::kInteger;
  ints.a = -3;
  ints.b = 3;
  EXPECT_EQ(observe(ints, [](double v) { return v + 1; }), "");
}

TEST(PrcSignatures, NaiveSoftmaxOverflowsOnlyOnOffsetRows) {
  const CaseResult r = check_one("C-PRC-02", "calib.softmax_naive");
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().name, "OVERFLOW_TO_INF");
  // offset(0, 100, 1e5, 1e6): the rows at x0 = 0 (a quarter of them) are the
  // visible test's regime and pass; every row at x0 >= 100 overflows.
  EXPECT_GT(r.evidence.failures, 0);
  EXPECT_LE(r.evidence.failures, r.evidence.elements * 3 / 4);
}

TEST(PrcSignatures, OnePassVarianceCollapsesOnTheOffsetRows) {
  // Not in the trio: the contract's other textbook failure. The classifier
  // sees the cancellation row by row (each row has its own offset).
  const CaseResult r = check_one("C-PRC-02", "calib.variance_one_pass");
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().name, "CANCELLATION_COLLAPSE");
  EXPECT_TRUE(r.signature_expected);
}

TEST(PrcSignatures, UnscaledLossScaleBreaksOnlyAboveOne) {
  const CaseResult r = check_one("C-PRC-04", "calib.mlp_fp16grad_noscale");
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), "SCALE_DEPENDENT(loss_scale=256,32768)");
  for (const auto& ce : r.evidence.per_config)
    EXPECT_EQ(ce.failures > 0, ce.config.find("loss_scale=1 ") == std::string::npos) << ce.config;
}

TEST(PrcSignatures, DenormalJudgeHoldsEachKernelToItsOwnDeclaration) {
  const LoadedContracts loaded = load_contracts({contract_path("C-PRC-03")});
  ASSERT_EQ(loaded.contracts.size(), 1u);
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  const BackendInfo info{"calibration", true, "built-in", "", ""};
  auto run_declared = [&](const std::string& impl_name, DenormalPolicy denormal) {
    const auto impl = registry.find_impl(impl_name);
    EXPECT_TRUE(impl) << impl_name;
    if (!impl) return CaseResult{};
    Declaration d = impl->declaration();
    d.name = "test." + impl_name + "_declared";
    d.denormal = denormal;
    const calibration::FnImpl redeclared(d, [&](Call& call) { return impl->run(call); });
    return run_case(loaded.contracts[0], loaded.files[0], redeclared, info, CheckRequest{});
  };
  // The flushing kernel is fine once it says so.
  EXPECT_EQ(run_declared("calib.scal_ftz", DenormalPolicy::kFtzDaz).verdict, Verdict::kConforming);
  // The IEEE kernel declared FTZ: a mismatch the other way round.
  const CaseResult ieee_as_ftz = run_declared("calib.scal_ieee", DenormalPolicy::kFtz);
  EXPECT_EQ(ieee_as_ftz.verdict, Verdict::kViolation) << ieee_as_ftz.reason;
  ASSERT_FALSE(ieee_as_ftz.signatures.empty());
  EXPECT_EQ(ieee_as_ftz.signatures.front().name, "IEEE_OBSERVED");
}

TEST(OffsetProbe, RowsCycleThroughTheOffsets) {
  const Op* op = builtin_ops().find("softmax");
  ASSERT_NE(op, nullptr);
  Config config;
  config.params = {{"rows", "6"}, {"cols", "5"}};
  auto call = op->make_call(config);
  ASSERT_TRUE(call.ok()) << call.status().message();
  Rng rng(7);
  op->fill(*call, FillSpec{FillSpec::Kind::kUniform, -1, 1}, rng);
  const Call before = *call;
  Probe probe;
  probe.name = "offset";
  probe.args = {0, 100, 1e4};
  ASSERT_TRUE(op->apply_probe(*call, probe, rng).ok());
  const Tensor& x0 = before.t("x");
  const Tensor& x1 = call->t("x");
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t c = 0; c < 5; ++c) {
      const std::int64_t i = r * 5 + c;
      // FP32 storage: the sum is rounded once (spacing 2^-10 near 1e4).
      EXPECT_NEAR(x1.at(i), x0.at(i) + probe.args[static_cast<std::size_t>(r % 3)], 1e-3) << r << "," << c;
    }
}

TEST(OffsetProbe, ReachesTheStatsOpsAndRejectsAnEmptyList) {
  const Op* op = builtin_ops().find("variance");
  ASSERT_NE(op, nullptr);
  Config config;
  config.params = {{"rows", "2"}, {"cols", "3"}};
  auto call = op->make_call(config);
  ASSERT_TRUE(call.ok());
  Rng rng(1);
  op->fill(*call, FillSpec{FillSpec::Kind::kUniform, -1, 1}, rng);
  Probe probe;
  probe.name = "offset";
  probe.args = {1e4};
  ASSERT_TRUE(op->apply_probe(*call, probe, rng).ok());
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_NEAR(call->t("x").at(i), 1e4, 1.0);
  probe.args.clear();
  EXPECT_FALSE(op->apply_probe(*call, probe, rng).ok());
}

}  // namespace
}  // namespace kc::engine
