// kc — layernorm and rmsnorm along the last axis of x {rows, cols}.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
//
// Definitions (the ones PyTorch's nn.LayerNorm / nn.RMSNorm document):
//   layernorm: y = (x - mu) / sqrt(var + eps) * gamma + beta,
//              mu = sum x / cols, var = sum (x - mu)^2 / cols   (biased, 1/cols)
//   rmsnorm:   y = x / sqrt(sum x^2 / cols + eps) * gamma
// IEEE consequences: a NaN anywhere in a row makes the whole row NaN. An
// infinity in a layernorm row makes the row NaN (mu = inf, inf - inf = NaN);
// in an rmsnorm row the mean square is inf, 1/sqrt(inf) = 0, so the finite
// elements become (signed) 0 and the infinite one inf * 0 = NaN.
#include "ops/norm/norm.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/probe.h"

namespace kc::ops {

RowMoments row_moments(const double* row, std::int64_t cols) {
  RowMoments m;
  const auto n = static_cast<long double>(cols);
  long double sum = 0, sum_abs = 0, sum_sq = 0;
  for (std::int64_t c = 0; c < cols; ++c) {
    const long double v = row[c];
    sum += v;
    sum_abs += std::fabs(v);
    sum_sq += v * v;
  }
  m.mean = sum / n;
  m.mean_abs = sum_abs / n;
  m.mean_square = sum_sq / n;
  long double ss = 0;  // two-pass: no cancellation between E[x^2] and E[x]^2
  for (std::int64_t c = 0; c < cols; ++c) ss += (row[c] - m.mean) * (row[c] - m.mean);
  m.var = ss / n;
  return m;
}

namespace {

class NormOp final : public Op {
 public:
  explicit NormOp(NormKind kind) : kind_(kind) {
    if (kind_ == NormKind::kLayerNorm) {
      signature_ = {{"x", Role::kIn, "rows x cols input"},
                    {"gamma", Role::kIn, "cols scale"},
                    {"beta", Role::kIn, "cols shift"},
                    {"y", Role::kOut, "rows x cols result"}};
    } else {
      signature_ = {{"x", Role::kIn, "rows x cols input"},
                    {"gamma", Role::kIn, "cols scale"},
                    {"y", Role::kOut, "rows x cols result"}};
    }
    params_ = {{"rows", "8", "independent rows"},
               {"cols", "128", "length of the normalised (last) axis"},
               {"eps", "1e-5", "added to the variance (mean square) before the square root"}};
  }

  // ---- signature/params
  std::string_view name() const override { return kind_ == NormKind::kLayerNorm ? "layernorm" : "rmsnorm"; }
  std::string_view summary() const override {
    return kind_ == NormKind::kLayerNorm
               ? "y = (x - mean) / sqrt(var + eps) * gamma + beta per row, var biased (1/cols)"
               : "y = x / sqrt(mean(x^2) + eps) * gamma per row";
  }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 8));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 128));
    const double eps = config.get_double("eps", 1e-5);
    if (!(eps >= 0) || !std::isfinite(eps))
      return invalid_argument("parameter eps must be finite and >= 0, got " + config.get("eps"));
    std::vector<detail::Slot> slots;
    slots.push_back({"x", Role::kIn, Tensor(dt, {rows, cols})});
    slots.push_back({"gamma", Role::kIn, Tensor(dt, {cols})});
    if (kind_ == NormKind::kLayerNorm) slots.push_back({"beta", Role::kIn, Tensor(dt, {cols})});
    slots.push_back({"y", Role::kOut, Tensor(dt, {rows, cols})});
    return detail::make_call_from(name(), config, std::move(slots));
  }

  // ---- fill/probes
  // x from the contract's value range; gamma around 1 and beta around 0 as a
  // trained model has them (uniform in [0.5, 1.5] and [-0.5, 0.5]), so the
  // normalisation itself, not a tiny gamma, decides the output's size.
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    Tensor& g = call.t("gamma");
    for (std::int64_t i = 0; i < g.numel(); ++i) g.set(i, rng.uniform(0.5, 1.5));
    if (call.has("beta")) {
      Tensor& b = call.t("beta");
      for (std::int64_t i = 0; i < b.numel(); ++i) b.set(i, rng.uniform(-0.5, 0.5));
    }
  }
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) targets = {"x"};  // probes go where the normalisation happens
    if (detail::is_range_probe(probe.name)) {
      // The range probes ask whether the normalised term survives rows near the
      // overflow or underflow threshold (ops/range_probe.cpp, kNorm). beta = 0
      // leaves that term alone in y, so a normalisation lost to an overflowed
      // variance (r = 1/sqrt(inf) = 0) shows as y = 0, not as y = beta.
      KC_RETURN_IF_ERROR(detail::apply_row_range_probe(call, probe, rng, targets, detail::RowRange::kNorm));
      if (call.has("beta")) {
        Tensor& b = call.t("beta");
        for (std::int64_t i = 0; i < b.numel(); ++i) b.set(i, 0.0);
      }
      return ok_status();
    }
    return detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
  }

  // ---- oracle
  // FP64 inputs, long double arithmetic, two-pass moments (row_moments).
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.push_back(evaluate(call, nullptr));
    return res;
  }

  // ---- error model
  // For an fp32 kernel computing the two-pass moments and then
  // y = fl(fl(d_j * r) * gamma_j + beta_j), d_j = fl(x_j - mu^), r = 1/sqrt(var^ + eps),
  // with n = cols and a = mean|x| (Higham, ch. 3, gamma_k = k u / (1 - k u)):
  //   |mu^ - mu|       <= gamma_n a                 (n - 1 adds and one division)
  //   |d_j - (x_j-mu)| <= gamma_n a + u |x_j - mu|  (to first order)
  //   var^ = var (1 + t), |t| <= gamma_{n+3}: the squares, n - 1 adds and the
  //          division give gamma_{n+1}; the error of mu^ adds 2u (its first-order
  //          term sum (x_i - mu) = 0 cancels, the rest is second order)
  //   r^ = r (1 + f), |f| <= gamma_{n+3}/2 + 4u: the add of eps (and eps
  //          itself rounded to the format), sqrt and the division round once each
  //   the product by r, by gamma and the add of beta: 3u more.
  // So |y^_j - y_j| <= gamma_{n+12} m_j with the componentwise magnitude
  //   layernorm: m_j = |gamma_j| r (|x_j - mu| + a) + |beta_j|,
  //   rmsnorm:   m_j = |y_j| (no subtraction: the error is relative; the mean
  //              square is a sum of non-negative terms, gamma_{n+1} relative).
  // The a term is the conditioning of layernorm itself: a row with a large
  // mean and a small spread loses digits in x - mu in every fp32 algorithm.
  // Gradual underflow (Higham (2.8)): each product and quotient may add an
  // absolute error lambda = u min_normal(P): the mean's quotient is carried
  // through r (<= 1/sqrt(eps)) and gamma_j, the product d_j r through gamma_j,
  // the product by gamma_j through nothing. So both magnitudes add
  // min_normal(P) (1 + |gamma_j| (1 + r)): under
  // the contract's factor gamma_{n+12} >= (n + 12) u that allows n + 12 such
  // errors. Without it a row holding subnormals (x_j = -4e-41, or a normal
  // row with one subnormal entry and a large gamma_j) breaks the bound in an
  // honest kernel.
  // accumulation_length is n; contracts write `bound gamma(L + 12, P) * |y|`.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found(std::string(name()) + " has no output '" + output + "'");
    std::vector<double> mag;
    evaluate(call, &mag);
    return mag;
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("x").dim(1)); }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    const auto [mx, sum] = detail::abs_max_sum(call.t("x"));
    return detail::with_base_vars(Op::expr_vars(call), {{"rows", static_cast<double>(call.t("x").dim(0))},
                                                        {"cols", static_cast<double>(call.t("x").dim(1))},
                                                        {"N", static_cast<double>(call.t("x").dim(1))},
                                                        {"eps", call.get_double("eps", 1e-5)},
                                                        {"max|x|", mx},
                                                        {"sum|x|", sum}});
  }

 private:
  /// The oracle's outputs; with `mag`, also the error model's magnitudes.
  std::vector<double> evaluate(const Call& call, std::vector<double>* mag) const {
    const Tensor& x = call.t("x");
    const Tensor& g = call.t("gamma");
    const bool ln = kind_ == NormKind::kLayerNorm;
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    const long double eps = call.get_double("eps", 1e-5);
    const std::vector<double> xv = x.to_doubles();
    const std::vector<double> gv = g.to_doubles();
    const std::vector<double> bv = ln ? call.t("beta").to_doubles() : std::vector<double>(gv.size(), 0.0);
    std::vector<double> y(xv.size());
    if (mag) mag->assign(xv.size(), 0.0);
    const DTypeInfo& out = dtype_info(call.t("y").dtype());
    const long double tiny = out.is_float ? out.min_normal : 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double* row = xv.data() + r * cols;
      const RowMoments m = row_moments(row, cols);
      const long double center = ln ? m.mean : 0.0L;
      const long double rs = 1.0L / std::sqrt((ln ? m.var : m.mean_square) + eps);
      for (std::int64_t c = 0; c < cols; ++c) {
        const auto i = static_cast<std::size_t>(r * cols + c);
        const long double d = row[c] - center;
        const long double v = d * rs * gv[c] + bv[c];
        y[i] = static_cast<double>(v);
        if (mag) {
          const long double under = tiny * (1 + std::fabs(gv[c]) * (1 + rs));
          (*mag)[i] = ln ? static_cast<double>(std::fabs(gv[c]) * rs * (std::fabs(d) + m.mean_abs) + std::fabs(bv[c]) + under)
                         : static_cast<double>(std::fabs(v) + under);
        }
      }
    }
    return y;
  }

  NormKind kind_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_norm_properties);
  }
};

}  // namespace

std::unique_ptr<Op> make_norm_op(NormKind kind) { return std::make_unique<NormOp>(kind); }

}  // namespace kc::ops
