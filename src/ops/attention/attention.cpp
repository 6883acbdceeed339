// kc — scaled dot-product attention (see attention.h).
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
//
//   q {batch, heads, seq, head_dim}, k and v {batch, kv_heads, seq, head_dim},
//   out {batch, heads, seq, head_dim};
//   out[b,h,t] = sum_u p_u v[b,g,u],  p = softmax_u(scale q[b,h,t] . k[b,g,u]),
//   g = h / (heads / kv_heads) (grouped-query attention; kv_heads = heads is
//   multi-head attention), u over all positions, or u <= t when causal.
// scale defaults to 1/sqrt(head_dim). A NaN in q, k or v reaches every output
// whose softmax row or weighted sum touches it (IEEE arithmetic, as in the
// oracle: a NaN score makes its row's max and sum NaN).
#include "kc/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/oracle_options.h"
#include "ops/probe.h"

namespace kc::ops {

AttentionShape attention_shape(const Call& call) {
  AttentionShape s;
  const Tensor& q = call.t("q");
  const Tensor& k = call.t("k");
  s.batch = q.dim(0);
  s.heads = q.dim(1);
  s.seq = q.dim(2);
  s.head_dim = q.dim(3);
  s.kv_heads = k.dim(1);
  const std::string c = call.get("causal", "0");
  s.causal = c == "1" || c == "true";
  const double scale = call.get_double("scale", -1);
  s.scale = scale > 0 ? scale : 1 / std::sqrt(static_cast<double>(s.head_dim));
  return s;
}

void attention_row(const AttentionShape& s, std::int64_t t, const double* q_row, const double* k_head,
                   const double* v_head, double* out_row, double* mag_row, const AttentionMode& mode) {
  const bool fp32 = mode.fp32_accumulator;
  std::vector<long double> score(static_cast<std::size_t>(s.seq));
  const std::int64_t n = s.causal ? t + 1 : s.seq;
  long double m = -std::numeric_limits<long double>::infinity();
  bool nan = false;
  long double a_max = 0;
  for (std::int64_t u = 0; u < n; ++u) {
    const double* ku = k_head + u * s.head_dim;
    long double dot = 0, adot = 0;
    for (std::int64_t i = 0; i < s.head_dim; ++i) {
      dot = detail::accumulate(dot, static_cast<long double>(q_row[i]) * ku[i], fp32);
      adot += std::fabs(static_cast<long double>(q_row[i]) * ku[i]);
    }
    score[u] = dot * s.scale;
    a_max = std::max(a_max, adot * s.scale);
    if (std::isnan(score[u])) nan = true;
    else if (score[u] > m) m = score[u];
  }
  if (!mode.max_subtraction) m = 0;
  auto e = [&](long double z) { return mode.max_subtraction ? std::exp(z) : detail::naive_exp(z, fp32); };
  long double sum = 0;
  for (std::int64_t u = 0; u < n; ++u) sum = detail::accumulate(sum, e(score[u] - m), fp32);
  for (std::int64_t u = 0; u < n; ++u) score[u] = e(score[u] - m) / sum;  // now p_u
  for (std::int64_t j = 0; j < s.head_dim; ++j) {
    long double acc = 0, aacc = 0;
    for (std::int64_t u = 0; u < n; ++u) {
      const long double p = score[u];
      const long double vj = v_head[u * s.head_dim + j];
      acc = detail::accumulate(acc, p * vj, fp32);
      aacc += p * std::fabs(vj);
    }
    out_row[j] = nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(acc);
    if (mag_row) mag_row[j] = static_cast<double>(aacc * (2 + 4 * a_max));
  }
}

namespace {

class AttentionOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "attention"; }
  std::string_view summary() const override {
    return "out = softmax(scale q k^T, causal mask optional) v per (batch, head); kv_heads < heads is "
           "grouped-query attention";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"q", Role::kIn, "batch x heads x seq x head_dim queries"},
        {"k", Role::kIn, "batch x kv_heads x seq x head_dim keys"},
        {"v", Role::kIn, "batch x kv_heads x seq x head_dim values"},
        {"out", Role::kOut, "batch x heads x seq x head_dim result"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"batch", "2", "independent sequences"},
        {"heads", "4", "query heads"},
        {"kv_heads", "4", "key/value heads; divides heads (fewer than heads: grouped-query attention)"},
        {"seq", "64", "sequence length (queries and keys)"},
        {"head_dim", "64", "dimension of one head"},
        {"causal", "0", "1: position t attends to positions <= t only"},
        {"scale", "auto", "score scale; auto = 1/sqrt(head_dim)"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t batch, detail::positive(config, "batch", 2));
    KC_ASSIGN_OR_RETURN(std::int64_t heads, detail::positive(config, "heads", 4));
    KC_ASSIGN_OR_RETURN(std::int64_t kv_heads, detail::positive(config, "kv_heads", 4));
    KC_ASSIGN_OR_RETURN(std::int64_t seq, detail::positive(config, "seq", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t head_dim, detail::positive(config, "head_dim", 64));
    if (heads % kv_heads != 0)
      return invalid_argument("kv_heads (" + std::to_string(kv_heads) + ") must divide heads (" +
                              std::to_string(heads) + ")");
    const std::string causal = config.get("causal", "0");
    if (causal != "0" && causal != "1" && causal != "true" && causal != "false")
      return invalid_argument("causal must be 0 or 1, got " + causal);
    const std::string scale = config.get("scale", "auto");
    if (scale != "auto" && !(config.get_double("scale", -1) > 0))
      return invalid_argument("scale must be auto or a positive number, got " + scale);
    return detail::make_call_from(name(), config,
                                  {{"q", Role::kIn, Tensor(dt, {batch, heads, seq, head_dim})},
                                   {"k", Role::kIn, Tensor(dt, {batch, kv_heads, seq, head_dim})},
                                   {"v", Role::kIn, Tensor(dt, {batch, kv_heads, seq, head_dim})},
                                   {"out", Role::kOut, Tensor(dt, {batch, heads, seq, head_dim})}});
  }

  // ---- fill/probes: the defaults (every input from the value range).

  // ---- oracle
  // FP64 inputs, long double arithmetic, max-subtracted softmax per query.
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    OracleResult res;
    res.output_names = {"out"};
    res.outputs.push_back(
        evaluate(call, nullptr, {detail::fp32_accumulator(options), detail::max_subtraction(options)}));
    return res;
  }
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        detail::stabilization_option(),
        detail::accumulator_option("the scores q.k, the softmax sum and the weighted sum of v"),
        detail::reduction_order_option("each score's products, the softmax sum and the weighted sum of v (keys in "
                                       "order)")};
    return table;
  }

  // ---- error model
  // For one query row with n attended keys, A_u = scale sum_i |q_i||k_ui| and
  // A = max_u A_u, in the working precision P (Higham's gamma_k):
  //   scores: |ŝ_u - s_u| <= gamma_{d+1} A_u (the dot product and the scale);
  //   ŝ_u - m̂ rounds by u |s_u - m| <= 2 u A; exp adds 2u (1 ulp):
  //     every weight exp(ŝ_u - m̂) carries a relative error <= gamma_{d+3} 2A + 2u;
  //   the normalised weights p̂_u: twice that (numerator and sum) + gamma_{n+1};
  //   out = sum_u p̂_u v_u: gamma_n sum_u p_u |v_u| more.
  // So |ôut_j - out_j| <= gamma_L m_j with m_j = sum_u p_u |v_uj| (2 + 4A) and
  // L = 2 n + d + 6. An online (tiled) softmax rescales the running sum and
  // each accumulator by exp(m_old - m_new) once per key block: at most 3 more
  // roundings per block, <= 3 n in all, whatever the blocking; the op's
  // accumulation length L = 5 seq + head_dim + 6 covers both algorithms.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "out") return not_found("attention has no output '" + output + "'");
    std::vector<double> mag;
    evaluate(call, &mag);
    return mag;
  }
  double accumulation_length(const Call& call) const override {
    const AttentionShape s = attention_shape(call);
    return static_cast<double>(5 * s.seq + s.head_dim + 6);
  }
  // Gradual underflow where the arithmetic happens: in the declared
  // accumulator when it is wider than the storage format (scores, softmax and
  // sums kept there, as gamma(L, ACC) states), with one more underflow for
  // the store of out; in the storage format otherwise. Charging L underflows
  // of FP8 E4M3 (2^-10 each) to an FP32 computation would allow an absolute
  // error of about (L + 2) 2^-10, more than the outputs themselves.
  double underflow_allowance(const Call& call) const override {
    const DType store = call.config.dtype;
    const bool wider = call.config.accumulator &&
                       dtype_info(*call.config.accumulator).mantissa_bits > dtype_info(store).mantissa_bits;
    if (!wider) return Op::underflow_allowance(call);
    return (accumulation_length(call) + 2) * underflow_unit(*call.config.accumulator) + underflow_unit(store);
  }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    const AttentionShape s = attention_shape(call);
    return detail::with_base_vars(Op::expr_vars(call), {{"seq", static_cast<double>(s.seq)},
                                                        {"head_dim", static_cast<double>(s.head_dim)},
                                                        {"N", static_cast<double>(s.seq)},
                                                        {"K", static_cast<double>(s.head_dim)},
                                                        {"scale", s.scale}});
  }

 private:
  std::vector<double> evaluate(const Call& call, std::vector<double>* mag, const AttentionMode& mode = {}) const {
    const AttentionShape s = attention_shape(call);
    const std::vector<double> q = call.t("q").to_doubles();
    const std::vector<double> k = call.t("k").to_doubles();
    const std::vector<double> v = call.t("v").to_doubles();
    std::vector<double> out(q.size());
    if (mag) mag->assign(q.size(), 0.0);
    for (std::int64_t b = 0; b < s.batch; ++b)
      for (std::int64_t h = 0; h < s.heads; ++h) {
        const std::int64_t g = s.kv_head(h);
        for (std::int64_t t = 0; t < s.seq; ++t) {
          const std::int64_t at = s.at(b, s.heads, h, t);
          attention_row(s, t, q.data() + at, k.data() + s.at(b, s.kv_heads, g, 0), v.data() + s.at(b, s.kv_heads, g, 0),
                        out.data() + at, mag ? mag->data() + at : nullptr, mode);
        }
      }
    return out;
  }

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<std::string> scope_classes() const override { return {"fused_attention"}; }
  std::vector<obligation::Property> properties() const override {
    return obligation::properties_for(name(), obligation::add_attention_properties);
  }
  std::optional<OpFastCheck> fast_check() const override {
    return OpFastCheck{OpFastCheck::Verifier::kAttention, "out", /*freivalds=*/false};
  }
};

}  // namespace

std::unique_ptr<Op> make_attention_op() { return std::make_unique<AttentionOp>(); }

}  // namespace kc::ops
