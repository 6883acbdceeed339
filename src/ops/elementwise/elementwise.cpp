// kc — unary elementwise ops (see elementwise.h).
//
// Error model: a unary op has no accumulation (accumulation_length 1) and its
// componentwise magnitude is |y|, so `bound c * gamma(1, P) * |y|` is c units
// of roundoff relative to the result: a ULP-style tolerance for kernels whose
// error is a few rounding errors of the output. ULP tolerances use the oracle
// directly (round-to-output, then ULP distance).
#include "kc/ops/elementwise.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

struct FnEntry {
  UnaryFn fn;
  std::string_view name;
  std::string_view summary;
};

constexpr std::array<FnEntry, 9> kFns = {{
    {UnaryFn::kRelu, "relu", "y = max(x, 0), NaN propagating"},
    {UnaryFn::kGeluErf, "gelu_erf", "y = x * Φ(x) = 0.5 x (1 + erf(x / sqrt 2))"},
    {UnaryFn::kGeluTanh, "gelu_tanh", "y = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))"},
    {UnaryFn::kSilu, "silu", "y = x * sigmoid(x) = x / (1 + exp(-x))"},
    {UnaryFn::kIdentity, "identity", "y = x"},
    {UnaryFn::kExp, "exp", "y = exp(x)"},
    {UnaryFn::kLog, "log", "y = log(x) (natural logarithm)"},
    {UnaryFn::kTanh, "tanh", "y = tanh(x)"},
    {UnaryFn::kErf, "erf", "y = erf(x)"},
}};

constexpr std::array<UnaryFn, 8> kElementwise = {UnaryFn::kRelu, UnaryFn::kGeluErf, UnaryFn::kGeluTanh, UnaryFn::kSilu,
                                                 UnaryFn::kExp,  UnaryFn::kLog,     UnaryFn::kTanh,     UnaryFn::kErf};

const FnEntry& entry(UnaryFn fn) {
  for (const auto& e : kFns)
    if (e.fn == fn) return e;
  return kFns[0];
}

constexpr long double kSqrt2OverPi = 0.797884560802865355879892119868763737L;  // sqrt(2/π)
constexpr long double kGeluTanhCubic = 0.044715L;

long double sigmoid(long double x) {
  // Two branches so exp never overflows: for x < 0 use e^x / (1 + e^x).
  if (x >= 0) return 1.0L / (1.0L + std::exp(-x));
  const long double e = std::exp(x);
  return e / (1.0L + e);
}

/// `inject edge_values`: every element of x from the function's edge table
/// in x's format (fmt): the values IEEE 754 and C99 Annex F fix (+-0, +-inf,
/// NaN), the format's extremes (smallest subnormal, largest subnormal,
/// smallest normal, largest finite, each signed), then random draws cycling
/// over the regions where f's result is hardest to get right:
///   exp   the gradual-underflow range [ln(min subnormal) - 0.35, ln(min
///         normal)] (subnormal results, and the rounding to 0 or the smallest
///         subnormal), the last binade below overflow [ln(max) - 1,
///         ln(max) - 2^-10], past overflow (ln(max) + 0.01: the exact value 1%
///         above max, so the correctly rounded result is +inf whatever the
///         accuracy class), tiny |x| (exp(x) ~ 1 + x);
///   log   subnormal inputs, x near 1 (log(x) ~ x - 1, cancellation), the whole
///         positive range log-uniformly, negative x (NaN);
///   tanh  tiny |x| (tanh(x) ~ x, down to the smallest normal) and the
///         saturation range 0.8 s <= |x| <= 1.4 s around the point s where
///         the format rounds tanh to 1 (FP32: 9.0, so 7.2 to 12.6; FP64: 19.1);
///   erf   tiny |x| (erf(x) ~ 2x/sqrt(pi): subnormal inputs give subnormal
///         results, and |x| in [min normal / 16, 64 min normal], where the
///         result crosses the smallest normal) and the saturation range
///         0.77 s <= |x| <= 1.15 s around the point s where the format
///         rounds erf to 1 (FP32: 3.92, so 3.0 to 4.5; FP64: 5.93);
///   every function: subnormal inputs of both signs, log-uniform over the
///   subnormal range.
/// The values between max and the overflow threshold of exp (where an impl
/// within its documented bound of the exact value may return max where the
/// correctly rounded value is +inf) are left out on purpose.
/// `finite_edge_values` (finite = true) keeps only the finite inputs in f's
/// domain of definition (log: x > 0) and, for exp, x <= ln(max) + 0.01: the
/// inputs a library documenting a valid range rather than special values
/// covers (Highway: exp on [-FLT_MAX, 104], log on (0, FLT_MAX], tanh on
/// [-FLT_MAX, FLT_MAX]).
void fill_edge_values(UnaryFn fn, Tensor& x, Rng& rng, bool finite) {
  const DTypeInfo& info = dtype_info(x.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  const double tiny = std::ldexp(info.min_normal, -info.mantissa_bits);  // smallest subnormal
  const double max_sub = info.min_normal - tiny;
  std::vector<double> fixed = {0.0,  -0.0,     inf,  -inf, std::numeric_limits<double>::quiet_NaN(),
                               tiny, -tiny,    max_sub, -max_sub, info.min_normal, -info.min_normal,
                               1.0,  -1.0,     info.max_finite, -info.max_finite};
  const double ln_tiny = std::log(tiny), ln_min = std::log(info.min_normal), ln_max = std::log(info.max_finite);
  // Where the format rounds tanh and erf to 1: 1 - f(x) below half an ulp
  // of 1, 2^-(p+1) with p the significand bits. 1 - tanh(x) ~ 2 e^-2x gives
  // x = (p + 2) ln 2 / 2 (FP32: 9.0, FP64: 19.1); erfc(x) = 2^-(p+1) is
  // solved by bisection (FP32: 3.92, FP64: 5.93).
  const int p = info.mantissa_bits + 1;
  const double tanh_sat = (p + 2) * std::log(2.0) / 2;
  double erf_sat = 0;
  {
    double lo = 0, hi = 30;
    const long double target = std::ldexp(1.0L, -(p + 1));
    for (int k = 0; k < 100; ++k) {
      erf_sat = 0.5 * (lo + hi);
      (std::erfc(static_cast<long double>(erf_sat)) > target ? lo : hi) = erf_sat;
    }
  }
  auto log_uniform = [&](double lo, double hi) { return std::exp(rng.uniform(std::log(lo), std::log(hi))); };
  auto sign = [&](double v) { return rng.uniform() < 0.5 ? -v : v; };
  std::vector<std::function<double()>> regions;
  regions.push_back([&] { return sign(log_uniform(tiny, info.min_normal)); });  // subnormal inputs
  switch (fn) {
    case UnaryFn::kExp:
      fixed.insert(fixed.end(), {ln_tiny, ln_tiny - 0.35, ln_min, ln_max - 0x1p-10, ln_max + 0.01, -1e30, 0x1p-30});
      regions.push_back([&] { return rng.uniform(ln_tiny - 0.35, ln_min); });
      regions.push_back([&] { return rng.uniform(ln_tiny - 0.35, ln_min); });
      regions.push_back([&] { return rng.uniform(ln_max - 1, ln_max - 0x1p-10); });
      regions.push_back([&] { return sign(log_uniform(info.min_normal, 0x1p-10)); });
      break;
    case UnaryFn::kLog:
      fixed.insert(fixed.end(), {1.0 + std::ldexp(1.0, -info.mantissa_bits), 1.0 - std::ldexp(1.0, -info.mantissa_bits - 1),
                                 2.0, 0.5, -tiny});
      regions.push_back([&] { return log_uniform(tiny, info.min_normal); });
      regions.push_back([&] { return 1.0 + rng.uniform(-0x1p-10, 0x1p-10); });
      regions.push_back([&] { return log_uniform(tiny, info.max_finite); });
      regions.push_back([&] { return -log_uniform(tiny, info.max_finite); });
      break;
    case UnaryFn::kTanh:
      fixed.insert(fixed.end(), {0x1p-12, -0x1p-12, 9.0, -9.0, 20.0, -20.0, 2 * tanh_sat, -2 * tanh_sat});
      regions.push_back([&] { return sign(log_uniform(info.min_normal, 0x1p-10)); });
      regions.push_back([&] { return sign(rng.uniform(0.8 * tanh_sat, 1.4 * tanh_sat)); });
      regions.push_back([&] { return rng.uniform(-5.0, 5.0); });
      break;
    case UnaryFn::kErf:
      fixed.insert(fixed.end(), {0x1p-12, -0x1p-12, 3.9, -3.9, 10.0, -10.0, 2 * erf_sat, -2 * erf_sat});
      regions.push_back([&] { return sign(log_uniform(info.min_normal, 0x1p-10)); });
      regions.push_back([&] { return sign(rng.uniform(0.77 * erf_sat, 1.15 * erf_sat)); });
      // erf(x) ~ 2x/sqrt(pi) crossing FLT_MIN: results from deep in the
      // subnormals up to a few binades above (erf's gradual-underflow range).
      regions.push_back([&] { return sign(log_uniform(info.min_normal / 16, info.min_normal * 64)); });
      regions.push_back([&] { return rng.uniform(-3.0, 3.0); });
      break;
    default:
      regions.push_back([&] { return rng.normal(0.0, 4.0); });
      break;
  }
  auto in_domain = [&](double v) {
    if (!finite) return true;
    if (!std::isfinite(v)) return false;
    if (fn == UnaryFn::kLog) return v > 0;
    if (fn == UnaryFn::kExp) return v <= ln_max + 0.01;
    return true;
  };
  std::erase_if(fixed, [&](double v) { return !in_domain(v); });
  const std::int64_t n = x.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    double v = 0;
    if (k < fixed.size()) {
      v = fixed[k];
    } else {
      // Regions with no point in the domain (log's negative x) are redrawn
      // from the next region.
      for (std::size_t r = (k - fixed.size()) % regions.size();; r = (r + 1) % regions.size())
        if (in_domain(v = regions[r]())) break;
    }
    x.set(i, v);
  }
}

class ElementwiseOp final : public Op {
 public:
  explicit ElementwiseOp(UnaryFn fn) : fn_(fn), name_(unary_fn_name(fn)) {
    summary_ = "elementwise " + std::string(entry(fn).summary);
    signature_ = {{"x", Role::kIn, "input {n}"}, {"y", Role::kOut, "output {n}, y_i = f(x_i)"}};
    params_ = {{"n", "4096", "number of elements"}};
  }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 4096));
    std::vector<detail::Slot> slots;
    slots.push_back({"x", Role::kIn, Tensor(dt, {n})});
    slots.push_back({"y", Role::kOut, Tensor(dt, {n})});
    return detail::make_call_from(name_, config, std::move(slots));
  }

  // `with inf_policy = FORMULA` (the policy judge asks for it when an impl
  // declares it): f(±inf) as the formula gives it in IEEE arithmetic; the
  // default is the limit (eval_unary).
  const std::vector<OracleOption>& oracle_options() const override {
    static const std::vector<OracleOption> table = {
        {kInfPolicyKey,
         {kInfPolicyLimit, kInfPolicyFormula},
         "f(+-inf): the limit of f (LIMIT, the default) or the formula in IEEE arithmetic (FORMULA)"}};
    return table;
  }
  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const auto policy = options.with.find(kInfPolicyKey);
    const bool formula = policy != options.with.end() && policy->second == kInfPolicyFormula;
    const Tensor& x = call.t("x");
    std::vector<double> y(static_cast<std::size_t>(x.numel()));
    for (std::int64_t i = 0; i < x.numel(); ++i)
      y[i] = static_cast<double>(formula ? eval_unary_formula(fn_, x.at(i)) : eval_unary(fn_, x.at(i)));
    OracleResult res;
    res.outputs.push_back(std::move(y));
    res.output_names.push_back("y");
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "y") return not_found("no output '" + output + "' in " + name_);
    const Tensor& x = call.t("x");
    std::vector<double> m(static_cast<std::size_t>(x.numel()));
    for (std::int64_t i = 0; i < x.numel(); ++i) m[i] = std::fabs(static_cast<double>(eval_unary(fn_, x.at(i))));
    return m;
  }

  double accumulation_length(const Call&) const override { return 1; }

  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    if (probe.name != "edge_values" && probe.name != "finite_edge_values") return Op::apply_probe(call, probe, rng);
    fill_edge_values(fn_, call.t("x"), rng, probe.name == "finite_edge_values");
    return ok_status();
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Tensor& x = call.t("x");
    const auto [mx, sum] = detail::abs_max_sum(x);
    return detail::with_base_vars(Op::expr_vars(call), {{"N", static_cast<double>(x.numel())},
                                                        {"n", static_cast<double>(x.numel())},
                                                        {"L", 1.0},
                                                        {"max|x|", mx},
                                                        {"sum|x|", sum}});
  }

 private:
  UnaryFn fn_;
  std::string name_;
  std::string summary_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  std::vector<std::string> scope_classes() const override { return {"elementwise"}; }
  std::vector<obligation::Property> properties() const override {
    std::vector<obligation::Property> out = obligation::properties_for(name(), obligation::add_activation_properties);
    for (auto& p : obligation::properties_for(name(), obligation::add_elementwise_properties))
      out.push_back(std::move(p));
    return out;
  }
};

}  // namespace

std::string_view unary_fn_name(UnaryFn fn) { return entry(fn).name; }

std::optional<UnaryFn> parse_unary_fn(std::string_view name) {
  for (const auto& e : kFns)
    if (e.name == name) return e.fn;
  return std::nullopt;
}

std::span<const UnaryFn> elementwise_fns() { return kElementwise; }

long double eval_unary_formula(UnaryFn fn, long double x) {
  switch (fn) {
    case UnaryFn::kGeluErf:
    case UnaryFn::kGeluTanh:
    case UnaryFn::kSilu:
      // x * g(x) with g(-inf) = 0 (Φ, 0.5 (1 + tanh), sigmoid): -inf * 0 is
      // an invalid operation in IEEE 754 (§7.2), so NaN; at +inf, inf * 1.
      if (std::isinf(x) && x < 0) return std::numeric_limits<long double>::quiet_NaN();
      return eval_unary(fn, x);
    default:
      return eval_unary(fn, x);
  }
}

long double eval_unary(UnaryFn fn, long double x) {
  if (std::isnan(x)) return x;
  switch (fn) {
    case UnaryFn::kRelu:
      return x > 0 ? x : 0.0L;
    case UnaryFn::kGeluErf:
      if (std::isinf(x)) return x > 0 ? x : 0.0L;         // the limit (inf_policy LIMIT); FORMULA: eval_unary_formula
      return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));  // erfc: no cancellation for x << 0
    case UnaryFn::kGeluTanh: {
      if (std::isinf(x)) return x > 0 ? x : 0.0L;
      // 0.5 (1 + tanh u) = sigmoid(2u): the same function without the
      // cancellation of 1 + tanh u, which is total for u < -22 in long double
      // while the result (~x e^(2u)) is still representable in BF16/FP32.
      const long double u = kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x);
      return x * sigmoid(2.0L * u);
    }
    case UnaryFn::kSilu:
      if (std::isinf(x)) return x > 0 ? x : 0.0L;
      return x * sigmoid(x);
    case UnaryFn::kIdentity:
      return x;
    case UnaryFn::kExp:
      return std::exp(x);
    case UnaryFn::kLog:
      return std::log(x);
    case UnaryFn::kTanh:
      return std::tanh(x);
    case UnaryFn::kErf:
      return std::erf(x);
  }
  return x;
}

long double eval_unary_derivative(UnaryFn fn, long double x) {
  if (std::isnan(x)) return x;
  switch (fn) {
    case UnaryFn::kRelu:
      return x > 0 ? 1.0L : 0.0L;
    case UnaryFn::kGeluErf:
      if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
      return detail::std_normal_cdf(x) + x * detail::std_normal_pdf(x);
    case UnaryFn::kGeluTanh: {
      if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
      const long double t = std::tanh(kSqrt2OverPi * (x + kGeluTanhCubic * x * x * x));
      const long double du = kSqrt2OverPi * (1.0L + 3.0L * kGeluTanhCubic * x * x);
      return 0.5L * (1.0L + t) + 0.5L * x * (1.0L - t * t) * du;
    }
    case UnaryFn::kSilu: {
      if (std::isinf(x)) return x > 0 ? 1.0L : 0.0L;
      const long double s = sigmoid(x);
      return s * (1.0L + x * (1.0L - s));
    }
    case UnaryFn::kIdentity:
      return 1.0L;
    case UnaryFn::kExp:
      return std::exp(x);
    case UnaryFn::kLog:
      return 1.0L / x;
    case UnaryFn::kTanh: {
      const long double t = std::tanh(x);
      return 1.0L - t * t;
    }
    case UnaryFn::kErf:
      return 2.0L / std::sqrt(3.14159265358979323846264338327950288L) * std::exp(-x * x);
  }
  return 1.0L;
}

std::unique_ptr<Op> make_elementwise_op(UnaryFn fn) { return std::make_unique<ElementwiseOp>(fn); }

}  // namespace kc::ops
