// kc — the matmul op: row-major C = alpha op(A) op(B) + beta C, with the
// reference-BLAS rules for alpha == 0 and beta == 0.
//
// Those rules are the BLAS interface's, not arithmetic's (0 * NaN = NaN):
// every matmul impl declares whether it keeps them, alpha_zero = AB_NOT_READ |
// FORMULA and beta_zero = C_NOT_READ | FORMULA, and the contracts that probe
// them with NaN (KC-GEMM-02, KC-GEMM-03) apply only to impls declaring the
// rule. Elsewhere alpha and beta are finite scalars and A, B, C finite, where
// the rules and the formula agree.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
#include "ops/matmul/matmul.h"

#include <cmath>
#include <string>
#include <vector>

#include "kc/bound.h"
#include "kc/ops/matmul_arithmetic.h"
#include "ops/class_ops_util.h"
#include "ops/matmul/classify.h"
#include "ops/oracle_options.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

/// Reads a stored matrix through its leading dimension.
double load_rc(const Tensor& t, std::int64_t r, std::int64_t c) { return t.load(r * t.strides()[0] + c); }

Result<bool> parse_trans(const Config& config, const std::string& key) {
  const std::string v = config.get(key, "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  return invalid_argument(key + " = '" + v + "', expected N or T");
}

/// The problem a call describes, read back from its config.
struct Problem {
  std::int64_t m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  double alpha = 1, beta = 0;
};

Problem problem_of(const Call& call) {
  Problem p;
  p.m = call.get_int("M", 64);
  p.n = call.get_int("N", 64);
  p.k = call.get_int("K", 64);
  p.ta = parse_trans(call.config, "trans_a").ok() && parse_trans(call.config, "trans_a").value();
  p.tb = parse_trans(call.config, "trans_b").ok() && parse_trans(call.config, "trans_b").value();
  // alpha and beta are scalars of the call's precision (sgemm takes REAL
  // ALPHA, BETA), so the oracle uses them rounded to the dtype, as a kernel sees them.
  p.alpha = round_to(call.get_double("alpha", 1), call.config.dtype);
  p.beta = round_to(call.get_double("beta", 0), call.config.dtype);
  return p;
}

/// op(A)_ik and op(B)_kj.
double op_a(const Tensor& a, const Problem& p, std::int64_t i, std::int64_t k) {
  return p.ta ? load_rc(a, k, i) : load_rc(a, i, k);
}
double op_b(const Tensor& b, const Problem& p, std::int64_t k, std::int64_t j) {
  return p.tb ? load_rc(b, j, k) : load_rc(b, k, j);
}

/// op(A) read once into dense rows (M x K, row-major); every stored value is
/// exact in double.
std::vector<double> rows_of_op_a(const Tensor& a, const Problem& p) {
  const auto m = static_cast<std::size_t>(p.m), k = static_cast<std::size_t>(p.k);
  std::vector<double> rows(m * k);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t q = 0; q < k; ++q)
      rows[i * k + q] = op_a(a, p, static_cast<std::int64_t>(i), static_cast<std::int64_t>(q));
  return rows;
}

/// The accumulator_bits probe: op(A) row r = (1, s_r, ..., s_r, -1) with
/// s_r = 2^-(r+1) and K - 2 copies of s_r, op(B) all ones, C zero. Summed in
/// order by an accumulator of p significant bits, 1 + s_r is exact while
/// r + 1 < p and rounds back to 1 from r + 1 = p on (a tie goes to the even 1),
/// so the row's result is its exact (K - 2) s_r or 0. Rows whose s_r or exact
/// sum the input or output format cannot hold exactly are left zero.
Status accumulator_bits_probe(Call& call, const Problem& p) {
  if (p.k < 3) return invalid_argument("probe accumulator_bits needs K >= 3 (a 1, small terms and a -1)");
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  a.fill_storage(0.0);
  c.fill_storage(0.0);
  for (std::int64_t kk = 0; kk < p.k; ++kk)
    for (std::int64_t j = 0; j < p.n; ++j) b.set(p.tb ? j * p.k + kk : kk * p.n + j, 1.0);
  const DType in = a.dtype(), out = c.dtype();
  for (std::int64_t r = 0; r < p.m; ++r) {
    const double s = std::ldexp(1.0, -static_cast<int>(std::min<std::int64_t>(r + 1, 1000)));
    const double exact = static_cast<double>(p.k - 2) * s;
    if (round_to(s, in) != s || round_to(exact, out) != exact || exact < dtype_info(out).min_normal) continue;
    auto a_at = [&](std::int64_t kk) { return p.ta ? kk * p.m + r : r * p.k + kk; };
    a.set(a_at(0), 1.0);
    for (std::int64_t kk = 1; kk + 1 < p.k; ++kk) a.set(a_at(kk), s);
    a.set(a_at(p.k - 1), -1.0);
  }
  return ok_status();
}

class MatmulOp final : public Op {
 public:
  // ---- signature/params
  std::string_view name() const override { return "matmul"; }
  std::string_view summary() const override {
    return "row-major GEMM C = alpha*op(A)*op(B) + beta*C (reference-BLAS alpha/beta rules)";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> sig = {
        {"A", Role::kIn, "M x K (trans_a = N) or K x M (trans_a = T), leading dimension + lda_pad"},
        {"B", Role::kIn, "K x N (trans_b = N) or N x K (trans_b = T), leading dimension + ldb_pad"},
        {"C", Role::kInOut, "M x N, leading dimension N + ldc_pad; read only when beta != 0"},
    };
    return sig;
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> ps = {
        {"M", "64", "rows of C and of op(A)"},
        {"N", "64", "columns of C and of op(B)"},
        {"K", "64", "inner (accumulation) dimension"},
        {"trans_a", "N", "N: A stored M x K; T: A stored K x M and used transposed"},
        {"trans_b", "N", "N: B stored K x N; T: B stored N x K and used transposed"},
        {"alpha", "1", "scale of op(A)op(B); 0 means A and B are not read (BLAS rule; declared alpha_zero)"},
        {"beta", "0", "scale of the incoming C; 0 means C is not read (BLAS rule; declared beta_zero)"},
        {"lda_pad", "0", "extra elements per stored row of A (lda = cols + lda_pad)"},
        {"ldb_pad", "0", "extra elements per stored row of B"},
        {"ldc_pad", "0", "extra elements per stored row of C"},
    };
    return ps;
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t m, detail::positive(config, "M", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "N", 64));
    KC_ASSIGN_OR_RETURN(std::int64_t k, detail::positive(config, "K", 64));
    KC_ASSIGN_OR_RETURN(bool ta, parse_trans(config, "trans_a"));
    KC_ASSIGN_OR_RETURN(bool tb, parse_trans(config, "trans_b"));
    std::int64_t pads[3];
    const char* pad_names[3] = {"lda_pad", "ldb_pad", "ldc_pad"};
    for (int i = 0; i < 3; ++i) {
      pads[i] = config.get_int(pad_names[i], 0);
      if (pads[i] < 0) return invalid_argument(std::string(pad_names[i]) + " must be >= 0");
    }
    auto matrix = [&](std::int64_t rows, std::int64_t cols, std::int64_t pad) {
      return Tensor(dt, {rows, cols}, {cols + pad, 1});
    };
    return detail::make_call_from(name(), config,
                                  {{"A", Role::kIn, ta ? matrix(k, m, pads[0]) : matrix(m, k, pads[0])},
                                   {"B", Role::kIn, tb ? matrix(n, k, pads[1]) : matrix(k, n, pads[1])},
                                   {"C", Role::kInOut, matrix(m, n, pads[2])}});
  }

  // ---- fill/probes
  // fill: the default (A, B and C all drawn from the fill spec; C is in/out, and
  // the engine pre-poisons outputs itself when it wants to see whether C is read).

  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    const Problem p = problem_of(call);
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) {
      // C takes part only when it is read (beta != 0); a NaN in an unread C is
      // not an input the result depends on.
      targets = {"A", "B"};
      if (p.beta != 0) targets.push_back("C");
    }
    if (probe.name == "saturation") {
      // Products of two U[0.5,1.5]*s terms have mean s^2; with s = sqrt(4v/K)
      // every C_ij ~ 4v, so an fp16 partial sum passes v about a quarter of the
      // way through K (and 65504 is exceeded well before the end).
      const double v = probe.args.empty() ? 65504.0 : probe.args[0];
      const double s = std::sqrt(4 * v / static_cast<double>(p.k));
      for (const std::string& name : targets) {
        if (!call.has(name)) return invalid_argument("probe target '" + name + "' is not a tensor of matmul");
        Tensor& t = call.t(name);
        const bool is_c = name == "C";
        for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, is_c ? 0.0 : s * rng.uniform(0.5, 1.5));
      }
      return ok_status();
    }
    if (probe.name == "accumulator_bits") return accumulator_bits_probe(call, p);
    if (probe.name == "arithmetic") return apply_arithmetic_probe(call);
    return detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
  }

  // ---- oracle
  // `with accumulator = FP32` rounds the running dot product to FP32 after
  // each product is added (one rounding per step, as an FP32 FMA chain).
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const bool fp32 = detail::fp32_accumulator(options);
    const Problem p = problem_of(call);
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    const Tensor& c = call.t("C");
    OracleResult r;
    r.output_names = {"C"};
    // op(A) by rows and op(B) by columns, read once into dense doubles (every
    // stored value is exact in double), so each dot product runs over two
    // contiguous arrays.
    const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), kk = static_cast<std::size_t>(p.k);
    std::vector<double> rows_a, cols_b;
    if (p.alpha != 0) {
      rows_a = rows_of_op_a(a, p);
      cols_b.resize(n * kk);
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t q = 0; q < kk; ++q)
          cols_b[j * kk + q] = op_b(b, p, static_cast<std::int64_t>(q), static_cast<std::int64_t>(j));
    }
    std::vector<double> out(m * n);
    for (std::int64_t i = 0; i < p.m; ++i) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        // Reference BLAS (sgemm.f): alpha == 0 -> C = beta*C without touching A
        // and B; beta == 0 -> C is overwritten without being read. The product
        // is accumulated in long double (>= 64-bit significand on x86).
        long double acc = 0;
        if (p.alpha != 0) {
          const double* ai = rows_a.data() + static_cast<std::size_t>(i) * kk;
          const double* bj = cols_b.data() + static_cast<std::size_t>(j) * kk;
          for (std::size_t q = 0; q < kk; ++q)
            acc = detail::accumulate(acc, static_cast<long double>(ai[q]) * bj[q], fp32);
          acc *= p.alpha;
        }
        if (p.beta != 0) acc += static_cast<long double>(p.beta) * load_rc(c, i, j);
        out[static_cast<std::size_t>(i * p.n + j)] = static_cast<double>(acc);
      }
    }
    r.outputs.push_back(std::move(out));
    return r;
  }

  // The alpha = 0 and beta = 0 rules above are what the oracle always does;
  // contracts may name them.
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        detail::accumulator_option("each dot product of A's row and B's column"),
        detail::reduction_order_option("the products of each dot product (k = 0, 1, ..., K - 1)"),
        {"alpha_zero", {"AB_not_read"}, "alpha = 0: C = beta C, A and B are not read (reference BLAS)"},
        {"beta_zero", {"C_not_read"}, "beta = 0: C is overwritten and not read, so NaN in C does not propagate"},
    };
    return table;
  }

  // ---- error model
  // Higham (Accuracy and Stability, §3.5): |fl(A B) - A B| <= gamma_K |A||B|.
  // The alpha scaling and the beta*C update add two more roundings per
  // element, hence accumulation_length = K + 2 against
  // |alpha| (|op(A)||op(B)|)_ij + |beta| |C_ij|.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "C") return not_found("matmul has no output '" + output + "'");
    const Problem p = problem_of(call);
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    const Tensor& c = call.t("C");
    const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
    std::vector<double> mag(m * n, 0.0);
    if (p.alpha != 0) {
      // |op(A)| and |op(B)| read once into dense rows, then each row of the
      // magnitude summed over k in order (the same terms in the same order as
      // a dot product per element, in double: the sum of non-negative terms
      // is accurate to about K units of double roundoff, far below any bound
      // it scales). Every product of two FP32 or narrower values is exact in double.
      std::vector<double> abs_a = rows_of_op_a(a, p), abs_b(k * n);
      for (double& v : abs_a) v = std::fabs(v);
      for (std::size_t q = 0; q < k; ++q)
        for (std::size_t j = 0; j < n; ++j)
          abs_b[q * n + j] = std::fabs(op_b(b, p, static_cast<std::int64_t>(q), static_cast<std::int64_t>(j)));
      const double abs_alpha = std::fabs(p.alpha);
      for (std::size_t i = 0; i < m; ++i) {
        double* row = mag.data() + i * n;
        for (std::size_t q = 0; q < k; ++q) {
          const double aiq = abs_a[i * k + q];
          const double* brow = abs_b.data() + q * n;
          for (std::size_t j = 0; j < n; ++j) row[j] += aiq * brow[j];
        }
        for (std::size_t j = 0; j < n; ++j) row[j] *= abs_alpha;
      }
    }
    if (p.beta != 0)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j)
          mag[i * n + j] += std::fabs(p.beta * load_rc(c, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)));
    return mag;
  }

  bool overwrites(const Call& call, const std::string& name) const override {
    return name == "C" && call.get_double("beta", 0) == 0;  // beta = 0: C is not read
  }
  double accumulation_length(const Call& call) const override { return static_cast<double>(call.get_int("K", 64)) + 2; }
  // Gradual underflow where the products and their sum are formed: in the
  // declared accumulator when it is wider than the storage format, plus one
  // underflow of the store of C; in the storage format otherwise. (K + 4)
  // FP8 E4M3 underflows would allow about K 2^-10 absolute, whatever the
  // accumulator does.
  double underflow_allowance(const Call& call) const override {
    const double k = static_cast<double>(call.get_int("K", 64));
    const DType store = call.config.dtype;
    if (call.config.accumulator &&
        dtype_info(*call.config.accumulator).mantissa_bits > dtype_info(store).mantissa_bits)
      return gemm_underflow_allowance(k, problem_of(call).alpha, *call.config.accumulator) + underflow_unit(store);
    return gemm_underflow_allowance(k, problem_of(call).alpha, store);
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    const Problem p = problem_of(call);
    vars["M"] = static_cast<double>(p.m);
    vars["N"] = static_cast<double>(p.n);
    vars["K"] = static_cast<double>(p.k);
    vars["alpha"] = p.alpha;
    vars["beta"] = p.beta;
    return vars;
  }

  // ---- what the rest of kc asks of matmul
  std::vector<obligation::Property> properties() const override {
    std::vector<obligation::Property> out;
    obligation::add_matmul_properties(out);
    return out;
  }
  // The two probes' readings come before the value patterns: their zeros are
  // what they measure.
  std::vector<OpClassifier> classifiers() const override {
    using Stage = OpClassifier::Stage;
    return {{Stage::kProbeReading,
             [](const Op& op, const Call& in, const OracleOptions&, const Observation& o, std::vector<Signature>* s,
                std::vector<std::string>* n) { classify_accumulator_bits(op, in, o, s, n); }},
            {Stage::kProbeReading,
             [](const Op& op, const Call& in, const OracleOptions&, const Observation& o, std::vector<Signature>* s,
                std::vector<std::string>* n) { classify_arithmetic(op, in, o, s, n); }}};
  }
  std::vector<std::string> probe_readings(const Probe& probe, const Call& inputs, const std::string& output,
                                          const std::vector<double>& got,
                                          const std::vector<double>& ref) const override {
    if (output != "C") return {};
    if (probe.name == "accumulator_bits")
      return {describe_accumulator_reading(read_accumulator_bits(inputs, got, ref), inputs)};
    if (probe.name == "arithmetic") return describe_arithmetic(read_arithmetic(inputs, got), inputs);
    return {};
  }
  // Work model: M N K multiply-adds on dense random inputs when alpha != 0
  // (alpha = 0 reads neither A nor B).
  double multiply_adds(const Call& call) const override {
    if (call.get_double("alpha", 1.0) == 0 || !call.has("C") || call.t("C").rank() != 2) return 0;
    return static_cast<double>(call.t("C").numel()) * static_cast<double>(call.get_int("K", 0));
  }
  std::optional<OpFastCheck> fast_check() const override {
    return OpFastCheck{OpFastCheck::Verifier::kMatmul, "C", /*freivalds=*/true};
  }
};

}  // namespace

std::unique_ptr<Op> make_matmul_op() { return std::make_unique<MatmulOp>(); }

}  // namespace kc::ops
