// kc — adamw_step (see adamw.h).
//
// Error model (`bound gamma(16 + 2 * kappa1 + kappa2, P) * |.|`; the
// derivation is in docs/transformer-training.md). Same P inputs and
// hyper-parameters, an FP32 kernel against the long double oracle:
//   m' = beta1 m + (1 - beta1) g: 1 - beta1 is exact (Sterbenz, beta1 in
//     [0.5, 1]); two roundings: <= γ(2) Mm, Mm = beta1 |m| + (1 - beta1) |g|.
//   v' = beta2 v + (1 - beta2) g²: three roundings: <= γ(3) Mv, Mv = v'.
//   bc = 1 - beta^t: pow within 1 ulp (2u relative to beta^t), then the
//     subtraction: relative error <= u (2 kappa + 1), kappa = beta^t / (1 - beta^t)
//     (1 - beta^t is ill-conditioned for beta near 1 and small t).
//   update Δ = lr m̂ / (sqrt(v̂) + eps): the error of m' enters as absolute
//     γ(2) Mm / bc1; v̂'s relative error is halved by the sqrt; seven more
//     roundings (two corrections, sqrt, + eps, divide, * lr, subtract).
//     With Δmag = lr Mm / (bc1 (sqrt(v̂) + eps)) >= |Δ|:
//     |ΔΔ| <= (2 + 1.5 + 7 + (2 kappa1 + 1) + (kappa2 + 0.5)) u Δmag.
//   decay p (1 - lr wd): three roundings of |p| (1 + lr wd).
//   So |Δparam| <= γ(16 + 2 kappa1 + kappa2) (|p| (1 + lr wd) + Δmag),
//   magnitude(param) = |p| (1 + lr wd) + Δmag, magnitude(m) = Mm,
//   magnitude(v) = Mv; kappa1, kappa2 are expression variables.
// Gradual underflow (Higham (2.8)): each product or quotient may add an
// absolute lambda = u min_normal(P) where its result is subnormal. In the
// kernel's order: m' has two products (2 lambda), v' three (3 lambda); param
// gets the decay's product (lambda), m''s 2 lambda carried by
// c_m = lr / (bc1 D), D = sqrt(v̂) + eps, the quotient m' / denom's lambda
// carried by lr / bc1, and step_size's product (lambda): together
// lambda (2 + 2 c_m + lr / bc1). v''s 3 lambda moves sqrt(v') by at most
// sqrt(3 lambda) (|sqrt a - sqrt b| <= sqrt |a - b|), so D by sqrt(3 lambda /
// bc2) and the update by Δmag sqrt(3 lambda / bc2) / D. With min_normal(P)
// in a magnitude, the factor gamma(16 + ...) >= 16 u allows >= 16 lambda per
// unit of amplification, so the magnitudes add
//   m, v:   min_normal(P)
//   param:  min_normal(P) (1 + c_m + lr / bc1) + Δmag sqrt(3 lambda / bc2) / (u D)
// (the last term needs the factor >= u only). Without it an honest kernel
// misses a subnormal p (1 - lr wd) by a subnormal ulp, and at t = 1 a
// subnormal g, whose m' = (1 - beta1) g rounds to 0, moves p by lr g / eps
// less than the oracle: g = 1.4e-45 gives 1.4e-40.
#include "ops/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kc/signature.h"
#include "ops/class_ops_util.h"
#include "ops/semantic_classify.h"

namespace kc::ops {
namespace {

using LD = long double;

struct Hyper {
  std::int64_t step = 10;
  LD lr = 0, beta1 = 0, beta2 = 0, eps = 0, wd = 0;
};

/// The hyper-parameters as values of the call's precision.
Hyper hyper_of(const Call& call) {
  const DType p = call.config.dtype;
  auto rp = [&](const char* k, double fallback) { return static_cast<LD>(round_to(call.get_double(k, fallback), p)); };
  Hyper h;
  h.step = call.get_int("step", 10);
  h.lr = rp("lr", 1e-3);
  h.beta1 = rp("beta1", 0.9);
  h.beta2 = rp("beta2", 0.999);
  h.eps = rp("eps", 1e-8);
  h.wd = rp("weight_decay", 0.01);
  return h;
}

std::string option(const OracleOptions& o, const std::string& key, const std::string& fallback) {
  auto it = o.with.find(key);
  return it == o.with.end() ? fallback : it->second;
}

class AdamWOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "adamw_step"; }
  std::string_view summary() const override {
    return "one AdamW step (decoupled weight decay, bias-corrected moments), param/m/v updated in place";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"param", Role::kInOut, "parameters {n}, updated in place"},
        {"grad", Role::kIn, "gradient {n}"},
        {"m", Role::kInOut, "first moment {n}, updated in place (zero before step 1)"},
        {"v", Role::kInOut, "second moment {n}, updated in place (zero before step 1, >= 0)"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    // Defaults are torch.optim.AdamW's (lr 1e-3, betas (0.9, 0.999), eps 1e-8,
    // weight_decay 1e-2) and a step past the first.
    static const std::vector<Param> ps = {
        {"n", "1024", "parameters"},
        {"step", "10", "t, the 1-based step number (bias correction 1 - beta^t)"},
        {"lr", "0.001", "learning rate"},
        {"beta1", "0.9", "first-moment decay, in [0.5, 1)"},
        {"beta2", "0.999", "second-moment decay, in [0.5, 1)"},
        {"eps", "1e-8", "denominator term"},
        {"weight_decay", "0.01", "decoupled weight decay"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
    KC_ASSIGN_OR_RETURN(std::int64_t step, detail::positive(config, "step", 10));
    (void)step;
    for (const char* k : {"beta1", "beta2"}) {
      const double b = config.get_double(k, 0.9);
      // Below 0.5, 1 - beta is no longer exact in P (Sterbenz), and the error
      // model above would not hold.
      if (!(b >= 0.5 && b < 1)) return invalid_argument(std::string("adamw_step: ") + k + " must be in [0.5, 1)");
    }
    if (!(config.get_double("lr", 1e-3) >= 0)) return invalid_argument("adamw_step: lr must be >= 0");
    if (!(config.get_double("eps", 1e-8) > 0)) return invalid_argument("adamw_step: eps must be > 0");
    if (!(config.get_double("weight_decay", 0.01) >= 0))
      return invalid_argument("adamw_step: weight_decay must be >= 0");
    return detail::make_call_from(name(), config,
                                  {{"param", Role::kInOut, Tensor(dt, {n})},
                                   {"grad", Role::kIn, Tensor(dt, {n})},
                                   {"m", Role::kInOut, Tensor(dt, {n})},
                                   {"v", Role::kInOut, Tensor(dt, {n})}});
  }

  // ---- fill/probes
  /// param and grad from the value range. The moments are those of a run that
  /// has seen t - 1 gradients of this scale: zero before step 1 (Adam's
  /// initialisation), else m ~ (1 - beta1^(t-1)) N(0, s), v = (1 - beta2^(t-1)) x²,
  /// x from the value range (so v >= 0 and v̂ is of the order of g²).
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    const Hyper h = hyper_of(call);
    Tensor& m = call.t("m");
    Tensor& v = call.t("v");
    const double c1 = 1 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step - 1));
    const double c2 = 1 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step - 1));
    for (std::int64_t i = 0; i < m.numel(); ++i) {
      m.set(i, h.step == 1 ? 0.0 : c1 * m.at(i));
      v.set(i, h.step == 1 ? 0.0 : c2 * v.at(i) * v.at(i));
    }
  }

  // ---- oracle
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"weight_decay", {"decoupled", "coupled"}, "decoupled (AdamW, the default) or coupled (L2 added to the gradient)"},
        {"bias_correction", {"on", "off"}, "on (the default): moments divided by 1 - beta^t; off: not"},
    };
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const std::string decay = option(options, "weight_decay", "decoupled");
    const std::string bias = option(options, "bias_correction", "on");
    if (decay != "decoupled" && decay != "coupled")
      return invalid_argument("adamw_step: weight_decay = " + decay + " (known: decoupled, coupled)");
    if (bias != "on" && bias != "off") return invalid_argument("adamw_step: bias_correction = " + bias + " (known: on, off)");
    const Hyper h = hyper_of(call);
    const std::vector<double> p0 = call.t("param").to_doubles(), g0 = call.t("grad").to_doubles(),
                              m0 = call.t("m").to_doubles(), v0 = call.t("v").to_doubles();
    const LD bc1 = bias == "on" ? 1 - std::pow(h.beta1, static_cast<LD>(h.step)) : 1;
    const LD bc2 = bias == "on" ? 1 - std::pow(h.beta2, static_cast<LD>(h.step)) : 1;
    OracleResult res;
    res.output_names = {"param", "m", "v"};
    res.outputs.assign(3, std::vector<double>(p0.size()));
    for (std::size_t i = 0; i < p0.size(); ++i) {
      LD p = p0[i], g = g0[i];
      if (decay == "coupled") g += h.wd * p;
      else p -= h.lr * h.wd * p;
      const LD m = h.beta1 * m0[i] + (1 - h.beta1) * g;
      const LD v = h.beta2 * v0[i] + (1 - h.beta2) * g * g;
      p -= h.lr * (m / bc1) / (std::sqrt(v / bc2) + h.eps);
      res.outputs[0][i] = static_cast<double>(p);
      res.outputs[1][i] = static_cast<double>(m);
      res.outputs[2][i] = static_cast<double>(v);
    }
    return res;
  }

  // ---- error model (see the file comment)
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "param" && output != "m" && output != "v") return not_found("adamw_step has no output '" + output + "'");
    const Hyper h = hyper_of(call);
    const std::vector<double> p0 = call.t("param").to_doubles(), g0 = call.t("grad").to_doubles(),
                              m0 = call.t("m").to_doubles(), v0 = call.t("v").to_doubles();
    const LD bc1 = 1 - std::pow(h.beta1, static_cast<LD>(h.step));
    const LD bc2 = 1 - std::pow(h.beta2, static_cast<LD>(h.step));
    const DType p = call.t(output).dtype();
    const DTypeInfo& info = dtype_info(p);
    const LD tiny = info.is_float ? info.min_normal : 0.0L;
    const LD lambda = underflow_unit(p), u = unit_roundoff(p);
    std::vector<double> mag(p0.size());
    for (std::size_t i = 0; i < p0.size(); ++i) {
      const LD g = g0[i];
      const LD mm = h.beta1 * std::fabs(m0[i]) + (1 - h.beta1) * std::fabs(g);
      const LD mv = h.beta2 * std::fabs(v0[i]) + (1 - h.beta2) * g * g;
      const LD den = std::sqrt(mv / bc2) + h.eps;
      const LD dmag = h.lr * (mm / bc1) / den;
      const LD under_p = tiny * (1 + h.lr / (bc1 * den) + h.lr / bc1) +
                         (u > 0 ? dmag * std::sqrt(3 * lambda / bc2) / (u * den) : 0.0L);
      const LD r = output == "m" ? mm + tiny : output == "v" ? mv + tiny : std::fabs(p0[i]) * (1 + h.lr * h.wd) + dmag + under_p;
      mag[i] = static_cast<double>(r);
    }
    return mag;
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Hyper h = hyper_of(call);
    auto kappa = [&](LD beta) {
      const LD bt = std::pow(beta, static_cast<LD>(h.step));
      return static_cast<double>(bt / (1 - bt));
    };
    return detail::with_base_vars(Op::expr_vars(call), {{"kappa1", kappa(h.beta1)},
                                                        {"kappa2", kappa(h.beta2)},
                                                        {"N", static_cast<double>(call.t("param").numel())}});
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    std::vector<obligation::Property> out;
    obligation::add_adamw_properties(out);
    return out;
  }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kVariants[] = {
                   {"weight_decay", "coupled", sig::kCoupledWeightDecay,
                    "the step matches Adam with L2 decay folded into the gradient (coupled), not AdamW's decoupled "
                    "decay"},
                   {"bias_correction", "off", sig::kNoBiasCorrection,
                    "the step matches Adam without the 1 / (1 - beta^t) bias corrections"},
               };
               static const char* const kHypers[] = {"lr", "beta1", "beta2", "eps", "weight_decay"};
               classify_semantics(op, in, o, obs, kVariants, kHypers, s, n);
             }}};
  }
};

}  // namespace

std::unique_ptr<Op> make_adamw_op() { return std::make_unique<AdamWOp>(); }

}  // namespace kc::ops
