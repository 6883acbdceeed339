// Low-precision op contracts (contracts/lowprec: KC-GEMM-LP, KC-SOFTMAX-LP,
// KC-NORM-LP, KC-ELEM-LP, KC-RED-LP, KC-ATTN-LP-04/05): their trios hold their
// three states, the underflow allowance of a 16-bit format is charged to the
// declared accumulator, and an impl reusing another impl's cached inputs is
// judged with its own declared accumulator.
#include <gtest/gtest.h>

#include <string>

#include "kc/calibrate.h"
#include "kc/engine.h"
#include "kc/op.h"

namespace kc::engine {
namespace {

std::string lowprec(const std::string& file) { return std::string(KC_SOURCE_DIR) + "/contracts/lowprec/" + file; }

void expect_states(const CalibrationResult& result, std::size_t rows) {
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  ASSERT_EQ(result.rows.size(), rows) << render_calibration(result, false);
  for (const auto& row : result.rows) EXPECT_TRUE(row.state_ok) << row.contract << " " << row.impl << ": " << row.problem;
}

const CalibrationRow& row_of(const CalibrationResult& result, const std::string& contract, TrioRole role) {
  for (const auto& row : result.rows)
    if (row.contract == contract && row.role == role) return row;
  ADD_FAILURE() << "no row for " << contract;
  return result.rows.front();
}

TEST(LowPrecisionOps, SoftmaxNormElementwiseReductionTrios) {
  CheckRequest request;
  request.paths = {lowprec("KC-SOFTMAX-LP.kc"), lowprec("KC-NORM-LP.kc"), lowprec("KC-ELEM-LP.kc"),
                   lowprec("KC-RED-LP.kc")};
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 18);
  // The bad kernels are caught in both formats where the bug is large (a
  // storage-format sum of 128 and more terms), not only in bf16.
  for (const char* id : {"KC-SOFTMAX-LP-01", "KC-NORM-LP-01", "KC-NORM-LP-02"}) {
    const CaseResult& bad = row_of(result, id, TrioRole::kBad).contract_result;
    ASSERT_EQ(bad.verdict, Verdict::kViolation) << id << ": " << bad.reason;
    bool fp16 = false, bf16 = false;
    for (const auto& ce : bad.evidence.per_config) {
      if (ce.failures == 0) continue;
      fp16 = fp16 || ce.config.find("dtype=FP16") != std::string::npos;
      bf16 = bf16 || ce.config.find("dtype=BF16") != std::string::npos;
    }
    EXPECT_TRUE(fp16 && bf16) << id << ": " << bad.reason;
  }
}

TEST(LowPrecisionOps, Fp16AccumulatorProbeTrio) {
  CheckRequest request;
  request.paths = {lowprec("KC-GEMM-LP.kc")};
  request.contracts = {"KC-GEMM-FP16ACC-01"};
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 3);
  const CaseResult& bad = result.rows[1].contract_result;
  ASSERT_FALSE(bad.signatures.empty()) << bad.reason;
  EXPECT_EQ(bad.signatures.front().to_string(), "ACCUMULATOR_PRECISION(bf16)") << bad.reason;
  EXPECT_NE(bad.reason.find("where the declared FP16 keeps 11"), std::string::npos) << bad.reason;
}

// The FP16 and E5M2 attention trios over fewer samples than the contracts'
// 128 (the whole counts run in the calibration suite).
TEST(LowPrecisionOps, AttentionFp16AndE5m2Trios) {
  CheckRequest request;
  request.paths = {lowprec("KC-ATTN-LP.kc")};
  request.contracts = {"KC-ATTN-LP-04", "KC-ATTN-LP-05"};
  request.samples = 8;
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 6);
  for (const char* id : {"KC-ATTN-LP-04", "KC-ATTN-LP-05"}) {
    const CaseResult& bad = row_of(result, id, TrioRole::kBad).contract_result;
    EXPECT_NE(bad.reason.find("8 of 8 samples (100%)"), std::string::npos) << id << ": " << bad.reason;
  }
}

// Two impls of one run share a sample's inputs (sample_cache.h); each is
// judged with the accumulator it declares. The FP16-accumulating GEMM, run
// after an FP32-accumulating one, was held to FP32's bound (ratio 83.8).
TEST(LowPrecisionOps, CachedInputsKeepEachImplsAccumulator) {
  CheckRequest request;
  request.paths = {lowprec("KC-GEMM-LP.kc")};
  request.contracts = {"KC-GEMM-LP-01"};
  request.impls = {"calib.matmul_lp_fp32acc", "calib.matmul_fp16acc"};
  request.samples = 1;
  request.jobs = 1;
  const CheckResult result = run_check(request);
  ASSERT_EQ(result.cases.size(), 2u);
  for (const auto& c : result.cases) EXPECT_EQ(c.verdict, Verdict::kConforming) << c.impl << ": " << c.reason;
  EXPECT_GT(result.reuse.inputs_reused, 0);
}

TEST(LowPrecisionOps, UnderflowChargedToTheDeclaredAccumulator) {
  const Op* softmax = builtin_ops().find("softmax");
  ASSERT_NE(softmax, nullptr);
  auto allowance = [&](DType storage, std::optional<DType> acc) {
    Config config;
    config.dtype = storage;
    config.accumulator = acc;
    config.params = {{"rows", "2"}, {"cols", "1000"}};
    auto call = softmax->make_call(config);
    EXPECT_TRUE(call.ok());
    return softmax->underflow_allowance(*call);
  };
  // FP16 with an FP32 accumulator: 1002 FP32 underflows and one FP16 store.
  EXPECT_DOUBLE_EQ(allowance(DType::kF16, DType::kF32), 1002 * underflow_unit(DType::kF32) + underflow_unit(DType::kF16));
  EXPECT_DOUBLE_EQ(allowance(DType::kBF16, DType::kF32), 1002 * underflow_unit(DType::kF32) + underflow_unit(DType::kBF16));
  // No wider accumulator declared: the storage format's underflows.
  EXPECT_DOUBLE_EQ(allowance(DType::kF16, std::nullopt), 1002 * underflow_unit(DType::kF16));
  EXPECT_DOUBLE_EQ(allowance(DType::kF16, DType::kF16), 1002 * underflow_unit(DType::kF16));
  // FP32 storage keeps its rule whatever the declaration.
  EXPECT_DOUBLE_EQ(allowance(DType::kF32, DType::kF64), 1002 * underflow_unit(DType::kF32));
}

}  // namespace
}  // namespace kc::engine
