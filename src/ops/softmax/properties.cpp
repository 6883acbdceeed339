// kc — properties of softmax and log_softmax over rows (x {rows, cols} -> y).
//
// Every bound below is stated for one element ŷ_j against the contract's
// rounding factor f (its `bound E`, e.g. KC-SOFTMAX-01's
// gamma(cols + 2 max|x| + 4, P)) and the output format's unit roundoff u:
// |ŷ_j - y_j| <= (f + u) m_j with m_j = |y_j| for softmax and 1 + |y_j| for
// log_softmax (the op's error model, src/ops/softmax). Properties combine
// these per-element bounds; each says how.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kc/obligation.h"
#include "ops/obligation_util.h"
#include "ops/softmax/softmax.h"

namespace kc::obligation {
namespace {

using detail::Rows;

bool is_log(const Context& ctx) { return ctx.op.name() == "log_softmax"; }

/// The op's per-element magnitude, from the impl's own output.
double magnitude(bool log, double y) { return log ? 1 + std::fabs(y) : std::fabs(y); }

// softmax.sums_to_one: every row whose input has no NaN/+inf and at least one
// finite entry sums to 1. With ŷ_j = y_j (1 + t_j), |t_j| <= f + u:
// |sum ŷ_j - 1| = |sum y_j t_j| <= (f + u) sum |ŷ_j| (to first order). For
// log_softmax the row's probabilities are exp(ŷ_j) = p_j exp(e_j) with
// |e_j| <= (f + u)(1 + |ŷ_j|), so |sum exp(ŷ_j) - 1| <= (f + u) sum exp(ŷ_j)
// (1 + |ŷ_j|) (1.01 covers exp(e) - 1 <= 1.01 e for e <= 0.02). The sums are
// taken in long double: the check adds no rounding of its own.
Result<Outcome> sums_to_one(const Context& ctx) {
  const bool log = is_log(ctx);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  Judge judge(log ? "|sum_j exp(y_j) - 1|" : "|sum_j y_j - 1|");
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const double* xr = x.row(r);
    if (!detail::maskable_row(xr, x.cols)) continue;
    bool any_finite = false;
    for (std::int64_t c = 0; c < x.cols; ++c) any_finite = any_finite || std::isfinite(xr[c]);
    if (!any_finite) continue;  // an all -inf row is NaN by definition (softmax.neg_inf_rows)
    long double sum = 0, mag = 0;
    for (std::int64_t c = 0; c < y.cols; ++c) {
      const long double v = y.at(r, c);
      if (log && v == -INFINITY) continue;  // a masked entry: probability exactly 0
      if (log) {
        sum += std::exp(v);
        mag += 1.01L * std::exp(v) * (1 + std::fabs(v));
      } else {
        sum += v;
        mag += std::fabs(v);
      }
    }
    judge.check(static_cast<double>(sum - 1), ctx.allowed(static_cast<double>(mag)), Where{r, -1, {}});
  }
  return judge.outcome();
}

// softmax.translation_invariance: softmax(x + c) = softmax(x) for every
// constant c, once with a random c in [-8, 8] and once with c = 100, past
// exp's FP32 overflow at 88.7 (a kernel without max subtraction overflows).
// The shifted input is rounded to the format: x'_j = x_j + c + d_j. softmax
// ignores the shift, so the exact outputs differ by the effect of d alone:
// with D = max_j |d_j| over the row, |y_j(x') - y_j(x)| <= y_j expm1(2D) for
// softmax and <= 2D for log_softmax (the exact slack, computed from d in
// long double). Each call adds its own rounding: (f + u)(m_j + m'_j).
Result<Outcome> translation_invariance(const Context& ctx) {
  const bool log = is_log(ctx);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  Judge judge("|y(x + c) - y(x)|");
  for (const double c : {ctx.rng.uniform(-8.0, 8.0), 100.0}) {
    char c_text[32];
    std::snprintf(c_text, sizeof c_text, "%.6g", c);
    Call shifted = ctx.fresh_inputs();
    Tensor& xs = shifted.t("x");
    for (std::int64_t i = 0; i < xs.numel(); ++i) xs.set(i, x.v[static_cast<std::size_t>(i)] + c);
    KC_RETURN_IF_ERROR(detail::rerun(ctx, shifted, "softmax(x + c)"));
    const Rows x2 = detail::rows_of(xs);
    const Rows y2 = detail::rows_of(shifted.t("y"));
    for (std::int64_t r = 0; r < x.rows; ++r) {
      if (!detail::maskable_row(x.row(r), x.cols)) continue;
      long double d = 0;
      bool any_finite = false;
      for (std::int64_t j = 0; j < x.cols; ++j) {
        if (!std::isfinite(x.at(r, j))) continue;
        any_finite = true;
        d = std::max(d, std::fabs(static_cast<long double>(x2.at(r, j)) - (static_cast<long double>(x.at(r, j)) + c)));
      }
      if (!any_finite) continue;
      for (std::int64_t j = 0; j < x.cols; ++j) {
        const double a = y.at(r, j), b = y2.at(r, j);
        const double exact = log ? static_cast<double>(2 * d) : std::fabs(a) * static_cast<double>(std::expm1(2 * d));
        const double residual = (std::isinf(a) && a == b) ? 0.0 : b - a;  // both -inf at a masked entry
        judge.check(residual, ctx.allowed(magnitude(log, a) + magnitude(log, b), exact),
                    Where{-1, -1, "(row " + std::to_string(r) + ", col " + std::to_string(j) + ", c = " + c_text + ")"});
      }
    }
  }
  return judge.outcome();
}

// softmax.positivity (softmax): 0 <= y_j <= 1, exactly: exp >= 0, and the
// row sum S of non-negative terms is >= each term in any order of fp
// addition, so fl(e_j / S) <= 1. Rows with NaN/+inf inputs or all -inf are
// skipped (they are NaN by definition).
// log_softmax.nonpositive: y_j <= 0, exactly: the max-subtracted z_j <= 0 and
// log S >= 0 because S >= exp(0) = 1.
Result<Outcome> bounded(const Context& ctx) {
  const bool log = is_log(ctx);
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  Judge judge(log ? "y_j above 0" : "y_j outside [0, 1]");
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const double* xr = x.row(r);
    if (!detail::maskable_row(xr, x.cols)) continue;
    bool any_finite = false;
    for (std::int64_t c = 0; c < x.cols; ++c) any_finite = any_finite || std::isfinite(xr[c]);
    if (!any_finite) continue;
    for (std::int64_t c = 0; c < x.cols; ++c) {
      const double v = y.at(r, c);
      const double outside = std::isnan(v) ? v : (log ? std::max(0.0, v) : (v < 0 ? -v : std::max(0.0, v - 1)));
      judge.check(outside, ctx.allowed(0), Where{r, c, {}});
    }
  }
  return judge.outcome();
}

// softmax.monotone: within a row, x_i < x_j implies y_i <= y_j (and equal
// inputs give equal outputs), exactly: x - m, exp and the division by the
// row's one S are each monotone under rounding to nearest. Checked over the
// row sorted by x: every output is >= the largest output of a smaller input.
Result<Outcome> monotone(const Context& ctx) {
  const Rows x = detail::rows_of(ctx.call.t("x"));
  const Rows y = detail::rows_of(ctx.call.t("y"));
  Judge judge("y_i - y_j for x_i < x_j");
  std::vector<std::int64_t> order(static_cast<std::size_t>(x.cols));
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const double* xr = x.row(r);
    if (!detail::maskable_row(xr, x.cols)) continue;
    for (std::int64_t c = 0; c < x.cols; ++c) order[static_cast<std::size_t>(c)] = c;
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return xr[a] < xr[b]; });
    double below = -INFINITY;  // the largest output of a strictly smaller input
    double group_max = -INFINITY;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::int64_t c = order[k];
      if (k > 0 && xr[c] > xr[order[k - 1]]) below = std::max(below, group_max), group_max = -INFINITY;
      const double v = y.at(r, c);
      const double drop = std::isnan(v) ? v : std::max(0.0, below - v);
      judge.check(drop, ctx.allowed(0), Where{r, c, {}});
      group_max = std::max(group_max, v);
    }
  }
  return judge.outcome();
}

// softmax.neg_inf_rows: the stated behaviour on masked rows (src/ops/softmax):
//   a row that is all -inf has no finite maximum: every output is NaN (as the
//   FP64 oracle and PyTorch give; a kernel returning 0 for fully masked rows
//   declares a different op);
//   a row with some -inf entries: those outputs are exactly 0 (log_softmax:
//   -inf), and the finite entries still sum to 1 within (f + u) sum |y|
//   (softmax.sums_to_one's bound).
// The property re-runs the impl on the call's inputs with row 0 all -inf and
// every other entry of row 1 -inf (rows >= 2, cols >= 2).
Result<Outcome> neg_inf_rows(const Context& ctx) {
  const bool log = is_log(ctx);
  Judge judge(log ? "|sum_j exp(y_j) - 1| on a partly masked row" : "|sum_j y_j - 1| on a partly masked row");
  Call masked = ctx.fresh_inputs();
  Tensor& x = masked.t("x");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  if (rows < 2 || cols < 2) return judge.outcome();
  for (std::int64_t c = 0; c < cols; ++c) x.set(c, -INFINITY);
  for (std::int64_t c = 0; c < cols; c += 2) x.set(cols + c, -INFINITY);
  KC_RETURN_IF_ERROR(detail::rerun(ctx, masked, "softmax with -inf rows"));
  const Rows y = detail::rows_of(masked.t("y"));
  for (std::int64_t c = 0; c < cols; ++c) {
    if (std::isnan(y.at(0, c))) judge.pass();
    else judge.fail(Where{0, c, "(all -inf row 0, col " + std::to_string(c) + ")"},
                    "output " + std::to_string(y.at(0, c)) + " where NaN is stated");
  }
  long double sum = 0, mag = 0;
  for (std::int64_t c = 0; c < cols; ++c) {
    const double v = y.at(1, c);
    if (c % 2 == 0) {
      const double want = log ? -INFINITY : 0.0;
      if (v == want) judge.pass();
      else judge.fail(Where{1, c, "(masked entry of row 1, col " + std::to_string(c) + ")"},
                      "output " + std::to_string(v) + " where " + (log ? "-inf" : "0") + " is stated");
      continue;
    }
    sum += log ? std::exp(static_cast<long double>(v)) : v;
    mag += log ? 1.01L * std::exp(static_cast<long double>(v)) * (1 + std::fabs(v)) : std::fabs(v);
  }
  judge.check(static_cast<double>(sum - 1), ctx.allowed(static_cast<double>(mag)), Where{1, -1, {}});
  return judge.outcome();
}

}  // namespace

void add_softmax_properties(std::vector<Property>& out) {
  const std::vector<std::string> both = {"softmax", "log_softmax"};
  out.push_back({"softmax.sums_to_one", both,
                 "each row with a finite entry and no NaN/+inf sums to 1 (log_softmax: sum exp(y) = 1)",
                 sums_to_one});
  out.push_back({"softmax.translation_invariance", both,
                 "y(x + c) = y(x) for a random c in [-8, 8] and for c = 100 (past exp's fp32 overflow)",
                 translation_invariance});
  out.push_back({"softmax.positivity", {"softmax"}, "0 <= y <= 1 exactly", bounded});
  out.push_back({"log_softmax.nonpositive", {"log_softmax"}, "log-probabilities y <= 0 exactly", bounded});
  out.push_back({"softmax.monotone", both, "x_i < x_j implies y_i <= y_j within a row, exactly", monotone});
  out.push_back({"softmax.neg_inf_rows", both,
                 "an all -inf row is all NaN; -inf entries give 0 (log: -inf) and the rest sums to 1",
                 neg_inf_rows});
}

}  // namespace kc::obligation
