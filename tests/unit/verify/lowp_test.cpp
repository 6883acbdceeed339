// The fast GEMM check on low-precision inputs with a declared accumulator
// (include/kc/verify.h Options::accumulator / output, docs/verify.md
// "Low-precision inputs"): honest kernels that really accumulate in the
// declared format pass, a kernel whose running sum is narrower than declared
// is caught, the bound grows with the accumulator's unit roundoff, and the
// absolute underflow term is the full check's where the two overlap.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kc/bound.h"
#include "kc/dtype.h"
#include "kc/op.h"
#include "kc/rng.h"
#include "kc/verify.h"

namespace kc::verify {
namespace {

/// The error of a + b in FP64 (Knuth's TwoSum): zero iff the sum is exact.
double two_sum_error(double a, double b) {
  const double s = a + b, bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

/// A row-major C = alpha A B + beta C0 (M x K times K x N) whose inputs are
/// values of `in`, computed the way a kernel with an `acc` accumulator and an
/// `out` output does it: each product formed in FP32 (exact for two values of
/// at most 12 significant bits but for underflow), each partial sum and the
/// alpha, beta steps rounded once to `acc`, the result rounded once to `out`. `running` overrides the format
/// the running sum is rounded to (a coerced kernel); kF64 keeps it exact.
struct LowpGemm {
  std::int64_t m, n, k;
  DType in, acc, out;
  double alpha = 1, beta = 0;
  std::vector<float> a, b, c0, c;

  LowpGemm(std::int64_t m_, std::int64_t n_, std::int64_t k_, DType in_, DType acc_, DType out_, Rng& rng,
           double scale = 1)
      : m(m_), n(n_), k(k_), in(in_), acc(acc_), out(out_) {
    a.resize(static_cast<std::size_t>(m * k));
    b.resize(static_cast<std::size_t>(k * n));
    c0.resize(static_cast<std::size_t>(m * n));
    for (auto& v : a) v = static_cast<float>(round_to(scale * rng.normal(), in));
    for (auto& v : b) v = static_cast<float>(round_to(scale * rng.normal(), in));
    for (auto& v : c0) v = static_cast<float>(round_to(rng.normal(), out));
  }

  /// Rounds the exact FP64 sum s (checked exact) to the running format.
  static double to(double s, DType t) { return t == DType::kF64 ? s : round_to(s, t); }

  void run() { run_with(acc); }
  void run_with(DType running) {
    c.assign(static_cast<std::size_t>(m * n), 0.0f);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          // Formed in FP32: exact for inputs of at most 12 significant bits,
          // unless it underflows there (bf16 shares FP32's exponent range).
          const double prod = static_cast<double>(a[i * k + p] * b[p * n + j]);
          ASSERT_EQ(two_sum_error(s, prod), 0.0) << "the emulation's FP64 sum is not exact";
          s = to(s + prod, running);
        }
        double r = to(alpha * s, running);
        if (beta != 0) r = to(r + to(beta * c0[i * n + j], running), running);
        c[static_cast<std::size_t>(i * n + j)] = static_cast<float>(round_to(r, out));
      }
  }

  GemmProblem problem() const {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.alpha = alpha, p.beta = beta;
    p.a = {a.data(), m, k, k};
    p.b = {b.data(), k, n, n};
    p.c0 = {c0.data(), m, n, n};
    p.c = {c.data(), m, n, n};
    return p;
  }

  Options options(std::uint64_t seed, ErrorModel model = ErrorModel::kWorstCase) const {
    Options o;
    o.seed = seed;
    o.threads = 2;
    o.model = model;
    o.precision = in;
    o.accumulator = acc;
    o.output = out;
    return o;
  }
};

struct LowpConfig {
  DType in, acc, out;
  std::int64_t k;  // BF16 accumulation has a worst-case bound only for K + 2 < 128
};

std::string name(const LowpConfig& c) {
  return std::string(dtype_name(c.in)) + " in, " + std::string(dtype_name(c.acc)) + " acc, " +
         std::string(dtype_name(c.out)) + " out";
}

const LowpConfig kConfigs[] = {
    {DType::kBF16, DType::kF32, DType::kBF16, 300},     {DType::kF16, DType::kF32, DType::kF16, 300},
    {DType::kFP8E4M3, DType::kF32, DType::kBF16, 300},  {DType::kFP8E5M2, DType::kF32, DType::kBF16, 300},
    {DType::kBF16, DType::kF32, DType::kF32, 300},      {DType::kF16, DType::kF16, DType::kF16, 300},
    {DType::kFP8E4M3, DType::kF16, DType::kF16, 300},   {DType::kBF16, DType::kBF16, DType::kBF16, 100},
};

TEST(LowPrecisionVerifier, HonestGemmsWithTheDeclaredAccumulatorPass) {
  for (const LowpConfig& cf : kConfigs) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      Rng rng(seed);
      LowpGemm g(40, 56, cf.k, cf.in, cf.acc, cf.out, rng);
      if (seed % 2 == 0) g.beta = 0.5;  // beta C0 rounded into the accumulator too
      if (seed == 3) g.alpha = -2;
      g.run();
      for (const ErrorModel model : {ErrorModel::kWorstCase, ErrorModel::kProbabilistic}) {
        Options o = g.options(seed, model);
        o.samples = 40 * 56;  // every element sampled as well
        auto r = verify_gemm(g.problem(), o);
        ASSERT_TRUE(r.ok()) << name(cf) << ": " << r.status().to_string();
        EXPECT_TRUE(r->pass) << name(cf) << " seed " << seed << ": " << r->detail;
        EXPECT_GT(r->freivalds_ratio, 0) << "a ratio of zero would say nothing about the bound";
      }
    }
  }
}

// Products below FP32's normal range (bf16 has FP32's exponents): an honest
// bf16 GEMM with FP32 accumulation and a bf16 output passes on the underflow
// term, and a corruption of 1.5 T_i is still caught in its row.
TEST(LowPrecisionVerifier, UnderflowingBf16ProductsPass) {
  Rng rng(8);
  LowpGemm g(24, 32, 64, DType::kBF16, DType::kF32, DType::kBF16, rng, 0x1p-68);  // products ~2^-136
  g.run();
  Options o = g.options(4);
  o.samples = 24 * 32;
  o.keep_row_bounds = true;
  auto honest = verify_gemm(g.problem(), o);
  ASSERT_TRUE(honest.ok()) << honest.status().to_string();
  EXPECT_TRUE(honest->pass) << honest->detail;
  o.samples = 0;
  g.c[5 * 32 + 7] += static_cast<float>(1.5 * honest->row_bounds[5]);
  auto bad = verify_gemm(g.problem(), o);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->pass);
  EXPECT_EQ(bad->freivalds_worst_row, 5);
}

// A kernel that keeps its running sum in bf16 (or fp16) where FP32 is declared.
TEST(LowPrecisionVerifier, NarrowerRunningSumThanDeclaredIsCaught) {
  struct Case {
    DType in, out, running;
  };
  const Case cases[] = {{DType::kBF16, DType::kBF16, DType::kBF16},
                        {DType::kBF16, DType::kF32, DType::kBF16},
                        {DType::kF16, DType::kF16, DType::kBF16},
                        {DType::kFP8E4M3, DType::kBF16, DType::kBF16},
                        {DType::kF16, DType::kF16, DType::kF16}};
  for (const Case& cs : cases) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      Rng rng(100 + seed);
      LowpGemm g(48, 48, 256, cs.in, DType::kF32, cs.out, rng);
      g.run_with(cs.running);
      for (const ErrorModel model : {ErrorModel::kWorstCase, ErrorModel::kProbabilistic}) {
        auto r = verify_gemm(g.problem(), g.options(seed, model));
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        EXPECT_FALSE(r->pass) << dtype_name(cs.in) << " in, " << dtype_name(cs.out) << " out, running sum in "
                              << dtype_name(cs.running) << ", seed " << seed << ": " << r->detail;
      }
      // Declared honestly, the same kernel passes (fp16 and bf16 sums have a
      // worst-case bound at this K only in the probabilistic model for bf16).
      Options honest = g.options(seed, ErrorModel::kProbabilistic);
      honest.accumulator = cs.running;
      auto h = verify_gemm(g.problem(), honest);
      ASSERT_TRUE(h.ok()) << h.status().to_string();
      EXPECT_TRUE(h->pass) << "declared " << dtype_name(cs.running) << ": " << h->detail;
    }
  }
}

// u_acc: FP32 (2^-24) < FP16 (2^-11) < BF16 (2^-8). Every row bound and every
// element's bound grows with it, so a result judged under the narrower
// accumulator has a ratio at most the wider one's.
TEST(LowPrecisionVerifier, BoundIsMonotoneInTheAccumulatorsUnitRoundoff) {
  Rng rng(5);
  LowpGemm g(32, 48, 64, DType::kFP8E4M3, DType::kF32, DType::kBF16, rng);
  g.beta = 0.5;
  g.run_with(DType::kBF16);
  const DType accs[] = {DType::kF32, DType::kF16, DType::kBF16};
  for (const ErrorModel model : {ErrorModel::kWorstCase, ErrorModel::kProbabilistic}) {
    std::vector<double> prev_bounds;
    double prev_gamma = 0, prev_ratio = 0;
    for (std::size_t t = 0; t < std::size(accs); ++t) {
      Options o = g.options(9, model);
      o.accumulator = accs[t];
      o.keep_row_bounds = true;
      o.samples = 32 * 48;
      auto r = verify_gemm(g.problem(), o);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      ASSERT_EQ(r->row_bounds.size(), 32u);
      if (t > 0) {
        EXPECT_GT(r->gamma, prev_gamma);
        for (std::size_t i = 0; i < r->row_bounds.size(); ++i) EXPECT_GT(r->row_bounds[i], prev_bounds[i]) << i;
        EXPECT_LT(r->sample_ratio, prev_ratio);
      }
      prev_bounds = r->row_bounds;
      prev_gamma = r->gamma;
      prev_ratio = r->sample_ratio;
    }
  }
  for (double k : {16.0, 256.0, 4096.0}) {
    EXPECT_LT(model_gamma(ErrorModel::kWorstCase, k, DType::kF32, 6), model_gamma(ErrorModel::kWorstCase, k, DType::kF16, 6));
    EXPECT_LT(model_gamma(ErrorModel::kProbabilistic, k, DType::kF16, 6),
              model_gamma(ErrorModel::kProbabilistic, k, DType::kBF16, 6));
  }
}

// Unset accumulator and output are the declared precision: the FP32 bound and
// the bf16-as-accumulator bound are what they were before the fields existed.
TEST(LowPrecisionVerifier, UnsetAccumulatorAndOutputAreThePrecision) {
  for (const DType p : {DType::kF32, DType::kBF16, DType::kF16}) {
    Rng rng(3);
    LowpGemm g(16, 24, 40, p, p, p, rng);
    g.run();
    Options set = g.options(2);
    set.keep_row_bounds = true;
    Options unset = set;
    unset.accumulator.reset();
    unset.output.reset();
    auto a = verify_gemm(g.problem(), set);
    auto b = verify_gemm(g.problem(), unset);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->row_bounds, b->row_bounds);
    EXPECT_EQ(a->gamma, gamma(42, p));
  }
  EXPECT_EQ(gemm_bound_underflow(100, 1, DType::kF32, DType::kF32), gemm_underflow_allowance(100, 1, DType::kF32));
}

TEST(LowPrecisionVerifier, RoundingCountAndUnderflowTerm) {
  // Exact products: K + 2; FP32 products rounded again into an fp16 sum: K + 3.
  EXPECT_EQ(gemm_rounding_count(64, DType::kBF16, DType::kF32), 66);
  EXPECT_EQ(gemm_rounding_count(64, DType::kFP8E5M2, DType::kF16), 66);
  EXPECT_EQ(gemm_rounding_count(64, DType::kF32, DType::kF32), 66);
  EXPECT_EQ(gemm_rounding_count(64, DType::kF32, DType::kF16), 67);
  // A wider accumulator than the storage format: exactly the full check's
  // allowance for that call (matmul's Op::underflow_allowance).
  const Op* op = builtin_ops().find("matmul");
  ASSERT_NE(op, nullptr);
  for (const char* alpha : {"1", "3"}) {
    Config config;
    config.params = {{"M", "8"}, {"N", "8"}, {"K", "77"}, {"alpha", alpha}};
    config.dtype = DType::kBF16;
    config.accumulator = DType::kF32;
    auto call = op->make_call(config);
    ASSERT_TRUE(call.ok()) << call.status().to_string();
    EXPECT_EQ(gemm_bound_underflow(77, std::stod(alpha), DType::kF32, DType::kBF16), op->underflow_allowance(*call));
  }
  // A narrower one adds FP32 product underflow on top of its own.
  EXPECT_EQ(gemm_bound_underflow(77, 3, DType::kF16, DType::kF16),
            gemm_underflow_allowance(77, 3, DType::kF16) + 3 * 77 * underflow_unit(DType::kF32));
  EXPECT_EQ(gemm_bound_underflow(77, 1, DType::kBF16, DType::kF32),
            gemm_underflow_allowance(77, 1, DType::kBF16) + underflow_unit(DType::kF32) + 77 * underflow_unit(DType::kF32));
}

// verify_matmul takes the impl's declared accumulator where it is wider than
// the call's dtype: a bf16 call declared FP32 is judged with gamma_(K+2)(u_32)
// and a bf16 output rounding.
TEST(LowPrecisionVerifier, MatmulCallsTakeAWiderDeclaredAccumulator) {
  const Op* op = builtin_ops().find("matmul");
  ASSERT_NE(op, nullptr);
  Config config;
  config.params = {{"M", "16"}, {"N", "16"}, {"K", "64"}};
  config.dtype = DType::kBF16;
  config.accumulator = DType::kF32;
  auto call = op->make_call(config);
  ASSERT_TRUE(call.ok());
  Rng rng(2);
  op->fill(*call, FillSpec{}, rng);
  const Call inputs = *call;
  // An honest FP32-accumulating kernel: exact products, FP32 sums, bf16 store.
  const Tensor& a = inputs.t("A");
  const Tensor& b = inputs.t("B");
  Tensor& c = call->t("C");
  for (std::int64_t i = 0; i < 16; ++i)
    for (std::int64_t j = 0; j < 16; ++j) {
      float s = 0;
      for (std::int64_t p = 0; p < 64; ++p) s += static_cast<float>(a.at(i * 64 + p)) * static_cast<float>(b.at(p * 16 + j));
      c.set(i * 16 + j, round_to(s, DType::kBF16));
    }
  Options o;
  o.seed = 1;
  auto r = verify_matmul(inputs, *call, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->pass) << r->detail;
  EXPECT_EQ(r->gamma, gamma(66, DType::kF32));
  EXPECT_EQ(r->u_out, unit_roundoff(DType::kBF16));
  EXPECT_EQ(r->underflow, op->underflow_allowance(inputs));
}

}  // namespace
}  // namespace kc::verify
