// kc — cross_entropy and kd_loss (see loss.h).
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
//
// Error model (the `bound` tolerance; docs/transformer-training.md). Both ops
// are row-wise log-sum-exp computations. For an FP32 kernel that subtracts the
// row max m before exponentiating (the stable algorithm):
//   S = Σ_j exp(z_j - m): the argument z_j - m is rounded with error
//   u|z_j - m| <= 2u max|x|, which exp turns into a relative error of the same
//   size; exp itself is within 1 ulp (2u); the positive sum adds γ(cols - 1).
//   So S has relative error <= γ(cols + 2 max|x| + 2).
//   log S then has absolute error <= that (d log S = dS / S) plus u|log S|.
// cross_entropy:
//   loss = m + log S - z_t, two more additions: <= γ(cols + 2 max|x| + 6) *
//     (1 + |m| + |z_t| + log S)                       magnitude(loss)
//   dz_j = exp(z_j - m) / S - [j = t]: the softmax value has relative error
//     <= γ(cols + 2 max|x| + 4) (KC-SOFTMAX-01) and the subtraction adds
//     u |dz_j| <= u (p_j + [j = t]): <= γ(cols + 2 max|x| + 6) (p_j + [j = t])
//                                                      magnitude(dz)
// kd_loss: KL = Σ_j p_j (log p_j - log q_j) with log p_j = zt_j / T - lse(zt / T)
//   (the same for q from zs). Each log-probability carries the log-sum-exp
//   error above plus the rounding of z / T; each product p_j (a_j - b_j) adds the
//   relative error of p_j times |a_j - b_j| and one rounding; the sum adds
//   γ(cols) of Σ|terms|. First order, with A_j = |zt_j|/T + |m_t|/T + log S_t
//   (>= |log p_j|) and B_j likewise for the student:
//   |ΔKL| <= γ(cols + 2 max|x| + 8) Σ_j p_j (2 + 2 A_j + 2 B_j)
//   and loss = α T² KL + (1 - α) CE adds the CE magnitude above and three
//   roundings of the combination (u |loss| each):
//   magnitude(loss) = α T² Σ_j p_j (2 + 2 A_j + 2 B_j) + (1 - α) (1 + |m_s| + |zs_t| + log S_s) + |loss|
// Contracts write `bound gamma(cols + 2 * max|x| + 8, P) * |.|` (max|x| over
// every float input, so over both logits for kd_loss; T >= 1 only shrinks the
// arguments).
#include "ops/loss/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kc/signature.h"
#include "ops/class_ops_util.h"
#include "ops/semantic_classify.h"

namespace kc::ops {
namespace {

using LD = long double;

/// One row's log-sum-exp pieces in long double: m = max, s = Σ exp(z - m).
struct Lse {
  LD m = 0, s = 0;
  LD lse() const { return m + std::log(s); }
};

Lse row_lse(const std::vector<double>& z, std::int64_t r, std::int64_t cols, LD scale) {
  Lse out;
  out.m = -std::numeric_limits<LD>::infinity();
  for (std::int64_t c = 0; c < cols; ++c) out.m = std::max(out.m, static_cast<LD>(z[r * cols + c]) / scale);
  for (std::int64_t c = 0; c < cols; ++c) out.s += std::exp(static_cast<LD>(z[r * cols + c]) / scale - out.m);
  return out;
}

/// Targets uniform over the classes.
void fill_targets(Call& call, std::int64_t cols, Rng& rng) {
  Tensor& t = call.t("target");
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(rng.uniform_int(0, cols - 1)));
}

/// The target of row r, or kInvalidArgument when it is not a class index.
Result<std::int64_t> target_of(const Call& call, std::int64_t r, std::int64_t cols) {
  const double v = call.t("target").at(r);
  if (!(v >= 0 && v < static_cast<double>(cols)) || v != std::floor(v))
    return invalid_argument("target[" + std::to_string(r) + "] = " + std::to_string(v) + " is not a class in [0, " +
                            std::to_string(cols) + ")");
  return static_cast<std::int64_t>(v);
}

std::string option(const OracleOptions& o, const std::string& key, const std::string& fallback) {
  auto it = o.with.find(key);
  return it == o.with.end() ? fallback : it->second;
}

// ---------------------------------------------------------------------------
class CrossEntropyOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "cross_entropy"; }
  std::string_view summary() const override {
    return "loss = logsumexp(z) - z[target] and dz = softmax(z) - onehot(target), per row";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"z", Role::kIn, "logits {rows, cols}"},
        {"target", Role::kIn, "class index per row, I64 {rows}"},
        {"loss", Role::kOut, "per-row loss {rows}"},
        {"dz", Role::kOut, "d loss_i / d z_i {rows, cols}"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"rows", "16", "independent rows (samples)"},
        {"cols", "128", "classes (vocabulary size)"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 128));
    return detail::make_call_from(name(), config,
                                  {{"z", Role::kIn, Tensor(dt, {rows, cols})},
                                   {"target", Role::kIn, Tensor(DType::kI64, {rows})},
                                   {"loss", Role::kOut, Tensor(dt, {rows})},
                                   {"dz", Role::kOut, Tensor(dt, {rows, cols})}});
  }

  // ---- fill/probes
  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    fill_targets(call, call.t("z").dim(1), rng);
  }

  // ---- oracle: long double, max-subtracted.
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"gradient",
         {"softmax_minus_onehot", "logits_minus_onehot"},
         "dz = softmax(z) - onehot (the default, the true gradient) or z - onehot (the known wrong one)"},
        {"softmax_stabilization", {"max_subtraction"}, "the oracle's log-sum-exp subtracts the row max (always)"},
    };
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const std::string grad = option(options, "gradient", "softmax_minus_onehot");
    if (grad != "softmax_minus_onehot" && grad != "logits_minus_onehot")
      return invalid_argument("cross_entropy: gradient = " + grad +
                              " (known: softmax_minus_onehot, logits_minus_onehot)");
    const std::vector<double> z = call.t("z").to_doubles();
    const std::int64_t rows = call.t("z").dim(0), cols = call.t("z").dim(1);
    OracleResult res;
    res.output_names = {"loss", "dz"};
    res.outputs.assign(2, {});
    res.outputs[0].resize(rows);
    res.outputs[1].resize(rows * cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      KC_ASSIGN_OR_RETURN(std::int64_t t, target_of(call, r, cols));
      const Lse l = row_lse(z, r, cols, 1);
      res.outputs[0][r] = static_cast<double>(l.lse() - static_cast<LD>(z[r * cols + t]));
      for (std::int64_t c = 0; c < cols; ++c) {
        const LD zc = z[r * cols + c];
        const LD p = grad == "logits_minus_onehot" ? zc : std::exp(zc - l.m) / l.s;
        res.outputs[1][r * cols + c] = static_cast<double>(p - (c == t ? 1 : 0));
      }
    }
    return res;
  }

  // ---- error model (see the file comment)
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    const std::vector<double> z = call.t("z").to_doubles();
    const std::int64_t rows = call.t("z").dim(0), cols = call.t("z").dim(1);
    std::vector<double> mag;
    for (std::int64_t r = 0; r < rows; ++r) {
      KC_ASSIGN_OR_RETURN(std::int64_t t, target_of(call, r, cols));
      const Lse l = row_lse(z, r, cols, 1);
      if (output == "loss") {
        mag.push_back(static_cast<double>(1 + std::fabs(l.m) + std::fabs(z[r * cols + t]) + std::log(l.s)));
      } else if (output == "dz") {
        for (std::int64_t c = 0; c < cols; ++c)
          mag.push_back(static_cast<double>(std::exp(z[r * cols + c] - l.m) / l.s + (c == t ? 1 : 0)));
      } else {
        return not_found("cross_entropy has no output '" + output + "'");
      }
    }
    return mag;
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("z").dim(1)); }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_loss_properties);
  }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kVariants[] = {
                   {"gradient", "logits_minus_onehot", sig::kGradientWithoutSoftmax,
                    "dz matches z - onehot: the softmax is missing from the gradient"},
               };
               classify_semantics(op, in, o, obs, kVariants, {}, s, n);
             }}};
  }
};

// ---------------------------------------------------------------------------
class KdLossOp final : public Op {
 public:
  std::string_view name() const override { return "kd_loss"; }
  std::string_view summary() const override {
    return "loss = alpha T^2 KL(softmax(zt/T) || softmax(zs/T)) + (1 - alpha) CE(target, zs), per row";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"zs", Role::kIn, "student logits {rows, cols}"},
        {"zt", Role::kIn, "teacher logits {rows, cols}"},
        {"target", Role::kIn, "class index per row, I64 {rows}"},
        {"loss", Role::kOut, "per-row distillation loss {rows}"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    // T = 1 by default: the benchmark shape a visible test sees, where T² = 1
    // hides a missing temperature scaling; the contracts sweep T.
    static const std::vector<Param> ps = {
        {"rows", "16", "independent rows (samples)"},
        {"cols", "128", "classes"},
        {"alpha", "0.5", "weight of the distillation term, in [0, 1]"},
        {"T", "1", "softmax temperature, > 0"},
    };
    return ps;
  }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 128));
    const double alpha = config.get_double("alpha", 0.5), temp = config.get_double("T", 1);
    if (!(alpha >= 0 && alpha <= 1)) return invalid_argument("kd_loss: alpha must be in [0, 1]");
    if (!(temp > 0) || !std::isfinite(temp)) return invalid_argument("kd_loss: T must be a finite number > 0");
    return detail::make_call_from(name(), config,
                                  {{"zs", Role::kIn, Tensor(dt, {rows, cols})},
                                   {"zt", Role::kIn, Tensor(dt, {rows, cols})},
                                   {"target", Role::kIn, Tensor(DType::kI64, {rows})},
                                   {"loss", Role::kOut, Tensor(dt, {rows})}});
  }

  void fill(Call& call, const FillSpec& fill, Rng& rng) const override {
    fill_float_inputs(call, fill, rng);
    fill_targets(call, call.t("zs").dim(1), rng);
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"t2_scaling", {"on", "off"}, "on (the default): the KL term is multiplied by T^2; off: not"},
        {"kl_direction",
         {"teacher_student", "student_teacher"},
         "KL(teacher || student) (the default) or the reversed KL(student || teacher)"},
    };
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const std::string t2 = option(options, "t2_scaling", "on");
    const std::string dir = option(options, "kl_direction", "teacher_student");
    if (t2 != "on" && t2 != "off") return invalid_argument("kd_loss: t2_scaling = " + t2 + " (known: on, off)");
    if (dir != "teacher_student" && dir != "student_teacher")
      return invalid_argument("kd_loss: kl_direction = " + dir + " (known: teacher_student, student_teacher)");
    KC_ASSIGN_OR_RETURN(std::vector<Row> rows, terms(call, dir == "student_teacher"));
    const LD alpha = call.get_double("alpha", 0.5), temp = call.get_double("T", 1);
    const LD scale = t2 == "on" ? temp * temp : 1;
    OracleResult res;
    res.output_names = {"loss"};
    res.outputs.assign(1, {});
    for (const Row& r : rows) res.outputs[0].push_back(static_cast<double>(alpha * scale * r.kl + (1 - alpha) * r.ce));
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "loss") return not_found("kd_loss has no output '" + output + "'");
    KC_ASSIGN_OR_RETURN(std::vector<Row> rows, terms(call, false));
    const LD alpha = call.get_double("alpha", 0.5), temp = call.get_double("T", 1);
    std::vector<double> mag;
    for (const Row& r : rows) {
      const LD loss = alpha * temp * temp * r.kl + (1 - alpha) * r.ce;
      mag.push_back(static_cast<double>(alpha * temp * temp * r.kl_mag + (1 - alpha) * r.ce_mag + std::fabs(loss)));
    }
    return mag;
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("zs").dim(1)); }

 private:
  struct Row {
    LD kl = 0, ce = 0, kl_mag = 0, ce_mag = 0;
  };

  /// KL (p = teacher, q = student at temperature T; swapped when `reversed`),
  /// CE(target, zs) at temperature 1, and their error magnitudes.
  static Result<std::vector<Row>> terms(const Call& call, bool reversed) {
    const std::vector<double> zs = call.t("zs").to_doubles(), zt = call.t("zt").to_doubles();
    const std::int64_t rows = call.t("zs").dim(0), cols = call.t("zs").dim(1);
    const LD temp = call.get_double("T", 1);
    std::vector<Row> out;
    for (std::int64_t r = 0; r < rows; ++r) {
      KC_ASSIGN_OR_RETURN(std::int64_t t, target_of(call, r, cols));
      const Lse ls = row_lse(zs, r, cols, temp), lt = row_lse(zt, r, cols, temp);
      const LD lse_s = ls.lse(), lse_t = lt.lse();
      Row row;
      for (std::int64_t c = 0; c < cols; ++c) {
        const LD log_q = static_cast<LD>(zs[r * cols + c]) / temp - lse_s;
        const LD log_p = static_cast<LD>(zt[r * cols + c]) / temp - lse_t;
        const LD p = std::exp(log_p), q = std::exp(log_q);
        row.kl += reversed ? q * (log_q - log_p) : p * (log_p - log_q);
        const LD a = std::fabs(static_cast<LD>(zt[r * cols + c])) / temp + std::fabs(lt.m) + std::log(lt.s);
        const LD b = std::fabs(static_cast<LD>(zs[r * cols + c])) / temp + std::fabs(ls.m) + std::log(ls.s);
        row.kl_mag += p * (2 + 2 * a + 2 * b);
      }
      const Lse l1 = row_lse(zs, r, cols, 1);
      row.ce = l1.lse() - static_cast<LD>(zs[r * cols + t]);
      row.ce_mag = 1 + std::fabs(l1.m) + std::fabs(static_cast<LD>(zs[r * cols + t])) + std::log(l1.s);
      out.push_back(row);
    }
    return out;
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_loss_properties);
  }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kVariants[] = {
                   {"t2_scaling", "off", sig::kMissingT2Scaling,
                    "the loss matches alpha KL + (1 - alpha) CE without the T² factor"},
                   {"kl_direction", "student_teacher", sig::kKlReversed,
                    "the loss matches KL(p_student || p_teacher): the divergence runs the wrong way"},
               };
               static const char* const kHypers[] = {"alpha", "T"};
               classify_semantics(op, in, o, obs, kVariants, kHypers, s, n);
             }}};
  }
};

}  // namespace

std::unique_ptr<Op> make_cross_entropy_op() { return std::make_unique<CrossEntropyOp>(); }
std::unique_ptr<Op> make_kd_loss_op() { return std::make_unique<KdLossOp>(); }

}  // namespace kc::ops
