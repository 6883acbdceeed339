// Tests of the norm ops (src/ops/norm): layernorm and rmsnorm oracles on
// hand-computed rows, the error model against the ref kernels, and that the
// error model is tight enough to reject a one-pass variance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "../../../backends/ref/ref_backend.h"
#include "kc/metrics.h"
#include "kc/op.h"

namespace kc {
namespace {

const double kNaN = std::nan("");

std::shared_ptr<const Impl> ref_impl(const std::string& op) {
  static auto backend = backends::make_ref_backend();
  static auto impls = backend->impls();
  for (const auto& i : impls)
    if (i->declaration().op == op) return i;
  return nullptr;
}

const Op& op_named(const std::string& name) { return *builtin_ops().find(name); }

Call make(const std::string& op, std::map<std::string, std::string> params) {
  Config c;
  c.params = std::move(params);
  auto r = op_named(op).make_call(c);
  KC_CHECK_MSG(r.ok(), "make_call failed");
  return std::move(r).value();
}

void set_all(Tensor& t, const std::vector<double>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
}

/// max over elements of |got - ref| / (gamma(L + 12, FP32) m + u |ref|): the
/// bound the op's error model documents (norm.cpp).
double worst_bound_ratio(const std::string& op_name, const Call& call) {
  const Op& op = op_named(op_name);
  auto oracle = op.oracle(call, {});
  auto mag = op.magnitude(call, "y");
  KC_CHECK(oracle.ok() && mag.ok());
  const double u = unit_roundoff(DType::kF32);
  const double g = gamma(op.accumulation_length(call) + 12, DType::kF32);
  const auto& ref = oracle->outputs[0];
  std::vector<double> allowed(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) allowed[i] = g * (*mag)[i] + u * std::fabs(ref[i]);
  return summarize(bound_ratios(call.t("y").to_doubles(), ref, allowed)).max;
}

TEST(NormOps, RegisteredWithTheDocumentedSignature) {
  const Op& ln = op_named("layernorm");
  ASSERT_EQ(ln.signature().size(), 4u);
  EXPECT_EQ(ln.signature()[0].name, "x");
  EXPECT_EQ(ln.signature()[1].name, "gamma");
  EXPECT_EQ(ln.signature()[2].name, "beta");
  EXPECT_EQ(ln.signature()[3].name, "y");
  const Op& rms = op_named("rmsnorm");
  ASSERT_EQ(rms.signature().size(), 3u);
  EXPECT_EQ(rms.signature()[2].name, "y");
  Call c = make("layernorm", {});
  EXPECT_EQ(c.get_double("eps", 1e-5), 1e-5);
  EXPECT_EQ(c.t("x").dim(1), c.t("gamma").dim(0));
}

TEST(NormOps, OracleOnHandComputedRows) {
  Call ln = make("layernorm", {{"rows", "1"}, {"cols", "4"}, {"eps", "0"}});
  set_all(ln.t("x"), {1, 2, 3, 4});
  set_all(ln.t("gamma"), {1, 1, 2, 1});
  set_all(ln.t("beta"), {0, 0, 0, 10});
  // mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  const double s = 1 / std::sqrt(1.25);
  auto y = op_named("layernorm").oracle(ln, {})->outputs[0];
  EXPECT_DOUBLE_EQ(y[0], -1.5 * s);
  EXPECT_DOUBLE_EQ(y[1], -0.5 * s);
  EXPECT_DOUBLE_EQ(y[2], 2 * 0.5 * s);
  EXPECT_DOUBLE_EQ(y[3], 1.5 * s + 10);

  Call rms = make("rmsnorm", {{"rows", "1"}, {"cols", "2"}, {"eps", "1"}});
  set_all(rms.t("x"), {3, 4});
  set_all(rms.t("gamma"), {1, 2});
  // mean square (9 + 16) / 2 = 12.5; + eps 1 = 13.5.
  y = op_named("rmsnorm").oracle(rms, {})->outputs[0];
  EXPECT_DOUBLE_EQ(y[0], 3 / std::sqrt(13.5));
  EXPECT_DOUBLE_EQ(y[1], 8 / std::sqrt(13.5));
}

TEST(NormOps, NanOrInfStaysInItsRowWithTheDocumentedValues) {
  for (const char* name : {"layernorm", "rmsnorm"}) {
    const bool ln = std::string(name) == "layernorm";
    Call c = make(name, {{"rows", "3"}, {"cols", "5"}});
    Rng rng(3);
    op_named(name).fill(c, FillSpec{}, rng);
    c.t("x").set(6, kNaN);
    c.t("x").set(12, std::numeric_limits<double>::infinity());
    auto y = op_named(name).oracle(c, {})->outputs[0];
    ASSERT_TRUE(ref_impl(name)->run(c).ok());
    const auto got = c.t("y").to_doubles();
    for (int i = 0; i < 15; ++i) {
      // Row 0 is finite; row 1 (NaN) is all NaN; row 2 (+inf) is all NaN for
      // layernorm, and 0 except the NaN at the inf for rmsnorm (norm.cpp).
      const bool want_nan = (i >= 5 && i < 10) || (i >= 10 && (ln || i == 12));
      EXPECT_EQ(std::isnan(y[i]), want_nan) << name << " oracle element " << i;
      EXPECT_EQ(std::isnan(got[i]), want_nan) << name << " ref element " << i;
      if (!ln && i >= 10 && i != 12) {
        EXPECT_EQ(y[i], 0.0);
        EXPECT_EQ(got[i], 0.0);
      }
    }
  }
}

TEST(NormOps, RejectsBadParameters) {
  Config c;
  c.params = {{"eps", "-1"}};
  EXPECT_FALSE(op_named("layernorm").make_call(c).ok());
  c.params = {{"cols", "0"}};
  EXPECT_FALSE(op_named("rmsnorm").make_call(c).ok());
  c.params = {};
  c.dtype = DType::kI32;
  EXPECT_FALSE(op_named("layernorm").make_call(c).ok());
}

TEST(NormOps, RefKernelsSitInsideTheErrorModel) {
  for (const char* name : {"layernorm", "rmsnorm"}) {
    for (const char* cols : {"1", "7", "768", "4096"}) {
      Call c = make(name, {{"rows", "4"}, {"cols", cols}});
      Rng rng(derive_seed(5, static_cast<std::uint64_t>(std::atoi(cols))));
      op_named(name).fill(c, FillSpec{FillSpec::Kind::kNormal, 0, 3}, rng);
      ASSERT_TRUE(ref_impl(name)->run(c).ok());
      EXPECT_LE(worst_bound_ratio(name, c), 1.0) << name << " cols " << cols;
    }
  }
}

TEST(NormOps, LargeMeanRowsStayInsideTheModelForTwoPassButNotOnePass) {
  // Rows with mean 1e4 and spread 1: the magnitude's mean|x| term covers the
  // conditioning of x - mean; a one-pass E[x^2] - E[x]^2 variance loses every
  // digit (u 1e8 = 6 against a variance of 1) and must fall outside it.
  Call c = make("layernorm", {{"rows", "4"}, {"cols", "512"}});
  Rng rng(9);
  op_named("layernorm").fill(c, FillSpec{FillSpec::Kind::kNormal, 1e4, 1}, rng);
  ASSERT_TRUE(ref_impl("layernorm")->run(c).ok());
  EXPECT_LE(worst_bound_ratio("layernorm", c), 1.0);

  const std::int64_t cols = 512;
  for (std::int64_t r = 0; r < 4; ++r) {
    float s = 0, s2 = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto v = static_cast<float>(c.t("x").at(r * cols + j));
      s += v;
      s2 += v * v;
    }
    const float mean = s / cols, var = s2 / cols - mean * mean;
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto v = static_cast<float>(c.t("x").at(r * cols + j));
      c.t("y").set(r * cols + j, (v - mean) / std::sqrt(std::fabs(var) + 1e-5f) * c.t("gamma").at(j) +
                                     c.t("beta").at(j));
    }
  }
  EXPECT_GT(worst_bound_ratio("layernorm", c), 1.0);
}

}  // namespace
}  // namespace kc
