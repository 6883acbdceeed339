// kc — grad_accum (see grad_accum.h).
//
// Error model (`bound gamma(L, P) * |.|`, L = B / A + A + F + 2, the op's
// accumulation_length): per micro-batch, E = X_j W - Y_j is a length-F dot
// product and a subtraction, |ΔE| <= gamma(F + 1) Em with Em = |X||W| + |Y|;
// the micro-batch gradient sums b = B / A products (gamma(b)) and is scaled by
// 2 / (b O) and by 1 / A (two roundings); the A partial gradients are summed
// (gamma(A - 1) of the sum of their magnitudes). All partial magnitudes add up
// to the full-batch one, so
//   |ΔG| <= gamma(F + 1 + b + 2 + A - 1) c Σ_b |X_bi| Em_bj,   c = 2 / (B O).
// One FP32 pass (A = 1) has L = B + F + 3; accumulating in A micro-batches
// has L = B / A + A + F + 2 <= B + F + 3: accumulation is never allowed more
// than the one-pass bound, and an accumulated G differs from a one-pass FP32 G
// by at most the sum of the two bounds (the property grad_accum.matches_full_batch).
// Gradual underflow (Higham (2.8)): each product or quotient may add an
// absolute lambda = u min_normal(P) where its result is subnormal. The F
// products of X_j W add <= F lambda to E, which reaches G times c Σ_b |X_bi|;
// the b products X E, the two scalings and the sums add (L + 2) lambda at
// most (Op::underflow_allowance, added per run by the engine and the
// property). So the magnitude adds min_normal(P) c Σ_b |X_bi|: under the
// factor gamma(L) >= L u > F u that allows F lambda c Σ_b |X_bi|.
#include "ops/train/grad_accum.h"

#include <cmath>
#include <string>
#include <vector>

#include "kc/signature.h"
#include "ops/class_ops_util.h"
#include "ops/semantic_classify.h"

namespace kc::ops {
namespace {

using LD = long double;

struct Shape {
  std::int64_t f, o, b, a;
};
Shape shape_of(const Call& call) {
  return {call.t("W").dim(0), call.t("W").dim(1), call.t("X").dim(0), call.get_int("micro_batches", 1)};
}

class GradAccumOp final : public Op {
 public:
  std::string_view name() const override { return "grad_accum"; }
  std::string_view summary() const override {
    return "MSE gradient of a linear model accumulated over micro_batches micro-batches (mean of their gradients)";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"W", Role::kIn, "weights {features, outputs}"},
        {"X", Role::kIn, "inputs {batch, features}"},
        {"Y", Role::kIn, "targets {batch, outputs}"},
        {"G", Role::kOut, "dL/dW {features, outputs}"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"features", "16", "F"},
        {"outputs", "4", "O"},
        {"batch", "64", "B, the full batch"},
        {"micro_batches", "1", "A, dividing B: gradient accumulation steps"},
    };
    return ps;
  }
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t f, detail::positive(config, "features", 16));
    KC_ASSIGN_OR_RETURN(std::int64_t o, detail::positive(config, "outputs", 4));
    KC_ASSIGN_OR_RETURN(std::int64_t b, detail::positive(config, "batch", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t a, detail::positive(config, "micro_batches", 1));
    if (b % a != 0) return invalid_argument("grad_accum: micro_batches must divide batch");
    return detail::make_call_from(name(), config,
                                  {{"W", Role::kIn, Tensor(dt, {f, o})},
                                   {"X", Role::kIn, Tensor(dt, {b, f})},
                                   {"Y", Role::kIn, Tensor(dt, {b, o})},
                                   {"G", Role::kOut, Tensor(dt, {f, o})}});
  }
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"average", {"on", "off"}, "on (the default): the full-batch mean gradient; off: micro_batches times it (summed means)"},
        {"micro_batches", {"1"}, "the reference is the full batch in one pass, whatever the config's micro_batches"},
    };
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    auto it = options.with.find("average");
    const std::string avg = it == options.with.end() ? "on" : it->second;
    if (avg != "on" && avg != "off") return invalid_argument("grad_accum: average = " + avg + " (known: on, off)");
    const Shape s = shape_of(call);
    const std::vector<double> w = call.t("W").to_doubles(), x = call.t("X").to_doubles(), y = call.t("Y").to_doubles();
    std::vector<LD> g(static_cast<std::size_t>(s.f * s.o), 0);
    for (std::int64_t r = 0; r < s.b; ++r)
      for (std::int64_t j = 0; j < s.o; ++j) {
        LD e = -static_cast<LD>(y[r * s.o + j]);
        for (std::int64_t k = 0; k < s.f; ++k) e += static_cast<LD>(x[r * s.f + k]) * w[k * s.o + j];
        for (std::int64_t i = 0; i < s.f; ++i) g[i * s.o + j] += x[r * s.f + i] * e;
      }
    // Full-batch mean: 2 / (B O); the sum of micro-batch means is A times that.
    const LD c = 2.0L / static_cast<LD>(s.b * s.o) * (avg == "off" ? s.a : 1);
    OracleResult res;
    res.output_names = {"G"};
    res.outputs.assign(1, {});
    for (LD v : g) res.outputs[0].push_back(static_cast<double>(c * v));
    return res;
  }
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "G") return not_found("grad_accum has no output '" + output + "'");
    const Shape s = shape_of(call);
    const std::vector<double> w = call.t("W").to_doubles(), x = call.t("X").to_doubles(), y = call.t("Y").to_doubles();
    const DTypeInfo& info = dtype_info(call.t("G").dtype());
    const LD tiny = info.is_float ? info.min_normal : 0.0L;
    std::vector<LD> m(static_cast<std::size_t>(s.f * s.o), 0);
    for (std::int64_t r = 0; r < s.b; ++r)
      for (std::int64_t j = 0; j < s.o; ++j) {
        LD em = std::fabs(static_cast<LD>(y[r * s.o + j])) + tiny;
        for (std::int64_t k = 0; k < s.f; ++k) em += std::fabs(static_cast<LD>(x[r * s.f + k]) * w[k * s.o + j]);
        for (std::int64_t i = 0; i < s.f; ++i) m[i * s.o + j] += std::fabs(static_cast<LD>(x[r * s.f + i])) * em;
      }
    const LD c = 2.0L / static_cast<LD>(s.b * s.o);
    std::vector<double> out;
    for (LD v : m) out.push_back(static_cast<double>(c * v));
    return out;
  }
  double accumulation_length(const Call& call) const override {
    const Shape s = shape_of(call);
    return static_cast<double>(s.b / s.a + s.a + s.f + 2);
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<obligation::Property> properties() const override {
    std::vector<obligation::Property> out;
    obligation::add_grad_accum_properties(out);
    return out;
  }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics,
             [](const Op& op, const Call& in, const OracleOptions& o, const Observation& obs, std::vector<Signature>* s,
                std::vector<std::string>* n) {
               static const SemanticVariant kVariants[] = {
                   {"average", "off", sig::kAccumulationNotAveraged,
                    "the gradient matches the sum of the micro-batch gradients, not their mean"},
               };
               classify_semantics(op, in, o, obs, kVariants, {}, s, n);
             }}};
  }
};

}  // namespace

std::unique_ptr<Op> make_grad_accum_op() { return std::make_unique<GradAccumOp>(); }

}  // namespace kc::ops
