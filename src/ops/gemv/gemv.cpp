// kc — the gemv op: y := alpha op(A) x + beta y, A stored row-major M x N
// (leading dimension N + lda_pad), op(A) = A (trans = N: x has N elements, y
// M) or A^T (trans = T: x has M, y N); x and y strided by incx, incy.
//
// beta = 0 follows the reference BLAS (sgemv.f: "When BETA is supplied as
// zero then Y need not be set on input"): y is overwritten, not read.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
#include "ops/gemv/gemv.h"

#include <cmath>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

/// The problem a call describes, read back from its config.
struct Problem {
  std::int64_t m = 0, n = 0;
  bool trans = false;
  double alpha = 1, beta = 0;
  std::int64_t rows_out() const { return trans ? n : m; }  ///< length of y
  std::int64_t inner() const { return trans ? m : n; }     ///< length of x: the accumulation length
};

Result<bool> parse_trans(const Config& config) {
  const std::string v = config.get("trans", "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  return invalid_argument("trans = '" + v + "', expected N or T");
}

Problem problem_of(const Call& call) {
  Problem p;
  p.m = call.get_int("M", 64);
  p.n = call.get_int("N", 64);
  p.trans = parse_trans(call.config).ok() && parse_trans(call.config).value();
  // Scalars of the call's precision (sgemv's REAL ALPHA, BETA).
  p.alpha = round_to(call.get_double("alpha", 1), call.config.dtype);
  p.beta = round_to(call.get_double("beta", 0), call.config.dtype);
  return p;
}

/// op(A)_ik.
double op_a(const Tensor& a, const Problem& p, std::int64_t i, std::int64_t k) {
  const std::int64_t lda = a.strides()[0];
  return p.trans ? a.load(k * lda + i) : a.load(i * lda + k);
}

class GemvOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "gemv"; }
  std::string_view summary() const override {
    return "row-major matrix-vector product y = alpha*op(A)*x + beta*y (reference-BLAS beta = 0 rule)";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"A", Role::kIn, "M x N, leading dimension N + lda_pad"},
        {"x", Role::kIn, "N elements (trans = N) or M (trans = T), stride incx"},
        {"y", Role::kInOut, "M elements (trans = N) or N (trans = T), stride incy; read only when beta != 0"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"M", "64", "rows of A"},
        {"N", "64", "columns of A"},
        {"trans", "N", "N: y = alpha A x + beta y; T: y = alpha A^T x + beta y"},
        {"alpha", "1", "scale of op(A) x"},
        {"beta", "0", "scale of the incoming y; 0 means y is not read (BLAS rule)"},
        {"lda_pad", "0", "extra elements per stored row of A"},
        {"incx", "1", "stride of x in elements (>= 1)"},
        {"incy", "1", "stride of y in elements (>= 1)"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t m, detail::positive(config, "M", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "N", 64));
    KC_ASSIGN_OR_RETURN(bool trans, parse_trans(config));
    KC_ASSIGN_OR_RETURN(std::int64_t incx, detail::positive(config, "incx", 1));
    KC_ASSIGN_OR_RETURN(std::int64_t incy, detail::positive(config, "incy", 1));
    const std::int64_t pad = config.get_int("lda_pad", 0);
    if (pad < 0) return invalid_argument("lda_pad must be >= 0");
    return detail::make_call_from(name(), config,
                                  {{"A", Role::kIn, Tensor(dt, {m, n}, {n + pad, 1})},
                                   {"x", Role::kIn, Tensor(dt, {trans ? m : n}, {incx})},
                                   {"y", Role::kInOut, Tensor(dt, {trans ? n : m}, {incy})}});
  }

  // ---- fill/probes
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) {
      // y takes part only when it is read (beta != 0).
      targets = {"A", "x"};
      if (problem_of(call).beta != 0) targets.push_back("y");
    }
    return detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
  }

  // ---- oracle
  // Each y_i as a long double dot product (>= 64-bit significand: its own
  // error, about inner * 2^-64 relative, is far below an FP64 kernel's
  // gamma(inner + 2, FP64)), then alpha and beta y_i. beta = 0 never reads y.
  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    const Problem p = problem_of(call);
    const Tensor& a = call.t("A");
    const Tensor& x = call.t("x");
    const Tensor& y = call.t("y");
    std::vector<double> out(static_cast<std::size_t>(p.rows_out()));
    for (std::int64_t i = 0; i < p.rows_out(); ++i) {
      long double acc = 0;
      for (std::int64_t k = 0; k < p.inner(); ++k) acc += static_cast<long double>(op_a(a, p, i, k)) * x.at(k);
      acc *= p.alpha;
      if (p.beta != 0) acc += static_cast<long double>(p.beta) * y.at(i);
      out[static_cast<std::size_t>(i)] = static_cast<double>(acc);
    }
    OracleResult r;
    r.output_names = {"y"};
    r.outputs.push_back(std::move(out));
    return r;
  }

  // The beta = 0 rule above is what the oracle always does; a contract may
  // name it (KC-GEMV-02), with the key GEMM's rule uses for its output.
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {"beta_zero", {"C_not_read"}, "beta = 0: the output y is overwritten and not read, so NaN in y does not "
                                      "propagate (reference sgemv.f)"},
    };
    return table;
  }

  // ---- error model
  // A dot product of length K in any order: |err| <= gamma_K sum_k |a_ik x_k|
  // (Higham, Accuracy and Stability, §3.1); alpha and the beta y_i update add
  // two more roundings per element, so gamma(K + 2) against
  // |alpha| sum_k |op(A)_ik x_k| + |beta y_i|, as matmul's bound.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found("gemv has no output '" + output + "'");
    const Problem p = problem_of(call);
    const Tensor& a = call.t("A");
    const Tensor& x = call.t("x");
    const Tensor& y = call.t("y");
    std::vector<double> mag(static_cast<std::size_t>(p.rows_out()));
    for (std::int64_t i = 0; i < p.rows_out(); ++i) {
      long double s = 0;
      for (std::int64_t k = 0; k < p.inner(); ++k) s += std::fabs(static_cast<long double>(op_a(a, p, i, k)) * x.at(k));
      s *= std::fabs(p.alpha);
      if (p.beta != 0) s += std::fabs(static_cast<long double>(p.beta) * y.at(i));
      mag[static_cast<std::size_t>(i)] = static_cast<double>(s);
    }
    return mag;
  }
  bool overwrites(const Call& call, const std::string& name) const override {
    return name == "y" && call.get_double("beta", 0) == 0;  // beta = 0: y is not read
  }
  double accumulation_length(const Call& call) const override {
    return static_cast<double>(problem_of(call).inner()) + 2;
  }
  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    const Problem p = problem_of(call);
    vars["M"] = static_cast<double>(p.m);
    vars["N"] = static_cast<double>(p.n);
    vars["K"] = static_cast<double>(p.inner());
    vars["alpha"] = p.alpha;
    vars["beta"] = p.beta;
    return vars;
  }
};

}  // namespace

std::unique_ptr<Op> make_gemv_op() { return std::make_unique<GemvOp>(); }

}  // namespace kc::ops
