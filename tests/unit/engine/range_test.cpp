// The range contracts (contracts/range/KC-RANGE-01..04): the row probes put
// the values where they say (squares or sums leave the format, the exact
// result does not), the classifier names what an unscaled kernel does there
// (OVERFLOW_TO_INF, UNDERFLOW_TO_ZERO, UNDERFLOW_FLOOR) and nothing else, and
// each contract's trio shows its three states (test the tester).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/classify.h"
#include "kc/calibrate.h"
#include "kc/engine.h"
#include "kc/rng.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

Call probed(const char* op_name, const char* probe_name, std::vector<std::pair<std::string, std::string>> params,
            Status* status = nullptr) {
  const Op* op = builtin_ops().find(op_name);
  EXPECT_NE(op, nullptr) << op_name;
  Config config;
  for (auto& [k, v] : params) config.params[k] = v;
  auto call = op->make_call(config);
  EXPECT_TRUE(call.ok()) << call.status().message();
  Rng rng(11);
  op->fill(*call, FillSpec{FillSpec::Kind::kUniform, -1, 1}, rng);
  Probe probe;
  probe.name = probe_name;
  const Status s = op->apply_probe(*call, probe, rng);
  if (status) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return *call;
}

/// Per row of x {rows, cols}: largest and smallest |x|, sum of squares and
/// sum, in long double (FP32 values: exact enough).
struct RowFacts {
  long double max_abs = 0, min_abs = HUGE_VALL, sum_sq = 0, sum = 0;
};
std::vector<RowFacts> rows_of(const Tensor& x) {
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<RowFacts> out(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const long double v = x.at(r * cols + c);
      RowFacts& f = out[static_cast<std::size_t>(r)];
      f.max_abs = std::max(f.max_abs, std::fabs(v));
      f.min_abs = std::min(f.min_abs, std::fabs(v));
      f.sum_sq += v * v;
      f.sum += v;
    }
  return out;
}

TEST(RangeProbe, NormRowsOverflowEverySquareButNotTheNorm) {
  for (const char* op : {"layernorm", "rmsnorm", "norm2"}) {
    const Call call = probed(op, "overflow_range", {{"rows", "4"}, {"cols", "768"}});
    for (const RowFacts& f : rows_of(call.t("x"))) {
      EXPECT_GT(f.min_abs * f.min_abs, FLT_MAX) << op;             // every square overflows FP32
      EXPECT_LE(std::sqrt(f.sum_sq), 0.5L * FLT_MAX) << op;        // the norm does not
    }
    if (call.has("beta")) {
      for (std::int64_t i = 0; i < call.t("beta").numel(); ++i) EXPECT_EQ(call.t("beta").at(i), 0.0) << op;
    }
  }
}

TEST(RangeProbe, NormRowsUnderflowEverySquareButNotTheNorm) {
  for (const char* op : {"layernorm", "rmsnorm", "norm2"}) {
    const Call call = probed(op, "underflow_range", {{"rows", "4"}, {"cols", "7"}});
    for (const RowFacts& f : rows_of(call.t("x"))) {
      EXPECT_GE(f.min_abs, FLT_MIN) << op;                                       // normal inputs
      EXPECT_LT(f.max_abs * f.max_abs, 0.5L * std::ldexp(1.0L, -149)) << op;  // squares round to 0
      EXPECT_GE(std::sqrt(f.sum_sq), FLT_MIN) << op;                             // a normal norm
    }
  }
}

TEST(RangeProbe, VarianceRowsOverflowTheSecondMomentNotTheVariance) {
  const Call call = probed("variance", "overflow_range", {{"rows", "4"}, {"cols", "64"}});
  const std::int64_t cols = 64;
  for (const RowFacts& f : rows_of(call.t("x"))) {
    const long double mean = f.sum / cols;
    EXPECT_GT(f.sum_sq / cols, FLT_MAX);  // E[x^2] overflows FP32
    const long double var = f.sum_sq / cols - mean * mean;
    EXPECT_LE(var, 0.25L * FLT_MAX);      // the variance is representable
    EXPECT_GT(var * cols, FLT_MAX);       // and cols var is not: a plain two-pass overflows too
  }
}

TEST(RangeProbe, MeanRowsOverflowTheSumNotTheMean) {
  const Call call = probed("mean", "overflow_range", {{"rows", "4"}, {"cols", "64"}});
  for (const RowFacts& f : rows_of(call.t("x"))) {
    EXPECT_GT(std::fabs(f.sum), FLT_MAX);
    EXPECT_LE(std::fabs(f.sum) / 64, 0.5L * FLT_MAX);
  }
}

TEST(RangeProbe, SoftmaxRowsSpanBothSignsNearMax) {
  const Call call = probed("softmax", "overflow_range", {{"rows", "4"}, {"cols", "128"}});
  bool neg = false, pos = false;
  for (std::int64_t i = 0; i < call.t("x").numel(); ++i) {
    const double v = call.t("x").at(i);
    EXPECT_GE(std::fabs(v), 0.25 * FLT_MAX * (1 - 1e-6));
    EXPECT_LE(std::fabs(v), 0.5 * FLT_MAX);
    neg = neg || v < 0;
    pos = pos || v > 0;
  }
  EXPECT_TRUE(neg && pos);
}

TEST(RangeProbe, UnderflowRangeIsRefusedWhereTheResultCannotBeNormal) {
  for (const char* op : {"variance", "mean", "softmax"}) {
    Status s;
    probed(op, "underflow_range", {{"rows", "2"}, {"cols", "8"}}, &s);
    EXPECT_FALSE(s.ok()) << op;
  }
}

// ---- the classifier on hand-made observations

Observation observation(std::vector<double> got, std::vector<double> ref) {
  Observation o;
  o.output = "y";
  o.got = std::move(got);
  o.ref = std::move(ref);
  o.allowed.assign(o.got.size(), 1e-6);
  o.input_format_max = FLT_MAX;
  return o;
}

std::vector<Signature> classify(const Observation& o) {
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  classify_values(o, &sigs, &notes);
  return sigs;
}

TEST(RangeClassifier, ZerosFromSquaresThatOverflowAreAnOverflow) {
  Observation o = observation({0, 0, 0, 0}, {0.5, -1.2, 0.9, -0.3});
  o.input_max_abs = 1e30;  // squares overflow FP32
  o.least_input_max_abs = 1.0;
  const auto sigs = classify(o);
  ASSERT_FALSE(sigs.empty());
  EXPECT_EQ(sigs.front().to_string(), "OVERFLOW_TO_INF(4)");
  // The same zeros from ordinary inputs are not named an overflow.
  o.input_max_abs = 10;
  const auto plain = classify(o);
  ASSERT_FALSE(plain.empty());
  EXPECT_NE(plain.front().name, "OVERFLOW_TO_INF");
}

TEST(RangeClassifier, InfinityFromASumThatUnderflowedIsAnUnderflow) {
  const double inf = std::numeric_limits<double>::infinity();
  Observation o = observation({inf, -inf, std::nan(""), inf}, {0.5, -1.2, 0.9, 0.3});
  o.input_max_abs = 1.5;             // a gamma of order 1
  o.least_input_max_abs = 1.3e-23;   // x: every square underflows
  const auto sigs = classify(o);
  ASSERT_FALSE(sigs.empty());
  EXPECT_EQ(sigs.front().to_string(), "UNDERFLOW_TO_ZERO(4)");
  // With x of ordinary size the infinities are an overflow again.
  o.least_input_max_abs = 0.5;
  const auto plain = classify(o);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.front().name, "OVERFLOW_TO_INF");
}

TEST(RangeClassifier, ATinyConstantWhereTheReferenceUnderflowsIsAFloor) {
  const double floor = std::ldexp(1.0, -128);
  Observation o = observation({floor, 1.0, floor, floor}, {0, 1.0, 0, 1e-44});
  o.allowed.assign(4, 1e-45);
  o.input_max_abs = 1e38;
  o.least_input_max_abs = 1e38;
  const auto sigs = classify(o);
  ASSERT_FALSE(sigs.empty());
  EXPECT_EQ(sigs.front().name, "UNDERFLOW_FLOOR");
  // Outputs of normal size off by the same amount are no floor.
  const auto normal = classify(observation({0.25, 1.0, 0.25, 0.25}, {0.2, 1.0, 0.2, 0.2}));
  for (const auto& s : normal) EXPECT_NE(s.name, "UNDERFLOW_FLOOR");
}

// ---- the trios, and the declarations that gate them

struct RangeExpected {
  const char* contract;
  const char* signature;
};

class RangeCalibration : public ::testing::TestWithParam<RangeExpected> {};

TEST_P(RangeCalibration, TrioShowsItsThreeStates) {
  const RangeExpected& e = GetParam();
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/range/" + e.contract + ".kc"};
  const CalibrationResult result = run_calibration(request);
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  ASSERT_EQ(result.rows.size(), 3u) << render_calibration(result, false);
  const CalibrationRow& baseline = result.rows[0];
  const CalibrationRow& bad = result.rows[1];
  const CalibrationRow& good = result.rows[2];
  EXPECT_FALSE(baseline.visible.pass) << baseline.impl;
  EXPECT_TRUE(bad.visible.pass) << bad.impl << ": " << bad.visible.detail;
  EXPECT_EQ(bad.contract_result.verdict, Verdict::kViolation) << bad.contract_result.reason;
  ASSERT_FALSE(bad.contract_result.signatures.empty()) << bad.contract_result.reason;
  EXPECT_EQ(bad.contract_result.signatures.front().name, e.signature) << bad.contract_result.reason;
  EXPECT_TRUE(bad.contract_result.signature_expected);
  EXPECT_TRUE(good.visible.pass) << good.impl;
  EXPECT_EQ(good.contract_result.verdict, Verdict::kConforming) << good.contract_result.reason;
  EXPECT_EQ(result.exit_code(), 0) << render_calibration(result, false);
}

INSTANTIATE_TEST_SUITE_P(Range, RangeCalibration,
                         ::testing::Values(RangeExpected{"KC-RANGE-01", "OVERFLOW_TO_INF"},
                                           RangeExpected{"KC-RANGE-02", "UNDERFLOW_TO_ZERO"},
                                           RangeExpected{"KC-RANGE-03", "OVERFLOW_TO_INF"},
                                           RangeExpected{"KC-RANGE-04", "OVERFLOW_TO_INF"}),
                         [](const ::testing::TestParamInfo<RangeExpected>& info) {
                           std::string name = info.param.contract;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

std::string range_path(const char* id) { return std::string(KC_SOURCE_DIR) + "/contracts/range/" + id + ".kc"; }

// An impl that declares UNSCALED (ref.layernorm sums squares in fp32) is not
// judged: the contract's promise is not its promise.
TEST(RangeDeclaration, UnscaledImplIsNotApplicable) {
  const CaseResult r = trio::check_one_in(range_path("KC-RANGE-01"), "KC-RANGE-01", "ref.layernorm");
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable) << r.reason;
}

// The scaled calibration kernels declared SAFE conform beyond their own
// trio's contract: the layernorm one at eps = 0 on tiny rows too.
TEST(RangeDeclaration, ScaledKernelsConformToEveryRangeTheyDeclare) {
  EXPECT_EQ(trio::check_one_in(range_path("KC-RANGE-02"), "KC-RANGE-02", "calib.layernorm_scaled").verdict,
            Verdict::kConforming);
  EXPECT_EQ(trio::check_one_in(range_path("KC-RANGE-03"), "KC-RANGE-03", "calib.variance_scaled").verdict,
            Verdict::kConforming);
}

}  // namespace
}  // namespace kc::engine
