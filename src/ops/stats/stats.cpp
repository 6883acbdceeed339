// kc — row statistics ops (see stats.h).
//
// Error model (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 3-4),
// per output row with n = cols and u the unit roundoff of the dtype; the engine's
// `bound c * gamma(n, P) * magnitude` multiplies magnitude() by gamma:
//
//  mean         |m̂ - m| <= gamma(n) * mean|x|          (sum error, then one exact-ish divide)
//  variance     two-pass: m̂ = m + δ with |δ| <= gamma(n) mean|x|; the deviations
//               d_i = fl(x_i - m̂) carry one rounding, their squares one more, and the
//               sum gamma(n). Because Σ(x_i - m) = 0, the mean error enters only as
//               δ²:  Σ(x_i - m̂)² / n = V + δ². So (Chan, Golub & LeVeque 1983)
//                   |V̂ - V| <= gamma(n+3) * V + δ²
//                          <= gamma(n+3) * (V + gamma(n) * (mean|x|)²)
//               accumulation_length n + 3.
//               The one-pass E[x²] - E[x]² has error ~ gamma(n) * E[x²] ≈ gamma(n) x0²
//               for data at offset x0: a factor 1/gamma(n) above this allowance, which
//               is what C-PRC-02 separates on (inject offset(0, 100, 1e5, 1e6)).
//               Welford (estimator=welford) carries one more term: its running mean is
//               rounded at every step (error ~ u |x̄|), and each update multiplies a
//               deviation d_j by that error, so M_n = Σ d_j (x_j - mean_j) is off by up to
//               ~ u |x̄| Σ|d_j|: |V̂ - V| gains ~ 2 u |x̄| σ, independent of n (measured:
//               0.7 u x0 σ at x0 = 1e4, n = 64 and 1024). As a gamma(n) multiple that is
//               2 mean|x| σ / n. It is tiny next to the one-pass error (u x0², a factor
//               x0/σ larger), so the one allowance serves both stable algorithms:
//                   magnitude = V + gamma(n, P) (mean|x|)² + 2 mean|x| σ / n
//               (measured FP32 ratios, x0 up to 1e6, n 64..8192: two-pass <= 0.07,
//               Welford <= 0.32, one-pass 0.13..1.5 at x0 = 100 and 23..1.7e4 at x0 >= 1e4).
//               The oracle is the same for estimator=welford|two_pass.
//  norm2        Σx² has error gamma(n) Σx²; the square root halves the relative error
//               and adds u: |ŝ - s| <= gamma(n+1) * s.  magnitude = ||x||, length n + 1.
//  log_sum_exp  lse = m + log S with m = max x, S = Σ exp(x_i - m) in [1, n]. exp and the sum
//               give S a relative error gamma(n+1), which log turns into an absolute error
//               gamma(n+1); the final add rounds by u |lse|. So
//                   |l̂ - l| <= gamma(n+2) * (1 + |lse|)       magnitude = 1 + |out|.
#include "ops/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/class_ops_util.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

using detail::Slot;

const char* stat_name(StatKind k) {
  switch (k) {
    case StatKind::kMean:
      return "mean";
    case StatKind::kVariance:
      return "variance";
    case StatKind::kNorm2:
      return "norm2";
    case StatKind::kLogSumExp:
      return "log_sum_exp";
  }
  return "?";
}

class StatsOp final : public Op {
 public:
  explicit StatsOp(StatKind kind) : kind_(kind), name_(stat_name(kind)) {
    signature_ = {
        {"x", Role::kIn, "input rows {rows, cols}; the statistic runs along cols"},
        {"out", Role::kOut, "one value per row {rows}"},
    };
    params_ = {
        {"rows", "64", "number of independent rows"},
        {"cols", "1024", "row length n (the reduction length)"},
    };
    if (kind == StatKind::kVariance) {
      params_.push_back({"estimator", "two_pass",
                         "welford | two_pass: the algorithm an impl is asked to use; the oracle is the "
                         "same two-pass long double for both"});
    }
    switch (kind) {
      case StatKind::kMean:
        summary_ = "row mean: out_r = (1/n) Σ_j x_rj";
        break;
      case StatKind::kVariance:
        summary_ = "row population variance: out_r = (1/n) Σ_j (x_rj - mean_r)²";
        break;
      case StatKind::kNorm2:
        summary_ = "row L2 norm: out_r = sqrt(Σ_j x_rj²)";
        break;
      case StatKind::kLogSumExp:
        summary_ = "row log-sum-exp: out_r = log Σ_j exp(x_rj)";
        break;
    }
  }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 1024));
    if (kind_ == StatKind::kVariance) {
      const std::string est = config.get("estimator", "two_pass");
      if (est != "two_pass" && est != "welford")
        return invalid_argument("estimator must be welford or two_pass, got '" + est + "'");
    }
    std::vector<Slot> slots;
    slots.push_back({"x", Role::kIn, Tensor(dt, {rows, cols})});
    slots.push_back({"out", Role::kOut, Tensor(dt, {rows})});
    return detail::make_call_from(name_, config, std::move(slots));
  }

  // Probes: the shared ones; `offset(x0, ...)` (large mean, small spread) is
  // the C-PRC-02 cancellation input. The range probes (ops/range_probe.cpp)
  // give each statistic rows whose result is representable while its plain
  // intermediates leave the format: norm2 kNorm (squares), variance kOffset
  // (E[x^2] and the sum of squared deviations), mean kSameSign (the sum),
  // log_sum_exp kSpread (exp).
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    if (!detail::is_range_probe(probe.name)) return Op::apply_probe(call, probe, rng);
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) targets = {"x"};
    detail::RowRange shape = detail::RowRange::kNorm;
    switch (kind_) {
      case StatKind::kMean:
        shape = detail::RowRange::kSameSign;
        break;
      case StatKind::kVariance:
        shape = detail::RowRange::kOffset;
        break;
      case StatKind::kNorm2:
        shape = detail::RowRange::kNorm;
        break;
      case StatKind::kLogSumExp:
        shape = detail::RowRange::kSpread;
        break;
    }
    return detail::apply_row_range_probe(call, probe, rng, targets, shape);
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    const Tensor& x = call.t("x");
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    std::vector<double> out(static_cast<std::size_t>(rows));
    std::vector<long double> row(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < cols; ++j) row[j] = x.at(r * cols + j);
      out[r] = static_cast<double>(evaluate(row));
    }
    OracleResult res;
    res.outputs.push_back(std::move(out));
    res.output_names.push_back("out");
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "out") return not_found("no output '" + output + "' in " + name_);
    const Tensor& x = call.t("x");
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    const double g = gamma(static_cast<double>(cols), x.dtype());
    std::vector<double> mag(static_cast<std::size_t>(rows));
    std::vector<long double> row(static_cast<std::size_t>(cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      long double abs_sum = 0;
      for (std::int64_t j = 0; j < cols; ++j) {
        row[j] = x.at(r * cols + j);
        abs_sum += std::fabs(row[j]);
      }
      const double mean_abs = static_cast<double>(abs_sum / cols);
      switch (kind_) {
        case StatKind::kMean:
          mag[r] = mean_abs;
          break;
        case StatKind::kVariance: {
          const double v = static_cast<double>(evaluate(row));
          mag[r] = v + g * mean_abs * mean_abs + 2.0 * mean_abs * std::sqrt(v) / static_cast<double>(cols);
          break;
        }
        case StatKind::kNorm2:
          mag[r] = static_cast<double>(evaluate(row));
          break;
        case StatKind::kLogSumExp:
          mag[r] = 1.0 + std::fabs(static_cast<double>(evaluate(row)));
          break;
      }
    }
    return mag;
  }

  double accumulation_length(const Call& call) const override {
    const double n = static_cast<double>(call.t("x").dim(1));
    switch (kind_) {
      case StatKind::kMean:
        return n;
      case StatKind::kVariance:
        return n + 3;
      case StatKind::kNorm2:
        return n + 1;
      case StatKind::kLogSumExp:
        return n + 2;
    }
    return n;
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Tensor& x = call.t("x");
    const auto [mx, sum] = detail::abs_max_sum(x);
    return detail::with_base_vars(Op::expr_vars(call), {{"N", static_cast<double>(x.dim(1))},
                                                        {"n", static_cast<double>(x.dim(1))},
                                                        {"rows", static_cast<double>(x.dim(0))},
                                                        {"cols", static_cast<double>(x.dim(1))},
                                                        {"L", accumulation_length(call)},
                                                        {"max|x|", mx},
                                                        {"sum|x|", sum}});
  }

 private:
  /// The statistic of one row in long double.
  long double evaluate(const std::vector<long double>& v) const {
    const std::size_t n = v.size();
    switch (kind_) {
      case StatKind::kMean: {
        long double s = 0;
        for (long double a : v) s += a;
        return s / n;
      }
      case StatKind::kVariance: {
        // Two passes: the mean first, then the squared deviations from it.
        long double s = 0;
        for (long double a : v) s += a;
        const long double m = s / n;
        long double ss = 0;
        for (long double a : v) ss += (a - m) * (a - m);
        return ss / n;
      }
      case StatKind::kNorm2: {
        long double ss = 0;
        for (long double a : v) ss += a * a;
        return std::sqrt(ss);
      }
      case StatKind::kLogSumExp: {
        long double m = -std::numeric_limits<long double>::infinity();
        for (long double a : v) {
          if (std::isnan(a)) return a;
          m = std::max(m, a);
        }
        // All -inf (or +inf present): the max alone is the answer (log 0 = -inf; +inf dominates).
        if (std::isinf(m)) return m;
        long double s = 0;
        for (long double a : v) s += std::exp(a - m);
        return m + std::log(s);
      }
    }
    return 0;
  }

  StatKind kind_;
  std::string name_;
  std::string summary_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;
};

}  // namespace

std::unique_ptr<Op> make_stats_op(StatKind kind) { return std::make_unique<StatsOp>(kind); }

}  // namespace kc::ops
