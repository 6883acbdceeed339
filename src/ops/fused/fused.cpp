// kc — fused_matmul and sequential_matmul (see fused.h).
//
// Error model. Let z = (A·B)_ij + bias_j and m = (|A||B|)_ij + |bias_j|. A kernel
// accumulating K products and one bias add has |ẑ - z| <= gamma(K+1) * m (Higham
// 3.5); the activation maps that to |act(ẑ) - act(z)| <= L * |ẑ - z| where L is
// the largest |act'| on [z - w, z + w], w = gamma(K+1, P) * m (mean value theorem).
// The activation's own rounding is the engine's u|ref| term. So
//     magnitude_ij = L_ij * m_ij,   accumulation_length = K + 1.
// The sequential oracle's two FP32 roundings (u|T| + u|U| <= 2u m) fit inside the
// same gamma(K+1) m allowance for K >= 1.
// Measured (FP32 fused kernel, sequential accumulation, normal(0, 1) inputs,
// 32 x 32 outputs, c = 1): ratio to this bound <= 0.49 for gelu_erf / relu / silu
// at K = 16, 127, 1024; tanh-GELU in place of erf-GELU gives 2.4e4, 347 and 3.8
// at those K: the bound separates them but loosens with K, so C-CMP-01 also
// keeps the paper's rel 1e-4 (FP32) where K is large.
#include "ops/fused/fused.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kc/ops/elementwise.h"
#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

class FusedMatmulOp final : public Op {
 public:
  explicit FusedMatmulOp(bool sequential)
      : sequential_(sequential), name_(sequential ? "sequential_matmul" : "fused_matmul") {
    summary_ = sequential ? "act(fp32(fp32(A·B) + bias)): the unfused pipeline with FP32 intermediates"
                          : "C = act(A·B + bias), one fused kernel";
    signature_ = {
        {"A", Role::kIn, "left operand {M, K}, row-major"},
        {"B", Role::kIn, "right operand {K, N}, row-major"},
        {"bias", Role::kIn, "bias {N}, added to every row"},
        {"C", Role::kOut, "result {M, N}"},
    };
    params_ = {
        {"M", "64", "rows of A and C"},
        {"N", "64", "columns of B and C"},
        {"K", "64", "inner dimension"},
        {"activation", "gelu_erf", "relu | gelu_erf | gelu_tanh | silu | identity"},
    };
  }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t m, detail::positive(config, "M", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "N", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t k, detail::positive(config, "K", 64));
    KC_RETURN_IF_ERROR(activation(config).status());
    std::vector<detail::Slot> slots;
    slots.push_back({"A", Role::kIn, Tensor(dt, {m, k})});
    slots.push_back({"B", Role::kIn, Tensor(dt, {k, n})});
    slots.push_back({"bias", Role::kIn, Tensor(dt, {n})});
    slots.push_back({"C", Role::kOut, Tensor(dt, {m, n})});
    return detail::make_call_from(name_, config, std::move(slots));
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"intermediates", {"FP32"}, "the unfused composition: A.B, + bias and the activation each rounded to FP32"}};
    return table;
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    KC_ASSIGN_OR_RETURN(UnaryFn act, activation(call.config));
    // `reference ... with intermediates = FP32` asks fused_matmul for the
    // sequential answer (C-CMP-01: the fused op against its unfused composition).
    const auto inter = options.with.find("intermediates");
    if (inter != options.with.end() && inter->second != "FP32")
      return invalid_argument("fused_matmul: intermediates = " + inter->second + " (only FP32 is defined)");
    const bool sequential = sequential_ || inter != options.with.end();
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    const Tensor& bias = call.t("bias");
    const DType out_t = call.t("C").dtype();
    const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    std::vector<double> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        long double dot = 0;
        for (std::int64_t p = 0; p < k; ++p)
          dot += static_cast<long double>(a.at(i * k + p)) * static_cast<long double>(b.at(p * n + j));
        if (sequential) {
          // The unfused pipeline: each stage writes an FP32 tensor.
          const double t = round_to(static_cast<double>(dot), DType::kF32);
          const double u = round_to(t + bias.at(j), DType::kF32);
          c[i * n + j] = round_to(static_cast<double>(eval_unary(act, u)), out_t);
        } else {
          c[i * n + j] = static_cast<double>(eval_unary(act, dot + static_cast<long double>(bias.at(j))));
        }
      }
    OracleResult res;
    res.outputs.push_back(std::move(c));
    res.output_names.push_back("C");
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "C") return not_found("no output '" + output + "' in " + name_);
    KC_ASSIGN_OR_RETURN(UnaryFn act, activation(call.config));
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    const Tensor& bias = call.t("bias");
    const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    const double g = gamma(static_cast<double>(k + 1), a.dtype());
    std::vector<double> mag(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        long double dot = 0, abs_dot = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const long double prod = static_cast<long double>(a.at(i * k + p)) * b.at(p * n + j);
          dot += prod;
          abs_dot += std::fabs(prod);
        }
        const long double z = dot + bias.at(j);
        const long double mz = abs_dot + std::fabs(static_cast<long double>(bias.at(j)));
        // Largest |act'| over the interval the computed z can lie in (sampled at the
        // ends and the centre; act' is monotone or unimodal on such short intervals).
        const long double w = std::isfinite(g) ? g * mz : 0.0L;
        long double lip = 0;
        for (long double t : {z - w, z, z + w}) lip = std::max(lip, std::fabs(eval_unary_derivative(act, t)));
        mag[i * n + j] = static_cast<double>(lip * mz);
      }
    return mag;
  }

  double accumulation_length(const Call& call) const override { return static_cast<double>(call.t("A").dim(1)) + 1; }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    const auto [ma, sa] = detail::abs_max_sum(a);
    const auto [mb, sb] = detail::abs_max_sum(b);
    const double mbias = detail::abs_max_sum(call.t("bias")).first;
    return detail::with_base_vars(Op::expr_vars(call), {{"M", static_cast<double>(a.dim(0))},
                                                        {"K", static_cast<double>(a.dim(1))},
                                                        {"N", static_cast<double>(b.dim(1))},
                                                        {"L", accumulation_length(call)},
                                                        {"max|A|", ma},
                                                        {"max|B|", mb},
                                                        {"max|bias|", mbias},
                                                        {"max|x|", std::max(ma, mb)},
                                                        {"sum|x|", sa + sb}});
  }

  // ---- what the rest of kc asks of a fused op
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kSemantics, classify_alternatives}};
  }
  std::optional<OpFastCheck> fast_check() const override {
    if (sequential_) return std::nullopt;
    return OpFastCheck{OpFastCheck::Verifier::kFusedMatmul, "C", /*freivalds=*/true};
  }

 private:
  static Result<UnaryFn> activation(const Config& config) {
    const std::string name = config.get("activation", "gelu_erf");
    auto fn = parse_unary_fn(name);
    if (!fn || (*fn != UnaryFn::kRelu && *fn != UnaryFn::kGeluErf && *fn != UnaryFn::kGeluTanh &&
                *fn != UnaryFn::kSilu && *fn != UnaryFn::kIdentity))
      return invalid_argument("activation must be relu | gelu_erf | gelu_tanh | silu | identity, got '" + name + "'");
    return *fn;
  }

  bool sequential_;
  std::string name_;
  std::string summary_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;
};

}  // namespace

std::unique_ptr<Op> make_fused_matmul_op(bool sequential) { return std::make_unique<FusedMatmulOp>(sequential); }

}  // namespace kc::ops
