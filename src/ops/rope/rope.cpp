// kc — rotary position embedding (see rope.h).
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
//
//   y[r, a] = x[r, a] cos t - x[r, b] sin t,  y[r, b] = x[r, a] sin t + x[r, b] cos t
//   for every pair (a, b) = layout.pair(i), t = (offset + r) base^(-2i/dim)
// (Su et al., RoFormer, eq. 34; the two pairings are the two layouts in use).
#include "kc/ops/rope.h"

#include <cmath>
#include <string>

#include "ops/class_ops_util.h"

namespace kc::ops {

long double RopeLayout::angle(std::int64_t r, std::int64_t i) const {
  const long double inv_freq = std::pow(static_cast<long double>(base), -2.0L * i / static_cast<long double>(dim));
  return static_cast<long double>(offset + r) * inv_freq;
}

RopeLayout rope_layout(const Call& call) {
  RopeLayout l;
  l.seq = call.t("x").dim(0);
  l.dim = call.t("x").dim(1);
  l.offset = call.get_int("offset", 0);
  l.base = call.get_double("base", 10000);
  l.interleaved = call.get("pairing", "half") == "interleaved";
  return l;
}

namespace {

class RopeOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "rope"; }
  std::string_view summary() const override {
    return "rotary position embedding: pairs of x rotated by (offset + row) * base^(-2i/dim)";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {{"x", Role::kIn, "seq x dim input (one head)"},
                                                {"y", Role::kOut, "seq x dim rotated"}};
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"seq", "64", "rows (positions offset .. offset + seq - 1)"},
        {"dim", "64", "head dimension, even"},
        {"base", "10000", "frequency base"},
        {"offset", "0", "position of row 0"},
        {"pairing", "half", "half: (i, i + dim/2) rotate_half layout; interleaved: (2i, 2i + 1)"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t seq, detail::positive(config, "seq", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t dim, detail::positive(config, "dim", 64));
    if (dim % 2 != 0) return invalid_argument("rope: dim must be even, got " + std::to_string(dim));
    const std::string pairing = config.get("pairing", "half");
    if (pairing != "half" && pairing != "interleaved")
      return invalid_argument("rope: pairing must be half or interleaved, got " + pairing);
    if (config.get_int("offset", 0) < 0) return invalid_argument("rope: offset must be >= 0");
    if (!(config.get_double("base", 10000) > 1)) return invalid_argument("rope: base must be > 1");
    return detail::make_call_from(name(), config,
                                  {{"x", Role::kIn, Tensor(dt, {seq, dim})}, {"y", Role::kOut, Tensor(dt, {seq, dim})}});
  }

  // ---- oracle: long double rotation of every pair.
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.push_back(evaluate(call, nullptr));
    return res;
  }

  // ---- error model
  // An fp kernel computes inv_freq = base^(-2i/dim) (powf, ~1 ulp), t = pos *
  // inv_freq (1 rounding): the angle carries a relative error <= gamma_3, an
  // absolute error gamma_3 t; cos t and sin t add <= 2u each (1 ulp, |.| <= 1);
  // the two products and the sum gamma_2 relative to the pair's norm. So
  // |ŷ_a - y_a| <= gamma_6 ||(x_a, x_b)|| (1 + t): magnitude ||pair|| (1 + t),
  // accumulation length 6. The t term is real: at position 4096 an fp32
  // angle is only good to ulp(4096) = 4.9e-4 rad.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found("rope has no output '" + output + "'");
    std::vector<double> mag;
    evaluate(call, &mag);
    return mag;
  }
  double accumulation_length(const Call&) const override { return 6; }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    const RopeLayout l = rope_layout(call);
    return detail::with_base_vars(Op::expr_vars(call), {{"seq", static_cast<double>(l.seq)},
                                                        {"dim", static_cast<double>(l.dim)},
                                                        {"max_pos", static_cast<double>(l.offset + l.seq - 1)}});
  }

 private:
  std::vector<double> evaluate(const Call& call, std::vector<double>* mag) const {
    const RopeLayout l = rope_layout(call);
    const std::vector<double> x = call.t("x").to_doubles();
    std::vector<double> y(x.size());
    if (mag) mag->assign(x.size(), 0.0);
    for (std::int64_t r = 0; r < l.seq; ++r)
      for (std::int64_t i = 0; i < l.dim / 2; ++i) {
        const auto [a, b] = l.pair(i);
        const long double t = l.angle(r, i), c = std::cos(t), s = std::sin(t);
        const long double xa = x[static_cast<std::size_t>(r * l.dim + a)], xb = x[static_cast<std::size_t>(r * l.dim + b)];
        y[static_cast<std::size_t>(r * l.dim + a)] = static_cast<double>(xa * c - xb * s);
        y[static_cast<std::size_t>(r * l.dim + b)] = static_cast<double>(xa * s + xb * c);
        if (mag) {
          const double m = static_cast<double>(std::sqrt(xa * xa + xb * xb) * (1 + t));
          (*mag)[static_cast<std::size_t>(r * l.dim + a)] = m;
          (*mag)[static_cast<std::size_t>(r * l.dim + b)] = m;
        }
      }
    return y;
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_rope_properties);
  }
};

}  // namespace

std::unique_ptr<Op> make_rope_op() { return std::make_unique<RopeOp>(); }

}  // namespace kc::ops
