// kc — properties of layernorm and rmsnorm (src/ops/norm).
//
// Per-element rounding bound (the op's error model): |ŷ_j - y_j| <= (f + u) m_j
// with m_j from Op::magnitude (layernorm: |gamma_j| r (|x_j - mu| + mean|x|) +
// |beta_j|; rmsnorm: |y_j|) and f the contract's factor, gamma(L + 12, P) with
// L = cols. Row statistics of the inputs are taken in long double
// (ops::row_moments), so the exact side of every identity adds no rounding.
// Write v for the row's normalising statistic: the biased variance
// (layernorm) or the mean square (rmsnorm), and d_j = x_j - mu (layernorm) or
// x_j (rmsnorm).
#include <algorithm>
#include <cmath>
#include <string>

#include "kc/obligation.h"
#include "ops/norm/norm.h"
#include "ops/obligation_util.h"

namespace kc::obligation {
namespace {

using detail::Rows;

bool is_layernorm(const Context& ctx) { return ctx.op.name() == "layernorm"; }

/// v of one row: the biased variance (layernorm) or the mean square (rmsnorm).
long double row_stat(bool ln, const double* x, std::int64_t cols) {
  const ops::RowMoments m = ops::row_moments(x, cols);
  return ln ? m.var : m.mean_square;
}

/// A fresh call with gamma = 1 and beta = 0 (and x replaced when given).
Call unit_affine(const Context& ctx, const std::vector<double>* x) {
  Call c = ctx.fresh_inputs();
  Tensor& g = c.t("gamma");
  for (std::int64_t i = 0; i < g.numel(); ++i) g.set(i, 1.0);
  if (c.has("beta")) {
    Tensor& b = c.t("beta");
    for (std::int64_t i = 0; i < b.numel(); ++i) b.set(i, 0.0);
  }
  if (x) {
    Tensor& t = c.t("x");
    for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, (*x)[static_cast<std::size_t>(i)]);
  }
  return c;
}

// norm.finite: a row of finite inputs (with finite gamma, beta) gives finite
// outputs. Stated exactly (`tolerance none`): a structural check per element.
// Where an unscaled fp32 sum of squares overflows (|x| > sqrt(FLT_MAX / cols))
// an honest kernel returns 0 or NaN; contracts keep their value range below.
Result<Outcome> finite(const Context& ctx) {
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  Judge judge("non-finite output");
  for (std::int64_t r = 0; r < x.rows; ++r) {
    if (!detail::all_finite(x.row(r), x.cols)) continue;
    for (std::int64_t c = 0; c < x.cols; ++c) {
      if (std::isfinite(y.at(r, c))) judge.pass();
      else judge.fail(Where{r, c, {}}, "output " + std::to_string(y.at(r, c)) + " from a finite row");
    }
  }
  return judge.outcome();
}

// norm.scale_invariance: y(a x) = y(x) without eps; with eps the scaled row
// normalises by sqrt(v + eps / a^2) instead of sqrt(v + eps), so
//   y_j(a x) - y_j(x) = gamma_j d_j (1/sqrt(v + eps/a^2) - 1/sqrt(v + eps)),
// which the property predicts exactly (long double) and subtracts. That is
// where eps breaks the invariance: negligible while a^2 v >> eps, the whole
// output once a^2 v <~ eps (a tiny row is normalised towards 0, not to unit
// scale). a is a power of two (2^-6, 2^6), so a x is exact in the format and
// the only other deviation is rounding: (f + u)(m_j(x) + m_j(a x)).
Result<Outcome> scale_invariance(const Context& ctx) {
  const bool ln = is_layernorm(ctx);
  const double eps = ctx.call.get_double("eps", 1e-5);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  const std::vector<double> gamma = ctx.call.t("gamma").to_doubles();
  KC_ASSIGN_OR_RETURN(std::vector<double> mag0, ctx.op.magnitude(ctx.call, "y"));
  Judge judge("|y(a x) - y(x) - eps term|");
  for (const double a : {std::ldexp(1.0, -6), std::ldexp(1.0, 6)}) {
    Call scaled = ctx.fresh_inputs();
    Tensor& xs = scaled.t("x");
    for (std::int64_t i = 0; i < xs.numel(); ++i) xs.set(i, a * x.v[static_cast<std::size_t>(i)]);
    KC_RETURN_IF_ERROR(detail::rerun(ctx, scaled, "norm of a x"));
    KC_ASSIGN_OR_RETURN(std::vector<double> mag1, ctx.op.magnitude(scaled, "y"));
    const Rows ys = detail::rows_of(scaled.t("y"));
    for (std::int64_t r = 0; r < x.rows; ++r) {
      if (!detail::all_finite(x.row(r), x.cols)) continue;
      const ops::RowMoments m = ops::row_moments(x.row(r), x.cols);
      const long double v = ln ? m.var : m.mean_square;
      const long double shift = 1 / std::sqrt(v + eps / (a * a)) - 1 / std::sqrt(v + eps);
      for (std::int64_t c = 0; c < x.cols; ++c) {
        const double g = gamma[static_cast<std::size_t>(c)];
        const long double d = x.at(r, c) - (ln ? m.mean : 0.0L);
        const double predicted = static_cast<double>(g * d * shift);
        const auto i = static_cast<std::size_t>(r * x.cols + c);
        judge.check(ys.at(r, c) - y.at(r, c) - predicted, ctx.allowed(mag0[i] + mag1[i]),
                    Where{r, c, "(row " + std::to_string(r) + ", col " + std::to_string(c) + ", a = 2^" +
                                    std::to_string(static_cast<int>(std::log2(a))) + ")"});
      }
    }
  }
  return judge.outcome();
}

// norm.standardized: with gamma = 1 and beta = 0 the output row y = d / sqrt(v + eps)
// has mean 0 (layernorm) and statistic v / (v + eps): biased variance for
// layernorm, mean square for rmsnorm. The property re-runs the impl with unit
// gamma and zero beta and measures the output row in long double. Bounds, with
// ŷ_j = y_j + e_j, |e_j| <= (f + u) m_j:
//   |mean ŷ| <= (f + u) mean m;
//   |stat(ŷ) - stat(y)| <= (f + u) (2/n) sum |ŷ_j| m_j (to first order; 1.01 for the rest).
// A kernel that divides by n - 1 (unbiased variance) where the op says n
// misses the variance by the factor (n - 1)/n: far outside for small rows.
Result<Outcome> standardized(const Context& ctx) {
  const bool ln = is_layernorm(ctx);
  const double eps = ctx.call.get_double("eps", 1e-5);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  Call unit = unit_affine(ctx, nullptr);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, unit, "norm with gamma = 1, beta = 0"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mag, ctx.op.magnitude(unit, "y"));
  const Rows y = detail::rows_of(unit.t("y"));
  Judge judge(ln ? "|mean(y)| or |var(y) - var/(var + eps)|" : "|mean(y^2) - ms/(ms + eps)|");
  const auto n = static_cast<long double>(x.cols);
  for (std::int64_t r = 0; r < x.rows; ++r) {
    if (!detail::all_finite(x.row(r), x.cols)) continue;
    const long double v = row_stat(ln, x.row(r), x.cols);
    const ops::RowMoments out = ops::row_moments(y.row(r), y.cols);
    long double mean_mag = 0, stat_mag = 0;
    for (std::int64_t c = 0; c < x.cols; ++c) {
      const double m = mag[static_cast<std::size_t>(r * x.cols + c)];
      mean_mag += m / n;
      stat_mag += 1.01L * 2 * std::fabs(y.at(r, c)) * m / n;
    }
    if (ln)
      judge.check(static_cast<double>(out.mean), ctx.allowed(static_cast<double>(mean_mag)),
                  Where{r, -1, "(row " + std::to_string(r) + ", mean)"});
    const long double want = v / (v + eps);
    judge.check(static_cast<double>((ln ? out.var : out.mean_square) - want),
                ctx.allowed(static_cast<double>(stat_mag)),
                Where{r, -1, "(row " + std::to_string(r) + (ln ? ", variance)" : ", mean square)")});
  }
  return judge.outcome();
}

// norm.idempotent: where it holds — gamma = 1, beta = 0 — normalising twice
// is normalising once, up to eps: y1 = N(x) has statistic v/(v + eps) (and
// mean 0), so N(y1) = c y1 with c = 1/sqrt(v/(v + eps) + eps), which the
// property predicts exactly. Rounding: the second call's own bound, plus
// the first call's error e (|e_k| <= E) carried through N. With
// N_j(y) = (y_j - mu(y)) rho(y), rho = (v(y) + eps)^-1/2 (= c at y1), to first
// order |dv| <= 4 E mean|y - mu| and |d rho| <= 2 rho^3 E mean|y - mu|, so
//   |(J e)_j| <= rho (2 + 2 rho^2 |y_j - mu| mean|y - mu|) E
// (rmsnorm, mu = 0, satisfies it too). At a standardised row rho ~ 1; where
// v << eps the first call only scaled x by 1/sqrt(eps) and rho reaches 316.
// (A consistent but wrong variance convention is idempotent too: that is
// norm.standardized's business.)
Result<Outcome> idempotent(const Context& ctx) {
  const bool ln = is_layernorm(ctx);
  const double eps = ctx.call.get_double("eps", 1e-5);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  Call once = unit_affine(ctx, nullptr);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, once, "N(x) with gamma = 1, beta = 0"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mag1, ctx.op.magnitude(once, "y"));
  const std::vector<double> y1 = once.t("y").to_doubles();
  Call twice = unit_affine(ctx, &y1);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, twice, "N(N(x))"));
  KC_ASSIGN_OR_RETURN(std::vector<double> mag2, ctx.op.magnitude(twice, "y"));
  const Rows y2 = detail::rows_of(twice.t("y"));
  Judge judge("|N(N(x)) - c N(x)|");
  for (std::int64_t r = 0; r < x.rows; ++r) {
    if (!detail::all_finite(x.row(r), x.cols)) continue;
    const long double v = row_stat(ln, x.row(r), x.cols);
    const long double c = 1 / std::sqrt(v / (v + eps) + eps);
    const double* y1_row = y1.data() + r * x.cols;
    const ops::RowMoments m1 = ops::row_moments(y1_row, x.cols);
    const long double mu1 = ln ? m1.mean : 0.0L;
    long double spread = 0;  // mean |y1 - mu1|
    for (std::int64_t k = 0; k < x.cols; ++k) spread += std::fabs(y1_row[k] - mu1) / x.cols;
    double max_m1 = 0;
    for (std::int64_t k = 0; k < x.cols; ++k) max_m1 = std::max(max_m1, mag1[static_cast<std::size_t>(r * x.cols + k)]);
    for (std::int64_t j = 0; j < x.cols; ++j) {
      const auto i = static_cast<std::size_t>(r * x.cols + j);
      const auto carry = static_cast<double>(1.01L * c * (2 + 2 * c * c * std::fabs(y1[i] - mu1) * spread));
      judge.check(static_cast<double>(y2.at(r, j) - c * y1[i]),
                  ctx.allowed(mag2[i] + carry * max_m1), Where{r, j, {}});
    }
  }
  return judge.outcome();
}

}  // namespace

void add_norm_properties(std::vector<Property>& out) {
  const std::vector<std::string> both = {"layernorm", "rmsnorm"};
  out.push_back({"norm.finite", both, "a finite row gives finite outputs", finite});
  out.push_back({"norm.scale_invariance", both,
                 "y(a x) = y(x) for a = 2^-6, 2^6, up to eps's exactly predicted effect", scale_invariance});
  out.push_back({"norm.standardized", both,
                 "with gamma = 1, beta = 0: mean 0 and variance var/(var + eps) (rmsnorm: mean square ms/(ms + eps))",
                 standardized});
  out.push_back({"norm.idempotent", both, "with gamma = 1, beta = 0: N(N(x)) = c N(x), c = 1/sqrt(v/(v+eps) + eps)",
                 idempotent});
}

}  // namespace kc::obligation
