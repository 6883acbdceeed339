// The probes behind the elementwise exactness contracts (src/ops/elementwise):
// `edge_values` puts the special values, signed subnormals and each
// function's hard range into x; `finite_edge_values` keeps only the inputs a
// valid-range library documents. Checked on the op itself, not through an impl.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend_test_util.h"

namespace kc::backend_test {
namespace {

std::vector<double> probe_inputs(const std::string& op, const std::string& probe) {
  const Op* o = builtin_ops().find(op);
  EXPECT_NE(o, nullptr) << op;
  Call call = make_call(op, {{"n", "4096"}});
  Rng rng(3);
  Probe p;
  p.name = probe;
  const Status s = o->apply_probe(call, p, rng);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return call.t("x").to_doubles();
}

constexpr double kMinNormal = 1.1754943508222875e-38;  // FLT_MIN
constexpr double kTiny = 1.401298464324817e-45;        // 2^-149

TEST(ElementwiseEdgeProbe, CarriesSpecialValuesSignedZerosAndSubnormals) {
  for (const char* op : {"exp", "log", "tanh", "erf"}) {
    const std::vector<double> x = probe_inputs(op, "edge_values");
    int nan = 0, pinf = 0, ninf = 0, pzero = 0, nzero = 0, sub_pos = 0, sub_neg = 0, tiny = 0;
    for (double v : x) {
      nan += std::isnan(v);
      pinf += v == std::numeric_limits<double>::infinity();
      ninf += v == -std::numeric_limits<double>::infinity();
      pzero += v == 0 && !std::signbit(v);
      nzero += v == 0 && std::signbit(v);
      const bool sub = v != 0 && std::fabs(v) < kMinNormal;
      sub_pos += sub && v > 0;
      sub_neg += sub && v < 0;
      tiny += std::fabs(v) == kTiny;
    }
    EXPECT_GE(nan, 1) << op;
    EXPECT_GE(pinf, 1) << op;
    EXPECT_GE(ninf, 1) << op;
    EXPECT_GE(pzero, 1) << op;
    EXPECT_GE(nzero, 1) << op;
    EXPECT_GE(tiny, 2) << op;  // +-2^-149
    EXPECT_GT(sub_pos, 100) << op;
    if (std::string(op) != "log") {
      EXPECT_GT(sub_neg, 100) << op;
    }
  }
}

// Each function's hard range is drawn: exp's gradual underflow (subnormal
// results), log near 1, tanh and erf past the point where FP32 rounds them to 1.
TEST(ElementwiseEdgeProbe, DrawsEachFunctionsHardRange) {
  const double ln_tiny = std::log(kTiny), ln_min = std::log(kMinNormal);
  int underflow = 0;
  for (double v : probe_inputs("exp", "edge_values")) underflow += v >= ln_tiny - 0.35 && v < ln_min;
  EXPECT_GT(underflow, 1000);
  int near_one = 0;
  for (double v : probe_inputs("log", "edge_values")) near_one += v != 1 && std::fabs(v - 1) <= 0x1p-10;
  EXPECT_GT(near_one, 300);
  int tanh_sat = 0;
  for (double v : probe_inputs("tanh", "edge_values")) tanh_sat += std::fabs(v) >= 9.1 && std::fabs(v) <= 12;
  EXPECT_GT(tanh_sat, 100);
  int erf_sat = 0, erf_fltmin = 0;
  for (double v : probe_inputs("erf", "edge_values")) {
    erf_sat += std::fabs(v) >= 3.92 && std::fabs(v) <= 4.5;
    erf_fltmin += std::fabs(v) >= kMinNormal / 16 && std::fabs(v) <= kMinNormal * 64;
  }
  EXPECT_GT(erf_sat, 50);
  EXPECT_GT(erf_fltmin, 300);
}

// No input near exp's overflow threshold ln(FLT_MAX): just above it a result
// within a documented bound may be FLT_MAX while the correctly rounded value
// is +inf. The probe's nearest points are ln(FLT_MAX) - 2^-10 and
// ln(FLT_MAX) + 0.01, each rounded to FP32 (spacing 2^-17 there).
TEST(ElementwiseEdgeProbe, LeavesOutExpsAmbiguousOverflowBand) {
  const double ln_max = std::log(3.4028234663852886e38);
  for (double v : probe_inputs("exp", "edge_values")) {
    EXPECT_FALSE(v > ln_max - 0x1p-11 && v < ln_max + 0.005) << v;
  }
}

TEST(ElementwiseEdgeProbe, FiniteVariantKeepsOnlyTheDocumentedDomain) {
  for (const char* op : {"exp", "log", "tanh", "erf"}) {
    const std::vector<double> x = probe_inputs(op, "finite_edge_values");
    int sub = 0;
    for (double v : x) {
      ASSERT_TRUE(std::isfinite(v)) << op << " " << v;
      if (std::string(op) == "log") {
        ASSERT_GT(v, 0) << v;
      }
      if (std::string(op) == "exp") {
        ASSERT_LE(v, std::log(3.4028234663852886e38) + 0.01 + 0x1p-16) << v;  // + FP32 rounding
      }
      sub += v != 0 && std::fabs(v) < kMinNormal;
    }
    EXPECT_GT(sub, 100) << op;
  }
}

TEST(ElementwiseEdgeProbe, OtherOpsRejectIt) {
  const Op* o = builtin_ops().find("sum");
  ASSERT_NE(o, nullptr);
  Call call = make_call("sum", {{"n", "16"}});
  Rng rng(1);
  Probe p;
  p.name = "edge_values";
  EXPECT_FALSE(o->apply_probe(call, p, rng).ok());
}

}  // namespace
}  // namespace kc::backend_test
