// kc — mlp_train_step and train_mlp (see train.h).
//
// One SGD step, B = batch, O = out, s = loss scale, all products row-major:
//   Z  = X W1                    {B, hidden}
//   A  = tanh(Z)
//   P  = A W2                    {B, O}
//   E  = P - Y
//   L  = (1 / (B O)) Σ E²        (MSE over every output element)
//   dP = s * (2 / (B O)) * E     gradient of s L w.r.t. P
//   dW2 = Aᵀ dP                  {hidden, O}
//   dA = dP W2ᵀ                  {B, hidden}
//   dZ = dA ⊙ (1 - A²)          (tanh' = 1 - tanh²)
//   dW1 = Xᵀ dZ                  {in, hidden}
//   unscale: dW /= s;  update: W -= lr dW
// With quantization, the forward and backward use Wq = round(W q, quant) / q in
// place of W (straight-through: the gradient w.r.t. Wq updates the FP32 master W).
//
// Error model (magnitude / accumulation_length, for `bound c * gamma(n, P) * |.|`).
// An FP32 run differs from the FP64 one by the rounding errors of each step's
// dot products, propagated forward. Tracking componentwise magnitudes through the
// chain (Higham's |A||B| argument applied stage by stage, Lipschitz factors for
// tanh and for the 1 - A² term):
//   Zm = |X||W1|,  Am = (1 - A²) Zm + |A|,  Em = Am |W2| + |Y|,  dPm = (2 / (B O)) Em,
//   dW2m = Amᵀ dPm,  dAm = dPm |W2|ᵀ,  dZm = dAm ⊙ (1 - A² + 2 |A| Am),  dW1m = |X|ᵀ dZm,
// each computed stage has error <= gamma(n_stage) * (its m), and one step's weight
// error is <= gamma(L) * lr * dWm + u |W| with L = in + hidden + O + B + 4 (the
// dot lengths along the longest dependency chain plus tanh, subtract, scale,
// update). An error already in W at step t is carried to t + 1 with factor
// (1 + lr ||∇²L||) where ||∇²L|| <= (2 / (B O)) * B * max|A|² * hidden ~ 0.5 for
// this net, i.e. <= 1.025 per step: over 5 steps at most 1.13, folded into c. So
//   magnitude(W_out) = |W_T| + Σ_t lr dWm_t,   accumulation_length = L = 84.
//
// Loss scaling by s = 2^k is exact in binary floating point (absent overflow and
// underflow), so FP32 training with s in {1, 2^8, 2^15} and unscaling gives the
// same bits as s = 1: the invariance the contract asks for is exact in FP32, and
// its only deviation from the FP64 oracle is FP32 rounding. Measured (unit tests,
// value_range normal(0, 1), 5 steps, lr 0.05, 20 seeds): max |W_fp32 - W_fp64|
// = 1.2e-7 absolute, max ratio against the bound above 0.02 (c = 1): the bound
// is an honest worst case, ~50x above what FP32 does, and it is derived from the
// error model, not from this measurement. With FP16 gradients (u16 = 2^-11) each
// stored gradient (dP, dA/dZ, dW) carries a relative error u16, so an update is
// off by ~ 3 u16 lr |dW| at worst and the run by ~ u16 Σ_t lr max|dW_t| = u16 *
// `update_sum` (expr var). Measured over 50 seeds and s in {1, 2^8, 2^15} with
// unscaling: max deviation 1.4e-5 = 0.57 u16 update_sum. A contract admitting FP16
// gradients writes `absolute 2 * u(FP16) * update_sum` (plus the FP32 bound); the
// paper's 1e-3 is ~100x looser than needed. An FP16-gradient run with s = 2^15 and
// no unscale applies s-times too-large updates and then overflows to inf:
// deviations of O(1) or non-finite, far outside either bound.
#include "ops/train/train.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

struct Dims {
  std::int64_t in, hidden, out, batch;
};

Dims dims_of(const Call& call) {
  return {call.t("W1").dim(0), call.t("W1").dim(1), call.t("W2").dim(1), call.t("X").dim(0)};
}

/// Per-element magnitudes accumulated by an FP64 run (see the error model).
struct Magnitudes {
  std::vector<double> w1, w2;  // Σ_t lr dWm_t, then + |W_T|
  double update_sum = 0;       // Σ_t lr max|dW_t|
  double max_grad = 0;         // max_t max|dW_t|
};

/// The training loop; fills *mag when given (meaningful for an FP64 run).
TrainResult run_training(const Call& call, const TrainPrecision& p, Magnitudes* mag) {
  const Dims d = dims_of(call);
  const std::int64_t steps = std::max<std::int64_t>(0, call.get_int("steps", 5));
  const double lr = call.get_double("lr", 0.05);
  const bool f32 = p.compute != DType::kF64;
  // r(): one rounding of the compute format. FP32 is emulated in double: for
  // + - * / of FP32 operands the double-then-float rounding is innocuous (53 >= 2*24 + 2).
  auto r = [f32](double v) { return f32 ? static_cast<double>(static_cast<float>(v)) : v; };
  auto g = [&](double v) { return p.grad == DType::kF64 ? r(v) : round_to(r(v), p.grad); };
  auto q = [&](double w) {
    if (!p.quant) return w;
    return r(round_to(r(w * p.quant_scale), *p.quant) / p.quant_scale);
  };

  std::vector<double> w1 = call.t("W1").to_doubles(), w2 = call.t("W2").to_doubles();
  const std::vector<double> x = call.t("X").to_doubles(), y = call.t("Y").to_doubles();
  for (auto& v : w1) v = r(v);
  for (auto& v : w2) v = r(v);
  TrainResult res;
  if (mag) {
    mag->w1.assign(w1.size(), 0.0);
    mag->w2.assign(w2.size(), 0.0);
  }
  const double s = p.loss_scale;
  const double dscale = r(s * 2.0 / static_cast<double>(d.batch * d.out));

  std::vector<double> wq1(w1.size()), wq2(w2.size());
  std::vector<double> a(d.batch * d.hidden), dp(d.batch * d.out), da(d.batch * d.hidden);
  std::vector<double> dw1(w1.size()), dw2(w2.size());
  // Magnitude work arrays (FP64 run only).
  std::vector<double> am, dpm, dzm;

  for (std::int64_t t = 0; t < steps; ++t) {
    for (std::size_t i = 0; i < w1.size(); ++i) wq1[i] = q(w1[i]);
    for (std::size_t i = 0; i < w2.size(); ++i) wq2[i] = q(w2[i]);
    if (mag) {
      am.assign(d.batch * d.hidden, 0.0);
      dpm.assign(d.batch * d.out, 0.0);
      dzm.assign(d.batch * d.hidden, 0.0);
    }
    // Forward.
    for (std::int64_t b = 0; b < d.batch; ++b)
      for (std::int64_t h = 0; h < d.hidden; ++h) {
        double z = 0, zm = 0;
        for (std::int64_t i = 0; i < d.in; ++i) {
          z = r(z + r(x[b * d.in + i] * wq1[i * d.hidden + h]));
          if (mag) zm += std::fabs(x[b * d.in + i] * wq1[i * d.hidden + h]);
        }
        const double av = r(std::tanh(z));
        a[b * d.hidden + h] = av;
        if (mag) am[b * d.hidden + h] = (1 - av * av) * zm + std::fabs(av);
      }
    for (std::int64_t b = 0; b < d.batch; ++b)
      for (std::int64_t o = 0; o < d.out; ++o) {
        double pv = 0, em = 0;
        for (std::int64_t h = 0; h < d.hidden; ++h) {
          pv = r(pv + r(a[b * d.hidden + h] * wq2[h * d.out + o]));
          if (mag) em += am[b * d.hidden + h] * std::fabs(wq2[h * d.out + o]);
        }
        const double e = r(pv - y[b * d.out + o]);
        dp[b * d.out + o] = g(dscale * e);
        if (mag) dpm[b * d.out + o] = 2.0 / static_cast<double>(d.batch * d.out) * (em + std::fabs(y[b * d.out + o]));
      }
    // Backward.
    for (std::int64_t h = 0; h < d.hidden; ++h)
      for (std::int64_t o = 0; o < d.out; ++o) {
        double acc = 0;
        for (std::int64_t b = 0; b < d.batch; ++b) acc = r(acc + r(a[b * d.hidden + h] * dp[b * d.out + o]));
        dw2[h * d.out + o] = g(acc);
      }
    for (std::int64_t b = 0; b < d.batch; ++b)
      for (std::int64_t h = 0; h < d.hidden; ++h) {
        double acc = 0, accm = 0;
        for (std::int64_t o = 0; o < d.out; ++o) {
          acc = r(acc + r(dp[b * d.out + o] * wq2[h * d.out + o]));
          if (mag) accm += dpm[b * d.out + o] * std::fabs(wq2[h * d.out + o]);
        }
        const double av = a[b * d.hidden + h];
        da[b * d.hidden + h] = g(r(g(acc) * r(1 - r(av * av))));  // dZ, stored in the gradient format
        if (mag) dzm[b * d.hidden + h] = accm * (1 - av * av + 2 * std::fabs(av) * am[b * d.hidden + h]);
      }
    for (std::int64_t i = 0; i < d.in; ++i)
      for (std::int64_t h = 0; h < d.hidden; ++h) {
        double acc = 0;
        for (std::int64_t b = 0; b < d.batch; ++b) acc = r(acc + r(x[b * d.in + i] * da[b * d.hidden + h]));
        dw1[i * d.hidden + h] = g(acc);
      }
    bool finite = true;
    for (double v : dw1) finite = finite && std::isfinite(v);
    for (double v : dw2) finite = finite && std::isfinite(v);
    if (!finite) {
      res.overflowed = true;
      if (p.skip_nonfinite) {
        ++res.skipped_steps;
        continue;
      }
    }
    if (mag) {
      double mx = 0;
      for (double v : dw1) mx = std::max(mx, std::fabs(v));
      for (double v : dw2) mx = std::max(mx, std::fabs(v));
      mag->max_grad = std::max(mag->max_grad, mx);
      mag->update_sum += lr * mx;
      for (std::int64_t h = 0; h < d.hidden; ++h)
        for (std::int64_t o = 0; o < d.out; ++o) {
          double m = 0;
          for (std::int64_t b = 0; b < d.batch; ++b) m += am[b * d.hidden + h] * dpm[b * d.out + o];
          mag->w2[h * d.out + o] += lr * m;
        }
      for (std::int64_t i = 0; i < d.in; ++i)
        for (std::int64_t h = 0; h < d.hidden; ++h) {
          double m = 0;
          for (std::int64_t b = 0; b < d.batch; ++b) m += std::fabs(x[b * d.in + i]) * dzm[b * d.hidden + h];
          mag->w1[i * d.hidden + h] += lr * m;
        }
    }
    // Unscale (divide back out) and update the master weights.
    const double unscale = p.unscale ? s : 1.0;
    for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = r(w1[i] - r(lr * r(dw1[i] / unscale)));
    for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = r(w2[i] - r(lr * r(dw2[i] / unscale)));
  }
  if (mag) {
    for (std::size_t i = 0; i < w1.size(); ++i) mag->w1[i] += std::fabs(w1[i]);
    for (std::size_t i = 0; i < w2.size(); ++i) mag->w2[i] += std::fabs(w2[i]);
  }
  res.w1 = std::move(w1);
  res.w2 = std::move(w2);
  return res;
}

TrainPrecision fp64_reference() {
  TrainPrecision p;
  p.compute = DType::kF64;
  p.grad = DType::kF64;
  return p;
}

class MlpTrainOp final : public Op {
 public:
  MlpTrainOp() {
    signature_ = {
        {"W1", Role::kIn, "first-layer weights {in, hidden}"},
        {"W2", Role::kIn, "second-layer weights {hidden, out}"},
        {"X", Role::kIn, "the fixed training batch {batch, in}"},
        {"Y", Role::kIn, "targets {batch, out}"},
        {"W1_out", Role::kOut, "W1 after training {in, hidden}"},
        {"W2_out", Role::kOut, "W2 after training {hidden, out}"},
    };
    params_ = {
        {"steps", "5", "SGD steps on the batch"},
        {"lr", "0.05", "learning rate"},
        {"loss_scale", "1", "s: loss scale (the true result does not depend on it)"},
        {"quant_scale", "1", "q: weight quantization scale (the true result does not depend on it)"},
        {"in", "16", "input features"},
        {"hidden", "32", "hidden units (tanh)"},
        {"out", "4", "outputs (MSE loss)"},
        {"batch", "32", "samples in the batch"},
    };
  }

  std::string_view name() const override { return "mlp_train_step"; }
  std::string_view summary() const override {
    return "W1, W2 after `steps` SGD steps of a tanh MLP with MSE loss on one batch";
  }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t in, detail::positive(config, "in", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t hidden, detail::positive(config, "hidden", 32));
    KC_ASSIGN_OR_RETURN(std::int64_t out, detail::positive(config, "out", 4));
    KC_ASSIGN_OR_RETURN(std::int64_t batch, detail::positive(config, "batch", 32));
    if (config.get_int("steps", 5) < 0) return invalid_argument("steps must be >= 0");
    if (!(config.get_double("loss_scale", 1) > 0)) return invalid_argument("loss_scale must be > 0");
    if (!(config.get_double("quant_scale", 1) > 0)) return invalid_argument("quant_scale must be > 0");
    std::vector<detail::Slot> slots;
    slots.push_back({"W1", Role::kIn, Tensor(dt, {in, hidden})});
    slots.push_back({"W2", Role::kIn, Tensor(dt, {hidden, out})});
    slots.push_back({"X", Role::kIn, Tensor(dt, {batch, in})});
    slots.push_back({"Y", Role::kIn, Tensor(dt, {batch, out})});
    slots.push_back({"W1_out", Role::kOut, Tensor(dt, {in, hidden})});
    slots.push_back({"W2_out", Role::kOut, Tensor(dt, {hidden, out})});
    return detail::make_call_from("mlp_train_step", config, std::move(slots));
  }

  /// Everything from the value_range fill, then the weights scaled by
  /// 1/sqrt(fan_in) (Xavier/LeCun): with unit-scale weights the tanh layer
  /// saturates and the run says little about gradient precision.
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    for (const char* name : {"W1", "W2"}) {
      Tensor& w = call.t(name);
      const double k = 1.0 / std::sqrt(static_cast<double>(w.dim(0)));
      for (std::int64_t i = 0; i < w.numel(); ++i) w.set(i, w.at(i) * k);
    }
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"loss_scale", {"1"}, "the reference trains unscaled (the true result does not depend on the config's loss_scale)"}};
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    TrainResult tr = run_training(call, fp64_reference(), nullptr);
    OracleResult res;
    res.outputs.push_back(std::move(tr.w1));
    res.outputs.push_back(std::move(tr.w2));
    res.output_names = {"W1_out", "W2_out"};
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "W1_out" && output != "W2_out") return not_found("no output '" + output + "' in mlp_train_step");
    Magnitudes m;
    (void)run_training(call, fp64_reference(), &m);
    return output == "W1_out" ? m.w1 : m.w2;
  }

  double accumulation_length(const Call& call) const override {
    const Dims d = dims_of(call);
    return static_cast<double>(d.in + d.hidden + d.out + d.batch + 4);
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Dims d = dims_of(call);
    Magnitudes m;
    TrainResult tr = run_training(call, fp64_reference(), &m);
    double max_w = 0;
    for (double v : tr.w1) max_w = std::max(max_w, std::fabs(v));
    for (double v : tr.w2) max_w = std::max(max_w, std::fabs(v));
    return detail::with_base_vars(Op::expr_vars(call), {{"steps", static_cast<double>(call.get_int("steps", 5))},
                                                        {"lr", call.get_double("lr", 0.05)},
                                                        {"batch", static_cast<double>(d.batch)},
                                                        {"N", static_cast<double>(d.batch)},
                                                        {"K", accumulation_length(call)},
                                                        {"L", accumulation_length(call)},
                                                        {"max|w|", max_w},
                                                        {"max|grad|", m.max_grad},
                                                        {"update_sum", m.update_sum}});
  }

 private:
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;
};

}  // namespace

std::unique_ptr<Op> make_mlp_train_op() { return std::make_unique<MlpTrainOp>(); }

TrainResult train_mlp(const Call& call, const TrainPrecision& p) { return run_training(call, p, nullptr); }

}  // namespace kc::ops
