// The fast GEMM verifier (include/kc/verify.h): never false-alarms on honest
// FP32 kernels, catches a single corrupted element at 1.5x its row's bound,
// and catches every precision coercion (tf32, bf16, fp16 inputs; fp16
// accumulation). Tests the tester too: a bound one step too tight must fail.
// Attention's sampled-row check: the full check's ratios on every sampled
// element, a corrupted element caught in its row, bf16 inputs caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "../backends/backend_test_util.h"
#include "engine/classify.h"
#include "kc/backend.h"
#include "kc/bound.h"
#include "kc/op.h"
#include "kc/rng.h"
#include "kc/verify.h"
#include "verify/thin_product.h"

namespace kc::verify {
namespace {

enum class Coercion { kNone, kTf32Inputs, kBf16Inputs, kFp16Inputs, kFp16Accumulator };

/// A dense row-major problem C = alpha op(A) op(B) + beta C0 with owned storage.
struct Gemm {
  std::int64_t m, n, k, lda, ldb, ldc;
  bool ta = false, tb = false;
  float alpha = 1, beta = 0;
  std::vector<float> a, b, c0, c;

  Gemm(std::int64_t m_, std::int64_t n_, std::int64_t k_, bool ta_, bool tb_, std::int64_t pad, Rng& rng)
      : m(m_), n(n_), k(k_), ta(ta_), tb(tb_) {
    lda = (ta ? m : k) + pad;
    ldb = (tb ? k : n) + pad;
    ldc = n + pad;
    a.resize(static_cast<std::size_t>((ta ? k : m) * lda));
    b.resize(static_cast<std::size_t>((tb ? n : k) * ldb));
    c0.resize(static_cast<std::size_t>(m * ldc));
    for (auto& v : a) v = static_cast<float>(rng.normal());
    for (auto& v : b) v = static_cast<float>(rng.normal());
    for (auto& v : c0) v = static_cast<float>(rng.normal());
  }
  float opa(std::int64_t i, std::int64_t p) const { return ta ? a[p * lda + i] : a[i * lda + p]; }
  float opb(std::int64_t p, std::int64_t j) const { return tb ? b[j * ldb + p] : b[p * ldb + j]; }

  /// A naive FP32 kernel, optionally coerced the way a misbehaving kernel would be.
  void run(Coercion co = Coercion::kNone) {
    c = c0;
    auto in = [&](float v) -> float {
      switch (co) {
        case Coercion::kTf32Inputs: return static_cast<float>(round_to(v, DType::kTF32));
        case Coercion::kBf16Inputs: return static_cast<float>(round_to(v, DType::kBF16));
        case Coercion::kFp16Inputs: return static_cast<float>(round_to(v, DType::kF16));
        default: return v;
      }
    };
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        float acc = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          acc += in(opa(i, p)) * in(opb(p, j));
          if (co == Coercion::kFp16Accumulator) acc = static_cast<float>(round_to(acc, DType::kF16));
        }
        float& out = c[static_cast<std::size_t>(i * ldc + j)];
        out = beta == 0 ? alpha * acc : alpha * acc + beta * out;
      }
  }

  GemmProblem problem() const {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k, p.trans_a = ta, p.trans_b = tb, p.alpha = alpha, p.beta = beta;
    p.a = {a.data(), ta ? k : m, ta ? m : k, lda};
    p.b = {b.data(), tb ? n : k, tb ? k : n, ldb};
    p.c0 = {c0.data(), m, n, ldc};
    p.c = {c.data(), m, n, ldc};
    return p;
  }
};

Options opts(std::uint64_t seed, int probes = 10, std::int64_t samples = 64) {
  Options o;
  o.seed = seed;
  o.probes = probes;
  o.samples = samples;
  o.threads = 2;
  return o;
}

TEST(FreivaldsVerifier, HonestNaiveFp32NeverFalseAlarms) {
  struct Shape {
    std::int64_t m, n, k;
    bool ta, tb;
    std::int64_t pad;
    float alpha, beta;
  };
  const Shape shapes[] = {{64, 64, 64, false, false, 0, 1, 0},   {33, 47, 129, false, true, 3, 1, 0},
                          {17, 5, 300, true, false, 1, -0.5f, 2}, {96, 80, 1, true, true, 0, 2, 0.25f},
                          {1, 128, 64, false, false, 0, 1, 1},    {128, 1, 257, true, false, 2, 1, 0}};
  double worst = 0;
  for (const Shape& s : shapes) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed) {
      Rng rng(seed * 7919);
      Gemm g(s.m, s.n, s.k, s.ta, s.tb, s.pad, rng);
      g.alpha = s.alpha;
      g.beta = s.beta;
      g.run();
      for (ProbeKind pk : {ProbeKind::kRademacher, ProbeKind::kGaussian}) {
        Options o = opts(seed);
        o.probe = pk;
        auto r = verify_gemm(g.problem(), o);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        EXPECT_TRUE(r->pass) << r->detail << " shape " << s.m << "x" << s.n << "x" << s.k << " seed " << seed;
        worst = std::max(worst, r->worst_ratio);
      }
    }
  }
  // Short sums come closest (K = 1 with alpha and beta rounds four times
  // against gamma_3 + u); anything near 1 would mean a mis-derived bound.
  EXPECT_LT(worst, 0.6);
}

TEST(FreivaldsVerifier, ProbabilisticModelAlsoPassesHonestKernels) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    Gemm g(128, 128, 512, false, false, 0, rng);
    g.run();
    Options o = opts(seed);
    o.model = ErrorModel::kProbabilistic;
    auto r = verify_gemm(g.problem(), o);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->pass) << r->detail;
  }
}

TEST(FreivaldsVerifier, DetectsSingleElementAtOnePointFiveTimesRowBound) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    Rng rng(seed);
    Gemm g(64, 64, 64, false, false, 0, rng);
    g.run();
    Options o = opts(seed, 10, 0);  // Freivalds alone
    o.keep_row_bounds = true;
    auto honest = verify_gemm(g.problem(), o);
    ASSERT_TRUE(honest.ok());
    ASSERT_TRUE(honest->pass);
    const std::int64_t i = rng.uniform_int(0, g.m - 1), j = rng.uniform_int(0, g.n - 1);
    const double t = honest->row_bounds[static_cast<std::size_t>(i)];
    const double sign = rng.uniform() < 0.5 ? -1 : 1;
    g.c[static_cast<std::size_t>(i * g.ldc + j)] += static_cast<float>(sign * 1.5 * t);
    auto bad = verify_gemm(g.problem(), o);
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(bad->pass) << "seed " << seed;
    EXPECT_EQ(bad->method, Method::kFreivalds);
    ASSERT_FALSE(bad->rows.empty());
    EXPECT_EQ(bad->rows.front(), i);
    EXPECT_EQ(bad->failing_rows, 1);
  }
}

// The Freivalds pass over B also gathers the sampled check's columns of B;
// alone, the sampled check gathers them itself. Both must judge the same
// elements the same way, and the sample must still find a gross error.
TEST(FreivaldsVerifier, SampledCheckIsTheSameWithOrWithoutTheFreivaldsPass) {
  int caught = 0;
  for (bool tb : {false, true}) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      Rng rng(seed);
      Gemm g(32, 32, 48, false, tb, 1, rng);
      g.run();
      const std::int64_t i = rng.uniform_int(0, g.m - 1), j = rng.uniform_int(0, g.n - 1);
      g.c[static_cast<std::size_t>(i * g.ldc + j)] += 100.0f;
      auto both = verify_gemm(g.problem(), opts(seed, 10, 256));
      auto alone = verify_gemm(g.problem(), opts(seed, 0, 256));
      ASSERT_TRUE(both.ok() && alone.ok());
      EXPECT_EQ(both->samples, alone->samples);
      EXPECT_EQ(both->failing_samples, alone->failing_samples) << "seed " << seed << " tb " << tb;
      EXPECT_EQ(both->sample_ratio, alone->sample_ratio) << "seed " << seed << " tb " << tb;
      EXPECT_FALSE(both->pass);  // the probes always see it
      if (alone->failing_samples > 0) {
        ++caught;
        EXPECT_EQ(alone->sample_worst_row, i);
        EXPECT_EQ(alone->sample_worst_col, j);
      }
    }
  }
  // 256 of 1024 elements sampled: about a quarter of the 40 runs.
  EXPECT_GE(caught, 3);
}

TEST(FreivaldsVerifier, SmallCorruptionBelowTheBoundPasses) {
  // Not over-sensitive: 0.1x the row bound is inside the promise.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    Gemm g(64, 64, 64, false, false, 0, rng);
    g.run();
    Options o = opts(seed, 10, 0);
    o.keep_row_bounds = true;
    auto honest = verify_gemm(g.problem(), o);
    ASSERT_TRUE(honest.ok());
    g.c[5 * g.ldc + 7] += static_cast<float>(0.1 * honest->row_bounds[5]);
    auto r = verify_gemm(g.problem(), o);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->pass) << r->detail;
  }
}

class Coercions : public ::testing::TestWithParam<Coercion> {};

TEST_P(Coercions, Detected) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Rng rng(seed);
    Gemm g(64, 64, 64, false, false, 0, rng);
    g.run(GetParam());
    auto r = verify_gemm(g.problem(), opts(seed));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->pass) << "seed " << seed << ": " << r->detail;
  }
}

INSTANTIATE_TEST_SUITE_P(FreivaldsVerifier, Coercions,
                         ::testing::Values(Coercion::kTf32Inputs, Coercion::kBf16Inputs, Coercion::kFp16Inputs,
                                           Coercion::kFp16Accumulator),
                         [](const auto& info) {
                           switch (info.param) {
                             case Coercion::kTf32Inputs: return std::string("tf32_inputs");
                             case Coercion::kBf16Inputs: return std::string("bf16_inputs");
                             case Coercion::kFp16Inputs: return std::string("fp16_inputs");
                             case Coercion::kFp16Accumulator: return std::string("fp16_accumulator");
                             default: return std::string("none");
                           }
                         });

TEST(FreivaldsVerifier, BoundOneStepTooTightFails) {
  // Test the tester: with the bound scaled far below the honest error the
  // verifier must object; the honest worst ratio says how far is "far".
  Rng rng(3);
  Gemm g(64, 64, 256, false, false, 0, rng);
  g.run();
  auto honest = verify_gemm(g.problem(), opts(3));
  ASSERT_TRUE(honest.ok());
  ASSERT_TRUE(honest->pass);
  Options tight = opts(3);
  tight.bound_scale = honest->worst_ratio / 2;
  auto r = verify_gemm(g.problem(), tight);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pass);
}

TEST(FreivaldsVerifier, AllZeroAndNaNOutputsFail) {
  Rng rng(4);
  Gemm g(32, 32, 32, false, false, 0, rng);
  g.run();
  std::fill(g.c.begin(), g.c.end(), 0.0f);
  auto zero = verify_gemm(g.problem(), opts(4));
  ASSERT_TRUE(zero.ok());
  EXPECT_FALSE(zero->pass);
  g.run();
  g.c[100] = std::numeric_limits<float>::quiet_NaN();
  auto nan = verify_gemm(g.problem(), opts(4, 4, 0));
  ASSERT_TRUE(nan.ok());
  EXPECT_FALSE(nan->pass);
  EXPECT_EQ(nan->rows.front(), 100 / 32);
}

TEST(FreivaldsVerifier, NonFiniteInputsAreUnimplemented) {
  Rng rng(5);
  Gemm g(16, 16, 16, false, false, 0, rng);
  g.a[3] = std::numeric_limits<float>::infinity();
  g.run();
  auto r = verify_gemm(g.problem(), opts(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(FreivaldsVerifier, RejectsMismatchedShapes) {
  Rng rng(6);
  Gemm g(16, 16, 16, false, false, 0, rng);
  g.run();
  GemmProblem p = g.problem();
  p.k = 17;
  auto r = verify_gemm(p, opts(6));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// Honest kernels from kc's own backend registry, through the matmul op's call layout.
using backend_test::registry;

// The streaming kernel (src/verify/thin_product.cpp) computes what its header
// says: FP64 products and an FP32 magnitude product, for both forms, odd
// sizes, padded strides, every probe-count remainder, one thread and two.
TEST(ThinPass, MatchesNaiveProductsInBothForms) {
  struct Shape {
    std::int64_t rows, cols, pad;
  };
  for (const Shape sh : {Shape{7, 5, 0}, Shape{33, 261, 3}, Shape{300, 263, 1}, Shape{260, 301, 0}}) {
    for (bool transposed : {false, true}) {
      for (int nv : {1, 4, 7, 12}) {
        for (bool abs_rows : {false, true}) {
          Rng rng(static_cast<std::uint64_t>(sh.rows * 131 + sh.cols + nv + (transposed ? 7 : 0)));
          const std::int64_t ld = sh.cols + sh.pad;
          std::vector<float> data(static_cast<std::size_t>(sh.rows * ld));
          for (auto& v : data) v = static_cast<float>(rng.normal());
          const MatrixRef m{data.data(), sh.rows, sh.cols, ld};
          const std::int64_t in_len = transposed ? sh.rows : sh.cols, out_len = transposed ? sh.cols : sh.rows;
          const std::int64_t ldv = detail::padded_stride(in_len), ldo = detail::padded_stride(out_len);
          std::vector<double> v(static_cast<std::size_t>(nv * ldv));
          for (auto& e : v) e = rng.normal();
          std::vector<float> wa(static_cast<std::size_t>(in_len));
          for (auto& e : wa) e = static_cast<float>(std::fabs(rng.normal()));
          auto at = [&](std::int64_t i, std::int64_t j) {
            return static_cast<double>(transposed ? data[j * ld + i] : data[i * ld + j]);
          };
          for (int threads : {1, 2}) {
            std::vector<double> out(static_cast<std::size_t>(nv * ldo), -1.0);
            std::vector<float> mag(static_cast<std::size_t>(out_len), -1.0f);
            detail::ThinPass ps;
            ps.m = &m;
            ps.transposed = transposed;
            ps.v = v.data();
            ps.nv = nv;
            ps.ldv = ldv;
            ps.abs_rows = abs_rows;
            ps.wa = wa.data();
            ps.out = out.data();
            ps.ldo = ldo;
            ps.mag = mag.data();
            ps.threads = threads;
            detail::thin_pass(ps);
            for (std::int64_t i = 0; i < out_len; ++i) {
              double mref = 0;
              for (std::int64_t j = 0; j < in_len; ++j) mref += std::fabs(at(i, j)) * wa[j];
              EXPECT_NEAR(mag[i], mref, 1e-5 * mref) << "row " << i;
              for (int p = 0; p < nv; ++p) {
                double ref = 0, scale = 0;
                for (std::int64_t j = 0; j < in_len; ++j) {
                  const double a = abs_rows ? std::fabs(at(i, j)) : at(i, j);
                  ref += a * v[p * ldv + j];
                  scale += std::fabs(a * v[p * ldv + j]);
                }
                ASSERT_NEAR(out[p * ldo + i], ref, 1e-13 * scale)
                    << sh.rows << "x" << sh.cols << (transposed ? " T" : " N") << " nv " << nv << " probe " << p
                    << " row " << i << " threads " << threads;
              }
            }
          }
        }
      }
    }
  }
}

// The FP32 block path (ThinPass::vf): every signed product within
// gamma_r(u32) |row||v32| of the exact one, r = ThinPass::fp32_roundings (16,
// or 8 for sums shorter than 1024: the term freivalds.cpp adds to its bound), and the FP32 magnitude product within
// cols + 16 roundings of u32, for each kernel this CPU has (the 8-lane and the
// 16-lane one, and the FP64 path with the kernels capped off), for lengths
// around both block sizes and the 16-column steps, probe counts below, at and
// past one 16-lane tile (10), and rows with huge and tiny entries. The rows
// start 0, 1, 5 or 12 floats past a 64-byte boundary: the kernels peel the
// columns before the first aligned one (a masked step on the 16-lane path;
// offset 1 leaves no aligned column in a 15-column row), and leading
// dimensions that are not a multiple of 16 floats leave the rows at
// different alignments. The pass also copies three columns per row (gather).
TEST(ThinPass, Fp32BlocksStayWithinTheirRoundingBound) {
  struct CapGuard {
    detail::Fp32Kernel saved = detail::cap_fp32_kernel(detail::Fp32Kernel::kAvx512);
    ~CapGuard() { detail::cap_fp32_kernel(saved); }
  } guard;
  const detail::Fp32Kernel widest = detail::fp32_kernel();
  int kernels_run = 0;
  for (const detail::Fp32Kernel cap :
       {detail::Fp32Kernel::kNone, detail::Fp32Kernel::kAvx2, detail::Fp32Kernel::kAvx512}) {
    if (cap > widest) continue;
    detail::cap_fp32_kernel(cap);
    ASSERT_EQ(detail::fp32_kernel(), cap);
    ++kernels_run;
    for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}, std::int64_t{12}})
      for (const std::int64_t cols : {8, 15, 17, 127, 128, 255, 256, 300, 529, 1031})
        for (const int nv : {1, 7, 10, 13})
        for (const int r : {detail::kFp32Roundings, detail::kFp32Roundings / 2}) {
          const double gr = gamma(r, DType::kF32);
          const std::int64_t rows = 37;
          Rng rng(static_cast<std::uint64_t>(cols * 100 + nv));
          const std::int64_t ld = (cols + 7) / 8 * 8;
          std::vector<float> store(static_cast<std::size_t>(rows * ld + 32));
          const auto base = reinterpret_cast<std::uintptr_t>(store.data());
          float* data = reinterpret_cast<float*>((base + 63) & ~std::uintptr_t{63}) + offset;
          for (std::int64_t e = 0; e < rows * ld; ++e)
            data[e] = static_cast<float>(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.uniform_int(-20, 20))));
          const MatrixRef m{data, rows, cols, ld};
          const std::int64_t ldv = detail::padded_stride(cols), ldo = detail::padded_stride(rows);
          std::vector<double> v(static_cast<std::size_t>(nv * ldv), 0.0);
          for (auto& e : v) e = rng.normal();
          const std::vector<float> vf(v.begin(), v.end());
          std::vector<float> wa(static_cast<std::size_t>(cols));
          for (auto& e : wa) e = static_cast<float>(rng.uniform());
          std::vector<double> out(static_cast<std::size_t>(nv * ldo), -1.0);
          std::vector<float> mag(static_cast<std::size_t>(rows), -1.0f);
          const std::vector<std::int64_t> gather = {0, cols / 2, cols - 1};
          std::vector<double> gathered(static_cast<std::size_t>(rows * 3), -1.0);
          detail::ThinPass ps;
          ps.m = &m;
          ps.v = v.data();
          ps.vf = vf.data();
          ps.nv = nv;
          ps.ldv = ldv;
          ps.out = out.data();
          ps.ldo = ldo;
          ps.wa = wa.data();
          ps.mag = mag.data();
          ps.threads = 2;
          ps.gather_cols = gather.data();
          ps.gather_count = 3;
          ps.gather_out = gathered.data();
          ps.fp32_roundings = r;
          const bool took = detail::thin_pass(ps);
          EXPECT_EQ(took, cap != detail::Fp32Kernel::kNone);
          const double gm = gamma(static_cast<double>(cols) + 16, DType::kF32);
          for (std::int64_t i = 0; i < rows; ++i) {
            double mref = 0;
            for (std::int64_t j = 0; j < cols; ++j)
              mref += std::fabs(static_cast<double>(data[i * ld + j])) * static_cast<double>(wa[j]);
            ASSERT_LE(std::fabs(static_cast<double>(mag[i]) - mref), gm * mref) << "cols " << cols << " row " << i;
            for (std::int64_t t = 0; t < 3; ++t)
              ASSERT_EQ(gathered[static_cast<std::size_t>(i * 3 + t)], static_cast<double>(data[i * ld + gather[t]]));
            for (std::int64_t p = 0; p < nv; ++p) {
              // Against the probe the path reads: the FP32 copy's own rounding is charged separately.
              double ref = 0, scale = 0;
              for (std::int64_t j = 0; j < cols; ++j) {
                const std::size_t pj = static_cast<std::size_t>(p * ldv + j);
                const double t = static_cast<double>(data[i * ld + j]) * (took ? static_cast<double>(vf[pj]) : v[pj]);
                ref += t;
                scale += std::fabs(t);
              }
              ASSERT_LE(std::fabs(out[p * ldo + i] - ref), (took ? gr : 0) * scale + 1e-13 * scale)
                  << "kernel " << static_cast<int>(cap) << " offset " << offset << " cols " << cols << " nv " << nv
                  << " r " << r << " row " << i << " probe " << p;
            }
          }
        }
  }
  EXPECT_EQ(kernels_run, 1 + static_cast<int>(widest));
}

// Products below FP32's smallest subnormal: an honest kernel's result is
// mostly underflow, which the full check allows per element ((max(1, |alpha|) K
// + 4) lambda, gemm_underflow_allowance) and so must the fast one, in the
// Freivalds rows and in the sampled elements, for both probe kinds. A corrupted
// element beyond its row's bound is still caught.
TEST(FreivaldsVerifier, UnderflowingProductsOfAnHonestKernelPass) {
  for (const ProbeKind kind : {ProbeKind::kRademacher, ProbeKind::kGaussian}) {
    Rng rng(21);
    Gemm g(32, 40, 64, false, false, 0, rng);
    for (auto& v : g.a) v *= 1e-23f;  // products ~1e-46 < 1.4e-45
    for (auto& v : g.b) v *= 1e-23f;
    g.alpha = 4;  // scales the products' underflow with it
    g.run();
    for (const std::int64_t samples : {std::int64_t{0}, std::int64_t{32 * 40}}) {
      Options o = opts(5, samples == 0 ? 10 : 0, samples);
      o.probe = kind;
      auto honest = verify_gemm(g.problem(), o);
      ASSERT_TRUE(honest.ok()) << honest.status().to_string();
      EXPECT_TRUE(honest->pass) << honest->detail;
    }
    Options o = opts(5, 10, 0);
    o.probe = kind;
    o.keep_row_bounds = true;
    auto honest = verify_gemm(g.problem(), o);
    ASSERT_TRUE(honest.ok());
    g.c[static_cast<std::size_t>(5 * g.ldc + 9)] += static_cast<float>(1.5 * honest->row_bounds[5]);
    auto bad = verify_gemm(g.problem(), o);
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(bad->pass);
    EXPECT_EQ(bad->freivalds_worst_row, 5);
  }
}

// FP32 magnitude sums that overflow (|C| row sums past 3.4e38 on a finite C)
// must not turn the bound into infinity: the check redoes them in FP64 and
// still passes the honest kernel and catches a corrupted element.
TEST(FreivaldsVerifier, Fp32MagnitudeOverflowFallsBackToFp64) {
  Rng rng(11);
  Gemm g(48, 64, 4, false, false, 0, rng);
  for (auto& v : g.a) v *= 1e19f;
  for (auto& v : g.b) v *= 1e18f;
  g.run();
  double cmax = 0;
  for (float v : g.c) {
    ASSERT_TRUE(std::isfinite(v));
    cmax = std::max(cmax, std::fabs(static_cast<double>(v)));
  }
  ASSERT_GT(cmax * 64, 3.5e38) << "the test needs |C| row sums beyond the FP32 range";
  Options o = opts(3, 10, 0);
  o.keep_row_bounds = true;
  auto honest = verify_gemm(g.problem(), o);
  ASSERT_TRUE(honest.ok()) << honest.status().to_string();
  EXPECT_TRUE(honest->pass) << honest->detail;
  EXPECT_TRUE(std::isfinite(honest->freivalds_bound));
  g.c[5 * 64 + 9] += static_cast<float>(1.5 * honest->row_bounds[5]);
  auto bad = verify_gemm(g.problem(), o);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->pass);
  EXPECT_EQ(bad->freivalds_worst_row, 5);
}

// The matmul inside fused_matmul (identity activation: C = A B + bias) is
// checked with the bias as a broadcast C0; a nonlinear activation hides the
// product and is left to the full oracle.
TEST(FreivaldsVerifier, FusedMatmulIdentityIsCheckedAndNonlinearIsDeclined) {
  const Op* op = builtin_ops().find("fused_matmul");
  ASSERT_NE(op, nullptr);
  Config config;
  config.params = {{"M", "70"}, {"N", "45"}, {"K", "130"}, {"activation", "identity"}};
  auto call = op->make_call(config);
  ASSERT_TRUE(call.ok()) << call.status().to_string();
  Rng rng(5);
  op->fill(*call, FillSpec{}, rng);
  const Call inputs = *call;
  const Tensor& a = inputs.t("A");
  const Tensor& b = inputs.t("B");
  const Tensor& bias = inputs.t("bias");
  Tensor& c = call->t("C");
  for (std::int64_t i = 0; i < 70; ++i)
    for (std::int64_t j = 0; j < 45; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < 130; ++p) acc += a.data<float>()[i * 130 + p] * b.data<float>()[p * 45 + j];
      c.data<float>()[i * 45 + j] = acc + bias.data<float>()[j];
    }
  Options o = opts(9);
  o.keep_row_bounds = true;
  auto honest = verify_fused_matmul(inputs, *call, o);
  ASSERT_TRUE(honest.ok()) << honest.status().to_string();
  EXPECT_TRUE(honest->pass) << honest->detail;
  // A dropped bias is a violation.
  Call nobias = *call;
  for (std::int64_t i = 0; i < 70 * 45; ++i) nobias.t("C").data<float>()[i] -= bias.data<float>()[i % 45];
  auto dropped = verify_fused_matmul(inputs, nobias, o);
  ASSERT_TRUE(dropped.ok());
  EXPECT_FALSE(dropped->pass);
  // One element off by 1.5x its row's bound is a violation.
  c.data<float>()[3 * 45 + 7] += static_cast<float>(1.5 * honest->row_bounds[3]);
  auto bad = verify_fused_matmul(inputs, *call, o);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->pass);
  Call gelu = inputs;
  gelu.config.params["activation"] = "gelu_erf";
  auto declined = verify_fused_matmul(gelu, *call, o);
  EXPECT_EQ(declined.status().code(), StatusCode::kUnimplemented);
}

class RegistryImpls : public ::testing::TestWithParam<std::string> {};

TEST_P(RegistryImpls, HonestImplNeverFalseAlarms) {
  auto impl = registry().find_impl(GetParam());
  if (!impl) GTEST_SKIP() << GetParam() << " is not available here";
  const Op* op = builtin_ops().find("matmul");
  ASSERT_NE(op, nullptr);
  const char* configs[][5] = {{"96", "64", "200", "N", "N"}, {"31", "77", "513", "T", "N"}, {"64", "64", "64", "N", "T"}};
  for (const auto& cf : configs) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      Config config;
      config.params = {{"M", cf[0]}, {"N", cf[1]}, {"K", cf[2]}, {"trans_a", cf[3]}, {"trans_b", cf[4]},
                       {"beta", seed % 2 ? "0" : "0.5"}, {"ldc_pad", "2"}};
      auto call = op->make_call(config);
      ASSERT_TRUE(call.ok());
      Rng rng(seed);
      op->fill(*call, FillSpec{}, rng);
      const Call inputs = *call;
      ASSERT_TRUE(impl->run(*call).ok());
      auto r = verify_matmul(inputs, *call, opts(seed));
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_TRUE(r->pass) << GetParam() << " " << config.to_string() << ": " << r->detail;
    }
  }
}

// Long sums (N, K >= 256) take the FP32 block path where the CPU has FMA;
// its extra rounding is in T_i, so honest BLAS kernels still pass and a single
// element moved by 1.5 T_i is still caught in its row.
TEST_P(RegistryImpls, LongSumsOnTheFp32PathNeitherFalseAlarmNorMiss) {
  auto impl = registry().find_impl(GetParam());
  if (!impl || GetParam() == "ref.matmul") GTEST_SKIP() << GetParam() << ": not here, or too slow at this size";
  const Op* op = builtin_ops().find("matmul");
  ASSERT_NE(op, nullptr);
  // Seeds 5-8: sums of 256-1023 terms, on the FP32 path with blocks of half
  // the length (8 roundings per lane).
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const bool mid = seed > 4;
    Config config;
    config.params = {{"M", "48"},
                     {"N", mid ? (seed % 2 ? "256" : "700") : (seed % 2 ? "1024" : "1100")},
                     {"K", mid ? (seed % 2 ? "1000" : "300") : (seed % 2 ? "1500" : "1024")},
                     {"beta", seed % 2 ? "0" : "0.5"}};
    auto call = op->make_call(config);
    ASSERT_TRUE(call.ok());
    Rng rng(seed);
    op->fill(*call, FillSpec{}, rng);
    const Call inputs = *call;
    ASSERT_TRUE(impl->run(*call).ok());
    Options o = opts(seed);
    o.keep_row_bounds = true;
    auto r = verify_matmul(inputs, *call, o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(r->pass) << GetParam() << " " << config.to_string() << ": " << r->detail;
    EXPECT_EQ(r->fp32_blocks, detail::fp32_blocks_available());
    EXPECT_LT(r->worst_ratio, 0.5) << "honest error should sit well inside the bound";
    Tensor& c = call->t("C");
    const std::int64_t i = rng.uniform_int(0, 47), j = rng.uniform_int(0, c.dim(1) - 1);
    c.set(i * c.dim(1) + j, c.at(i * c.dim(1) + j) + 1.5 * r->row_bounds[static_cast<std::size_t>(i)]);
    auto bad = verify_matmul(inputs, *call, o);
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(bad->pass) << GetParam() << " seed " << seed;
    ASSERT_FALSE(bad->rows.empty());
    EXPECT_EQ(bad->rows.front(), i);
  }
}

INSTANTIATE_TEST_SUITE_P(FreivaldsVerifier, RegistryImpls,
                         ::testing::Values("ref.matmul", "openblas.sgemm", "blis.sgemm"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '.') ch = '_';
                           return s;
                         });

// ---------------------------------------------------------------- attention
// verify_attention: sampled query rows, each the oracle's own row, every
// element judged with the contract's bound (KC-ATTN-01: gamma(L, P) * |out|).

struct AttnShape {
  const char* name;
  const char* batch;
  const char* heads;
  const char* kv_heads;
  const char* seq;
  const char* head_dim;
  const char* causal;
};

const AttnShape kAttnShapes[] = {
    {"mha", "2", "4", "4", "37", "32", "0"},
    {"gqa", "2", "8", "2", "29", "16", "0"},
    {"causal_gqa", "1", "4", "1", "64", "64", "1"},
    {"causal_mha", "2", "2", "2", "33", "24", "1"},
};

/// An attention call with the op's default fill (normal values).
Call attention_inputs(const AttnShape& a, std::uint64_t seed) {
  const Op* op = builtin_ops().find("attention");
  KC_CHECK(op != nullptr);
  Config config;
  config.params = {{"batch", a.batch}, {"heads", a.heads}, {"kv_heads", a.kv_heads},
                   {"seq", a.seq},     {"head_dim", a.head_dim}, {"causal", a.causal}};
  auto call = op->make_call(config);
  KC_CHECK(call.ok());
  Rng rng(seed);
  op->fill(*call, FillSpec{}, rng);
  return std::move(call).value();
}

/// The full check of KC-ATTN-01 on every element: the oracle, the op's
/// magnitudes, the contract's bound gamma(L, P) * |out| and the engine's element ratio.
struct FullCheck {
  std::vector<double> ref, allowed, ratio;
};
FullCheck full_check(const Call& inputs, const Call& outputs) {
  const Op* op = builtin_ops().find("attention");
  FullCheck f;
  f.ref = op->oracle(inputs, OracleOptions{})->outputs[0];
  const std::vector<double> mag = *op->magnitude(inputs, "out");
  const BoundAllowance bound =
      bound_allowance(*op, inputs, gamma(op->accumulation_length(inputs), inputs.config.dtype));
  const std::vector<double> got = outputs.t("out").to_doubles();
  for (std::size_t i = 0; i < got.size(); ++i) {
    f.allowed.push_back(bound.allowed(mag[i], f.ref[i]));
    f.ratio.push_back(engine::element_ratio(got[i], f.ref[i], f.allowed.back()));
  }
  return f;
}

Options attn_opts(std::uint64_t seed, std::int64_t samples = 64) {
  Options o;
  o.seed = seed;
  o.samples = samples;
  return o;
}

std::int64_t query_rows(const Call& c) {
  const Tensor& q = c.t("q");
  return q.dim(0) * q.dim(1) * q.dim(2);
}

/// ref.attention on seeded inputs of a shape: the call as handed to the kernel
/// and the call after it ran; nullopt when the ref backend is not registered.
struct AttnRun {
  Call inputs, outputs;
};
std::optional<AttnRun> run_ref_attention(const AttnShape& shape, std::uint64_t seed) {
  auto impl = registry().find_impl("ref.attention");
  if (!impl) return std::nullopt;
  AttnRun r{attention_inputs(shape, seed), {}};
  r.outputs = r.inputs;
  EXPECT_TRUE(impl->run(r.outputs).ok());
  return r;
}

class AttentionShapes : public ::testing::TestWithParam<AttnShape> {};

TEST_P(AttentionShapes, RefAttentionPasses) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto run = run_ref_attention(GetParam(), seed);
    if (!run) GTEST_SKIP() << "ref.attention is not available here";
    const Call& inputs = run->inputs;
    Call& call = run->outputs;
    for (const std::int64_t samples : {std::int64_t{64}, query_rows(inputs)}) {
      auto r = verify_attention(inputs, call, attn_opts(seed, samples));
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_TRUE(r->pass) << GetParam().name << " seed " << seed << ": " << r->detail;
      EXPECT_EQ(r->method, Method::kSampled);
      EXPECT_EQ(r->samples, std::min(samples, query_rows(inputs)) * inputs.t("q").dim(3));
      EXPECT_GT(r->worst_ratio, 0) << "an FP32 kernel is not exact: a zero ratio means nothing was compared";
    }
  }
}

// Every row sampled, the verifier's worst ratio is the full check's, bit for
// bit, at the same element: one row evaluation and one bound for both.
TEST_P(AttentionShapes, EveryRowSampledGivesTheFullChecksRatios) {
  auto run = run_ref_attention(GetParam(), 11);
  if (!run) GTEST_SKIP() << "ref.attention is not available here";
  const Call& inputs = run->inputs;
  Call& call = run->outputs;
  const FullCheck f = full_check(inputs, call);
  const auto worst = std::max_element(f.ratio.begin(), f.ratio.end()) - f.ratio.begin();
  auto r = verify_attention(inputs, call, attn_opts(11, query_rows(inputs)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->worst_ratio, f.ratio[static_cast<std::size_t>(worst)]);
  const std::int64_t d = inputs.t("q").dim(3);
  EXPECT_EQ(r->sample_worst_row * d + r->sample_worst_col, worst);
}

// A single element moved to 1.5x its allowed error is caught, in its row;
// 0.5x (with the honest error well inside the bound) is not a violation.
TEST_P(AttentionShapes, CorruptedElementIsCaughtInItsRow) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto run = run_ref_attention(GetParam(), seed);
    if (!run) GTEST_SKIP() << "ref.attention is not available here";
    const Call& inputs = run->inputs;
    Call& call = run->outputs;
    const FullCheck f = full_check(inputs, call);
    const Tensor& q = inputs.t("q");
    const std::int64_t rows = query_rows(inputs), d = q.dim(3);
    Rng rng(seed);
    const std::int64_t row = rng.uniform_int(0, rows - 1), j = rng.uniform_int(0, d - 1);
    const auto i = static_cast<std::size_t>(row * d + j);
    const double sign = rng.uniform() < 0.5 ? -1 : 1;
    Call bad = call;
    bad.t("out").set(row * d + j, f.ref[i] + sign * 1.5 * f.allowed[i]);
    auto r = verify_attention(inputs, bad, attn_opts(seed, rows));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->pass) << GetParam().name << " seed " << seed;
    EXPECT_EQ(r->failing_rows, 1);
    ASSERT_EQ(r->rows.size(), 1u);
    EXPECT_EQ(r->rows.front(), row);
    EXPECT_EQ(r->sample_worst_row, row);
    EXPECT_EQ(r->sample_worst_col, j);
    EXPECT_NE(r->detail.find("t " + std::to_string(row % q.dim(2)) + ", j " + std::to_string(j)), std::string::npos)
        << r->detail;

    Call small = call;
    small.t("out").set(row * d + j, f.ref[i] + sign * 0.5 * f.allowed[i]);
    auto ok = verify_attention(inputs, small, attn_opts(seed, rows));
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(ok->pass) << ok->detail;
  }
}

// q, k and v rounded to bf16 before an otherwise FP32 computation: a
// systematic error in every row, so 64 sampled rows see it.
TEST_P(AttentionShapes, Bf16InputsAreCaught) {
  auto impl = registry().find_impl("ref.attention");
  if (!impl) GTEST_SKIP() << "ref.attention is not available here";
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Call inputs = attention_inputs(GetParam(), seed);
    Call coerced = inputs;
    for (const char* name : {"q", "k", "v"}) {
      Tensor& t = coerced.t(name);
      for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, round_to(t.at(i), DType::kBF16));
    }
    ASSERT_TRUE(impl->run(coerced).ok());
    auto r = verify_attention(inputs, coerced, attn_opts(seed));
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->pass) << GetParam().name << " seed " << seed << ": " << r->detail;
    EXPECT_GT(r->failing_rows, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AttentionVerifier, AttentionShapes, ::testing::ValuesIn(kAttnShapes),
                         [](const auto& info) { return std::string(info.param.name); });

// An error confined to one row is seen when that row is drawn: with s of R
// rows sampled, in about s / R of the seeds (here 1/4 over 400 seeds).
TEST(AttentionVerifier, OneRowErrorIsSeenInAboutSamplesOverRowsOfSeeds) {
  auto run = run_ref_attention(kAttnShapes[0], 3);
  if (!run) GTEST_SKIP() << "ref.attention is not available here";
  const Call& inputs = run->inputs;
  Call& call = run->outputs;
  const FullCheck f = full_check(inputs, call);
  call.t("out").set(100, f.ref[100] + 10 * f.allowed[100]);
  const std::int64_t rows = query_rows(inputs);  // 2 x 4 x 37 = 296
  int caught = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    auto r = verify_attention(inputs, call, attn_opts(seed, rows / 4));
    ASSERT_TRUE(r.ok());
    caught += !r->pass;
  }
  EXPECT_GT(caught, 60);   // expected 100; binomial sd 8.7
  EXPECT_LT(caught, 140);
}

TEST(AttentionVerifier, BoundOneStepTooTightFails) {
  auto run = run_ref_attention(kAttnShapes[1], 4);
  if (!run) GTEST_SKIP() << "ref.attention is not available here";
  const Call& inputs = run->inputs;
  Call& call = run->outputs;
  auto honest = verify_attention(inputs, call, attn_opts(4, query_rows(inputs)));
  ASSERT_TRUE(honest.ok());
  ASSERT_TRUE(honest->pass);
  Options tight = attn_opts(4, query_rows(inputs));
  tight.bound_scale = honest->worst_ratio * 0.99;
  auto r = verify_attention(inputs, call, tight);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pass);
}

TEST(AttentionVerifier, NanOutputFailsNonFiniteInputsAreDeclinedOtherCallsRejected) {
  auto run = run_ref_attention(kAttnShapes[0], 5);
  if (!run) GTEST_SKIP() << "ref.attention is not available here";
  const Call& inputs = run->inputs;
  Call& call = run->outputs;
  Call nan = call;
  nan.t("out").set(77, std::numeric_limits<double>::quiet_NaN());
  auto r = verify_attention(inputs, nan, attn_opts(5, query_rows(inputs)));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pass);
  EXPECT_EQ(r->rows.front(), 77 / 32);
  EXPECT_TRUE(std::isinf(r->worst_ratio));

  Call inf_in = inputs;
  inf_in.t("k").set(5, std::numeric_limits<double>::infinity());
  auto declined = verify_attention(inf_in, call, attn_opts(5, query_rows(inputs)));
  ASSERT_FALSE(declined.ok());
  EXPECT_EQ(declined.status().code(), StatusCode::kUnimplemented);

  EXPECT_EQ(verify_attention(inputs, call, attn_opts(5, 0)).status().code(), StatusCode::kInvalidArgument);
  Call matmul = *builtin_ops().find("matmul")->make_call(Config{});
  EXPECT_EQ(verify_attention(matmul, matmul, attn_opts(5)).status().code(), StatusCode::kInvalidArgument);
}


// The passes' worker threads are shared by the process: checks run from
// several threads at once (kc's parallel cases) give the results each gives
// alone, and a forked child, which has none of its parent's threads, still
// completes a check (its own workers, or the calling thread alone).
TEST(ThinPass, ConcurrentChecksAndAForkedChildGiveTheSameResults) {
  std::vector<Gemm> gemms;
  for (std::uint64_t s = 0; s < 4; ++s) {
    Rng rng(40 + s);
    gemms.emplace_back(300 + 7 * static_cast<std::int64_t>(s), 280, 260, s % 2 == 1, false, 1, rng);
    gemms.back().run();
  }
  std::vector<double> alone;
  for (const Gemm& g : gemms) {
    auto r = verify_gemm(g.problem(), opts(3));
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->pass) << r->detail;
    alone.push_back(r->worst_ratio);
  }
  std::vector<std::thread> callers;
  std::vector<int> mismatches(gemms.size(), 0);
  for (std::size_t t = 0; t < gemms.size(); ++t)
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        auto r = verify_gemm(gemms[t].problem(), opts(3));
        if (!r.ok() || r->worst_ratio != alone[t]) ++mismatches[t];
      }
    });
  for (auto& c : callers) c.join();
  for (std::size_t t = 0; t < gemms.size(); ++t) EXPECT_EQ(mismatches[t], 0) << "problem " << t;

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    bool same = true;
    for (int rep = 0; rep < 5; ++rep) {
      auto r = verify_gemm(gemms[0].problem(), opts(3));
      same = same && r.ok() && r->worst_ratio == alone[0];
    }
    _exit(same ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not finish its checks";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace kc::verify
