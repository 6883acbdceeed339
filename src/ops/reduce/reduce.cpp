// kc — the `sum` reduction: out = sum_i x_i.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
#include "ops/reduce/reduce.h"

#include <cmath>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/oracle_options.h"

namespace kc::ops {
namespace {

class SumOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "sum"; }
  std::string_view summary() const override { return "reduction out = sum_i x_i over a strided vector"; }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"x", Role::kIn, "vector of length n, stride incx"},
        {"out", Role::kOut, "the sum, shape (1)"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"n", "1024", "vector length (accumulation length)"},
        {"incx", "1", "stride of x in elements (>= 1)"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
    KC_ASSIGN_OR_RETURN(std::int64_t incx, detail::positive(config, "incx", 1));
    return detail::make_call_from(name(), config,
                                  {{"x", Role::kIn, Tensor(dt, {n}, {incx})}, {"out", Role::kOut, Tensor(dt, {1})}});
  }

  // ---- fill/probes: the defaults (saturation gives each term ~4v/n).

  // ---- oracle: long double accumulation of the exact inputs, in order
  // (`with accumulator = FP32`: the running sum rounded to FP32 each step).
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const bool fp32 = detail::fp32_accumulator(options);
    long double acc = 0;
    for (double v : call.t("x").to_doubles()) acc = detail::accumulate(acc, v, fp32);
    OracleResult r;
    r.output_names = {"out"};
    r.outputs.push_back({static_cast<double>(acc)});
    return r;
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {detail::accumulator_option("the sum"),
                                                    detail::reduction_order_option("the elements")};
    return table;
  }

  // ---- error model
  // Any summation order of n terms: |err| <= gamma_{n-1} sum|x_i| (Higham §4.2);
  // we use gamma_n sum|x_i|.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "out") return not_found("sum has no output '" + output + "'");
    long double s = 0;
    for (double v : call.t("x").to_doubles()) s += std::fabs(v);
    return std::vector<double>{static_cast<double>(s)};
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("x").numel()); }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    vars["n"] = vars["N"] = static_cast<double>(call.t("x").numel());
    return vars;
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<std::string> scope_classes() const override { return {"reduction"}; }
};

}  // namespace

std::unique_ptr<Op> make_sum_op() { return std::make_unique<SumOp>(); }

}  // namespace kc::ops
