// kc — the SwiGLU gate (see swiglu.h).
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
#include "ops/swiglu/swiglu.h"

#include <cmath>
#include <string>

#include "kc/ops/elementwise.h"
#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

class SwigluOp final : public Op {
 public:
  std::string_view name() const override { return "swiglu"; }
  std::string_view summary() const override { return "y = silu(gate) * up elementwise (the SwiGLU MLP gate)"; }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {{"gate", Role::kIn, "gate projection {n}"},
                                                {"up", Role::kIn, "up projection {n}"},
                                                {"y", Role::kOut, "silu(gate) * up {n}"}};
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {{"n", "4096", "number of elements"}};
    return ps;
  }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 4096));
    return detail::make_call_from(name(), config,
                                  {{"gate", Role::kIn, Tensor(dt, {n})},
                                   {"up", Role::kIn, Tensor(dt, {n})},
                                   {"y", Role::kOut, Tensor(dt, {n})}});
  }

  // ---- oracle: silu in long double (elementwise.cpp's definition) times up.
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    const std::vector<double> g = call.t("gate").to_doubles(), u = call.t("up").to_doubles();
    std::vector<double> y(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      y[i] = static_cast<double>(eval_unary(UnaryFn::kSilu, g[i]) * static_cast<long double>(u[i]));
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.push_back(std::move(y));
    return res;
  }

  // ---- error model
  // silu(g) through a few roundings and expf carries k u |silu(g)| plus the
  // argument's k u |g silu'(g)| (silu's condition, large where silu(g) is tiny,
  // g << 0); the product by up rounds once more. So |ŷ - y| <= gamma_k m with
  // m = |up| (|silu(g)| + |g silu'(g)|), accumulation length 1: contracts
  // count the roundings in their factor (KC-SWIGLU: gamma(16, P)).
  // Gradual underflow (Higham (2.8)): silu(g) = g s(g) is a product (or a
  // quotient) whose absolute error may reach lambda = u min_normal(P) where
  // it is subnormal, and the product by up carries that error times |up|
  // (g = 5.25e-42, up = -3.22: off by 1.4 lambda |up| + lambda); the final
  // product's own lambda is Op::underflow_allowance's. So m adds
  // min_normal(P) |up|: under the factor gamma_k >= u that allows lambda |up|.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found("swiglu has no output '" + output + "'");
    const std::vector<double> g = call.t("gate").to_doubles(), u = call.t("up").to_doubles();
    const DTypeInfo& out = dtype_info(call.t("y").dtype());
    const long double tiny = out.is_float ? out.min_normal : 0.0;
    std::vector<double> m(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      m[i] = static_cast<double>(std::fabs(static_cast<long double>(u[i])) *
                                 (std::fabs(eval_unary(UnaryFn::kSilu, g[i])) +
                                  std::fabs(g[i] * eval_unary_derivative(UnaryFn::kSilu, g[i])) + tiny));
    return m;
  }
  double accumulation_length(const Call&) const override { return 1; }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_swiglu_properties);
  }
};

}  // namespace

std::unique_ptr<Op> make_swiglu_op() { return std::make_unique<SwigluOp>(); }

}  // namespace kc::ops
