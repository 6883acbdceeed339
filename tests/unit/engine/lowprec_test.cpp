// Low precision (contracts/lowprec): the accumulator_bits probe reads the
// accumulator's width off a matmul, the classifier names a width below the
// declared one, and the low-precision trios hold their three states: the bf16
// GEMM probe contract, and the attention contracts judged over many samples
// with the failing_fraction rule.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/classify.h"
#include "kc/calibrate.h"
#include "kc/engine.h"
#include "kc/op.h"
#include "ops/matmul/classify.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

std::string lowprec(const std::string& file) { return std::string(KC_SOURCE_DIR) + "/contracts/lowprec/" + file; }

/// The probe's call for an M x N x K bf16 GEMM.
Call probed_call(std::int64_t m, std::int64_t n, std::int64_t k, const char* trans_a = "N") {
  const Op* matmul = builtin_ops().find("matmul");
  EXPECT_NE(matmul, nullptr);
  Config config;
  config.dtype = DType::kBF16;
  config.accumulator = DType::kF32;
  config.params = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)},
                   {"trans_a", trans_a}};
  auto call = matmul->make_call(config);
  EXPECT_TRUE(call.ok());
  Probe probe;
  probe.name = "accumulator_bits";
  Rng rng(1);
  EXPECT_TRUE(matmul->apply_probe(*call, probe, rng).ok());
  return std::move(*call);
}

/// Row sums of op(A) op(B) accumulated in order in `acc` (every partial sum rounded to it).
std::vector<double> sequential(const Call& call, DType acc) {
  const Op* matmul = builtin_ops().find("matmul");
  auto oracle = matmul->oracle(call, {});  // exact: the probe's values are exact in FP64
  const std::int64_t m = call.get_int("M"), n = call.get_int("N"), k = call.get_int("K");
  const bool ta = call.get("trans_a", "N") == "T";
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double a = call.t("A").at(ta ? p * m + i : i * k + p), b = call.t("B").at(p * n + j);
        s = round_to(s + a * b, acc);
      }
      out[static_cast<std::size_t>(i * n + j)] = round_to(s, DType::kBF16);
    }
  return out;
}

TEST(AccumulatorBits, ProbeRowsSurviveExactlyUpToTheAccumulatorsWidth) {
  for (const char* ta : {"N", "T"}) {
    const Call call = probed_call(32, 3, 130, ta);
    const std::vector<double> fp32 = sequential(call, DType::kF32), bf16 = sequential(call, DType::kBF16);
    for (std::int64_t r = 0; r < 32; ++r) {
      const double exact = 128 * std::ldexp(1.0, -static_cast<int>(r + 1));
      // FP32 keeps 1 + 2^-j for j < 24, bf16 for j < 8; beyond, the row is 0.
      EXPECT_EQ(fp32[static_cast<std::size_t>(r * 3)], r + 1 < 24 ? exact : 0.0) << "row " << r << " trans_a " << ta;
      EXPECT_EQ(bf16[static_cast<std::size_t>(r * 3 + 2)], r + 1 < 8 ? exact : 0.0) << "row " << r;
    }
  }
}

Observation observation(const Call& call, std::vector<double> got) {
  const Op* matmul = builtin_ops().find("matmul");
  Observation obs;
  obs.output = "C";
  obs.dtype = DType::kBF16;
  obs.probe = "accumulator_bits";
  obs.ref = matmul->oracle(call, {})->outputs[0];
  obs.got = std::move(got);
  obs.allowed.assign(obs.ref.size(), 0.0);
  return obs;
}

std::string named(const Call& call, const std::vector<double>& got, std::string* note = nullptr) {
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  ops::classify_accumulator_bits(*builtin_ops().find("matmul"), call, observation(call, got), &sigs, &notes);
  if (note && !notes.empty()) *note = notes.front();
  return sigs.empty() ? std::string() : sigs.front().to_string();
}

TEST(AccumulatorBits, TheClassifierNamesAWidthBelowTheDeclaredOne) {
  Call call = probed_call(32, 2, 66);
  std::string note;
  EXPECT_EQ(named(call, sequential(call, DType::kBF16), &note), "ACCUMULATOR_PRECISION(bf16)");
  EXPECT_NE(note.find("about 8 significant bits"), std::string::npos) << note;
  EXPECT_NE(note.find("declared FP32 keeps 24"), std::string::npos) << note;
  EXPECT_EQ(named(call, sequential(call, DType::kF16)), "ACCUMULATOR_PRECISION(fp16|tf32)");
  // The declared width measured: nothing to name.
  EXPECT_EQ(named(call, sequential(call, DType::kF32)), "");
  // A bf16 accumulator declared as such agrees with the measurement.
  call.config.accumulator = DType::kBF16;
  EXPECT_EQ(named(call, sequential(call, DType::kBF16)), "");
}

// The random-input accumulator classifier stays silent where the output format
// is itself bf16: every output is then on the bf16 grid, which proves nothing.
TEST(AccumulatorBits, TheGridClassifierNeedsAWiderOutputThanTheCandidate) {
  Call call = probed_call(8, 8, 64);
  Observation obs = observation(call, sequential(call, DType::kBF16));
  obs.probe.clear();
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  classify_accumulator_precision(*builtin_ops().find("matmul"), call, obs, &sigs, &notes);
  EXPECT_TRUE(sigs.empty()) << sigs.front().to_string();
}

void expect_states(const CalibrationResult& result, std::size_t rows) {
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  ASSERT_EQ(result.rows.size(), rows) << render_calibration(result, false);
  for (const auto& row : result.rows) EXPECT_TRUE(row.state_ok) << row.contract << " " << row.impl << ": " << row.problem;
}

TEST(LowPrecision, Bf16GemmAccumulatorProbeTrio) {
  CheckRequest request;
  request.paths = {lowprec("KC-GEMM-BF16-01.kc")};
  request.contracts = {"KC-GEMM-BF16-02"};
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 3);
  const CaseResult& bad = result.rows[1].contract_result;
  EXPECT_EQ(bad.verdict, Verdict::kViolation) << bad.reason;
  ASSERT_FALSE(bad.signatures.empty());
  EXPECT_EQ(bad.signatures.front().to_string(), "ACCUMULATOR_PRECISION(bf16)") << bad.reason;
  EXPECT_NE(bad.reason.find("about 8 significant bits"), std::string::npos) << bad.reason;
}

// oneDNN's bf16 matmul declares an FP32 accumulator (its documentation): the
// probe measures one.
TEST(LowPrecision, OnednnBf16MatmulKeepsItsDeclaredAccumulator) {
  if (!trio::impl_available("onednn.matmul_bf16"))
    GTEST_SKIP() << "no onednn.matmul_bf16 here (oneDNN 2.x builds its bf16 kernels for avx512_core and up)";
  const CaseResult r = trio::check_one_in(lowprec("KC-GEMM-BF16-01.kc"), "KC-GEMM-BF16-02", "onednn.matmul_bf16");
  if (r.verdict == Verdict::kSkipped) GTEST_SKIP() << r.reason;
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  // The reading is evidence on a conforming case too: FP32's 24 bits at both K.
  int readings = 0;
  for (const auto& n : r.evidence.notes)
    if (n.find("accumulator_bits probe at K = ") == 0) {
      ++readings;
      EXPECT_NE(n.find("about 24 significant bits (declared FP32, 24 bits)"), std::string::npos) << n;
    }
  EXPECT_EQ(readings, 2);
}

// libtorch 1.13's CPU bf16 matmul declares the FP32 of ATen's OpMathType.h;
// on a sum of three terms the probe measures a bf16 running sum instead (the
// K = 130 rows keep FP32's width). A measurement of the installed library:
// a libtorch that sums short products in FP32 fails this test, on purpose.
TEST(LowPrecision, TorchBf16MatmulShortSumsKeepBf16Width) {
  const CaseResult r = trio::check_one_in(lowprec("KC-GEMM-BF16-01.kc"), "KC-GEMM-BF16-02", "torch.matmul_bf16");
  if (r.verdict == Verdict::kSkipped || r.verdict == Verdict::kNotApplicable) GTEST_SKIP() << r.reason;
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), "ACCUMULATOR_PRECISION(bf16)") << r.reason;
  EXPECT_NE(r.reason.find("about 8 significant bits"), std::string::npos) << r.reason;
}

// The numerical and shape attention trios with fewer samples than the
// contracts' 1024 and 32 (the whole counts, and the determinism trio, run in
// the calibration suite): the states do not depend on the count.
TEST(LowPrecision, AttentionTriosOverSamples) {
  CheckRequest request;
  request.paths = {lowprec("KC-ATTN-LP.kc")};
  request.contracts = {"KC-ATTN-LP-01", "KC-ATTN-LP-02"};
  request.samples = 8;
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 6);
  for (const auto& row : result.rows) {
    if (row.contract != "KC-ATTN-LP-01") continue;
    const CaseResult& r = row.contract_result;
    if (row.role == TrioRole::kBad) {
      EXPECT_NE(r.reason.find("failing_fraction: 8 of 8 samples (100%)"), std::string::npos) << r.reason;
      EXPECT_NE(r.reason.find("at most 1% of each config's samples"), std::string::npos) << r.reason;
      // Caught in every config, FP8 E4M3 included: the FP8 bound is not
      // vacuous (underflow is charged to the FP32 arithmetic, not to FP8).
      ASSERT_EQ(r.evidence.per_config.size(), 6u);
      for (const auto& ce : r.evidence.per_config) EXPECT_GT(ce.failures, 0) << ce.config;
    }
    if (row.role == TrioRole::kGood) {
      EXPECT_NE(r.reason.find("no sample of 48 in 6 configs"), std::string::npos) << r.reason;
    }
  }
}

}  // namespace
}  // namespace kc::engine
