// kc — level-1 BLAS ops: dot, asum, nrm2, scal, iamax.
//
// Roles, in the order every op folder follows:
//   signature/params · make_call · fill/probes · oracle · error model
// Vectors are rank-1 tensors of length n with stride |incx| (|incy| for dot's
// y): the storage a BLAS routine addresses, (n - 1) |inc| + 1 elements, and
// nothing beyond. The increment keeps its sign in the call's params, with the
// BLAS meaning: for inc < 0 the routine walks the storage from its far end
// (x(i) = X(1 + (n - i) |inc|)), for inc = 0 it reads X(1) every time (the
// tensor then has stride 0 and one storage element). Only impls declaring
// increments = BLAS pass the sign on; the others run positive increments only
// (Impl::can_implement).
#include "ops/blas1/blas1.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"
#include "ops/probe.h"

namespace kc::ops {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// sqrt(sum x_i^2) without overflow or underflow: scale by max|x_i| first.
/// NaN anywhere gives NaN; otherwise an infinite element gives +inf.
double scaled_norm2(const std::vector<double>& x) {
  double scale = 0;
  bool has_inf = false;
  for (double v : x) {
    if (std::isnan(v)) return kNaN;
    if (std::isinf(v))
      has_inf = true;
    else
      scale = std::max(scale, std::fabs(v));
  }
  if (has_inf) return kInf;
  if (scale == 0) return 0;
  long double ssq = 0;
  for (double v : x) {
    const long double r = static_cast<long double>(v) / scale;
    ssq += r * r;
  }
  return static_cast<double>(scale * std::sqrt(ssq));
}

/// Reference BLAS isamax/idamax on logical values, 0-based: the first index of
/// the largest |x_i|, found by `if (|x_i| > dmax)` from dmax = |x_0|. So a NaN
/// at x_0 wins (nothing compares greater than NaN) and a NaN elsewhere is never
/// chosen; an infinity is larger than every finite value. n < 1 gives -1
/// (isamax's 0). With `first_nan` the index of the first NaN wins wherever it
/// is, and without a NaN the rule above applies (BLIS's amaxv, flame/blis PR
/// #382; the rule Reference-LAPACK gave icamax/izamax).
double reference_iamax(const std::vector<double>& x, bool first_nan) {
  if (x.empty()) return -1;
  if (first_nan) {
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::isnan(x[i])) return static_cast<double>(i);
  }
  std::size_t best = 0;
  double dmax = std::fabs(x[0]);
  for (std::size_t i = 1; i < x.size(); ++i) {
    if (std::fabs(x[i]) > dmax) {
      best = i;
      dmax = std::fabs(x[i]);
    }
  }
  return static_cast<double>(best);
}

// The `with` options: what scal does at alpha = 0, which index iamax gives
// when x holds a NaN, and what asum, scal and iamax do at inc <= 0. The BLAS
// libraries differ on them (docs/backends/blas.md); each impl declares its
// rule (scal_alpha_zero, iamax_nan, nonpositive_inc) and the contract that
// judges it names the same rule here.
constexpr char kAlphaZeroKey[] = "alpha_zero";
constexpr char kIamaxNanKey[] = "iamax_nan";
constexpr char kNonpositiveIncKey[] = "nonpositive_inc";

/// The signed increment of `key` (incx, incy): any integer, default 1.
std::int64_t increment(const Call& call, const char* key) { return call.get_int(key, 1); }

/// An increment parameter: any integer an LP64 BLAS INTEGER holds.
Result<std::int64_t> increment_param(const Config& config, const char* key) {
  const std::int64_t v = config.get_int(key, 1);
  if (v < -INT32_MAX || v > INT32_MAX)
    return invalid_argument(std::string("parameter ") + key + " = " + std::to_string(v) +
                            " does not fit a BLAS INTEGER (|inc| <= 2^31 - 1)");
  return v;
}

/// The vector the routine sees, x(1..n) in BLAS order: the tensor's logical
/// elements, reversed for inc < 0 (x(1) is the far end of the storage); for
/// inc = 0 the stride-0 tensor already repeats X(1) n times.
std::vector<double> walked(const Tensor& t, std::int64_t inc) {
  std::vector<double> v = t.to_doubles();
  if (inc < 0) std::reverse(v.begin(), v.end());
  return v;
}

std::string option_of(const OracleOptions& o, const char* key, const char* fallback) {
  auto it = o.with.find(key);
  return it == o.with.end() ? fallback : it->second;
}

class Blas1Op final : public Op {
 public:
  explicit Blas1Op(Blas1Kind kind) : kind_(kind) {}

  // ---- signature/params
  std::string_view name() const override {
    switch (kind_) {
      case Blas1Kind::kDot:
        return "dot";
      case Blas1Kind::kAsum:
        return "asum";
      case Blas1Kind::kNrm2:
        return "nrm2";
      case Blas1Kind::kScal:
        return "scal";
      case Blas1Kind::kIamax:
        return "iamax";
    }
    return "?";
  }
  std::string_view summary() const override {
    switch (kind_) {
      case Blas1Kind::kDot:
        return "dot product out = sum_i x_i y_i";
      case Blas1Kind::kAsum:
        return "sum of magnitudes out = sum_i |x_i|";
      case Blas1Kind::kNrm2:
        return "Euclidean norm out = sqrt(sum_i x_i^2), oracle scaled against overflow";
      case Blas1Kind::kScal:
        return "in-place scaling x = alpha * x";
      case Blas1Kind::kIamax:
        return "0-based index of the first max |x_i| (reference-BLAS NaN rule: NaN at x_0 wins, "
               "NaN elsewhere is never chosen)";
    }
    return "";
  }
  const std::vector<TensorSpec>& signature() const override {
    static const std::vector<TensorSpec> dot = {
        {"x", Role::kIn, "vector of length n, storage stride |incx| (the sign in the params)"},
        {"y", Role::kIn, "vector of length n, storage stride |incy| (the sign in the params)"},
        {"out", Role::kOut, "the scalar result, shape (1)"},
    };
    static const std::vector<TensorSpec> reduce = {
        {"x", Role::kIn, "vector of length n, storage stride |incx| (the sign in the params)"},
        {"out", Role::kOut, "the scalar result, shape (1)"},
    };
    static const std::vector<TensorSpec> scal = {
        {"x", Role::kInOut, "vector of length n, storage stride |incx|, scaled in place"},
    };
    static const std::vector<TensorSpec> iamax = {
        {"x", Role::kIn, "vector of length n, storage stride |incx| (the sign in the params)"},
        {"out", Role::kOut, "I64 shape (1): 0-based index of the first max |x_i|"},
    };
    switch (kind_) {
      case Blas1Kind::kDot:
        return dot;
      case Blas1Kind::kScal:
        return scal;
      case Blas1Kind::kIamax:
        return iamax;
      default:
        return reduce;
    }
  }
  const std::vector<Param>& params() const override {
    static const std::vector<Param> dot = {
        {"n", "1024", "vector length (accumulation length)"},
        {"incx", "1", "BLAS increment of x: any integer (< 0 walks from the far end, 0 repeats x(1))"},
        {"incy", "1", "BLAS increment of y: any integer (< 0 walks from the far end, 0 repeats y(1))"},
    };
    static const std::vector<Param> reduce = {
        {"n", "1024", "vector length"},
        {"incx", "1", "BLAS increment of x: any integer (< 0 walks from the far end, 0 repeats x(1))"},
    };
    static const std::vector<Param> scal = {
        {"n", "1024", "vector length"},
        {"incx", "1", "BLAS increment of x: any integer (< 0 walks from the far end, 0 repeats x(1))"},
        {"alpha", "1.5", "the scale factor (not a power of two, so the product rounds)"},
    };
    switch (kind_) {
      case Blas1Kind::kDot:
        return dot;
      case Blas1Kind::kScal:
        return scal;
      default:
        return reduce;
    }
  }

  // ---- make_call
  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
    // Every increment is legal BLAS; the tensor holds |inc| (the sign stays
    // in the params), so its storage is what the routine addresses.
    KC_ASSIGN_OR_RETURN(std::int64_t incx, increment_param(config, "incx"));
    std::vector<detail::Slot> slots;
    slots.push_back({"x", kind_ == Blas1Kind::kScal ? Role::kInOut : Role::kIn, Tensor(dt, {n}, {std::abs(incx)})});
    if (kind_ == Blas1Kind::kDot) {
      KC_ASSIGN_OR_RETURN(std::int64_t incy, increment_param(config, "incy"));
      slots.push_back({"y", Role::kIn, Tensor(dt, {n}, {std::abs(incy)})});
    }
    if (kind_ == Blas1Kind::kIamax)
      slots.push_back({"out", Role::kOut, Tensor(DType::kI64, {1})});
    else if (kind_ != Blas1Kind::kScal)
      slots.push_back({"out", Role::kOut, Tensor(dt, {1})});
    return detail::make_call_from(name(), config, std::move(slots));
  }

  // ---- fill/probes
  Status apply_probe(Call& call, const Probe& probe, Rng& rng) const override {
    std::vector<std::string> targets = probe.tensors;
    if (targets.empty()) targets = detail::float_input_names(call);
    if (probe.name == "saturation" && (kind_ == Blas1Kind::kDot || kind_ == Blas1Kind::kNrm2)) {
      // The accumulated terms are products (x_i y_i or x_i^2): entries of size
      // sqrt(4v/n) make each term ~4v/n and the sum ~4v.
      const double v = probe.args.empty() ? 65504.0 : probe.args[0];
      const double s = std::sqrt(4 * v / static_cast<double>(call.t("x").numel()));
      for (const std::string& name : targets) {
        if (!call.has(name)) return invalid_argument("probe target '" + name + "' is not a tensor of " + call.op);
        Tensor& t = call.t(name);
        for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, s * rng.uniform(0.5, 1.5));
      }
      return ok_status();
    }
    if (probe.name == "overflow_range" || probe.name == "underflow_range") {
      if (kind_ != Blas1Kind::kNrm2)
        return invalid_argument("probe '" + probe.name + "' applies to nrm2 (its squares leave the format), not " +
                                call.op);
      return apply_range_probe(call, probe, rng, targets);
    }
    return detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
  }

  // overflow_range(f): |x_i| = u_i f max / sqrt(n), u_i in [0.5, 1], random
  // signs (default f = 0.5): ||x|| <= f max is representable while every
  // square x_i^2 >= (f max)^2 / (4 n) overflows the format. underflow_range:
  // |x_i| in [2^(e-1), 2^e] with e = ilogb(smallest subnormal) / 2 - 2 (2^-76
  // in FP32, 2^-539 in FP64): normal numbers whose squares are below half the
  // smallest subnormal, so a sum of squares in the format is 0 while ||x|| is
  // a normal number. A scaled nrm2 (Blue's algorithm, reference snrm2.f90
  // since 3.10) returns ||x|| to rounding error on both.
  Status apply_range_probe(Call& call, const Probe& probe, Rng& rng, const std::vector<std::string>& targets) const {
    for (const std::string& name : targets) {
      if (!call.has(name)) return invalid_argument("probe target '" + name + "' is not a tensor of " + call.op);
      Tensor& t = call.t(name);
      const DTypeInfo& info = dtype_info(t.dtype());
      const double n = static_cast<double>(std::max<std::int64_t>(1, t.numel()));
      double scale = 0;
      if (probe.name == "overflow_range") {
        const double f = probe.args.empty() ? 0.5 : probe.args[0];
        if (!(f > 0 && f <= 1)) return invalid_argument("overflow_range(f) takes 0 < f <= 1");
        scale = f * info.max_finite / std::sqrt(n);
      } else {
        const double min_sub = std::ldexp(info.min_normal, -info.mantissa_bits);
        scale = std::ldexp(1.0, std::ilogb(min_sub) / 2 - 2);
      }
      for (std::int64_t j = 0; j < t.numel(); ++j) {
        const double s = rng.uniform() < 0.5 ? -1.0 : 1.0;
        t.set(j, s * scale * rng.uniform(0.5, 1.0));
      }
    }
    return ok_status();
  }

  // ---- oracle
  // nrm2 and dot walk every increment: reference dnrm2.f90 (3.10+) documents
  // INCX < 0 (x(i) = X(1 - (n - i) INCX)) and INCX = 0 (x(1) counted n
  // times), ddot.f starts a negative increment at the far end and steps INCX
  // = 0 on the spot. asum, scal and iamax at inc <= 0 follow the declared
  // rule (nonpositive_inc): quick_return, the default, is reference dasum.f,
  // dscal.f and idamax.f 3.11 (IF (N.LE.0 .OR. INCX.LE.0) RETURN: 0, x
  // unchanged, index 0); walk runs the routine over the walked elements.
  bool quick_return(const Call& call, const OracleOptions& options) const {
    return increment(call, "incx") <= 0 && option_of(options, kNonpositiveIncKey, "quick_return") == "quick_return";
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const override {
    const std::int64_t incx = increment(call, "incx");
    const std::vector<double> x = walked(call.t("x"), incx);
    OracleResult r;
    long double acc = 0;
    switch (kind_) {
      case Blas1Kind::kDot: {
        const std::vector<double> y = walked(call.t("y"), increment(call, "incy"));
        for (std::size_t i = 0; i < x.size(); ++i) acc += static_cast<long double>(x[i]) * y[i];
        r.outputs.push_back({static_cast<double>(acc)});
        break;
      }
      case Blas1Kind::kAsum:
        if (!quick_return(call, options))
          for (double v : x) acc += std::fabs(v);
        r.outputs.push_back({static_cast<double>(acc)});
        break;
      case Blas1Kind::kNrm2:
        r.outputs.push_back({scaled_norm2(x)});
        break;
      case Blas1Kind::kScal: {
        // Elementwise, so the tensor's order is the output's; x as stored.
        std::vector<double> out = call.t("x").to_doubles();
        if (quick_return(call, options)) {
          r.outputs.push_back(std::move(out));
          r.output_names = {"x"};
          return r;
        }
        // alpha is a scalar of the call's precision (sscal's REAL SA).
        const double alpha = round_to(call.get_double("alpha", 1.5), call.config.dtype);
        // zero_fill: alpha = 0 stores zeros and never reads x (NaN and Inf in x
        // give 0); multiply, the default, is the IEEE product (0 * NaN = NaN,
        // 0 * Inf = NaN), what reference sscal.f 3.11 computes.
        const bool zero_fill = option_of(options, kAlphaZeroKey, "multiply") == "zero_fill" && alpha == 0;
        // alpha * x_i in double is exact for FP32 operands (48 significant
        // bits) and the correctly rounded product for FP64 ones: either way one
        // rounding into the output format, which ulp 0 demands.
        auto scale = [&](double v) { return zero_fill ? 0.0 : alpha * v; };
        if (incx == 0) {
          // walk at inc = 0: X(1) is scaled n times over, each product
          // rounded into the format as it is stored.
          double v = out.empty() ? 0.0 : out[0];
          for (std::size_t i = 0; i < out.size(); ++i) v = round_to(scale(v), call.config.dtype);
          std::fill(out.begin(), out.end(), v);
        } else {
          for (double& v : out) v = scale(v);
        }
        r.outputs.push_back(std::move(out));
        r.output_names = {"x"};
        return r;
      }
      case Blas1Kind::kIamax:
        r.outputs.push_back({quick_return(call, options)
                                 ? -1.0
                                 : reference_iamax(x, option_of(options, kIamaxNanKey, "greater_than") == "first_nan")});
        break;
    }
    r.output_names = {"out"};
    return r;
  }

  const std::vector<OracleOption>& oracle_options() const override {
    static const OracleOption nonpositive = {
        kNonpositiveIncKey,
        {"quick_return", "walk"},
        "incx <= 0: quick_return (the default) is reference dasum.f, dscal.f and idamax.f 3.11 (0, x unchanged, "
        "no index); walk runs the routine over the elements the increment addresses (from the far end for incx < "
        "0, x(1) n times for incx = 0)"};
    static const std::vector<OracleOption> scal = {
        {kAlphaZeroKey,
         {"multiply", "zero_fill"},
         "alpha = 0: multiply (the default) forms the IEEE product alpha * x_i, so NaN and Inf in x give NaN "
         "(reference sscal.f/dscal.f 3.11); zero_fill stores 0 without reading x"},
        nonpositive,
    };
    static const std::vector<OracleOption> iamax = {
        {kIamaxNanKey,
         {"greater_than", "first_nan"},
         "which index a NaN gets: greater_than (the default) is reference isamax.f's |x_i| > max scan, where a NaN "
         "at x_0 wins and any later NaN never does; first_nan returns the first NaN wherever it is"},
        nonpositive,
    };
    static const std::vector<OracleOption> asum = {nonpositive};
    static const std::vector<OracleOption> none;
    if (kind_ == Blas1Kind::kScal) return scal;
    if (kind_ == Blas1Kind::kIamax) return iamax;
    if (kind_ == Blas1Kind::kAsum) return asum;
    return none;
  }

  // ---- error model
  // Recursive summation of n terms: |err| <= gamma_{n-1} sum|t_i| (Higham §4.2),
  // covered by gamma_n * sum|t_i| with t_i = x_i y_i (dot) or |x_i| (asum).
  // nrm2: sum of squares within gamma_n ||x||^2, halved by the sqrt, plus the
  // sqrt's own rounding: gamma_{n+1} ||x|| covers it. scal: one rounding of
  // |alpha x_i|. iamax: exact (magnitude 0).
  // At inc <= 0 the sums run over the walked elements (x(1) n times for inc =
  // 0), the same terms as the oracle's; scal's stays elementwise, in the
  // tensor's order.
  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    const std::vector<double> x = walked(call.t("x"), increment(call, "incx"));
    if (kind_ == Blas1Kind::kScal) {
      if (output != "x") return not_found("scal has no output '" + output + "'");
      const double alpha = std::fabs(round_to(call.get_double("alpha", 1.5), call.config.dtype));
      const std::vector<double> stored = call.t("x").to_doubles();
      std::vector<double> mag(stored.size());
      for (std::size_t i = 0; i < stored.size(); ++i) mag[i] = alpha * std::fabs(stored[i]);
      return mag;
    }
    if (output != "out") return not_found(std::string(name()) + " has no output '" + output + "'");
    long double s = 0;
    switch (kind_) {
      case Blas1Kind::kDot: {
        const std::vector<double> y = walked(call.t("y"), increment(call, "incy"));
        for (std::size_t i = 0; i < x.size(); ++i) s += std::fabs(static_cast<long double>(x[i]) * y[i]);
        break;
      }
      case Blas1Kind::kAsum:
        for (double v : x) s += std::fabs(v);
        break;
      case Blas1Kind::kNrm2:
        s = scaled_norm2(x);
        break;
      default:
        break;
    }
    return std::vector<double>{static_cast<double>(s)};
  }

  double accumulation_length(const Call& call) const override {
    const auto n = static_cast<double>(call.get_int("n", 1024));
    switch (kind_) {
      case Blas1Kind::kDot:
      case Blas1Kind::kAsum:
        return n;
      case Blas1Kind::kNrm2:
        return n + 1;
      default:
        return 1;
    }
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    std::map<std::string, double> vars = Op::expr_vars(call);
    vars["n"] = vars["N"] = static_cast<double>(call.t("x").numel());
    return vars;
  }

 private:
  Blas1Kind kind_;

 public:
  // ---- what the rest of kc asks of this op (kc/op.h)
  // dot, asum and nrm2 are reductions and scal an elementwise op in the
  // language's scope classes; iamax is neither.
  std::vector<std::string> scope_classes() const override {
    switch (kind_) {
      case Blas1Kind::kDot:
      case Blas1Kind::kAsum:
      case Blas1Kind::kNrm2:
        return {"reduction"};
      case Blas1Kind::kScal:
        return {"elementwise"};
      case Blas1Kind::kIamax:
        return {};
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<Op> make_blas1_op(Blas1Kind kind) { return std::make_unique<Blas1Op>(kind); }

}  // namespace kc::ops
