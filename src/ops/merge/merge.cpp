// kc — slerp, prune_magnitude, prune_wanda (see merge.h).
//
// slerp error model (`bound gamma(2 n + 12, P) * |.|`): the cosine d of
// normalised vectors is a dot product whose terms sum to at most 1 in
// absolute value (Cauchy-Schwarz), so with the norms' and the
// normalisation's roundings |Δd| <= gamma(2 n + 4). θ = acos d moves by
// |Δd| / sin θ (+ acos's ulp); c0 = sin((1 - t) θ) / sin θ has
// |dc0 / dθ| <= (1 + |c0|) / sin θ (same for c1), and about six roundings
// of its own; y_i = c0 a_i + c1 b_i adds two. With s = sin θ (s = 1 on the
// linear branch, whose coefficients are exact but for 1 - t):
//   |Δy_i| <= gamma(2 n + 12) [ (1 + |c0|) |a_i| / s² + (1 + |c1|) |b_i| / s²
//                              + |c0 a_i| + |c1 b_i| ]      magnitude(y)
// The pruning ops are exact (tolerance none): the oracle ranks the same
// P-rounded scores the kernel is specified to compute.
#include "ops/merge/merge.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "kc/signature.h"
#include "ops/class_ops_util.h"
#include "ops/semantic_classify.h"

namespace kc::ops {
namespace {

using LD = long double;

struct SlerpCoef {
  LD c0 = 0, c1 = 0, s = 1;
  bool linear = false;
};

SlerpCoef slerp_coef(const std::vector<double>& a, const std::vector<double>& b, LD t, bool force_linear) {
  LD na = 0, nb = 0, dot = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    na += static_cast<LD>(a[i]) * a[i];
    nb += static_cast<LD>(b[i]) * b[i];
    dot += static_cast<LD>(a[i]) * b[i];
  }
  SlerpCoef k;
  LD d = (na > 0 && nb > 0) ? dot / (std::sqrt(na) * std::sqrt(nb)) : 1;
  d = std::clamp(d, static_cast<LD>(-1), static_cast<LD>(1));
  if (force_linear || std::fabs(d) > 0.9995L) {
    k.linear = true;
    k.c0 = 1 - t;
    k.c1 = t;
    return k;
  }
  const LD theta = std::acos(d);
  k.s = std::sin(theta);
  k.c0 = std::sin((1 - t) * theta) / k.s;
  k.c1 = std::sin(t * theta) / k.s;
  return k;
}

class SlerpOp final : public Op {
 public:
  std::string_view name() const override { return "slerp"; }
  std::string_view summary() const override {
    return "y = sin((1-t)θ)/sinθ a + sin(tθ)/sinθ b (θ the angle of a and b; lerp when nearly parallel)";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"a", Role::kIn, "first model's weights {n}"},
        {"b", Role::kIn, "second model's weights {n} (same norm as a)"},
        {"y", Role::kOut, "merged weights {n}"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {{"n", "1024", "weights"}, {"t", "0.5", "interpolation weight in [0, 1]"}};
    return ps;
  }
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
    const double t = config.get_double("t", 0.5);
    if (!(t >= 0 && t <= 1)) return invalid_argument("slerp: t must be in [0, 1]");
    return detail::make_call_from(name(), config,
                                  {{"a", Role::kIn, Tensor(dt, {n})},
                                   {"b", Role::kIn, Tensor(dt, {n})},
                                   {"y", Role::kOut, Tensor(dt, {n})}});
  }
  /// a and b from the value range, then b rescaled to the norm of a.
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    Tensor& a = call.t("a");
    Tensor& b = call.t("b");
    LD na = 0, nb = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      na += static_cast<LD>(a.at(i)) * a.at(i);
      nb += static_cast<LD>(b.at(i)) * b.at(i);
    }
    if (nb > 0)
      for (std::int64_t i = 0; i < b.numel(); ++i) b.set(i, static_cast<double>(b.at(i) * std::sqrt(na / nb)));
  }
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"interpolation", {"spherical", "linear"}, "spherical (slerp, the default) or linear (lerp) interpolation"}};
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    auto it = options.with.find("interpolation");
    const std::string mode = it == options.with.end() ? "spherical" : it->second;
    if (mode != "spherical" && mode != "linear")
      return invalid_argument("slerp: interpolation = " + mode + " (known: spherical, linear)");
    const std::vector<double> a = call.t("a").to_doubles(), b = call.t("b").to_doubles();
    const SlerpCoef k = slerp_coef(a, b, call.get_double("t", 0.5), mode == "linear");
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.assign(1, std::vector<double>(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i) res.outputs[0][i] = static_cast<double>(k.c0 * a[i] + k.c1 * b[i]);
    return res;
  }
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found("slerp has no output '" + output + "'");
    const std::vector<double> a = call.t("a").to_doubles(), b = call.t("b").to_doubles();
    const SlerpCoef k = slerp_coef(a, b, call.get_double("t", 0.5), false);
    const LD s2 = k.s * k.s;
    std::vector<double> m(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const LD ai = std::fabs(static_cast<LD>(a[i])), bi = std::fabs(static_cast<LD>(b[i]));
      m[i] = static_cast<double>((1 + std::fabs(k.c0)) * ai / s2 + (1 + std::fabs(k.c1)) * bi / s2 +
                                 std::fabs(k.c0) * ai + std::fabs(k.c1) * bi);
    }
    return m;
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("a").numel()); }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_merge_properties);
  }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kVariants[] = {
                   {"interpolation", "linear", sig::kLerpNotSlerp,
                    "the result matches linear interpolation (1 - t) a + t b, which leaves the sphere"},
               };
               static const char* const kHypers[] = {"t"};
               classify_semantics(op, in, o, obs, kVariants, kHypers, s, n);
             }}};
  }
};

class PruneOp final : public Op {
 public:
  explicit PruneOp(bool wanda) : wanda_(wanda) {}
  std::string_view name() const override { return wanda_ ? "prune_wanda" : "prune_magnitude"; }
  std::string_view summary() const override {
    return wanda_ ? "per row, zero the floor(s cols) entries of smallest |W| sqrt(act_sq) (P-rounded); keep the rest"
                  : "per row, zero the floor(s cols) entries of smallest |W|; keep the rest bit for bit";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> mag = {
        {"W", Role::kIn, "weights {rows, cols}"},
        {"y", Role::kOut, "pruned weights {rows, cols}"},
    };
    static const std::vector<TensorSpec> wanda = {
        {"W", Role::kIn, "weights {rows (outputs), cols (inputs)}"},
        {"act_sq", Role::kIn, "sum over calibration tokens of x_j² {cols}, >= 0"},
        {"y", Role::kOut, "pruned weights {rows, cols}"},
    };
    return wanda_ ? wanda : mag;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"rows", "16", "rows (output channels): each is its own comparison group"},
        {"cols", "64", "entries per row"},
        {"sparsity", "0.5", "fraction of each row to zero, in [0, 1]"},
    };
    return ps;
  }
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 64));
    const double s = config.get_double("sparsity", 0.5);
    if (!(s >= 0 && s <= 1)) return invalid_argument(std::string(name()) + ": sparsity must be in [0, 1]");
    std::vector<detail::Slot> slots;
    slots.push_back({"W", Role::kIn, Tensor(dt, {rows, cols})});
    if (wanda_) slots.push_back({"act_sq", Role::kIn, Tensor(dt, {cols})});
    slots.push_back({"y", Role::kOut, Tensor(dt, {rows, cols})});
    return detail::make_call_from(name(), config, std::move(slots));
  }
  /// W from the value range; act_sq = 128 exp(2 z), z ~ N(0, 1): channel
  /// activations of log-normal scale, the outliers WANDA is about.
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    if (wanda_) {
      Tensor& a = call.t("act_sq");
      for (std::int64_t i = 0; i < a.numel(); ++i) a.set(i, 128.0 * std::exp(2.0 * rng.normal(0, 1)));
    }
  }
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> wanda = {
        {"score", {"wanda", "magnitude"}, "the pruning score: |W| ||X|| (wanda, the default) or |W| (magnitude)"}};
    static const std::vector<OracleOption> magnitude = {{"score", {"magnitude"}, "the pruning score |W|"}};
    return wanda_ ? wanda : magnitude;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    auto it = options.with.find("score");
    const std::string score = it == options.with.end() ? (wanda_ ? "wanda" : "magnitude") : it->second;
    if (score != "wanda" && score != "magnitude")
      return invalid_argument(std::string(name()) + ": score = " + score + " (known: wanda, magnitude)");
    if (score == "wanda" && !wanda_) return invalid_argument("prune_magnitude has no activations to score with");
    const std::vector<int> keep = prune_mask(call, score == "wanda");
    const std::vector<double> w = call.t("W").to_doubles();
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.assign(1, std::vector<double>(w.size()));
    for (std::size_t i = 0; i < w.size(); ++i) res.outputs[0][i] = keep[i] ? w[i] : 0.0;
    return res;
  }

 private:
  bool wanda_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_merge_properties);
  }
  // prune_wanda: a mask that matches magnitude pruning ignored the
  // activations; both: a sparsity left at its default.
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kWanda[] = {
                   {"score", "magnitude", sig::kScoreIgnoresActivations,
                    "the mask matches magnitude pruning: the activation norms were ignored"},
               };
               static const char* const kHypers[] = {"sparsity"};
               const bool wanda = op.name() == "prune_wanda";
               classify_semantics(op, in, o, obs,
                                  wanda ? std::span<const SemanticVariant>(kWanda) : std::span<const SemanticVariant>(),
                                  kHypers, s, n);
             }}};
  }
};

}  // namespace

std::vector<double> prune_scores(const Call& call, bool wanda_scores) {
  const Tensor& w = call.t("W");
  const std::int64_t rows = w.dim(0), cols = w.dim(1);
  const DType p = call.config.dtype;
  std::vector<double> score(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      const double a = std::fabs(w.at(r * cols + c));
      score[static_cast<std::size_t>(r * cols + c)] =
          wanda_scores ? round_to(a * round_to(std::sqrt(call.t("act_sq").at(c)), p), p) : a;
    }
  return score;
}

std::vector<int> prune_mask(const Call& call, bool wanda_scores) {
  const Tensor& w = call.t("W");
  const std::int64_t rows = w.dim(0), cols = w.dim(1);
  const auto k = static_cast<std::int64_t>(std::floor(call.get_double("sparsity", 0.5) * static_cast<double>(cols)));
  const std::vector<double> score = prune_scores(call, wanda_scores);
  std::vector<int> keep(score.size(), 1);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::iota(idx.begin(), idx.end(), 0);
    const double* s = score.data() + r * cols;
    std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t x, std::int64_t y) { return s[x] < s[y]; });
    for (std::int64_t j = 0; j < k; ++j) keep[static_cast<std::size_t>(r * cols + idx[static_cast<std::size_t>(j)])] = 0;
  }
  return keep;
}

std::unique_ptr<Op> make_slerp_op() { return std::make_unique<SlerpOp>(); }
std::unique_ptr<Op> make_prune_op(bool wanda) { return std::make_unique<PruneOp>(wanda); }

}  // namespace kc::ops
