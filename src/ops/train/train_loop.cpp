// kc — train_loop (see train_loop.h).
#include "ops/train/train_loop.h"

#include <cmath>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

using LD = long double;

std::vector<std::int64_t> targets_of(const Call& call) {
  std::vector<std::int64_t> t;
  const Tensor& tt = call.t("target");
  for (std::int64_t i = 0; i < tt.numel(); ++i) t.push_back(static_cast<std::int64_t>(tt.at(i)));
  return t;
}

Status check_targets(const Call& call) {
  const std::int64_t classes = call.get_int("classes", 8);
  const Tensor& tt = call.t("target");
  for (std::int64_t i = 0; i < tt.numel(); ++i) {
    const double v = tt.at(i);
    if (!(v >= 0 && v < static_cast<double>(classes)) || v != std::floor(v))
      return invalid_argument("train_loop: target[" + std::to_string(i) + "] is not a class in [0, " +
                              std::to_string(classes) + ")");
  }
  return ok_status();
}

/// The loop in long double from the call's P values.
struct LongRun {
  std::vector<LD> theta, m, v, loss, grad;
};
LongRun run_long(const Call& call, TrainLoopHyper hy) {
  const TrainLoopShape sh = train_loop_shape(call);
  LongRun r;
  std::vector<LD> x;
  for (double d : call.t("X").to_doubles()) x.push_back(d);
  for (double d : call.t("theta").to_doubles()) r.theta.push_back(d);
  r.m.assign(r.theta.size(), 0);
  r.v.assign(r.theta.size(), 0);
  train_loop_run<LD>(sh, hy, x, targets_of(call), r.theta, r.m, r.v, r.loss, {}, &r.grad);
  return r;
}

class TrainLoopOp final : public Op {
 public:
  std::string_view name() const override { return "train_loop"; }
  std::string_view summary() const override {
    return "steps AdamW steps of rmsnorm -> rope -> swiglu -> linear -> cross-entropy on one batch; loss per step, "
           "parameters and optimizer state after";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"X", Role::kIn, "the training batch {batch, dim}"},
        {"target", Role::kIn, "class index per row, I64 {batch}"},
        {"theta", Role::kIn, "initial parameters {n}: gamma {dim} | W_gate {dim, ff} | W_up {dim, ff} | W_out {ff, classes}"},
        {"loss", Role::kOut, "mean cross-entropy before each step's update {steps}"},
        {"theta_out", Role::kOut, "parameters after the last step {n}"},
        {"m", Role::kOut, "AdamW first moment after the last step {n} (zero before step 1)"},
        {"v", Role::kOut, "AdamW second moment after the last step {n} (zero before step 1)"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    // The optimizer's defaults are torch.optim.AdamW's; a small lr and three
    // steps, as a quick training smoke test would run.
    static const std::vector<Param> ps = {
        {"steps", "3", "optimizer steps on the batch"},
        {"lr", "0.001", "peak learning rate"},
        {"beta1", "0.9", "first-moment decay, in [0.5, 1)"},
        {"beta2", "0.999", "second-moment decay, in [0.5, 1)"},
        {"eps", "1e-8", "AdamW denominator term"},
        {"weight_decay", "0.01", "decoupled weight decay"},
        {"warmup_steps", "0", "linear warmup: lr_t = lr min(1, t / warmup_steps); 0 = none"},
        {"init_scale", "1", "weights start as init_scale N(0, 1) / sqrt(fan_in); gamma starts at 1"},
        {"batch", "8", "rows (positions) in the batch"},
        {"dim", "8", "model width (even: rope rotates pairs)"},
        {"ff", "16", "swiglu hidden width"},
        {"classes", "8", "output classes"},
    };
    return ps;
  }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t steps, detail::positive(config, "steps", 3));
    KC_ASSIGN_OR_RETURN(std::int64_t batch, detail::positive(config, "batch", 8));
    KC_ASSIGN_OR_RETURN(std::int64_t dim, detail::positive(config, "dim", 8));
    KC_ASSIGN_OR_RETURN(std::int64_t ff, detail::positive(config, "ff", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t classes, detail::positive(config, "classes", 8));
    if (dim % 2 != 0) return invalid_argument("train_loop: dim must be even (rope rotates pairs)");
    for (const char* k : {"beta1", "beta2"}) {
      const double b = config.get_double(k, 0.9);
      // In [0.5, 1) 1 - beta is exact in P (Sterbenz), which the state
      // properties rely on.
      if (!(b >= 0.5 && b < 1)) return invalid_argument(std::string("train_loop: ") + k + " must be in [0.5, 1)");
    }
    if (!(config.get_double("lr", 1e-3) >= 0)) return invalid_argument("train_loop: lr must be >= 0");
    if (!(config.get_double("eps", 1e-8) > 0)) return invalid_argument("train_loop: eps must be > 0");
    if (!(config.get_double("weight_decay", 0.01) >= 0)) return invalid_argument("train_loop: weight_decay must be >= 0");
    if (config.get_int("warmup_steps", 0) < 0) return invalid_argument("train_loop: warmup_steps must be >= 0");
    if (!(config.get_double("init_scale", 1) > 0)) return invalid_argument("train_loop: init_scale must be > 0");
    const TrainLoopShape sh{batch, dim, ff, classes};
    return detail::make_call_from(name(), config,
                                  {{"X", Role::kIn, Tensor(dt, {batch, dim})},
                                   {"target", Role::kIn, Tensor(DType::kI64, {batch})},
                                   {"theta", Role::kIn, Tensor(dt, {sh.params()})},
                                   {"loss", Role::kOut, Tensor(dt, {steps})},
                                   {"theta_out", Role::kOut, Tensor(dt, {sh.params()})},
                                   {"m", Role::kOut, Tensor(dt, {sh.params()})},
                                   {"v", Role::kOut, Tensor(dt, {sh.params()})}});
  }

  /// X from the value range; targets uniform over the classes; theta is a
  /// random init: gamma = 1, every weight init_scale N(0, 1) / sqrt(fan_in)
  /// (LeCun normal at init_scale 1: logits of order 1).
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    const TrainLoopShape sh = train_loop_shape(call);
    Tensor& t = call.t("target");
    for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(rng.uniform_int(0, sh.classes - 1)));
    Tensor& th = call.t("theta");
    const double scale = call.get_double("init_scale", 1);
    for (const ParamSegment& s : train_loop_segments(sh)) {
      const double fan_in = static_cast<double>(s.name == "W_out" ? sh.ff : sh.dim);
      for (std::int64_t i = s.offset; i < s.offset + s.size; ++i)
        th.set(i, s.name == "gamma" ? 1.0 : scale * rng.normal() / std::sqrt(fan_in));
    }
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    KC_RETURN_IF_ERROR(check_targets(call));
    const LongRun r = run_long(call, train_loop_hyper(call));
    OracleResult res;
    res.output_names = {"loss", "theta_out"};
    res.outputs.assign(2, {});
    for (LD l : r.loss) res.outputs[0].push_back(static_cast<double>(l));
    for (LD p : r.theta) res.outputs[1].push_back(static_cast<double>(p));
    return res;
  }

  /// kappa1, kappa2 at t = 1 (beta / (1 - beta)), where the optimizer
  /// properties check the step: the condition of the bias corrections.
  std::map<std::string, double> expr_vars(const Call& call) const override {
    const TrainLoopHyper h = train_loop_hyper(call);
    return detail::with_base_vars(Op::expr_vars(call),
                                  {{"kappa1", h.beta1 / (1 - h.beta1)},
                                   {"kappa2", h.beta2 / (1 - h.beta2)},
                                   {"N", static_cast<double>(call.t("theta").numel())}});
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_train_loop_properties);
  }
};

}  // namespace

TrainLoopShape train_loop_shape(const Call& call) {
  return {call.t("X").dim(0), call.t("X").dim(1), call.get_int("ff", 16), call.get_int("classes", 8)};
}

TrainLoopHyper train_loop_hyper(const Call& call) {
  const DType p = call.config.dtype;
  auto rp = [&](const char* k, double fallback) { return round_to(call.get_double(k, fallback), p); };
  TrainLoopHyper h;
  h.steps = call.get_int("steps", 3);
  h.warmup_steps = call.get_int("warmup_steps", 0);
  h.lr = rp("lr", 1e-3);
  h.beta1 = rp("beta1", 0.9);
  h.beta2 = rp("beta2", 0.999);
  h.eps = rp("eps", 1e-8);
  h.weight_decay = rp("weight_decay", 0.01);
  return h;
}

std::vector<ParamSegment> train_loop_segments(const TrainLoopShape& sh) {
  return {{"gamma", sh.gamma(), sh.dim},
          {"W_gate", sh.w_gate(), sh.dim * sh.ff},
          {"W_up", sh.w_up(), sh.dim * sh.ff},
          {"W_out", sh.w_out(), sh.ff * sh.classes}};
}

std::vector<double> train_loop_gradient(const Call& call) {
  TrainLoopHyper h = train_loop_hyper(call);
  h.steps = 1;
  const LongRun r = run_long(call, h);
  std::vector<double> g;
  for (LD v : r.grad) g.push_back(static_cast<double>(v));
  return g;
}

std::unique_ptr<Op> make_train_loop_op() { return std::make_unique<TrainLoopOp>(); }

}  // namespace kc::ops
