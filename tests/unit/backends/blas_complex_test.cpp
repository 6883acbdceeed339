// The complex routines of openblas, blis and refblas (backends/blas/blas_complex.cpp):
// direct calls on exact small integers (the row-major mapping of cgemv and
// cgemm for N, T and C, conjugation in cdotc, the 0-based icamax), the
// declared rules, and the verdicts docs/findings.md records for the complex
// contracts, so a library update that changes one fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/op.h"

namespace kc {
namespace {

using backend_test::describe;
using backend_test::registry;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Call make(const std::string& op, std::map<std::string, std::string> params, DType dt) {
  Config config;
  config.dtype = dt;
  config.params = std::move(params);
  auto made = builtin_ops().find(op)->make_call(config);
  KC_CHECK(made.ok());
  return std::move(made).value();
}

void set_c(Tensor& t, std::int64_t i, double re, double im) {
  t.set(2 * i, re);
  t.set(2 * i + 1, im);
}
void set_m(Tensor& t, std::int64_t i, std::int64_t j, double re, double im) {
  const std::int64_t f = (i * t.dim(1) + j) * 2;
  t.set(f, re);
  t.set(f + 1, im);
}

const char* prefix(DType dt) { return dt == DType::kF32 ? "c" : "z"; }

/// Contract `id` (contracts/blas/<id>.kc), every config once, on the c and z
/// routines `<lib>.<c|z><stem>` (`<lib>.i<c|z>amax` for stem "amax",
/// `<lib>.csscal`/`zdscal` for stem "sscal").
std::vector<engine::CaseResult> c_and_z(const std::string& id, const std::string& lib, const std::string& stem) {
  std::vector<engine::CaseResult> out;
  for (const char* p : {"c", "z"}) {
    std::string impl = lib + "." + (stem == "amax" ? std::string("i") + p + stem : p + stem);
    if (stem == "sscal") impl = lib + (std::string(p) == "c" ? ".csscal" : ".zdscal");
    for (auto& c : backend_test::smoke_check("contracts/blas/" + id + ".kc", id, impl)) out.push_back(std::move(c));
  }
  return out;
}

class BlasComplexTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_NE(registry().find_backend(GetParam()), nullptr);
    const BackendInfo info = backend_test::backend_info(GetParam());
    if (!info.available) GTEST_SKIP() << info.reason;
  }
  std::shared_ptr<const Impl> impl(const std::string& routine) {
    auto i = registry().find_impl(GetParam() + "." + routine);
    EXPECT_NE(i, nullptr) << GetParam() << "." << routine;
    return i;
  }
};

TEST_P(BlasComplexTest, DotsAreUnconjugatedAndConjugated) {
  for (DType dt : {DType::kF32, DType::kF64}) {
    for (const char* conj : {"U", "C"}) {
      Call c = make("cdot", {{"n", "2"}, {"conj", conj}, {"incx", "1"}, {"incy", "1"}}, dt);
      set_c(c.t("x"), 0, 1, 2);
      set_c(c.t("x"), 1, 3, 4);
      set_c(c.t("y"), 0, 5, 6);
      set_c(c.t("y"), 1, 7, 8);
      const std::string routine = std::string(prefix(dt)) + (std::string(conj) == "U" ? "dotu" : "dotc");
      auto i = impl(routine);
      ASSERT_NE(i, nullptr);
      ASSERT_TRUE(i->can_implement(c).ok()) << routine;
      ASSERT_TRUE(i->run(c).ok()) << routine;
      const bool u = std::string(conj) == "U";
      EXPECT_EQ(c.t("out").at(0), u ? -18 : 70) << routine;
      EXPECT_EQ(c.t("out").at(1), u ? 68 : -8) << routine;
      // The U routine does not implement a conj = C call and vice versa.
      Call other = make("cdot", {{"n", "2"}, {"conj", u ? "C" : "U"}}, dt);
      EXPECT_FALSE(i->can_implement(other).ok()) << routine;
    }
  }
}

TEST_P(BlasComplexTest, ScalAndIamaxOnExactValues) {
  for (DType dt : {DType::kF32, DType::kF64}) {
    Call s = make("cscal", {{"n", "3"}, {"incx", "2"}, {"alpha", "2"}, {"alpha_im", "1"}}, dt);
    set_c(s.t("x"), 0, 1, 1);
    set_c(s.t("x"), 1, -3, 0.5);
    set_c(s.t("x"), 2, 0, -2);
    auto scal = impl(std::string(prefix(dt)) + "scal");
    ASSERT_NE(scal, nullptr);
    ASSERT_TRUE(scal->run(s).ok());
    EXPECT_EQ(s.t("x").to_doubles(), (std::vector<double>{1, 3, -6.5, -2, 2, -4}));
    // |re| + |im|: (2, -2) and (0, 4) tie at 4 ahead of (3, 0); the first wins (0-based 1).
    Call m = make("ciamax", {{"n", "4"}}, dt);
    set_c(m.t("x"), 0, 3, 0);
    set_c(m.t("x"), 1, 2, -2);
    set_c(m.t("x"), 2, 0, 4);
    set_c(m.t("x"), 3, 1, 0);
    auto iamax = impl(std::string("i") + prefix(dt) + "amax");
    ASSERT_NE(iamax, nullptr);
    ASSERT_TRUE(iamax->run(m).ok());
    EXPECT_EQ(m.t("out").data<std::int64_t>()[0], 1);
  }
}

// A 3 x 2 row-major A, trans N, T and C, y at stride 2 and beta = 0 over a
// NaN-filled y: exact small integers, every library bit for bit.
TEST_P(BlasComplexTest, GemvRowMajorNTCWithoutReadingY) {
  const double are[3][2] = {{1, 2}, {0, 3}, {0, 1}}, aim[3][2] = {{1, 0}, {0, -1}, {1, 0}};
  for (DType dt : {DType::kF32, DType::kF64}) {
    for (const char* trans : {"N", "T", "C"}) {
      const bool t = std::string(trans) != "N", cj = std::string(trans) == "C";
      Call c = make("cgemv", {{"M", "3"}, {"N", "2"}, {"trans", trans}, {"incy", "2"}, {"alpha", "2"}}, dt);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) set_m(c.t("A"), i, j, are[i][j], aim[i][j]);
      const int nx = t ? 3 : 2, ny = t ? 2 : 3;
      for (int k = 0; k < nx; ++k) set_c(c.t("x"), k, k + 1, -k);
      for (std::int64_t k = 0; k < c.t("y").storage_elems(); ++k) c.t("y").store(k, kNaN);
      auto i = impl(std::string(prefix(dt)) + "gemv");
      ASSERT_NE(i, nullptr);
      ASSERT_TRUE(i->run(c).ok());
      for (int r = 0; r < ny; ++r) {
        double re = 0, im = 0;
        for (int k = 0; k < nx; ++k) {
          const double ar = t ? are[k][r] : are[r][k], ai = (t ? aim[k][r] : aim[r][k]) * (cj ? -1 : 1);
          re += ar * (k + 1) + ai * k;
          im += -ar * k + ai * (k + 1);
        }
        EXPECT_EQ(c.t("y").at(2 * r), 2 * re) << GetParam() << " trans " << trans << " y[" << r << "]";
        EXPECT_EQ(c.t("y").at(2 * r + 1), 2 * im) << GetParam() << " trans " << trans << " y[" << r << "]";
      }
    }
  }
}

// Every transpose pair of a 2 x 3 by 3 x 2 product, alpha = 1 - i, beta =
// 0.5 over C = 1 + i (ldc padded): exact, against the op's own oracle.
TEST_P(BlasComplexTest, GemmEveryTransposeMatchesTheOracle) {
  for (DType dt : {DType::kF32, DType::kF64}) {
    for (const char* ta : {"N", "T", "C"}) {
      for (const char* tb : {"N", "T", "C"}) {
        Call c = make("cgemm", {{"M", "2"}, {"N", "2"}, {"K", "3"}, {"trans_a", ta}, {"trans_b", tb}, {"alpha", "1"},
                                {"alpha_im", "-1"}, {"beta", "0.5"}, {"ldc_pad", "1"}},
                      dt);
        for (std::int64_t k = 0; k < c.t("A").numel(); ++k) c.t("A").set(k, static_cast<double>(k % 5) - 2);
        for (std::int64_t k = 0; k < c.t("B").numel(); ++k) c.t("B").set(k, static_cast<double>(k % 3) + 1);
        for (std::int64_t k = 0; k < c.t("C").numel(); ++k) c.t("C").set(k, 1);
        auto want = builtin_ops().find("cgemm")->oracle(c, OracleOptions{});
        ASSERT_TRUE(want.ok());
        auto i = impl(std::string(prefix(dt)) + "gemm");
        ASSERT_NE(i, nullptr);
        ASSERT_TRUE(i->run(c).ok());
        EXPECT_EQ(c.t("C").to_doubles(), want->outputs[0]) << GetParam() << " " << ta << tb;
      }
    }
  }
}

TEST_P(BlasComplexTest, DeclaresTheRulesOfItsLibrary) {
  const std::string lib = GetParam();
  auto scal = impl("zscal");
  auto iamax = impl("izamax");
  auto gemm = impl("cgemm");
  ASSERT_TRUE(scal && iamax && gemm);
  EXPECT_EQ(scal->declaration().extra.at("scal_alpha_zero"), lib == "refblas" ? "MULTIPLY" : "ZERO_FILL");
  EXPECT_EQ(iamax->declaration().extra.at("iamax_nan"),
            lib == "refblas" ? "GREATER_THAN" : lib == "blis" ? "FIRST_NAN" : "UNSPECIFIED");
  EXPECT_EQ(gemm->declaration().extra.at("beta_zero"), "C_NOT_READ");
  EXPECT_EQ(gemm->declaration().accumulator, DType::kF32);
}

TEST_P(BlasComplexTest, GemvAndGemmAtBetaZeroDoNotReadTheOutput) {
  for (const char* id : {"KC-CGEMV-02", "KC-CGEMM-02"}) {
    const auto cases = c_and_z(id, GetParam(), std::string(id) == "KC-CGEMV-02" ? "gemv" : "gemm");
    ASSERT_EQ(cases.size(), 2u) << id;
    for (const auto& c : cases) backend_test::expect_conforming(c);
  }
}

// alpha = 0 over NaN in A: A (and x or B) not read (cgemv.f/cgemm.f quick return).
TEST_P(BlasComplexTest, GemvAndGemmAtAlphaZeroDoNotReadA) {
  for (const char* id : {"KC-CGEMV-03", "KC-CGEMM-03"}) {
    const auto cases = c_and_z(id, GetParam(), std::string(id) == "KC-CGEMV-03" ? "gemv" : "gemm");
    ASSERT_EQ(cases.size(), 2u) << id;
    for (const auto& c : cases) backend_test::expect_conforming(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, BlasComplexTest, ::testing::Values("openblas", "blis", "refblas"),
                         [](const auto& info) { return info.param; });

// The verdicts of docs/findings.md (complex BLAS).
bool available(const char* backend) { return backend_test::backend_info(backend).available; }

bool has_signature(const engine::CaseResult& r, const std::string& name) {
  for (const auto& sg : r.signatures)
    if (sg.name == name) return true;
  return false;
}

TEST(BlasComplexFindings, OpenBlasStridedDotsReadPastTheirVectors) {
  if (!available("openblas")) GTEST_SKIP() << "openblas not available";
  for (const char* impl : {"openblas.cdotc", "openblas.zdotu"}) {
    const auto c = backend_test::check_file("contracts/blas/KC-CDOT-01.kc", "KC-CDOT-01", impl);
    EXPECT_EQ(c.verdict, engine::Verdict::kError) << describe(c);
    EXPECT_TRUE(has_signature(c, "GUARD_READ")) << describe(c);
  }
}

TEST(BlasComplexFindings, OpenBlasScalDropsTheProductsOfAZeroAlphaPart) {
  if (!available("openblas")) GTEST_SKIP() << "openblas not available";
  for (const char* impl : {"openblas.cscal", "openblas.zscal"}) {
    const auto c = backend_test::check_file("contracts/blas/KC-CSCAL-03.kc", "KC-CSCAL-03", impl);
    EXPECT_EQ(c.verdict, engine::Verdict::kViolation) << describe(c);
    EXPECT_TRUE(has_signature(c, "NAN_SWALLOWED")) << describe(c);
  }
}

TEST(BlasComplexFindings, BlisRealAlphaScalSpreadsANonFinitePart) {
  if (!available("blis")) GTEST_SKIP() << "blis not available";
  for (const char* impl : {"blis.csscal", "blis.zdscal"}) {
    const auto c = backend_test::check_file("contracts/blas/KC-CSSCAL-03.kc", "KC-CSSCAL-03", impl);
    EXPECT_EQ(c.verdict, engine::Verdict::kViolation) << describe(c);
    EXPECT_TRUE(has_signature(c, "NAN_INTRODUCED")) << describe(c);
  }
  // OpenBLAS declares the same zero-fill rule and keeps the parts apart.
  if (available("openblas"))
    for (const auto& c : c_and_z("KC-CSSCAL-03", "openblas", "sscal")) backend_test::expect_conforming(c);
}

TEST(BlasComplexFindings, ReferenceAndBlisConformWhereTheirRulesApply) {
  struct Row {
    const char* backend;
    const char* contract;
    const char* stem;
  };
  const Row rows[] = {
      {"refblas", "KC-CDOT-01", "dotc"},    {"blis", "KC-CDOT-01", "dotu"},  {"refblas", "KC-CSCAL-02", "scal"},
      {"blis", "KC-CSCAL-03", "scal"},      {"refblas", "KC-CIAMAX-01", "amax"}, {"blis", "KC-CIAMAX-02", "amax"},
      {"openblas", "KC-CDOT-02", "dotc"},   {"refblas", "KC-CSSCAL-02", "sscal"},
  };
  for (const Row& r : rows) {
    if (!available(r.backend)) continue;
    const auto cases = c_and_z(r.contract, r.backend, r.stem);
    ASSERT_EQ(cases.size(), 2u) << r.contract << " " << r.backend << " " << r.stem;
    for (const auto& c : cases) backend_test::expect_conforming(c);
  }
}

// The KC-CDOT-01 trio separates (`kc calibrate` runs all of them).
TEST(BlasComplexCalibration, Fp16OperandsAreCaughtTheLoopConforms) {
  const auto bad = backend_test::smoke_check("contracts/blas/KC-CDOT-01.kc", "KC-CDOT-01", "calib.cdot_fp16");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].verdict, engine::Verdict::kViolation) << describe(bad[0]);
  const auto good = backend_test::smoke_check("contracts/blas/KC-CDOT-01.kc", "KC-CDOT-01", "calib.cdot_loop");
  ASSERT_EQ(good.size(), 1u);
  backend_test::expect_conforming(good[0]);
}

}  // namespace
}  // namespace kc
