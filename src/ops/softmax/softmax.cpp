// kc — softmax and log_softmax along the last axis of x {rows, cols}.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
#include "ops/softmax/softmax.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/oracle_options.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

class SoftmaxOp final : public Op {
 public:
  explicit SoftmaxOp(bool log) : log_(log) {}

  // ---- signature/params
  std::string_view name() const override { return log_ ? "log_softmax" : "softmax"; }
  std::string_view summary() const override {
    return log_ ? "y = x - max - log(sum exp(x - max)) per row (last axis); an all -inf row gives NaN"
                : "y = exp(x - max) / sum exp(x - max) per row (last axis); an all -inf row gives NaN";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"x", Role::kIn, "rows x cols input"},
        {"y", Role::kOut, "rows x cols result, normalised along cols"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"rows", "8", "independent rows"},
        {"cols", "128", "length of the normalised (last) axis"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t rows, detail::positive(config, "rows", 8));
    KC_ASSIGN_OR_RETURN(std::int64_t cols, detail::positive(config, "cols", 128));
    return detail::make_call_from(
        name(), config, {{"x", Role::kIn, Tensor(dt, {rows, cols})}, {"y", Role::kOut, Tensor(dt, {rows, cols})}});
  }

  // ---- fill/probes: the defaults, and the range probe overflow_range(f)
  // (ops/range_probe.cpp, kSpread: |x| = u f max, random signs): exp(x)
  // overflows, exp(x - max) does not, and x - max may round to -Inf where the
  // exact exp of it is 0 in the format anyway.
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    if (!detail::is_range_probe(probe.name)) return Op::apply_probe(call, probe, rng);
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) targets = {"x"};
    return detail::apply_row_range_probe(call, probe, rng, targets, detail::RowRange::kSpread);
  }

  // ---- oracle
  // FP64 inputs, long double arithmetic, max subtraction (the stable
  // algorithm): exp(x_j - m) <= 1 never overflows and the largest term is 1, so
  // the sum is >= 1. IEEE consequences, documented in the op summary:
  //   a NaN in a row makes the whole row NaN;
  //   a row that is all -inf has m = -inf and x - m = NaN: the row is NaN;
  //   a +inf in a row gives inf - inf = NaN for it and NaN for the row sum.
  // `with softmax_stabilization = none` drops the max subtraction (exp in
  // FP64, or FP32 under accumulator = FP32); `with accumulator = FP32` rounds
  // the row sum to FP32 after every addition (ops/oracle_options.h).
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const bool fp32 = detail::fp32_accumulator(options);
    const bool stabilized = detail::max_subtraction(options);
    const Tensor& x = call.t("x");
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    std::vector<double> out(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r) {
      long double m = -std::numeric_limits<long double>::infinity();
      bool nan = false;
      for (std::int64_t c = 0; c < cols; ++c) {
        const double v = x.at(r * cols + c);
        if (std::isnan(v))
          nan = true;
        else if (v > m)
          m = v;
      }
      if (!stabilized) m = 0;
      auto e = [&](long double z) { return stabilized ? std::exp(z) : detail::naive_exp(z, fp32); };
      long double sum = 0;
      for (std::int64_t c = 0; c < cols; ++c)
        sum = detail::accumulate(sum, e(static_cast<long double>(x.at(r * cols + c)) - m), fp32);
      for (std::int64_t c = 0; c < cols; ++c) {
        const long double z = static_cast<long double>(x.at(r * cols + c)) - m;
        long double y = log_ ? z - std::log(sum) : e(z) / sum;
        if (nan) y = std::numeric_limits<long double>::quiet_NaN();
        out[static_cast<std::size_t>(r * cols + c)] = static_cast<double>(y);
      }
    }
    OracleResult res;
    res.output_names = {"y"};
    res.outputs.push_back(std::move(out));
    return res;
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {detail::stabilization_option(),
                                                    detail::accumulator_option("the row sum of exponentials"),
                                                    detail::reduction_order_option("a row's exponentials")};
    return table;
  }

  // ---- error model
  // softmax: each y_j is exp(z_j)/S with S a sum of cols terms in [0, 1]; the
  // relative error of y_j is within gamma_{cols + c} for a small constant c
  // (the exp, the subtraction and the division), so magnitude |y_j| with
  // accumulation length cols (contracts add the constant in their factor).
  // log_softmax: y_j = z_j - log S; the absolute error of log S is about the
  // relative error of S (<= gamma_cols), and z_j carries |z_j| u: magnitude
  // 1 + |y_j| bounds both (|z_j| <= |y_j| + log S ... within the factor).
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found(std::string(name()) + " has no output '" + output + "'");
    KC_ASSIGN_OR_RETURN(OracleResult ref, oracle(call, OracleOptions{}));
    std::vector<double> mag = ref.outputs[0];
    for (double& v : mag) v = log_ ? 1 + std::fabs(v) : std::fabs(v);
    return mag;
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("x").dim(1)); }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    vars["rows"] = static_cast<double>(call.t("x").dim(0));
    vars["cols"] = vars["N"] = static_cast<double>(call.t("x").dim(1));
    return vars;
  }

 private:
  bool log_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_softmax_properties);
  }
};

}  // namespace

std::unique_ptr<Op> make_softmax_op(bool log) { return std::make_unique<SoftmaxOp>(log); }

}  // namespace kc::ops
