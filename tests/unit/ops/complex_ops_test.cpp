// Tests of the complex BLAS ops (src/ops/complex): the (re, im) storage
// convention, the textbook oracles on hand-computed cases (conjugation,
// transposes, the reference NaN/Inf behaviour of cscal and icamax, beta = 0
// and alpha = 0), and the componentwise error model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kc/op.h"

namespace kc {
namespace {

const double kNaN = std::nan("");
constexpr double kInf = std::numeric_limits<double>::infinity();

const Op& op_named(const std::string& name) {
  const Op* op = builtin_ops().find(name);
  KC_CHECK_MSG(op != nullptr, "op missing from builtin_ops()");
  return *op;
}

Call call_for(const std::string& op, std::map<std::string, std::string> params, DType dt = DType::kF64) {
  Config c;
  c.params = std::move(params);
  c.dtype = dt;
  auto r = op_named(op).make_call(c);
  KC_CHECK_MSG(r.ok(), "make_call failed");
  return std::move(r).value();
}

std::vector<double> oracle_of(const std::string& op, const Call& call, std::map<std::string, std::string> with = {}) {
  OracleOptions o;
  o.with = std::move(with);
  auto r = op_named(op).oracle(call, o);
  KC_CHECK_MSG(r.ok(), "oracle failed");
  return r->outputs.at(0);
}

/// Sets complex element i of a (n, 2) vector.
void set_c(Tensor& t, std::int64_t i, double re, double im) {
  t.set(2 * i, re);
  t.set(2 * i + 1, im);
}
/// Sets complex element (i, j) of a (rows, cols, 2) matrix.
void set_m(Tensor& t, std::int64_t i, std::int64_t j, double re, double im) {
  const std::int64_t f = (i * t.dim(1) + j) * 2;
  t.set(f, re);
  t.set(f + 1, im);
}

TEST(ComplexOps, AllRegisteredWithTheirSignatures) {
  for (const char* name : {"cdot", "cscal", "csscal", "ciamax", "cgemv", "cgemm"})
    EXPECT_NE(builtin_ops().find(name), nullptr);
  EXPECT_EQ(op_named("cgemv").signature().size(), 3u);
}

TEST(ComplexOps, StorageIsInterleavedPairsWithComplexStrides) {
  Call v = call_for("cdot", {{"n", "5"}, {"incx", "3"}, {"incy", "2"}});
  EXPECT_EQ(v.t("x").shape(), (std::vector<std::int64_t>{5, 2}));
  EXPECT_EQ(v.t("x").strides(), (std::vector<std::int64_t>{6, 1}));
  EXPECT_EQ(v.t("y").strides(), (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(v.t("out").numel(), 2);
  Call m = call_for("cgemm", {{"M", "3"}, {"N", "4"}, {"K", "5"}, {"trans_a", "C"}, {"ldc_pad", "2"}});
  EXPECT_EQ(m.t("A").shape(), (std::vector<std::int64_t>{5, 3, 2}));  // K x M when transposed
  EXPECT_EQ(m.t("C").strides(), (std::vector<std::int64_t>{12, 2, 1}));
  // The c/z families only: FP32 or FP64 components.
  Config c;
  c.dtype = DType::kF16;
  EXPECT_FALSE(op_named("cdot").make_call(c).ok());
  c.dtype = DType::kF32;
  c.params = {{"trans", "H"}};
  EXPECT_FALSE(op_named("cgemv").make_call(c).ok());
  c.params = {{"conj", "X"}};
  EXPECT_FALSE(op_named("cdot").make_call(c).ok());
}

TEST(ComplexOps, DotUnconjugatedAndConjugated) {
  // x = (1 + 2i, 3 + 4i), y = (5 + 6i, 7 + 8i).
  for (const char* conj : {"U", "C"}) {
    Call c = call_for("cdot", {{"n", "2"}, {"conj", conj}});
    set_c(c.t("x"), 0, 1, 2);
    set_c(c.t("x"), 1, 3, 4);
    set_c(c.t("y"), 0, 5, 6);
    set_c(c.t("y"), 1, 7, 8);
    // U: (5 - 12 + 21 - 32) + (6 + 10 + 24 + 28)i; C: (5 + 12 + 21 + 32) + (6 - 10 + 24 - 28)i.
    const std::vector<double> want = std::string(conj) == "U" ? std::vector<double>{-18, 68} : std::vector<double>{70, -8};
    EXPECT_EQ(oracle_of("cdot", c), want) << conj;
    // Per component the |terms|: Re |ac| + |bd|, Im |ad| + |bc|, conjugation or not.
    EXPECT_EQ(op_named("cdot").magnitude(c, "out").value(), (std::vector<double>{5 + 12 + 21 + 32, 6 + 10 + 24 + 28}));
  }
  EXPECT_EQ(op_named("cdot").accumulation_length(call_for("cdot", {{"n", "7"}})), 14);
}

TEST(ComplexOps, ScalIsTheReferenceProduct) {
  Call c = call_for("cscal", {{"n", "3"}, {"alpha", "2"}, {"alpha_im", "1"}});
  set_c(c.t("x"), 0, 1, 1);
  set_c(c.t("x"), 1, -3, 0.5);
  set_c(c.t("x"), 2, 0, -2);
  // (2 + i)(1 + i) = 1 + 3i; (2 + i)(-3 + 0.5i) = -6.5 - 2i; (2 + i)(-2i) = 2 - 4i.
  EXPECT_EQ(oracle_of("cscal", c), (std::vector<double>{1, 3, -6.5, -2, 2, -4}));
  EXPECT_EQ(op_named("cscal").magnitude(c, "x").value(), (std::vector<double>{3, 3, 6.5, 4, 2, 4}));
}

TEST(ComplexOps, ScalSpecialAlphasFollowCscalF) {
  auto scaled = [](const char* re, const char* im, std::map<std::string, std::string> with = {}) {
    Call c = call_for("cscal", {{"n", "2"}, {"alpha", re}, {"alpha_im", im}});
    set_c(c.t("x"), 0, kNaN, 1);
    set_c(c.t("x"), 1, kInf, 2);
    return oracle_of("cscal", c, std::move(with));
  };
  // alpha = 1: cscal.f returns before touching x.
  auto one = scaled("1", "0");
  EXPECT_TRUE(std::isnan(one[0]));
  EXPECT_EQ(one[1], 1);
  EXPECT_EQ(one[2], kInf);
  EXPECT_EQ(one[3], 2);
  // alpha = -1: the textbook product, so 0 * Inf in the imaginary part is NaN.
  auto minus = scaled("-1", "0");
  EXPECT_EQ(minus[2], -kInf);
  EXPECT_TRUE(std::isnan(minus[3]));
  // alpha = i over NaN + 1i: (0 NaN - 1, 0 + NaN) = (NaN, NaN).
  auto i = scaled("0", "1");
  EXPECT_TRUE(std::isnan(i[0]) && std::isnan(i[1]));
  // alpha = 0: multiply gives NaN for NaN and Inf; zero_fill gives zeros.
  for (double v : scaled("0", "0")) EXPECT_TRUE(std::isnan(v));
  for (double v : scaled("0", "0", {{"alpha_zero", "zero_fill"}})) EXPECT_EQ(v, 0);
  // A NaN alpha is not zero under zero_fill.
  for (double v : scaled("nan", "0", {{"alpha_zero", "zero_fill"}})) EXPECT_TRUE(std::isnan(v));
}

TEST(ComplexOps, RealAlphaScalKeepsThePartsApart) {
  Call c = call_for("csscal", {{"n", "2"}, {"alpha", "-1"}});
  set_c(c.t("x"), 0, kInf, 2);
  set_c(c.t("x"), 1, 1, kNaN);
  // csscal.f: (SA re, SA im), no cross terms: -1 (Inf, 2) = (-Inf, -2).
  const auto out = oracle_of("csscal", c);
  EXPECT_EQ(out[0], -kInf);
  EXPECT_EQ(out[1], -2);
  EXPECT_EQ(out[2], -1);
  EXPECT_TRUE(std::isnan(out[3]));
  Call z = call_for("csscal", {{"n", "1"}, {"alpha", "0"}});
  set_c(z.t("x"), 0, kNaN, 3);
  const auto mult = oracle_of("csscal", z);
  EXPECT_TRUE(std::isnan(mult[0]));
  EXPECT_EQ(mult[1], 0);
  EXPECT_EQ(oracle_of("csscal", z, {{"alpha_zero", "zero_fill"}}), (std::vector<double>{0, 0}));
  EXPECT_EQ(op_named("csscal").accumulation_length(z), 1);
}

TEST(ComplexOps, IamaxUsesAbsRePlusAbsImAndTheDeclaredNanRule) {
  Call c = call_for("ciamax", {{"n", "4"}});
  set_c(c.t("x"), 0, 3, 0);   // |re| + |im| = 3
  set_c(c.t("x"), 1, 2, -2);  // 4 (modulus 2.83 < 3: the modulus would pick 0)
  set_c(c.t("x"), 2, 0, 4);   // 4, a tie: the first wins
  set_c(c.t("x"), 3, 1, 0);
  EXPECT_EQ(oracle_of("ciamax", c), std::vector<double>{1});
  set_c(c.t("x"), 3, 1, kNaN);  // a NaN after x_0
  EXPECT_EQ(oracle_of("ciamax", c), std::vector<double>{1});
  EXPECT_EQ(oracle_of("ciamax", c, {{"iamax_nan", "first_nan"}}), std::vector<double>{3});
  set_c(c.t("x"), 0, kNaN, 0);  // a NaN at x_0 wins the reference scan
  EXPECT_EQ(oracle_of("ciamax", c), std::vector<double>{0});
}

TEST(ComplexOps, GemvNTCAndTheBetaRule) {
  // A = [[1 + i, 2], [0, 3 - i], [i, 1]] (3 x 2), alpha = 1, beta = 0 over NaN.
  const double are[3][2] = {{1, 2}, {0, 3}, {0, 1}}, aim[3][2] = {{1, 0}, {0, -1}, {1, 0}};
  for (const char* trans : {"N", "T", "C"}) {
    const bool t = std::string(trans) != "N", cj = std::string(trans) == "C";
    Call c = call_for("cgemv", {{"M", "3"}, {"N", "2"}, {"trans", trans}, {"incy", "2"}});
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j) set_m(c.t("A"), i, j, are[i][j], aim[i][j]);
    const int nx = t ? 3 : 2, ny = t ? 2 : 3;
    for (int k = 0; k < nx; ++k) set_c(c.t("x"), k, k + 1, -k);
    for (int k = 0; k < ny; ++k) set_c(c.t("y"), k, kNaN, kNaN);
    EXPECT_TRUE(op_named("cgemv").overwrites(c, "y"));
    std::vector<double> want;
    for (int i = 0; i < ny; ++i) {
      double re = 0, im = 0;
      for (int k = 0; k < nx; ++k) {
        const double ar = t ? are[k][i] : are[i][k];
        const double ai = (t ? aim[k][i] : aim[i][k]) * (cj ? -1 : 1);
        const double xr = k + 1, xi = -k;
        re += ar * xr - ai * xi;
        im += ar * xi + ai * xr;
      }
      want.push_back(re);
      want.push_back(im);
    }
    EXPECT_EQ(oracle_of("cgemv", c), want) << trans;
  }
}

TEST(ComplexOps, GemmEveryTransposeAgainstAHandLoop) {
  // op(A) 2 x 3, op(B) 3 x 2, alpha = 1 - i, beta = 0.5 over C = 1 + i.
  for (const char* ta : {"N", "T", "C"}) {
    for (const char* tb : {"N", "T", "C"}) {
      Call c = call_for("cgemm", {{"M", "2"}, {"N", "2"}, {"K", "3"}, {"trans_a", ta}, {"trans_b", tb},
                                  {"alpha", "1"}, {"alpha_im", "-1"}, {"beta", "0.5"}});
      const bool tA = std::string(ta) != "N", tB = std::string(tb) != "N";
      auto aval = [](int i, int k) { return std::pair<double, double>(i + 2 * k, k - i); };  // op-free A_ik
      auto bval = [](int k, int j) { return std::pair<double, double>(k - j + 1, j + k); };
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 3; ++k) {
          auto [r, m] = aval(i, k);
          tA ? set_m(c.t("A"), k, i, r, m) : set_m(c.t("A"), i, k, r, m);
        }
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 2; ++j) {
          auto [r, m] = bval(k, j);
          tB ? set_m(c.t("B"), j, k, r, m) : set_m(c.t("B"), k, j, r, m);
        }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) set_m(c.t("C"), i, j, 1, 1);
      EXPECT_FALSE(op_named("cgemm").overwrites(c, "C"));
      std::vector<double> want;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          double re = 0, im = 0;
          for (int k = 0; k < 3; ++k) {
            auto [ar, ai] = aval(i, k);
            auto [br, bi] = bval(k, j);
            if (std::string(ta) == "C") ai = -ai;
            if (std::string(tb) == "C") bi = -bi;
            re += ar * br - ai * bi;
            im += ar * bi + ai * br;
          }
          // (1 - i)(re + im i) + 0.5 (1 + i)
          want.push_back(re + im + 0.5);
          want.push_back(im - re + 0.5);
        }
      EXPECT_EQ(oracle_of("cgemm", c), want) << ta << tb;
    }
  }
}

TEST(ComplexOps, GemmAlphaZeroReadsNeitherOperand) {
  Call c = call_for("cgemm", {{"M", "2"}, {"N", "2"}, {"K", "2"}, {"alpha", "0"}, {"beta", "2"}});
  for (std::int64_t k = 0; k < c.t("A").numel(); ++k) c.t("A").set(k, kNaN);
  for (std::int64_t k = 0; k < c.t("C").numel(); ++k) c.t("C").set(k, 1);
  for (double v : oracle_of("cgemm", c)) EXPECT_EQ(v, 2);
}

TEST(ComplexOps, GemvMagnitudeCountsEveryTermOfEachComponent) {
  // One element: A = 1 + 2i, x = 3 + 4i, alpha = 0.5 - 1i, beta = 2 + 1i, y = 1 - 1i.
  Call c = call_for("cgemv", {{"M", "1"}, {"N", "1"}, {"alpha", "0.5"}, {"alpha_im", "-1"}, {"beta", "2"},
                              {"beta_im", "1"}});
  set_m(c.t("A"), 0, 0, 1, 2);
  set_c(c.t("x"), 0, 3, 4);
  set_c(c.t("y"), 0, 1, -1);
  // A x: Re terms |1*3| + |2*4| = 11, Im terms |1*4| + |2*3| = 10. alpha
  // (0.5, -1): Re 0.5*11 + 1*10 = 15.5, Im 0.5*10 + 1*11 = 16. beta y:
  // Re |2*1| + |1*-1| = 3, Im |2*-1| + |1*1| = 3.
  EXPECT_EQ(op_named("cgemv").magnitude(c, "y").value(), (std::vector<double>{18.5, 19}));
  EXPECT_EQ(op_named("cgemv").accumulation_length(c), 2 * 1 + 3);
  // A zero factor counts nothing, also against an infinite one.
  set_c(c.t("x"), 0, kInf, 0);
  set_m(c.t("A"), 0, 0, 0, 2);
  const auto mag = op_named("cgemv").magnitude(c, "y").value();
  EXPECT_FALSE(std::isnan(mag[0]));
}

}  // namespace
}  // namespace kc
