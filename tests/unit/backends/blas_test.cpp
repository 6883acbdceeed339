// The openblas, blis and refblas backends against plain fp64 loops, plus the
// behaviours that differ between libraries (beta = 0, alpha = 0, scal by 0).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>

#include "../../../backends/blas/blas_library.h"
#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/isolate.h"

namespace kc {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kPadSentinel = 777.0f;

using backend_test::registry;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Deterministic values in [-1, 1] (an LCG: the tests need variety, not quality).
struct Lcg {
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  float next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24)) *
               2.0f -
           1.0f;
  }
};

// rows x cols, row-major with `pad` extra elements per row; padding holds a sentinel.
Tensor matrix(std::int64_t rows, std::int64_t cols, std::int64_t pad, Lcg& rng) {
  Tensor t(DType::kF32, {rows, cols}, {cols + pad, 1});
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.storage_elems(); ++i) p[i] = kPadSentinel;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) p[r * (cols + pad) + c] = rng.next();
  return t;
}

struct MatmulCase {
  std::int64_t m, n, k;
  char ta, tb;
  std::int64_t lda_pad, ldb_pad, ldc_pad;
  double alpha, beta;
};

Call matmul_call(const MatmulCase& mc, Lcg& rng) {
  Call call;
  call.op = "matmul";
  call.config.dtype = DType::kF32;
  call.config.params = {{"M", num(mc.m)},
                        {"N", num(mc.n)},
                        {"K", num(mc.k)},
                        {"trans_a", std::string(1, mc.ta)},
                        {"trans_b", std::string(1, mc.tb)},
                        {"alpha", num(mc.alpha)},
                        {"beta", num(mc.beta)}};
  call.names = {"A", "B", "C"};
  call.roles = {Role::kIn, Role::kIn, Role::kInOut};
  call.tensors.push_back(mc.ta == 'N' ? matrix(mc.m, mc.k, mc.lda_pad, rng)
                                      : matrix(mc.k, mc.m, mc.lda_pad, rng));
  call.tensors.push_back(mc.tb == 'N' ? matrix(mc.k, mc.n, mc.ldb_pad, rng)
                                      : matrix(mc.n, mc.k, mc.ldb_pad, rng));
  call.tensors.push_back(matrix(mc.m, mc.n, mc.ldc_pad, rng));
  return call;
}

// fp64 C = alpha op(A) op(B) + beta C0 and the magnitude sum |alpha a b| + |beta c0|.
void matmul_reference(const Call& call, const MatmulCase& mc, std::vector<double>* ref,
                      std::vector<double>* mag) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  const Tensor& c = call.t("C");
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  ref->assign(mc.m * mc.n, 0.0);
  mag->assign(mc.m * mc.n, 0.0);
  for (std::int64_t i = 0; i < mc.m; ++i) {
    for (std::int64_t j = 0; j < mc.n; ++j) {
      double s = 0, s_abs = 0;
      for (std::int64_t p = 0; p < mc.k; ++p) {
        const double av =
            mc.ta == 'N' ? a.data<float>()[i * lda + p] : a.data<float>()[p * lda + i];
        const double bv =
            mc.tb == 'N' ? b.data<float>()[p * ldb + j] : b.data<float>()[j * ldb + p];
        s += av * bv;
        s_abs += std::fabs(av * bv);
      }
      const double c0 = mc.beta == 0 ? 0.0 : c.data<float>()[i * ldc + j];
      (*ref)[i * mc.n + j] = mc.alpha * s + mc.beta * c0;
      (*mag)[i * mc.n + j] = std::fabs(mc.alpha) * s_abs + std::fabs(mc.beta * c0);
    }
  }
}

class BlasBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Backend* b = registry().find_backend(GetParam());
    ASSERT_NE(b, nullptr);
    for (const BackendInfo& info : registry().infos()) {
      if (info.name == GetParam() && !info.available) {
        GTEST_SKIP() << info.reason;
      }
    }
  }
  std::shared_ptr<const Impl> impl(const std::string& routine) {
    auto i = registry().find_impl(GetParam() + "." + routine);
    KC_CHECK(i != nullptr);
    return i;
  }
};

TEST_P(BlasBackendTest, ReportsVersionAndDeclarations) {
  for (const BackendInfo& info : registry().infos()) {
    if (info.name != GetParam()) continue;
    EXPECT_FALSE(info.version.empty());
    EXPECT_NE(info.reason.find("loaded from"), std::string::npos);
    std::printf("[ info     ] %s: %s (%s)\n", info.name.c_str(), info.version.c_str(),
                info.reason.c_str());
  }
  const Declaration& d = impl("sgemm")->declaration();
  EXPECT_EQ(d.op, "matmul");
  EXPECT_EQ(d.backend, GetParam());
  EXPECT_EQ(d.accumulator, DType::kF32);
  EXPECT_EQ(d.nan, NanPolicy::kIeeePropagate);
  EXPECT_FALSE(d.source.empty());
  EXPECT_EQ(impl("isamax")->declaration().op, "iamax");
}

TEST_P(BlasBackendTest, SgemmMatchesFp64Loop) {
  const MatmulCase cases[] = {
      {3, 4, 5, 'N', 'N', 0, 0, 0, 1.0, 0.0},    {5, 3, 7, 'T', 'N', 2, 0, 1, 0.5, 0.25},
      {4, 6, 3, 'N', 'T', 0, 3, 2, 2.0, 1.0},    {7, 5, 9, 'T', 'T', 1, 1, 0, -1.0, 0.5},
      {1, 1, 1, 'N', 'N', 0, 0, 0, 1.0, 0.0},    {33, 17, 65, 'N', 'N', 3, 5, 7, 1.0, 1.0},
      {64, 64, 64, 'T', 'T', 0, 0, 0, 1.0, 0.0}, {3, 2, 0, 'N', 'N', 0, 0, 0, 1.0, 0.5},
  };
  auto sgemm = impl("sgemm");
  Lcg rng;
  for (const MatmulCase& mc : cases) {
    Call call = matmul_call(mc, rng);
    std::vector<double> ref, mag;
    matmul_reference(call, mc, &ref, &mag);
    ASSERT_TRUE(sgemm->can_implement(call).ok());
    Status s = sgemm->run(call);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const Tensor& c = call.t("C");
    const std::int64_t ldc = c.strides()[0];
    // Forward error bound of a K-term fp32 dot product plus the alpha/beta
    // roundings: (K + 2) u sum|terms|, doubled for blocked summation orders.
    const double u = std::ldexp(1.0, -24);
    for (std::int64_t i = 0; i < mc.m; ++i) {
      for (std::int64_t j = 0; j < mc.n; ++j) {
        const double got = c.data<float>()[i * ldc + j];
        const double tol = 2.0 * (mc.k + 2) * u * mag[i * mc.n + j];
        EXPECT_NEAR(got, ref[i * mc.n + j], tol)
            << GetParam() << " M=" << mc.m << " N=" << mc.n << " K=" << mc.k << " " << mc.ta
            << mc.tb << " at (" << i << "," << j << ")";
      }
      for (std::int64_t j = mc.n; j < ldc && i * ldc + j < c.storage_elems(); ++j) {
        EXPECT_EQ(c.data<float>()[i * ldc + j], kPadSentinel) << "padding of C written";
      }
    }
  }
}

// Reference sgemm.f: "When BETA is supplied as zero then C need not be set on
// input." BLIS documents the same (beta = 0 overwrites C). A library that
// multiplied the NaN in C by zero would return NaN here.
TEST_P(BlasBackendTest, SgemmBetaZeroDoesNotReadC) {
  auto sgemm = impl("sgemm");
  Lcg rng;
  for (const MatmulCase& mc : {MatmulCase{4, 5, 6, 'N', 'N', 0, 0, 2, 1.0, 0.0},
                               MatmulCase{16, 9, 33, 'T', 'N', 1, 0, 0, 0.5, 0.0}}) {
    Call call = matmul_call(mc, rng);
    Tensor& c = call.t("C");
    for (std::int64_t i = 0; i < c.storage_elems(); ++i) c.data<float>()[i] = kNaN;
    std::vector<double> ref, mag;
    matmul_reference(call, mc, &ref, &mag);
    ASSERT_TRUE(sgemm->run(call).ok());
    int nan_count = 0;
    for (std::int64_t i = 0; i < mc.m; ++i)
      for (std::int64_t j = 0; j < mc.n; ++j)
        nan_count += std::isnan(c.data<float>()[i * c.strides()[0] + j]);
    EXPECT_EQ(nan_count, 0) << GetParam() << " propagated NaN from C although beta = 0";
  }
}

// With alpha = 0 every library we load skips op(A) op(B) entirely (reference
// sgemm.f: "IF (ALPHA.EQ.ZERO) ... C := BETA*C; RETURN"), so NaN in A and B
// does not reach C. This is measured behaviour, not IEEE arithmetic (0 * NaN = NaN).
TEST_P(BlasBackendTest, SgemmAlphaZeroSkipsAAndB) {
  auto sgemm = impl("sgemm");
  Lcg rng;
  MatmulCase mc{6, 7, 8, 'N', 'T', 0, 0, 0, 0.0, 0.5};
  Call call = matmul_call(mc, rng);
  for (const char* n : {"A", "B"}) {
    Tensor& t = call.t(n);
    for (std::int64_t i = 0; i < t.storage_elems(); ++i) t.data<float>()[i] = kNaN;
  }
  std::vector<float> c0(call.t("C").data<float>(),
                        call.t("C").data<float>() + call.t("C").storage_elems());
  ASSERT_TRUE(sgemm->run(call).ok());
  for (std::int64_t i = 0; i < mc.m * mc.n; ++i) {
    EXPECT_EQ(call.t("C").data<float>()[i], 0.5f * c0[i]) << GetParam() << " element " << i;
  }
}

// openblas and blis expose a thread knob; sgemm_t1 / sgemm_t2 pin it for one
// call and put the previous setting back.
TEST_P(BlasBackendTest, ThreadPinnedSgemm) {
  auto t1 = registry().find_impl(GetParam() + ".sgemm_t1");
  if (GetParam() == "refblas") {
    EXPECT_EQ(t1, nullptr);
    return;
  }
  ASSERT_NE(t1, nullptr);
  auto t2 = registry().find_impl(GetParam() + ".sgemm_t2");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t1->declaration().determinism, Determinism::kBitwise);
  auto lib = backends::BlasLibrary::open(GetParam() == "openblas" ? backends::openblas_spec()
                                                                  : backends::blis_spec());
  ASSERT_TRUE(lib.ok());
  const std::int64_t before = (*lib)->threads();
  Lcg rng;
  const MatmulCase mc{40, 30, 50, 'N', 'T', 1, 2, 3, 1.0, 0.0};
  Call c1 = matmul_call(mc, rng);
  Call c2 = c1;
  Call c0 = c1;
  ASSERT_TRUE(t1->run(c1).ok());
  ASSERT_TRUE(t2->run(c2).ok());
  ASSERT_TRUE(impl("sgemm")->run(c0).ok());
  EXPECT_EQ((*lib)->threads(), before);
  std::vector<double> ref, mag;
  matmul_reference(c0, mc, &ref, &mag);
  const std::int64_t ldc = c1.t("C").strides()[0];
  for (std::int64_t i = 0; i < mc.m; ++i)
    for (std::int64_t j = 0; j < mc.n; ++j) {
      const double tol = 2.0 * (mc.k + 2) * std::ldexp(1.0, -24) * mag[i * mc.n + j];
      EXPECT_NEAR(c1.t("C").data<float>()[i * ldc + j], ref[i * mc.n + j], tol);
      EXPECT_NEAR(c2.t("C").data<float>()[i * ldc + j], ref[i * mc.n + j], tol);
    }
}

TEST_P(BlasBackendTest, SgemmRejectsBadArgumentsWithoutCallingXerbla) {
  auto sgemm = impl("sgemm");
  Lcg rng;
  Call call = matmul_call({2, 3, 4, 'N', 'N', 0, 0, 0, 1.0, 0.0}, rng);
  call.config.params["trans_a"] = "X";
  EXPECT_EQ(sgemm->run(call).code(), StatusCode::kInvalidArgument);
  call.config.params["trans_a"] = "N";
  call.tensors[1] = matrix(5, 3, 0, rng);  // K mismatch
  EXPECT_EQ(sgemm->run(call).code(), StatusCode::kInvalidArgument);
}

// --- Level 1.

Tensor vec(std::int64_t n, std::int64_t inc, Lcg& rng) {
  Tensor t(DType::kF32, {n}, {inc});
  for (std::int64_t i = 0; i < t.storage_elems(); ++i) t.data<float>()[i] = kPadSentinel;
  for (std::int64_t i = 0; i < n; ++i) t.data<float>()[i * inc] = rng.next();
  return t;
}

Call vector_call(const std::string& op, std::vector<std::string> names, std::vector<Tensor> ts,
                 std::vector<Role> roles) {
  Call call;
  call.op = op;
  call.config.dtype = DType::kF32;
  call.names = std::move(names);
  call.tensors = std::move(ts);
  call.roles = std::move(roles);
  return call;
}

TEST_P(BlasBackendTest, Level1MatchesLoops) {
  Lcg rng;
  const std::int64_t n = 37;
  const double u = std::ldexp(1.0, -24);
  {
    Call call = vector_call("dot", {"x", "y", "out"},
                            {vec(n, 2, rng), vec(n, 3, rng), Tensor(DType::kF32, {1})},
                            {Role::kIn, Role::kIn, Role::kOut});
    double ref = 0, mag = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double p = double(call.t("x").data<float>()[2 * i]) * call.t("y").data<float>()[3 * i];
      ref += p;
      mag += std::fabs(p);
    }
    ASSERT_TRUE(impl("sdot")->run(call).ok());
    EXPECT_NEAR(call.t("out").data<float>()[0], ref, 2 * n * u * mag);
  }
  {
    Call call = vector_call("asum", {"x", "out"}, {vec(n, 1, rng), Tensor(DType::kF32, {1})},
                            {Role::kIn, Role::kOut});
    double ref = 0;
    for (std::int64_t i = 0; i < n; ++i) ref += std::fabs(call.t("x").data<float>()[i]);
    ASSERT_TRUE(impl("sasum")->run(call).ok());
    EXPECT_NEAR(call.t("out").data<float>()[0], ref, 2 * n * u * ref);
  }
  {
    Call call = vector_call("nrm2", {"x", "out"}, {vec(n, 4, rng), Tensor(DType::kF32, {1})},
                            {Role::kIn, Role::kOut});
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) ss += std::pow(call.t("x").data<float>()[4 * i], 2);
    ASSERT_TRUE(impl("snrm2")->run(call).ok());
    EXPECT_NEAR(call.t("out").data<float>()[0], std::sqrt(ss), 2 * n * u * std::sqrt(ss));
  }
  {
    Call call = vector_call("scal", {"x"}, {vec(n, 2, rng)}, {Role::kInOut});
    call.config.params["alpha"] = "-1.5";
    std::vector<float> x0(call.t("x").data<float>(),
                          call.t("x").data<float>() + call.t("x").storage_elems());
    ASSERT_TRUE(impl("sscal")->run(call).ok());
    for (std::int64_t i = 0; i < call.t("x").storage_elems(); ++i) {
      const float want = i % 2 == 0 ? -1.5f * x0[i] : kPadSentinel;  // stride 2 leaves gaps alone
      EXPECT_EQ(call.t("x").data<float>()[i], want) << i;
    }
  }
  {
    Tensor x(DType::kF32, {6}, {1});
    const float v[] = {0.5f, -3.0f, 2.0f, 3.0f, -3.0f, 1.0f};  // first max |x| at index 1
    std::copy(v, v + 6, x.data<float>());
    Call call =
        vector_call("iamax", {"x", "out"}, {x, Tensor(DType::kI64, {1})}, {Role::kIn, Role::kOut});
    ASSERT_TRUE(impl("isamax")->run(call).ok());
    EXPECT_EQ(call.t("out").data<std::int64_t>()[0], 1);
  }
  {
    // n = 0: BLAS returns 0 ("no index"); kc's 0-based answer is -1.
    Call call = vector_call("iamax", {"x", "out"},
                            {Tensor(DType::kF32, {0}, {1}), Tensor(DType::kI64, {1})},
                            {Role::kIn, Role::kOut});
    ASSERT_TRUE(impl("isamax")->run(call).ok());
    EXPECT_EQ(call.t("out").data<std::int64_t>()[0], -1);
  }
}

// sscal with alpha = 0 on a NaN: IEEE says 0 * NaN = NaN. The reference sscal.f
// multiplies, so it propagates. Some optimised libraries special-case alpha = 0
// as "set to zero"; what each does is recorded here as measured behaviour.
TEST_P(BlasBackendTest, SscalByZeroOnNaN) {
  Tensor x(DType::kF32, {4}, {1});
  const float v[] = {1.0f, kNaN, std::numeric_limits<float>::infinity(), -2.0f};
  std::copy(v, v + 4, x.data<float>());
  Call call = vector_call("scal", {"x"}, {x}, {Role::kInOut});
  call.config.params["alpha"] = "0";
  ASSERT_TRUE(impl("sscal")->run(call).ok());
  const bool propagates = std::isnan(call.t("x").data<float>()[1]);
  std::printf("[ measured ] %s.sscal(alpha=0): NaN -> %g, Inf -> %g (%s)\n", GetParam().c_str(),
              call.t("x").data<float>()[1], call.t("x").data<float>()[2],
              propagates ? "IEEE: propagates" : "zero-fills, NaN/Inf dropped");
  if (GetParam() == "refblas") {
    EXPECT_TRUE(propagates) << "reference sscal.f multiplies";
  }
}

// isamax on a vector holding a NaN: the reference isamax.f compares with
// ABS(X(I)).GT.SMAX, which is false for NaN, so NaN is skipped unless it comes
// first. Optimised kernels differ (measured on this machine: BLIS 0.9.0 returns
// the NaN's index; OpenBLAS 0.3.21 Haswell returned index 0 for {1, NaN, 3, 2},
// neither the NaN nor the largest element). Recorded, asserted for refblas only.
TEST_P(BlasBackendTest, IsamaxWithNaN) {
  const float nan = kNaN;
  const std::vector<float> v = {1.0f, nan, 3.0f, 2.0f};
  Tensor x(DType::kF32, {4}, {1});
  std::copy(v.begin(), v.end(), x.data<float>());
  Call call =
      vector_call("iamax", {"x", "out"}, {x, Tensor(DType::kI64, {1})}, {Role::kIn, Role::kOut});
  ASSERT_TRUE(impl("isamax")->run(call).ok());
  const std::int64_t got = call.t("out").data<std::int64_t>()[0];
  std::printf("[ measured ] %s.isamax({1, NaN, 3, 2}) = %lld (0-based; 2 is the largest finite)\n",
              GetParam().c_str(), static_cast<long long>(got));
  EXPECT_GE(got, 0);
  EXPECT_LT(got, 4);
  if (GetParam() == "refblas") {
    EXPECT_EQ(got, 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, BlasBackendTest,
                         ::testing::Values("openblas", "blis", "refblas"),
                         [](const auto& info) { return info.param; });

// All three libraries live in one process, each behind its own RTLD_LOCAL
// handle: their sgemm_ must be three different functions in three files.
TEST(BlasLibrary, ThreeLibrariesSideBySide) {
  std::set<void*> addresses;
  std::set<std::string> files;
  for (const auto& spec :
       {backends::openblas_spec(), backends::blis_spec(), backends::refblas_spec()}) {
    auto lib = backends::BlasLibrary::open(spec);
    if (!lib.ok()) {
      GTEST_SKIP() << spec.name << ": " << lib.status().message();
    }
    void* f = reinterpret_cast<void*>((*lib)->sgemm);
    ASSERT_EQ(f, (*lib)->symbol("sgemm_"));
    addresses.insert(f);
    Dl_info where{};
    ASSERT_NE(dladdr(f, &where), 0);
    files.insert(where.dli_fname);
    std::printf("[ info     ] %s sgemm_ = %p in %s\n", spec.name.c_str(), f, where.dli_fname);
  }
  EXPECT_EQ(addresses.size(), 3u);
  EXPECT_EQ(files.size(), 3u);
}

TEST(BlasLibrary, UnavailableNamesThePathsTried) {
  backends::BlasLibrarySpec spec = backends::refblas_spec();
  spec.env_var.clear();
  spec.candidates = {"/nonexistent/libnothing.so", "libm.so.6"};
  auto lib = backends::BlasLibrary::open(spec);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lib.status().message().find("/nonexistent/libnothing.so"), std::string::npos);
  EXPECT_NE(lib.status().message().find("libm.so.6: missing"), std::string::npos)
      << lib.status().message();
}

TEST(BlasLibrary, EnvironmentOverrideReplacesTheCandidates) {
  ::setenv("KC_REFBLAS_LIB", "/nonexistent/libblas-override.so", 1);
  auto lib = backends::BlasLibrary::open(backends::refblas_spec());
  ::unsetenv("KC_REFBLAS_LIB");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("libblas-override.so"), std::string::npos);
  EXPECT_EQ(lib.status().message().find("blas/libblas.so.3"), std::string::npos)
      << "the override must replace the default paths, not add to them";
}

// --- OpenBLAS core types as impls (openblas.<routine>_core_<type>).

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

#define KC_SKIP_CORE_TYPES_IF_UNSUPPORTED()                                                       \
  do {                                                                                            \
    if (kSanitized) GTEST_SKIP() << "core-type impls are disabled in sanitizer builds (dlmopen)"; \
    if (!registry().find_impl("openblas.sgemm_core_prescott"))                                    \
      GTEST_SKIP() << "no DYNAMIC_ARCH OpenBLAS here: " << backend_test::backend_info("openblas").reason; \
  } while (0)

// The copy loaded with OPENBLAS_CORETYPE set really runs that kernel set:
// openblas_get_corename() of the fresh copy reads it back, and the copy is a
// second instance (its sgemm_ is not the one the base handle resolves).
TEST(OpenBlasCoreType, FreshCopyReadsBackTheRequestedCore) {
  KC_SKIP_CORE_TYPES_IF_UNSUPPORTED();
  auto base = backends::BlasLibrary::open(backends::openblas_spec());
  ASSERT_TRUE(base.ok()) << base.status().message();
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  for (const char* core : {"PRESCOTT", "SANDYBRIDGE"}) {
    auto fresh = backends::BlasLibrary::open_fresh(backends::openblas_spec(), (*base)->path(),
                                                   "OPENBLAS_CORETYPE", core);
    ASSERT_TRUE(fresh.ok()) << fresh.status().message();
    const std::string got = (*fresh)->core_name();
    std::printf("[ measured ] OPENBLAS_CORETYPE=%s -> openblas_get_corename() = %s (base: %s)\n", core,
                got.c_str(), (*base)->core_name().c_str());
    std::string want = core;
    for (char& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string got_lower = got;
    for (char& c : got_lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(got_lower, want);
    EXPECT_NE(reinterpret_cast<void*>((*fresh)->sgemm), reinterpret_cast<void*>((*base)->sgemm));
  }
  // The variable is only set while the copy initialises.
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE") == nullptr, before == nullptr);
}

// The same read-back happens inside the impl, in the worker that runs it: an
// impl for a core type this CPU cannot run comes back not applicable, with the
// core that did run named in the reason, in both isolation modes.
TEST(OpenBlasCoreType, UnsupportedCoreIsNotApplicableWithTheReason) {
  KC_SKIP_CORE_TYPES_IF_UNSUPPORTED();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
      __builtin_cpu_supports("amx-bf16")) {
    GTEST_SKIP() << "this CPU may run SAPPHIRERAPIDS kernels";
  }
  for (isolate::Mode mode : {isolate::Mode::kProcess, isolate::Mode::kNone}) {
    engine::CheckRequest request;
    request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc"};
    request.contracts = {"KC-GEMM-01"};
    request.impls = {"openblas.sgemm_core_sapphirerapids"};
    request.samples = 1;
    request.isolation = mode;
    const engine::CheckResult r = engine::run_check(request, registry());
    ASSERT_EQ(r.cases.size(), 1u);
    const engine::CaseResult& c = r.cases[0];
    EXPECT_EQ(c.verdict, engine::Verdict::kNotApplicable) << backend_test::describe(c);
    if (!__builtin_cpu_supports("avx512f")) {
      // Refused before loading: OpenBLAS would load the kernels anyway (SIGILL).
      EXPECT_NE(c.reason.find("this CPU lacks AVX512F"), std::string::npos) << c.reason;
      continue;
    }
    EXPECT_NE(c.reason.find("OPENBLAS_CORETYPE=SAPPHIRERAPIDS was not honoured"), std::string::npos)
        << c.reason;
    EXPECT_NE(c.reason.find("runs core '"), std::string::npos) << c.reason;
  }
}

// Smoke conformance of forced kernel sets against the suite's GEMM contract,
// in worker processes (each worker loads its own copy) and in-process.
TEST(OpenBlasCoreType, ForcedCoresConformToGemmContract) {
  KC_SKIP_CORE_TYPES_IF_UNSUPPORTED();
  for (const char* impl : {"openblas.sgemm_core_prescott", "openblas.sgemm_core_haswell"}) {
    backend_test::expect_conforming(
        backend_test::check_file("contracts/blas/KC-GEMM-01.kc", "KC-GEMM-01", impl));
  }
  engine::CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc"};
  request.contracts = {"KC-GEMM-01"};
  request.impls = {"openblas.sgemm_core_sandybridge"};
  request.samples = 1;
  request.isolation = isolate::Mode::kNone;
  const engine::CheckResult r = engine::run_check(request, registry());
  ASSERT_EQ(r.cases.size(), 1u);
  backend_test::expect_conforming(r.cases[0]);
}

// Each core-type impl names its kernel set and cites where the knob is documented.
TEST(OpenBlasCoreType, DeclaresItsCoreType) {
  KC_SKIP_CORE_TYPES_IF_UNSUPPORTED();
  auto impl = registry().find_impl("openblas.sdot_core_haswell");
  ASSERT_NE(impl, nullptr);
  EXPECT_EQ(impl->declaration().extra.at("coretype"), "HASWELL");
  EXPECT_EQ(impl->declaration().op, "dot");
  EXPECT_NE(impl->declaration().source.find("OPENBLAS_CORETYPE"), std::string::npos);
}

}  // namespace
}  // namespace kc
