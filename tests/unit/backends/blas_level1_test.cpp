// Level-1 BLAS in FP32 and FP64 across openblas, blis and refblas: the d
// routines against long double loops (negative, zero and non-unit increments
// included), the rules each library declares (scal_alpha_zero, iamax_nan,
// nrm2_range, increments, nonpositive_inc), and the verdicts of the level-1
// rule contracts (contracts/blas/KC-SCAL-02/03, KC-IAMAX-02/03,
// KC-NRM2-01..03, KC-INC-01..06) on the libraries installed here. The verdicts that are violations are the
// findings of docs/findings.md, each with a standalone reproduction under
// tests/repro/; if a library update fixes one, its test here fails and the
// finding must be revisited.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backend_test_util.h"
#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/op.h"
#include "kc/rng.h"

namespace kc {
namespace {

using backend_test::check_cases;
using backend_test::describe;
using backend_test::registry;

class BlasLevel1Test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_NE(registry().find_backend(GetParam()), nullptr);
    const BackendInfo info = backend_test::backend_info(GetParam());
    if (!info.available) GTEST_SKIP() << info.reason;
  }
  std::shared_ptr<const Impl> impl(const std::string& routine) {
    auto i = registry().find_impl(GetParam() + "." + routine);
    KC_CHECK(i != nullptr);
    return i;
  }
};

/// An FP64 call of a level-1 op: x (and y) of length n at increment inc
/// (incy for y), filled with distinct values in (-1, 1).
Call d_call(const std::string& op, std::int64_t n, std::int64_t inc, double alpha = 1.0, std::int64_t incy = 1) {
  const Op* o = builtin_ops().find(op);
  KC_CHECK(o != nullptr);
  Config config;
  config.dtype = DType::kF64;
  config.params = {{"n", std::to_string(n)}, {"incx", std::to_string(inc)}, {"incy", std::to_string(incy)}};
  if (op == "scal") config.params["alpha"] = std::to_string(alpha);
  auto call = o->make_call(config);
  KC_CHECK(call.ok());
  std::uint64_t s = 0x243F6A8885A308D3ull;
  for (std::size_t k = 0; k < call->tensors.size(); ++k) {
    if (call->roles[k] == Role::kOut) continue;
    Tensor& t = call->tensors[k];
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      t.set(i, static_cast<double>(s >> 11) / static_cast<double>(1ull << 53) * 2 - 1);
    }
  }
  return std::move(call).value();
}

TEST_P(BlasLevel1Test, DoubleRoutinesMatchLongDoubleLoops) {
  const std::int64_t n = 41;
  const double u = std::ldexp(1.0, -53);
  {
    Call call = d_call("dot", n, 2);
    long double ref = 0, mag = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const long double p = static_cast<long double>(call.t("x").at(i)) * call.t("y").at(i);
      ref += p;
      mag += std::fabs(p);
    }
    ASSERT_TRUE(impl("ddot")->run(call).ok());
    EXPECT_NEAR(call.t("out").at(0), static_cast<double>(ref), 2 * n * u * static_cast<double>(mag));
  }
  {
    Call call = d_call("asum", n, 3);
    long double ref = 0;
    for (std::int64_t i = 0; i < n; ++i) ref += std::fabs(call.t("x").at(i));
    ASSERT_TRUE(impl("dasum")->run(call).ok());
    EXPECT_NEAR(call.t("out").at(0), static_cast<double>(ref), 2 * n * u * static_cast<double>(ref));
  }
  {
    Call call = d_call("nrm2", n, 1);
    long double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) ss += static_cast<long double>(call.t("x").at(i)) * call.t("x").at(i);
    const double ref = static_cast<double>(std::sqrt(ss));
    ASSERT_TRUE(impl("dnrm2")->run(call).ok());
    EXPECT_NEAR(call.t("out").at(0), ref, 2 * n * u * ref);
  }
  {
    Call call = d_call("scal", n, 2, -1.25);
    std::vector<double> x0;
    for (std::int64_t i = 0; i < n; ++i) x0.push_back(call.t("x").at(i));
    ASSERT_TRUE(impl("dscal")->run(call).ok());
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(call.t("x").at(i), -1.25 * x0[i]) << i;  // one rounding
  }
  {
    Call call = d_call("iamax", n, 1);
    std::int64_t best = 0;
    for (std::int64_t i = 1; i < n; ++i)
      if (std::fabs(call.t("x").at(i)) > std::fabs(call.t("x").at(best))) best = i;
    ASSERT_TRUE(impl("idamax")->run(call).ok());
    EXPECT_EQ(call.t("out").data<std::int64_t>()[0], best);
  }
  {
    Call call = d_call("dot", n, 1);
    call.t("x") = Tensor(DType::kF32, {n}, {1});  // an s-vector handed to a d-routine is refused, not misread
    EXPECT_FALSE(impl("ddot")->run(call).ok());
  }
}

/// x(i), 0-based, as the Fortran BLAS walks n elements of storage `s` at inc.
double walked_at(const Tensor& s, std::int64_t i, std::int64_t n, std::int64_t inc) {
  return s.load(inc < 0 ? (n - 1 - i) * -inc : i * inc);
}

// The signed increment reaches the library: with incx = -2 and incy = 1 ddot
// pairs x reversed with y (a library handed |incx| would pair them in order),
// and at incx = 0 it reads x(1) n times. nrm2, asum, scal and iamax at incx <=
// 0 give what each library's declaration (and docs/findings.md) says.
TEST_P(BlasLevel1Test, DoubleRoutinesWalkNonPositiveIncrements) {
  const std::string lib = GetParam();
  const std::int64_t n = 9;
  const double u = std::ldexp(1.0, -53);
  for (std::int64_t incx : {-2, 0, -1}) {
    SCOPED_TRACE("incx = " + std::to_string(incx));
    {
      Call call = d_call("dot", n, incx, 1.0, 1);
      EXPECT_EQ(call.t("x").storage_elems(), incx == 0 ? 1 : (n - 1) * -incx + 1) << "the storage addressed, no more";
      long double ref = 0, mag = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const long double p = static_cast<long double>(walked_at(call.t("x"), i, n, incx)) * call.t("y").at(i);
        ref += p;
        mag += std::fabs(p);
      }
      ASSERT_TRUE(impl("ddot")->run(call).ok());
      EXPECT_NEAR(call.t("out").at(0), static_cast<double>(ref), 2 * n * u * static_cast<double>(mag));
    }
    {
      Call call = d_call("nrm2", n, incx);
      long double ss = 0;
      for (std::int64_t i = 0; i < n; ++i) ss += std::pow(static_cast<long double>(walked_at(call.t("x"), i, n, incx)), 2);
      const double ref = static_cast<double>(std::sqrt(ss));
      ASSERT_TRUE(impl("dnrm2")->run(call).ok());
      // OpenBLAS 0.3.21 returns 0 (docs/findings.md, KC-INC-01).
      if (lib == "openblas")
        EXPECT_EQ(call.t("out").at(0), 0.0);
      else
        EXPECT_NEAR(call.t("out").at(0), ref, 2 * n * u * ref);
    }
    const bool walk = impl("dasum")->declaration().get("nonpositive_inc") == "WALK";
    {
      Call call = d_call("asum", n, incx);
      long double ref = 0;
      for (std::int64_t i = 0; i < n; ++i) ref += std::fabs(walked_at(call.t("x"), i, n, incx));
      ASSERT_TRUE(impl("dasum")->run(call).ok());
      EXPECT_NEAR(call.t("out").at(0), walk ? static_cast<double>(ref) : 0.0, 2 * n * u * static_cast<double>(ref));
    }
    {
      Call call = d_call("scal", n, incx, -1.25);
      const std::vector<double> x0 = call.t("x").to_doubles();
      ASSERT_TRUE(impl("dscal")->run(call).ok());
      double first = x0[0];
      if (incx == 0)
        for (std::int64_t i = 0; i < n; ++i) first *= -1.25;  // x(1) scaled n times, each product rounded as stored
      for (std::int64_t i = 0; i < n; ++i) {
        const double want = !walk ? x0[i] : incx == 0 ? first : -1.25 * x0[i];
        EXPECT_EQ(call.t("x").at(i), want) << i;
      }
    }
    {
      Call call = d_call("iamax", n, incx);
      ASSERT_TRUE(impl("idamax")->run(call).ok());
      EXPECT_EQ(call.t("out").data<std::int64_t>()[0], -1) << "every library returns 0 (no element) at incx <= 0";
    }
  }
}

TEST_P(BlasLevel1Test, DeclaresTheRulesOfItsLibrary) {
  const std::string lib = GetParam();
  // OpenBLAS's BLAS interface multiplies by its upstream's statement
  // (0.3.28's fix); BLIS's scalv zero-fills by its source.
  for (const char* r : {"sscal", "dscal"})
    EXPECT_EQ(impl(r)->declaration().get("scal_alpha_zero"), lib == "blis" ? "ZERO_FILL" : "MULTIPLY") << r;
  for (const char* r : {"sdot", "ddot", "sasum", "dasum", "snrm2", "dnrm2", "sscal", "dscal", "isamax", "idamax"})
    EXPECT_EQ(impl(r)->declaration().get("increments"), "BLAS") << r;
  for (const char* r : {"sasum", "dasum", "sscal", "dscal"})
    EXPECT_EQ(impl(r)->declaration().get("nonpositive_inc"), lib == "blis" ? "WALK" : "QUICK_RETURN") << r;
  for (const char* r : {"isamax", "idamax"}) EXPECT_EQ(impl(r)->declaration().get("nonpositive_inc"), "QUICK_RETURN");
  for (const char* r : {"isamax", "idamax"})
    EXPECT_EQ(impl(r)->declaration().get("iamax_nan"),
              lib == "refblas" ? "GREATER_THAN" : lib == "blis" ? "FIRST_NAN" : "UNSPECIFIED")
        << r;
  for (const char* r : {"snrm2", "dnrm2"}) EXPECT_EQ(impl(r)->declaration().get("nrm2_range"), "SAFE") << r;
  EXPECT_EQ(impl("dnrm2")->declaration().dtypes, std::vector<DType>{DType::kF64});
  EXPECT_EQ(impl("ddot")->declaration().accumulator, DType::kF64);
}

INSTANTIATE_TEST_SUITE_P(Libraries, BlasLevel1Test, ::testing::Values("openblas", "blis", "refblas"),
                         [](const auto& info) { return info.param; });

/// The verdict of every case of contract `id` on impls matching `glob`, by impl.
std::map<std::string, engine::CaseResult> verdicts(const std::string& id, const std::string& glob) {
  std::map<std::string, engine::CaseResult> out;
  for (auto& c : check_cases("contracts/blas/" + id + ".kc", id, glob)) out[c.impl] = c;
  return out;
}

bool has_signature(const engine::CaseResult& r, const std::string& name) {
  for (const auto& s : r.signatures)
    if (s.name == name) return true;
  return false;
}

bool available(const std::string& backend) { return backend_test::backend_info(backend).available; }

// The reference library conforms to every level-1 rule contract it is in the
// scope of: the rules are its own (netlib 3.11), so a violation here would be
// kc's error.
TEST(BlasLevel1Contracts, ReferenceBlasConformsToItsRules) {
  if (!available("refblas")) GTEST_SKIP() << "refblas unavailable";
  for (const char* id : {"KC-SCAL-02", "KC-IAMAX-02", "KC-NRM2-01", "KC-NRM2-02", "KC-NRM2-03", "KC-INC-01",
                         "KC-INC-02", "KC-INC-03", "KC-INC-04"}) {
    int judged = 0;
    for (const auto& [name, r] : verdicts(id, "refblas.*")) {
      if (r.verdict == engine::Verdict::kNotApplicable) continue;
      ++judged;
      backend_test::expect_conforming(r);
    }
    // KC-INC-03 judges asum and iamax: four routines.
    EXPECT_EQ(judged, std::string(id) == "KC-INC-03" ? 4 : 2) << id << ": the s- and the d-routine";
  }
  // The WALK rule is not the reference's.
  for (const char* id : {"KC-INC-05", "KC-INC-06"})
    for (const auto& [name, r] : verdicts(id, "refblas.*"))
      EXPECT_EQ(r.verdict, engine::Verdict::kNotApplicable) << describe(r);
}

// OpenBLAS 0.3.21: snrm2/dnrm2 return 0 at INCX < 0 and INCX = 0, where
// reference dnrm2.f90 (3.10+) documents the norm; KC-INC-01 names it
// CONFIG_DEPENDENT at the non-positive increments only. BLIS and netlib hold.
// tests/repro/openblas_nrm2_nonpositive_inc.c.
TEST(BlasLevel1Contracts, OpenBlasNrm2ZeroAtNonPositiveIncrements) {
  if (!available("openblas")) GTEST_SKIP() << "openblas unavailable";
  const auto v = verdicts("KC-INC-01", "openblas.?nrm2");
  for (const char* name : {"openblas.snrm2", "openblas.dnrm2"}) {
    ASSERT_EQ(v.count(name), 1u) << name;
    const engine::CaseResult& r = v.at(name);
    EXPECT_EQ(r.verdict, engine::Verdict::kViolation) << describe(r);
    EXPECT_TRUE(has_signature(r, "CONFIG_DEPENDENT")) << describe(r);
    EXPECT_NE(describe(r).find("incx=-1,-3,0"), std::string::npos) << describe(r);
  }
  if (available("blis"))
    for (const auto& [name, r] : verdicts("KC-INC-01", "blis.?nrm2")) backend_test::expect_conforming(r);
}

// Every library walks dot's increments as ddot.f does, on every kernel set
// (core types, sub-configurations); asum, scal and iamax keep the rule each
// declares at INCX <= 0 (BLIS walks asum and scal).
TEST(BlasLevel1Contracts, IncrementsAsDeclared) {
  for (const char* lib : {"openblas", "blis"}) {
    if (!available(lib)) continue;
    int judged = 0;
    for (const auto& [name, r] : verdicts("KC-INC-02", std::string(lib) + ".*")) {
      if (r.verdict == engine::Verdict::kNotApplicable) continue;
      ++judged;
      backend_test::expect_conforming(r);
    }
    EXPECT_GE(judged, 2) << lib;
    const char* walk_ids[] = {"KC-INC-05", "KC-INC-06"};
    const char* quick_ids[] = {"KC-INC-03", "KC-INC-04"};
    const bool blis = std::string(lib) == "blis";
    for (const char* id : blis ? walk_ids : quick_ids) {
      int n = 0;
      for (const auto& [name, r] : verdicts(id, std::string(lib) + ".*")) {
        if (r.verdict == engine::Verdict::kNotApplicable) continue;
        ++n;
        backend_test::expect_conforming(r);
      }
      EXPECT_GE(n, 2) << lib << " " << id;
    }
    if (blis) {
      // Its i?amax returns 0 at INCX <= 0 like the reference.
      for (const char* name : {"blis.isamax", "blis.idamax"})
        backend_test::expect_conforming(verdicts("KC-INC-03", name).at(name));
    }
  }
}

// OpenBLAS 0.3.21: ?scal at alpha = 0 stores zeros over NaN and Inf, where
// the BLAS interface multiplies (the rule OpenBLAS declares, as upstream
// states it since 0.3.28), and sscal with a NaN alpha stores zeros too (x86_64
// kernels take a NaN alpha for zero); dscal propagates a NaN alpha. KC-SCAL-02
// names it NAN_SWALLOWED. tests/repro/blas_level1_rules.c and
// openblas_sscal_nan_alpha.c.
TEST(BlasLevel1Contracts, OpenBlasScalZeroFillsAndTakesNanAlphaForZero) {
  if (!available("openblas")) GTEST_SKIP() << "openblas unavailable";
  const auto v = verdicts("KC-SCAL-02", "openblas.?scal");
  ASSERT_EQ(v.count("openblas.sscal"), 1u);
  const engine::CaseResult& s = v.at("openblas.sscal");
  EXPECT_EQ(s.verdict, engine::Verdict::kViolation) << describe(s);
  EXPECT_TRUE(has_signature(s, "NAN_SWALLOWED")) << describe(s);
  EXPECT_NE(describe(s).find("alpha=0,nan"), std::string::npos) << describe(s);
  const engine::CaseResult& d = v.at("openblas.dscal");
  EXPECT_EQ(d.verdict, engine::Verdict::kViolation) << describe(d);
  EXPECT_TRUE(has_signature(d, "NAN_SWALLOWED")) << describe(d);
  EXPECT_EQ(describe(d).find("alpha=0,nan"), std::string::npos) << "dscal propagates a NaN alpha: " << describe(d);
  // Every kernel set this CPU runs does it (the sscal core-type impls); one
  // the CPU cannot run is not applicable, never graded as another.
  int cores = 0;
  for (const auto& [name, r] : verdicts("KC-SCAL-02", "openblas.sscal_core_*")) {
    if (r.verdict == engine::Verdict::kNotApplicable) continue;
    ++cores;
    EXPECT_EQ(r.verdict, engine::Verdict::kViolation) << describe(r);
    EXPECT_TRUE(has_signature(r, "NAN_SWALLOWED")) << describe(r);
  }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_GE(cores, 1) << "the prescott kernels run on every x86_64 CPU";
#endif
  // Its MULTIPLY rule keeps it out of KC-SCAL-03's scope.
  for (const auto& [name, r] : verdicts("KC-SCAL-03", "openblas.?scal"))
    EXPECT_EQ(r.verdict, engine::Verdict::kNotApplicable) << describe(r);
}

// BLIS 0.9.0: nrm2 of a vector with two or more infinities is NaN (its
// scale/ssq update divides Inf by Inf); the reference gives +Inf. Fixed
// upstream after 0.9.0 (flame/blis PR #668). tests/repro/blis_nrm2_infinities.c.
TEST(BlasLevel1Contracts, BlisNrm2OfInfinitiesIsNaN) {
  if (!available("blis")) GTEST_SKIP() << "blis unavailable";
  const auto v = verdicts("KC-NRM2-03", "blis.?nrm2");
  for (const char* name : {"blis.snrm2", "blis.dnrm2"}) {
    ASSERT_EQ(v.count(name), 1u) << name;
    EXPECT_EQ(v.at(name).verdict, engine::Verdict::kViolation) << describe(v.at(name));
    EXPECT_TRUE(has_signature(v.at(name), "NAN_INTRODUCED")) << describe(v.at(name));
  }
  // Overflow and underflow ranges it handles: its norm is scaled.
  for (const char* id : {"KC-NRM2-01", "KC-NRM2-02"})
    for (const auto& [name, r] : verdicts(id, "blis.?nrm2")) backend_test::expect_conforming(r);
}

// NaN and Inf reach dot, asum and nrm2 in all three libraries, s and d
// (KC-RED-02; a NaN is present in every sample, so BLIS's two-infinity NaN
// is the right answer there).
TEST(BlasLevel1Contracts, ReductionsPropagateNaNAndInf) {
  for (const char* lib : {"openblas", "blis", "refblas"}) {
    if (!available(lib)) continue;
    int judged = 0;
    for (const char* routine : {"dot", "asum", "nrm2"}) {
      for (const char* p : {"s", "d"}) {
        const std::string name = std::string(lib) + "." + p + routine;
        const auto v = verdicts("KC-RED-02", name);
        ASSERT_EQ(v.count(name), 1u) << name;
        EXPECT_EQ(v.at(name).verdict, engine::Verdict::kConforming) << describe(v.at(name));
        ++judged;
      }
    }
    EXPECT_EQ(judged, 6) << lib;
  }
}

// The increment contracts separate their trios' bad and good kernels (the
// calibration suite checks the baselines too): an ignored sign, the pre-3.10
// nrm2 rule, and each nonpositive_inc rule kept or broken.
TEST(BlasLevel1Contracts, IncrementContractsCatchTheirBadKernels) {
  const struct {
    const char* id;
    const char* bad;
    const char* good;
  } trios[] = {
      {"KC-INC-01", "calib.nrm2_quick_return_inc", "calib.nrm2_blue"},
      {"KC-INC-02", "calib.dot_stride_only", "calib.dot_blas"},
      {"KC-INC-03", "calib.asum_walk_as_quick", "calib.asum_quick_return"},
      {"KC-INC-04", "calib.scal_walk_as_quick", "calib.scal_quick_return"},
      {"KC-INC-05", "calib.asum_quick_as_walk", "calib.asum_walk"},
      {"KC-INC-06", "calib.scal_walk_once", "calib.scal_walk"},
  };
  for (const auto& t : trios) {
    const auto bad = verdicts(t.id, t.bad);
    ASSERT_EQ(bad.size(), 1u) << t.id;
    EXPECT_EQ(bad.begin()->second.verdict, engine::Verdict::kViolation) << describe(bad.begin()->second);
    const auto good = verdicts(t.id, t.good);
    ASSERT_EQ(good.size(), 1u) << t.id;
    backend_test::expect_conforming(good.begin()->second);
  }
  EXPECT_TRUE(has_signature(verdicts("KC-INC-01", "calib.nrm2_quick_return_inc").begin()->second, "CONFIG_DEPENDENT"));
}

// The declared first-NaN rule of BLIS, and OpenBLAS's unspecified one: BLIS
// conforms to KC-IAMAX-03; no NaN contract applies to OpenBLAS's i?amax.
TEST(BlasLevel1Contracts, IamaxNaNRulesAsDeclared) {
  if (available("blis")) {
    for (const char* name : {"blis.isamax", "blis.idamax"}) {
      const auto v = verdicts("KC-IAMAX-03", name);
      ASSERT_EQ(v.size(), 1u) << name;
      backend_test::expect_conforming(v.begin()->second);
    }
  }
  if (available("openblas")) {
    for (const char* id : {"KC-IAMAX-02", "KC-IAMAX-03"}) {
      for (const auto& [name, r] : verdicts(id, "openblas.i?amax")) {
        EXPECT_EQ(r.verdict, engine::Verdict::kNotApplicable) << describe(r);
      }
    }
  }
}

// The two oracle options and the two range probes, on the op itself.
TEST(Blas1Op, OracleOptionsFollowTheNamedRule) {
  const Op* scal = builtin_ops().find("scal");
  ASSERT_NE(scal, nullptr);
  Config config;
  config.params = {{"n", "3"}, {"alpha", "0"}};
  auto call = scal->make_call(config);
  ASSERT_TRUE(call.ok());
  call->t("x").set(0, std::numeric_limits<double>::quiet_NaN());
  call->t("x").set(1, std::numeric_limits<double>::infinity());
  call->t("x").set(2, -2.0);
  OracleOptions multiply, zero_fill;
  zero_fill.with["alpha_zero"] = "zero_fill";
  auto m = scal->oracle(*call, multiply);
  auto z = scal->oracle(*call, zero_fill);
  ASSERT_TRUE(m.ok() && z.ok());
  EXPECT_TRUE(std::isnan(m->outputs[0][0]));
  EXPECT_TRUE(std::isnan(m->outputs[0][1]));  // 0 * Inf
  EXPECT_EQ(z->outputs[0][0], 0.0);
  EXPECT_EQ(z->outputs[0][1], 0.0);
  call->config.params["alpha"] = "nan";  // NaN is not zero under either rule
  z = scal->oracle(*call, zero_fill);
  ASSERT_TRUE(z.ok());
  EXPECT_TRUE(std::isnan(z->outputs[0][2]));

  const Op* iamax = builtin_ops().find("iamax");
  ASSERT_NE(iamax, nullptr);
  Config ic;
  ic.params = {{"n", "4"}};
  auto icall = iamax->make_call(ic);
  ASSERT_TRUE(icall.ok());
  const double v[] = {1, std::numeric_limits<double>::quiet_NaN(), 3, 2};
  for (int i = 0; i < 4; ++i) icall->t("x").set(i, v[i]);
  OracleOptions gt, first;
  first.with["iamax_nan"] = "first_nan";
  EXPECT_EQ(iamax->oracle(*icall, gt)->outputs[0][0], 2);
  EXPECT_EQ(iamax->oracle(*icall, first)->outputs[0][0], 1);
  icall->t("x").set(0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(iamax->oracle(*icall, gt)->outputs[0][0], 0);  // a NaN at x_0 wins the > scan
}

// The increment's layout: |inc| is the tensor's stride (0 for inc = 0, one
// storage element), the sign stays in the params, and the oracle walks it as
// the BLAS does.
TEST(Blas1Op, IncrementsKeepTheirSignAndTheStorageTheyAddress) {
  const Op* dot = builtin_ops().find("dot");
  ASSERT_NE(dot, nullptr);
  Config config;
  config.params = {{"n", "3"}, {"incx", "-2"}, {"incy", "0"}};
  auto call = dot->make_call(config);
  ASSERT_TRUE(call.ok()) << call.status().message();
  EXPECT_EQ(call->t("x").strides()[0], 2);
  EXPECT_EQ(call->t("x").storage_elems(), 5);
  EXPECT_EQ(call->t("y").strides()[0], 0);
  EXPECT_EQ(call->t("y").storage_elems(), 1);
  // X = {1, ., 2, ., 4}: x(1) = X(5) = 4, x(2) = 2, x(3) = 1; y(i) = Y(1) = 10
  // each time (a stride-0 tensor: setting y(2) sets Y(1)).
  call->t("x").set(0, 1);
  call->t("x").set(1, 2);
  call->t("x").set(2, 4);
  call->t("y").set(0, 10);
  EXPECT_EQ(dot->oracle(*call, {})->outputs[0][0], 70);
  call->config.params["incy"] = "1";
  call->t("y") = Tensor(DType::kF32, {3}, {1});
  for (int i = 0; i < 3; ++i) call->t("y").set(i, std::pow(10.0, i));  // y = {1, 10, 100}
  EXPECT_EQ(dot->oracle(*call, {})->outputs[0][0], 4 + 20 + 100) << "x reversed against y";

  // nrm2 at incx = 0 counts x(1) n times; asum, scal and iamax follow the rule.
  Config c0;
  c0.params = {{"n", "4"}, {"incx", "0"}, {"alpha", "0.5"}};
  auto nrm2 = builtin_ops().find("nrm2")->make_call(c0);
  ASSERT_TRUE(nrm2.ok());
  nrm2->t("x").set(0, -3);
  EXPECT_EQ(builtin_ops().find("nrm2")->oracle(*nrm2, {})->outputs[0][0], 6);  // sqrt(4) * 3
  const Op* asum = builtin_ops().find("asum");
  auto a = asum->make_call(c0);
  ASSERT_TRUE(a.ok());
  a->t("x").set(0, -3);
  OracleOptions walk;
  walk.with["nonpositive_inc"] = "walk";
  EXPECT_EQ(asum->oracle(*a, {})->outputs[0][0], 0) << "quick_return, the reference's code";
  EXPECT_EQ(asum->oracle(*a, walk)->outputs[0][0], 12);
  const Op* scal = builtin_ops().find("scal");
  auto sc = scal->make_call(c0);
  ASSERT_TRUE(sc.ok());
  sc->t("x").set(0, 8);
  EXPECT_EQ(scal->oracle(*sc, {})->outputs[0], std::vector<double>(4, 8.0)) << "x unchanged";
  EXPECT_EQ(scal->oracle(*sc, walk)->outputs[0], std::vector<double>(4, 0.5)) << "x(1) scaled four times";
  const Op* iamax = builtin_ops().find("iamax");
  Config cm;
  cm.params = {{"n", "3"}, {"incx", "-1"}};
  auto im = iamax->make_call(cm);
  ASSERT_TRUE(im.ok());
  for (int i = 0; i < 3; ++i) im->t("x").set(i, i == 0 ? 9.0 : 1.0);
  EXPECT_EQ(iamax->oracle(*im, {})->outputs[0][0], -1) << "isamax.f returns 0 at incx <= 0";
  EXPECT_EQ(iamax->oracle(*im, walk)->outputs[0][0], 2) << "X(1) is the walk's last element";

  Config huge;
  huge.params = {{"n", "3"}, {"incx", "-4294967296"}};
  EXPECT_FALSE(builtin_ops().find("nrm2")->make_call(huge).ok()) << "no BLAS INTEGER holds it";
}

// An impl that reads only the tensor's stride never runs a non-positive
// increment: kc's own ref.dot walks from the start whatever the sign (it
// overrides can_implement, so the engine checks check_increments itself);
// KC-INC-02 finds it not applicable, openblas.ddot judged.
TEST(Blas1Op, OnlyImplsDeclaringBlasIncrementsRunNonPositiveOnes) {
  auto ref = registry().find_impl("ref.dot");
  ASSERT_NE(ref, nullptr);
  EXPECT_NE(ref->declaration().get("increments"), "BLAS");
  for (const char* inc : {"-1", "0", "2"}) {
    Config config;
    config.params = {{"n", "5"}, {"incx", "1"}, {"incy", inc}};
    auto call = builtin_ops().find("dot")->make_call(config);
    ASSERT_TRUE(call.ok());
    EXPECT_EQ(check_increments(ref->declaration(), *call).ok(), std::string(inc) == "2") << "incy = " << inc;
  }
  // A contract that does not ask for the declaration still never runs it.
  const std::string file = ::testing::TempDir() + "/kc_inc_undeclared.kc";
  {
    std::ofstream out(file);
    out << "contract T-INC {\n  title \"dot at incy = -1\"\n  scope dot\n"
           "  pre precision(x, y) in {FP32} and value_range(x, y) normal(0, 1) and incy in {-1} and n in {7}\n"
           "  post output out satisfies elementwise_close(out, ref(out))\n"
           "  tolerance bound gamma(n + 1, P) * |x|\n  reference higher_precision FP64\n"
           "  measure sample 1 random inputs per config; compute max bound_ratio; pass if <= 1\n"
           "  violation \"wrong\"\n}\n";
  }
  engine::CheckRequest request;
  request.paths = {file};
  request.impls = {"ref.dot"};
  const engine::CheckResult result = engine::run_check(request, registry());
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  const auto& cases = result.cases;
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_NE(cases[0].verdict, engine::Verdict::kConforming) << describe(cases[0]);
  EXPECT_NE(describe(cases[0]).find("positive increments only"), std::string::npos) << describe(cases[0]);
}

TEST(Blas1Op, RangeProbesLeaveTheNormRepresentable) {
  const Op* nrm2 = builtin_ops().find("nrm2");
  ASSERT_NE(nrm2, nullptr);
  for (DType dt : {DType::kF32, DType::kF64}) {
    const DTypeInfo& info = dtype_info(dt);
    for (const char* probe : {"overflow_range", "underflow_range"}) {
      Config config;
      config.dtype = dt;
      config.params = {{"n", "1000"}};
      auto call = nrm2->make_call(config);
      ASSERT_TRUE(call.ok());
      Rng rng(3);
      Probe p;
      p.name = probe;
      ASSERT_TRUE(nrm2->apply_probe(*call, p, rng).ok());
      double amax = 0;
      for (std::int64_t i = 0; i < 1000; ++i) amax = std::max(amax, std::fabs(call->t("x").at(i)));
      const double norm = nrm2->oracle(*call, {})->outputs[0][0];
      EXPECT_TRUE(std::isfinite(norm) && norm >= info.min_normal && norm <= info.max_finite) << probe << norm;
      if (std::string(probe) == "overflow_range") {
        EXPECT_GT(amax * amax, info.max_finite) << "every square must overflow";
      } else {
        EXPECT_GE(amax, info.min_normal) << "entries are normal numbers";
        // Below half the smallest subnormal, 2^(emin - p): compared in log2, as
        // the FP64 square itself would underflow in double.
        EXPECT_LT(2 * std::log2(amax), std::ilogb(info.min_normal) - info.mantissa_bits - 1) << "squares round to 0";
      }
    }
  }
  auto dot_call = builtin_ops().find("dot")->make_call(Config{});
  ASSERT_TRUE(dot_call.ok());
  Rng rng(1);
  Probe p;
  p.name = "overflow_range";
  EXPECT_FALSE(builtin_ops().find("dot")->apply_probe(*dot_call, p, rng).ok()) << "nrm2 only";
}

}  // namespace
}  // namespace kc
