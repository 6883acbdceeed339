// kc — unit tests of the cuda backend.
//
// Every test that needs a device calls KC_REQUIRE_CUDA_DEVICE() first and is
// skipped, with the reason printed, on machines without one (CI): the binary
// still builds and links there, so the CUDA code is compiled everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_testing.h"
#include "kc/backend.h"
#include "kc/canary.h"
#include "kc/dtype.h"
#include "kc/op.h"
#include "kc/tensor.h"

namespace kc::backends {
namespace {

/// The backend, probed once for the whole binary.
struct Probed {
  std::unique_ptr<Backend> backend = make_cuda_backend();
  BackendInfo info = backend->probe();
};

Probed& probed() {
  static Probed p;
  return p;
}

#define KC_REQUIRE_CUDA_DEVICE()                                            \
  do {                                                                      \
    if (!probed().info.available)                                           \
      GTEST_SKIP() << "cuda backend unavailable: " << probed().info.reason; \
  } while (0)

std::shared_ptr<const Impl> impl(const std::string& name) {
  for (const auto& i : probed().backend->impls())
    if (i->declaration().name == name) return i;
  ADD_FAILURE() << "no impl " << name;
  return nullptr;
}

struct Slot {
  std::string name;
  Role role;
  Tensor tensor;
};

Call make_call(const std::string& op, std::map<std::string, std::string> params,
               std::vector<Slot> slots) {
  Call c;
  c.op = op;
  c.config.params = std::move(params);
  c.config.dtype = DType::kF32;
  for (Slot& s : slots) {
    c.names.push_back(s.name);
    c.roles.push_back(s.role);
    c.tensors.push_back(std::move(s.tensor));
  }
  return c;
}

/// A deterministic stream of values in [-1, 1) (xorshift), independent of kc::Rng.
class Values {
 public:
  explicit Values(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  double next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return static_cast<double>(s_ >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0;
  }

 private:
  std::uint64_t s_;
};

void fill(Tensor& t, Values& v) {
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, v.next());
}

/// Values with all 23 FP32 mantissa bits in play: 1 + m * 2^-23, m random.
/// TF32 keeps 10 of them, so rounding to TF32 changes these inputs by up to 2^-11.
void fill_low_mantissa(Tensor& t, Values& v) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const double m = std::floor((v.next() + 1.0) * 0.5 * (1 << 23));
    const double sign = v.next() < 0 ? -1.0 : 1.0;
    t.set(i, sign * (1.0 + m * std::ldexp(1.0, -23)));
  }
}

struct MatmulCase {
  std::int64_t m, n, k;
  bool ta, tb;
  double alpha, beta;
  std::int64_t pad;  ///< extra leading-dimension elements on every operand
};

Call matmul_call(const MatmulCase& mc, Values& v, bool low_mantissa = false) {
  const std::int64_t ar = mc.ta ? mc.k : mc.m, ac = mc.ta ? mc.m : mc.k;
  const std::int64_t br = mc.tb ? mc.n : mc.k, bc = mc.tb ? mc.k : mc.n;
  Tensor a(DType::kF32, {ar, ac}, {ac + mc.pad, 1});
  Tensor b(DType::kF32, {br, bc}, {bc + mc.pad, 1});
  Tensor c(DType::kF32, {mc.m, mc.n}, {mc.n + mc.pad, 1});
  if (low_mantissa) {
    fill_low_mantissa(a, v);
    fill_low_mantissa(b, v);
  } else {
    fill(a, v);
    fill(b, v);
  }
  fill(c, v);
  std::map<std::string, std::string> p = {
      {"M", std::to_string(mc.m)},       {"N", std::to_string(mc.n)},
      {"K", std::to_string(mc.k)},       {"trans_a", mc.ta ? "T" : "N"},
      {"trans_b", mc.tb ? "T" : "N"},    {"alpha", std::to_string(mc.alpha)},
      {"beta", std::to_string(mc.beta)},
  };
  return make_call("matmul", p,
                   {{"A", Role::kIn, std::move(a)},
                    {"B", Role::kIn, std::move(b)},
                    {"C", Role::kInOut, std::move(c)}});
}

/// FP64 reference and the per-element magnitude alpha (|op(A)||op(B)|)_ij + |beta C_ij|.
void matmul_reference(const Call& call, const MatmulCase& mc, std::vector<double>* ref,
                      std::vector<double>* mag) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  const Tensor& c = call.t("C");
  ref->assign(mc.m * mc.n, 0);
  mag->assign(mc.m * mc.n, 0);
  for (std::int64_t i = 0; i < mc.m; ++i) {
    for (std::int64_t j = 0; j < mc.n; ++j) {
      double s = 0, g = 0;
      for (std::int64_t p = 0; p < mc.k; ++p) {
        const double av = mc.ta ? a.at(p * mc.m + i) : a.at(i * mc.k + p);
        const double bv = mc.tb ? b.at(j * mc.k + p) : b.at(p * mc.n + j);
        s += av * bv;
        g += std::fabs(av * bv);
      }
      const double c0 = mc.beta == 0 ? 0 : c.at(i * mc.n + j);
      (*ref)[i * mc.n + j] = mc.alpha * s + mc.beta * c0;
      (*mag)[i * mc.n + j] = std::fabs(mc.alpha) * g + std::fabs(mc.beta * c0);
    }
  }
}

/// max_ij |C_ij - ref_ij| / mag_ij (0 where mag is 0 and C matches).
double max_scaled_error(const Tensor& c, const std::vector<double>& ref,
                        const std::vector<double>& mag) {
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(c.at(static_cast<std::int64_t>(i)) - ref[i]);
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();
    if (e > 0)
      worst = std::max(worst, mag[i] > 0 ? e / mag[i] : std::numeric_limits<double>::infinity());
  }
  return worst;
}

// --- Tests that run everywhere.

TEST(CudaBackend, ProbeExplainsAvailability) {
  const BackendInfo& info = probed().info;
  EXPECT_EQ(info.name, "cuda");
  std::printf("cuda backend: available=%d version: %s; reason: %s\n", info.available ? 1 : 0,
              info.version.c_str(), info.reason.c_str());
  if (info.available) {
    EXPECT_NE(info.version.find("cuBLAS"), std::string::npos) << info.version;
    EXPECT_NE(info.version.find("SMs"), std::string::npos) << info.version;
    EXPECT_FALSE(probed().backend->impls().empty());
  } else {
    EXPECT_NE(info.reason.find("no CUDA device (cudaGetDeviceCount: "), std::string::npos)
        << info.reason;
    EXPECT_TRUE(probed().backend->impls().empty());
  }
}

// --- Tests that need a device.

TEST(CudaBackend, ListsItsImplsWithDeclarations) {
  KC_REQUIRE_CUDA_DEVICE();
  std::set<std::string> names;
  for (const auto& i : probed().backend->impls()) {
    names.insert(i->declaration().name);
    EXPECT_EQ(i->declaration().backend, "cuda");
    EXPECT_FALSE(i->declaration().source.empty()) << i->declaration().name;
  }
  for (const char* want : {"cublas.sgemm_default", "cublas.sgemm_pedantic", "cublas.sgemm_tf32",
                           "cuda.matmul_tiled", "cuda.sum_atomic", "cuda.sum_atomic_claims_bitwise",
                           "cuda.sum_tree", "cuda.softmax", "cuda.gather"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_EQ(impl("cublas.sgemm_tf32")->declaration().get("input_rounding"), "TF32");
  EXPECT_EQ(impl("cuda.sum_atomic")->declaration().determinism, Determinism::kNone);
  EXPECT_EQ(impl("cuda.gather")->declaration().oob, OobPolicy::kRaise);
}

class MatmulWithinGammaK : public ::testing::TestWithParam<std::string> {};

// Higham, Accuracy and Stability of Numerical Algorithms, (3.13): a dot
// product of length K in precision u satisfies |fl(x.y) - x.y| <= gamma_K |x||y|.
// alpha and beta add one rounding each: bound gamma_{K+2} (alpha|A||B| + |beta C|).
TEST_P(MatmulWithinGammaK, AgainstFp64) {
  KC_REQUIRE_CUDA_DEVICE();
  auto im = impl(GetParam());
  ASSERT_TRUE(im);
  const MatmulCase cases[] = {
      {64, 48, 127, false, false, 1.0, 0.0, 0}, {33, 65, 200, true, false, 1.5, 0.0, 3},
      {40, 17, 96, false, true, 1.0, 0.5, 1},   {31, 29, 513, true, true, -0.75, 2.0, 5},
      {1, 1, 1, false, false, 1.0, 0.0, 0},
  };
  Values v(7);
  for (const MatmulCase& mc : cases) {
    Call call = matmul_call(mc, v);
    // Padding of C carries a sentinel the device must not touch (the last
    // row has none: storage ends at the largest reachable offset).
    Tensor& c = call.t("C");
    for (std::int64_t i = 0; i + 1 < mc.m; ++i)
      for (std::int64_t p = 0; p < mc.pad; ++p) c.store(i * (mc.n + mc.pad) + mc.n + p, 7.0);
    std::vector<double> ref, mag;
    matmul_reference(call, mc, &ref, &mag);
    ASSERT_TRUE(im->can_implement(call).ok());
    Status s = im->run(call);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const double bound = gamma(static_cast<double>(mc.k + 2), DType::kF32);
    const double err = max_scaled_error(call.t("C"), ref, mag);
    EXPECT_LE(err, bound) << GetParam() << " M=" << mc.m << " N=" << mc.n << " K=" << mc.k;
    for (std::int64_t i = 0; i + 1 < mc.m; ++i)
      for (std::int64_t p = 0; p < mc.pad; ++p)
        EXPECT_EQ(c.load(i * (mc.n + mc.pad) + mc.n + p), 7.0) << "padding of C written";
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, MatmulWithinGammaK,
                         ::testing::Values("cublas.sgemm_pedantic", "cublas.sgemm_default",
                                           "cuda.matmul_tiled"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

// Reference BLAS: "when alpha is zero then A and B are not referenced", so
// C := beta C exactly even when A and B hold NaN and Inf (KC-GEMM-03).
TEST_P(MatmulWithinGammaK, AlphaZeroDoesNotReadAOrB) {
  KC_REQUIRE_CUDA_DEVICE();
  auto im = impl(GetParam());
  ASSERT_TRUE(im);
  const MatmulCase mc{37, 21, 70, false, false, 0.0, 0.5, 0};
  Values v(11);
  Call call = matmul_call(mc, v);
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  for (std::int64_t i = 0; i < a.numel(); i += 3) a.set(i, std::numeric_limits<double>::quiet_NaN());
  for (std::int64_t i = 1; i < b.numel(); i += 5) b.set(i, std::numeric_limits<double>::infinity());
  std::vector<double> want(mc.m * mc.n);
  for (std::int64_t i = 0; i < mc.m * mc.n; ++i)
    want[i] = static_cast<float>(mc.beta * call.t("C").at(i));  // beta = 0.5: exact in FP32
  Status s = im->run(call);
  ASSERT_TRUE(s.ok()) << s.to_string();
  int wrong = 0;
  for (std::int64_t i = 0; i < mc.m * mc.n; ++i)
    if (!(call.t("C").at(i) == want[i])) ++wrong;
  EXPECT_EQ(wrong, 0) << GetParam() << ": outputs other than beta C with alpha = 0";
}

// Inputs 1 + m 2^-23 use all 23 mantissa bits; TF32 rounding (10 bits) moves
// each by up to 2^-11 relative, so the TF32 error is about 2^-11 / gamma_K
// times the pedantic error. It must still respect the TF32 bound:
// 2 u_tf32 + gamma_K(FP32) per |A||B| (two rounded inputs per product, FP32 sums).
TEST(CudaSgemm, Tf32VisiblyWorseThanPedantic) {
  KC_REQUIRE_CUDA_DEVICE();
  const MatmulCase mc{64, 64, 256, false, false, 1.0, 0.0, 0};
  double err_pedantic = 0, err_tf32 = 0;
  for (const char* name : {"cublas.sgemm_pedantic", "cublas.sgemm_tf32"}) {
    Values v(11);
    Call call = matmul_call(mc, v, /*low_mantissa=*/true);
    std::vector<double> ref, mag;
    matmul_reference(call, mc, &ref, &mag);
    Status s = impl(name)->run(call);
    ASSERT_TRUE(s.ok()) << s.to_string();
    (std::string(name) == "cublas.sgemm_tf32" ? err_tf32 : err_pedantic) =
        max_scaled_error(call.t("C"), ref, mag);
  }
  std::printf("max error / (|A||B|): pedantic %.3g, tf32 %.3g\n", err_pedantic, err_tf32);
  const double u_tf32 = unit_roundoff(DType::kTF32);
  EXPECT_LE(err_tf32, 2 * u_tf32 + gamma(mc.k, DType::kF32));
  EXPECT_GT(err_tf32, 10 * err_pedantic) << "pedantic " << err_pedantic << ", tf32 " << err_tf32
                                         << " (is NVIDIA_TF32_OVERRIDE=0 set?)";
}

Call softmax_call(const std::string& op, std::int64_t rows, std::int64_t cols, Values& v,
                  double scale) {
  Tensor x(DType::kF32, {rows, cols});
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, scale * v.next());
  return make_call(
      op, {{"rows", std::to_string(rows)}, {"cols", std::to_string(cols)}},
      {{"x", Role::kIn, std::move(x)}, {"y", Role::kOut, Tensor(DType::kF32, {rows, cols})}});
}

class SoftmaxAgainstFp64 : public ::testing::TestWithParam<std::string> {};

// Error model: x_j - max rounds with |x_j - max| u; expf is within 2 ulp
// (CUDA Math API, single precision: expf max ulp error 2); the sum of cols
// terms adds gamma_cols; the division one more u. Relative bound per element:
// (|x - max| + 4 + 1) u + gamma_cols. For log_softmax the error is absolute:
// |x - max| u + (4 u + gamma_cols) (the relative error of the sum, through log) + u |y|.
TEST_P(SoftmaxAgainstFp64, RowsWithinBound) {
  KC_REQUIRE_CUDA_DEVICE();
  const bool log = GetParam().find("log_") != std::string::npos;
  auto im = impl(GetParam());
  if (!im) return;
  const double u = unit_roundoff(DType::kF32);
  for (auto [rows, cols, scale] :
       {std::tuple{8, 1000, 8.0}, std::tuple{3, 1, 1.0}, std::tuple{17, 257, 30.0}}) {
    Values v(rows * 31 + cols);
    Call call = softmax_call(log ? "log_softmax" : "softmax", rows, cols, v, scale);
    Status s = im->run(call);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const Tensor& x = call.t("x");
    const Tensor& y = call.t("y");
    for (std::int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY;
      for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, x.at(r * cols + j));
      double sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) sum += std::exp(x.at(r * cols + j) - mx);
      for (std::int64_t j = 0; j < cols; ++j) {
        const double d = x.at(r * cols + j) - mx;
        const double got = y.at(r * cols + j);
        if (log) {
          const double want = d - std::log(sum);
          const double tol =
              std::fabs(d) * u + 5 * u + gamma(cols, DType::kF32) + u * std::fabs(want);
          ASSERT_LE(std::fabs(got - want), tol) << "row " << r << " col " << j;
        } else {
          const double want = std::exp(d) / sum;
          const double tol = ((std::fabs(d) + 5) * u + gamma(cols, DType::kF32)) * want;
          ASSERT_LE(std::fabs(got - want), tol) << "row " << r << " col " << j;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cuda, SoftmaxAgainstFp64,
                         ::testing::Values("cuda.softmax", "cudnn.softmax", "cudnn.log_softmax"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

Call sum_call(std::int64_t n, Values& v) {
  Tensor x(DType::kF32, {n});
  fill(x, v);
  return make_call("sum", {{"n", std::to_string(n)}},
                   {{"x", Role::kIn, std::move(x)}, {"out", Role::kOut, Tensor(DType::kF32, {1})}});
}

// Recursive summation bound: |fl(sum) - sum| <= gamma_{n-1} sum|x| (Higham (4.4));
// any order of additions satisfies it, the atomic one included.
TEST(CudaSum, TreeAndAtomicWithinGammaNAndTreeIsBitwise) {
  KC_REQUIRE_CUDA_DEVICE();
  for (std::int64_t n : {1, 1000, 1 << 20, 3'000'001}) {
    Values v(n);
    Call call = sum_call(n, v);
    const Tensor& x = call.t("x");
    double exact = 0, abs_sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      exact += x.at(i);
      abs_sum += std::fabs(x.at(i));
    }
    const double bound = gamma(static_cast<double>(n), DType::kF32) * abs_sum;
    std::set<std::uint32_t> tree_bits, atomic_bits;
    for (int rep = 0; rep < 10; ++rep) {
      for (const char* name : {"cuda.sum_tree", "cuda.sum_atomic"}) {
        Status s = impl(name)->run(call);
        ASSERT_TRUE(s.ok()) << s.to_string();
        const float got = call.t("out").data<float>()[0];
        EXPECT_LE(std::fabs(got - exact), bound) << name << " n=" << n;
        std::uint32_t bits;
        std::memcpy(&bits, &got, sizeof(bits));
        (std::string(name) == "cuda.sum_tree" ? tree_bits : atomic_bits).insert(bits);
      }
    }
    EXPECT_EQ(tree_bits.size(), 1u) << "cuda.sum_tree is declared BITWISE, n=" << n;
    // Not asserted: whether the atomic order happened to vary in these ten runs.
    RecordProperty("atomic_distinct_results_n" + std::to_string(n),
                   static_cast<int>(atomic_bits.size()));
    std::printf("n=%lld: cuda.sum_atomic gave %zu distinct results in 10 runs\n",
                static_cast<long long>(n), atomic_bits.size());
  }
}

// Test the tester: the calibration impl cuda.sum_atomic_claims_bitwise must be
// catchable, i.e. its results must actually vary. On an H100, n = 2^20 (4096
// blocks adding into one float) gave 9-10 distinct sums in 10 runs; 20 runs
// all identical would mean the determinism contract has nothing to catch.
TEST(CudaSum, AtomicCalibrationImplVisiblyVaries) {
  KC_REQUIRE_CUDA_DEVICE();
  Values v(99);
  Call call = sum_call(1 << 20, v);
  std::set<std::uint32_t> bits;
  for (int rep = 0; rep < 20; ++rep) {
    Status s = impl("cuda.sum_atomic_claims_bitwise")->run(call);
    ASSERT_TRUE(s.ok()) << s.to_string();
    std::uint32_t b;
    std::memcpy(&b, call.t("out").data<float>(), sizeof(b));
    bits.insert(b);
  }
  EXPECT_GT(bits.size(), 1u);
}

Call gather_call(std::int64_t rows, std::int64_t dim, std::vector<std::int64_t> idx, Values& v) {
  Tensor table(DType::kF32, {rows, dim});
  fill(table, v);
  const auto n = static_cast<std::int64_t>(idx.size());
  Tensor index(DType::kI64, {n});
  for (std::int64_t i = 0; i < n; ++i) index.data<std::int64_t>()[i] = idx[i];
  return make_call(
      "gather",
      {{"rows", std::to_string(rows)}, {"dim", std::to_string(dim)}, {"n", std::to_string(n)}},
      {{"table", Role::kIn, std::move(table)},
       {"index", Role::kIn, std::move(index)},
       {"out", Role::kOut, Tensor(DType::kF32, {n, dim})}});
}

TEST(CudaGather, CopiesRowsExactly) {
  KC_REQUIRE_CUDA_DEVICE();
  Values v(3);
  Call call = gather_call(50, 300, {0, 49, 7, 7, 13}, v);
  Status s = impl("cuda.gather")->run(call);
  ASSERT_TRUE(s.ok()) << s.to_string();
  const std::vector<std::int64_t> idx = {0, 49, 7, 7, 13};
  for (std::size_t i = 0; i < idx.size(); ++i)
    for (std::int64_t j = 0; j < 300; ++j)
      ASSERT_EQ(call.t("out").at(i * 300 + j), call.t("table").at(idx[i] * 300 + j));
}

// Declared oob = RAISE: every out-of-range index must raise, and the row it
// would have filled keeps the NaN the output was pre-filled with.
TEST(CudaGather, RaisesOnOutOfRangeIndex) {
  KC_REQUIRE_CUDA_DEVICE();
  for (std::int64_t bad : {-1, -50, 50, 60}) {
    Values v(5);
    Call call = gather_call(50, 8, {1, 2, bad, 3}, v);
    Status s = impl("cuda.gather")->run(call);
    EXPECT_EQ(s.code(), StatusCode::kKernelRaised) << s.to_string();
    EXPECT_NE(s.message().find("index out of range"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("index[2] = " + std::to_string(bad)), std::string::npos)
        << s.message();
    EXPECT_TRUE(std::isnan(call.t("out").at(2 * 8))) << "output was not pre-filled with NaN";
    EXPECT_EQ(call.t("out").at(0), call.t("table").at(1 * 8));
  }
}

TEST(CudaGuards, InBoundsWriteKeepsCanaries) {
  KC_REQUIRE_CUDA_DEVICE();
  Status s = cuda_testing::run_overflowing_write(1000, 0);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(CudaGuards, WritePastTheEndIsGuardOverwritten) {
  KC_REQUIRE_CUDA_DEVICE();
  for (std::int64_t overrun : {1, 16, 1024}) {
    Status s = cuda_testing::run_overflowing_write(1000, overrun);
    EXPECT_EQ(s.code(), StatusCode::kCrashed) << s.to_string();
    EXPECT_EQ(s.message().rfind("GUARD_OVERWRITTEN(victim, after):", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("past the end of device buffer 'victim'"), std::string::npos) << s.message();
    const auto sig = canary::guard_signature(s);
    ASSERT_TRUE(sig.has_value());
    EXPECT_EQ(sig->to_string(), "GUARD_OVERWRITTEN(victim, after)");
  }
}

// The band check the cuda backend runs over the bytes it reads back (no device
// needed: it is include/kc/canary.h's, over host bytes).
TEST(CudaGuards, BandCheckOverHostBytes) {
  std::vector<std::uint8_t> back = canary::band_pattern(true);
  EXPECT_TRUE(canary::check_band(back.data(), true, "C", 4000).ok());
  back[0] = 0x00;
  back[63] = 0x00;
  Status s = canary::check_band(back.data(), true, "C", 4000);
  EXPECT_EQ(s.code(), StatusCode::kCrashed);
  EXPECT_NE(s.message().find("bytes +0 to +63 past the end of device buffer 'C' (4000 bytes)"), std::string::npos)
      << s.message();
  ASSERT_TRUE(canary::guard_signature(s).has_value());
  EXPECT_EQ(canary::guard_signature(s)->to_string(), "GUARD_OVERWRITTEN(C, after)");
  std::vector<std::uint8_t> front = canary::band_pattern(false);
  EXPECT_FALSE(canary::check_band(front.data(), true, "C", 4000).ok()) << "front pattern passed for the back band";
  front[canary::kBandBytes - 1] ^= 0x01;
  Status f = canary::check_band(front.data(), false, "A", 16);
  ASSERT_TRUE(canary::guard_signature(f).has_value());
  EXPECT_EQ(canary::guard_signature(f)->to_string(), "GUARD_OVERWRITTEN(A, before)");
}

TEST(CudaBackend, RejectsWrongOpAndDtype) {
  KC_REQUIRE_CUDA_DEVICE();
  Values v(1);
  Call call = sum_call(10, v);
  EXPECT_EQ(impl("cuda.matmul_tiled")->can_implement(call).code(), StatusCode::kUnimplemented);
  call.config.dtype = DType::kF16;
  EXPECT_EQ(impl("cuda.sum_tree")->can_implement(call).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kc::backends
