// kc — the elementwise functions' spec oracles (kc/oracles.h): the correctly
// rounded result, computed with MPFR, with the standard's special values
// exact.
//
// `reference spec IEEE754-2019` names exp, log and tanh, which IEEE 754-2019
// §9.2 recommends and requires, where provided, to be correctly rounded;
// `reference spec correctly_rounded` names the same for erf as well (erf is
// not among §9.2's operations; its special values are C's, Annex F).
//
// The reference is the exact f(x) rounded once, to nearest even, into the
// output's format (FP64, FP32, FP16 or BF16), subnormals and overflow to
// +-inf included: MPFR evaluates f at the format's precision inside the
// format's exponent range, then subnormalizes (MPFR manual, "Exception
// Related Functions"). So `ulp 0` means correctly rounded and `ulp 1` within
// one unit of it.
//
// Special values, exact whatever the contract's tolerance (the oracle marks
// them in OracleResult::exact):
//   exp:  exp(+-0) = 1, exp(+inf) = +inf, exp(-inf) = +0
//   log:  log(+-0) = -inf, log(1) = +0, log(x < 0) = NaN (-inf included),
//         log(+inf) = +inf
//   tanh: tanh(+-0) = +-0, tanh(+-inf) = +-1
//   erf:  erf(+-0) = +-0, erf(+-inf) = +-1
//   and f(NaN) = NaN for each.
// A zero's sign counts where the tolerance asks for it (`ulp E signed`).
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#ifdef KC_HAVE_MPFR
#include <mpfr.h>
#endif

#include "ops/named_oracles.h"

namespace kc::ops {
namespace {

enum class Fn { kExp, kLog, kTanh, kErf };

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The special value the standard fixes for f(x), if x is one of them.
[[maybe_unused]] std::optional<double> special(Fn fn, double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  switch (fn) {
    case Fn::kExp:
      if (x == 0) return 1.0;
      if (std::isinf(x)) return x > 0 ? kInf : +0.0;
      return std::nullopt;
    case Fn::kLog:
      if (x == 0) return -kInf;
      if (x < 0) return std::numeric_limits<double>::quiet_NaN();
      if (x == 1) return +0.0;
      if (std::isinf(x)) return kInf;
      return std::nullopt;
    case Fn::kTanh:
    case Fn::kErf:
      if (x == 0) return x;  // keeps the zero's sign
      if (std::isinf(x)) return x > 0 ? 1.0 : -1.0;
      return std::nullopt;
  }
  return std::nullopt;
}

#ifdef KC_HAVE_MPFR
/// An IEEE format in MPFR's terms: precision in bits, and the exponent range
/// (MPFR writes x = m 2^e with 1/2 <= |m| < 1) from the smallest subnormal
/// to the largest finite value.
struct Format {
  mpfr_prec_t prec;
  mpfr_exp_t emin, emax;
};

std::optional<Format> format_of(DType t) {
  switch (t) {
    case DType::kF64: return Format{53, -1073, 1024};
    case DType::kF32: return Format{24, -148, 128};
    case DType::kF16: return Format{11, -23, 16};
    case DType::kBF16: return Format{8, -132, 128};
    default: return std::nullopt;
  }
}

/// f(x) correctly rounded (to nearest, ties to even) into format f.
double correctly_rounded(Fn fn, double x, const Format& f) {
  const mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  mpfr_t xm, ym;
  mpfr_init2(xm, 53);
  mpfr_set_d(xm, x, MPFR_RNDN);  // exact: x is a double
  mpfr_set_emin(f.emin);
  mpfr_set_emax(f.emax);
  mpfr_init2(ym, f.prec);
  int t = 0;
  switch (fn) {
    case Fn::kExp: t = mpfr_exp(ym, xm, MPFR_RNDN); break;
    case Fn::kLog: t = mpfr_log(ym, xm, MPFR_RNDN); break;
    case Fn::kTanh: t = mpfr_tanh(ym, xm, MPFR_RNDN); break;
    case Fn::kErf: t = mpfr_erf(ym, xm, MPFR_RNDN); break;
  }
  mpfr_subnormalize(ym, t, MPFR_RNDN);
  const double y = mpfr_get_d(ym, MPFR_RNDN);  // exact: at most 53 bits, in double's range
  mpfr_clear(ym);
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  mpfr_clear(xm);
  return y;
}
#endif

Result<OracleResult> evaluate(Fn fn, const Call& call) {
#ifndef KC_HAVE_MPFR
  return unavailable("the correctly rounded spec oracle needs MPFR: kc was built without MPFR "
                     "(scripts/install-deps.sh installs libmpfr-dev; then re-run cmake)");
#else
  const Tensor& x = call.t("x");
  const DType out_t = call.t("y").dtype();
  const std::optional<Format> f = format_of(out_t);
  if (!f)
    return invalid_argument("the correctly rounded spec oracle rounds into FP64, FP32, FP16 or BF16, not " +
                            std::string(dtype_name(out_t)));
  OracleResult res;
  res.output_names = {"y"};
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  std::vector<std::uint8_t> exact(y.size(), 0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.at(i);
    if (const std::optional<double> s = special(fn, v)) {
      y[static_cast<std::size_t>(i)] = *s;
      exact[static_cast<std::size_t>(i)] = 1;
    } else {
      y[static_cast<std::size_t>(i)] = correctly_rounded(fn, v, *f);
    }
  }
  res.outputs.push_back(std::move(y));
  res.exact.push_back(std::move(exact));
  return res;
#endif
}

}  // namespace

bool have_mpfr() {
#ifdef KC_HAVE_MPFR
  return true;
#else
  return false;
#endif
}

Result<OracleResult> exp_correctly_rounded(const Call& call, const OracleOptions&) { return evaluate(Fn::kExp, call); }
Result<OracleResult> log_correctly_rounded(const Call& call, const OracleOptions&) { return evaluate(Fn::kLog, call); }
Result<OracleResult> tanh_correctly_rounded(const Call& call, const OracleOptions&) {
  return evaluate(Fn::kTanh, call);
}
Result<OracleResult> erf_correctly_rounded(const Call& call, const OracleOptions&) { return evaluate(Fn::kErf, call); }

}  // namespace kc::ops
