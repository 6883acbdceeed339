// kc — Config, Call, the op registry, the default Op methods and the one
// table of built-in ops (see kc/op.h).
#include "kc/op.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <shared_mutex>

#include "kc/bound.h"
#include "kc/dtype.h"
#include "kc/obligation.h"
#include "ops/blas1/blas1.h"
#include "ops/class_ops.h"
#include "ops/complex/complex.h"
#include "ops/gemv/gemv.h"
#include "ops/matmul/matmul.h"
#include "ops/probe.h"
#include "ops/reduce/reduce.h"
#include "ops/softmax/softmax.h"

namespace kc {
namespace {

/// Whole-string integer parse; "64", "-3", "1e3" (an integral double) accepted.
std::optional<std::int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end == s.c_str() + s.size()) return v;
  end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18)
    return static_cast<std::int64_t>(d);
  return std::nullopt;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

}  // namespace

// ---- Config

std::string Config::get(const std::string& key, const std::string& fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : it->second;
}

std::int64_t Config::get_int(const std::string& key, std::int64_t fallback) const {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  return parse_int(it->second).value_or(fallback);
}

double Config::get_double(const std::string& key, double fallback) const {
  auto it = params.find(key);
  if (it == params.end()) return fallback;
  return parse_double(it->second).value_or(fallback);
}

std::string Config::to_string() const {
  std::string s = "dtype=" + std::string(dtype_name(dtype));
  for (const auto& [k, v] : params) s += " " + k + "=" + v;  // std::map: sorted, stable
  return s;
}

// ---- Call

Tensor& Call::t(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return tensors[i];
  KC_CHECK_MSG(false, "Call::t: no tensor with this name");
  return tensors.front();
}

const Tensor& Call::t(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return tensors[i];
  KC_CHECK_MSG(false, "Call::t: no tensor with this name");
  return tensors.front();
}

bool Call::has(std::string_view name) const {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---- Registry

Status OpRegistry::add(std::unique_ptr<Op> op) {
  if (!op) return invalid_argument("null op");
  std::unique_lock lock(mutex_);
  for (const auto& have : ops_)
    if (have->name() == op->name()) return invalid_argument("duplicate op name '" + std::string(op->name()) + "'");
  ops_.push_back(std::move(op));
  return ok_status();
}

const Op* OpRegistry::find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  for (const auto& op : ops_)
    if (op->name() == name) return op.get();
  return nullptr;
}

std::vector<const Op*> OpRegistry::all() const {
  std::shared_lock lock(mutex_);
  std::vector<const Op*> out;
  for (const auto& op : ops_) out.push_back(op.get());
  return out;
}

std::vector<std::string> OpRegistry::names() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  for (const auto& op : ops_) out.emplace_back(op->name());
  return out;
}

std::size_t OpRegistry::size() const {
  std::shared_lock lock(mutex_);
  return ops_.size();
}

Status register_builtin_ops(OpRegistry& registry) {
  using ops::Blas1Kind;
  // The one table of core ops, in `kc list ops` order; the contract-class ops
  // follow from their own table (ops/class_ops.cpp).
  const std::function<std::unique_ptr<Op>()> table[] = {
      [] { return ops::make_matmul_op(); },
      [] { return ops::make_gemv_op(); },
      [] { return ops::make_blas1_op(Blas1Kind::kDot); },
      [] { return ops::make_blas1_op(Blas1Kind::kAsum); },
      [] { return ops::make_blas1_op(Blas1Kind::kNrm2); },
      [] { return ops::make_blas1_op(Blas1Kind::kScal); },
      [] { return ops::make_blas1_op(Blas1Kind::kIamax); },
      [] { return ops::make_complex_op(ops::ComplexKind::kDot); },
      [] { return ops::make_complex_op(ops::ComplexKind::kScal); },
      [] { return ops::make_complex_op(ops::ComplexKind::kScalReal); },
      [] { return ops::make_complex_op(ops::ComplexKind::kIamax); },
      [] { return ops::make_complex_op(ops::ComplexKind::kGemv); },
      [] { return ops::make_complex_op(ops::ComplexKind::kGemm); },
      [] { return ops::make_sum_op(); },
      [] { return ops::make_softmax_op(/*log=*/false); },
      [] { return ops::make_softmax_op(/*log=*/true); },
  };
  for (const auto& make : table) {
    std::unique_ptr<Op> op = make();
    const std::string name(op->name());
    KC_RETURN_IF_ERROR(registry.add(std::move(op)).with_context("registering op " + name));
  }
  return ops::register_class_ops(registry);
}

namespace {

OpRegistry& process_ops() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    const Status s = register_builtin_ops(*r);
    KC_CHECK_MSG(s.ok(), "built-in op table is inconsistent (duplicate name)");
    return r;
  }();
  return *registry;
}

}  // namespace

const OpRegistry& builtin_ops() { return process_ops(); }

Status register_op(std::unique_ptr<Op> op) { return process_ops().add(std::move(op)); }

// ---- Fills

void fill_float_inputs(Call& call, const FillSpec& fill, Rng& rng) {
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    if (call.roles[i] == Role::kOut) continue;
    Tensor& t = call.tensors[i];
    if (!dtype_info(t.dtype()).is_float) continue;
    const std::int64_t n = t.numel();
    for (std::int64_t j = 0; j < n; ++j) {
      double v = 0;
      switch (fill.kind) {
        case FillSpec::Kind::kNormal: v = rng.normal(fill.a, fill.b); break;
        case FillSpec::Kind::kUniform: v = rng.uniform(fill.a, fill.b); break;
        case FillSpec::Kind::kInteger: {
          // Small exact integers: sums and products of them are exact in every
          // format wide enough to hold the result, so a bit-exact answer exists.
          const auto lo = static_cast<std::int64_t>(std::ceil(fill.a));
          const auto hi = static_cast<std::int64_t>(std::floor(fill.b));
          v = static_cast<double>(rng.uniform_int(lo, std::max(lo, hi)));
          break;
        }
      }
      t.set(j, v);
    }
  }
}

// ---- Default Op methods

void Op::fill(Call& call, const FillSpec& fill, Rng& rng) const { fill_float_inputs(call, fill, rng); }

Status Op::apply_probe(Call& call, const Probe& probe, Rng& rng) const {
  std::vector<std::string> targets = probe.tensors;
  if (targets.empty()) targets = ops::detail::float_input_names(call);
  return ops::detail::apply_generic_probe(call, probe, rng, targets, accumulation_length(call));
}

std::vector<obligation::Property> Op::properties() const { return {}; }

const std::vector<OracleOption>& Op::oracle_options() const {
  static const std::vector<OracleOption> none;
  return none;
}

const OracleOption* find_oracle_option(const Op& op, std::string_view key) {
  for (const OracleOption& o : op.oracle_options())
    if (o.key == key) return &o;
  return nullptr;
}

Result<std::vector<double>> Op::magnitude(const Call& call, const std::string& output) const {
  // Default error model: the output's own size, |ref| elementwise (a relative bound).
  KC_ASSIGN_OR_RETURN(OracleResult ref, oracle(call, OracleOptions{}));
  for (std::size_t i = 0; i < ref.output_names.size(); ++i) {
    if (ref.output_names[i] != output) continue;
    std::vector<double> mag = ref.outputs[i];
    for (double& v : mag) v = std::fabs(v);
    return mag;
  }
  return not_found("op " + std::string(name()) + " has no output '" + output + "'");
}

double Op::accumulation_length(const Call& call) const { return 1; }

double Op::underflow_allowance(const Call& call) const {
  // A storage format narrower than FP32 (FP16, bf16, FP8) whose impl declares
  // a wider accumulator: the arithmetic, and so its underflow, happens in the
  // accumulator, with one more underflow for the store of the result (as
  // attention and matmul charge it). Charging (L + 2) FP16 underflows (2^-25
  // each) to a softmax of 1000 columns would allow about 3e-5 absolute, more
  // than half an ulp of its outputs. FP32 and FP64 storage keep the rule below.
  const DType store = call.config.dtype;
  const DTypeInfo& info = dtype_info(store);
  if (info.is_float && info.mantissa_bits < dtype_info(DType::kF32).mantissa_bits && call.config.accumulator &&
      dtype_info(*call.config.accumulator).mantissa_bits > info.mantissa_bits)
    return (accumulation_length(call) + 2) * underflow_unit(*call.config.accumulator) + underflow_unit(store);
  return (accumulation_length(call) + 2) * underflow_unit(store);
}

double gemm_underflow_allowance(double k, double alpha, DType p) {
  return (std::max(1.0, std::fabs(alpha)) * k + 4) * underflow_unit(p);
}

double BoundAllowance::allowed(double magnitude, double ref) const {
  return factor * magnitude + rounding * std::fabs(ref) + underflow;
}

BoundAllowance bound_allowance(const Op& op, const Call& call, double factor) {
  return {factor, unit_roundoff(call.config.dtype), op.underflow_allowance(call)};
}

std::map<std::string, double> Op::expr_vars(const Call& call) const {
  std::map<std::string, double> vars;
  for (const auto& [k, v] : call.config.params)
    if (auto i = parse_int(v)) vars[k] = static_cast<double>(*i);
  double mx = 0, sum = 0;
  for (std::size_t i = 0; i < call.tensors.size(); ++i) {
    if (call.roles[i] == Role::kOut) continue;
    const Tensor& t = call.tensors[i];
    if (!dtype_info(t.dtype()).is_float) continue;
    const std::int64_t n = t.numel();
    for (std::int64_t j = 0; j < n; ++j) {
      const double a = std::fabs(t.at(j));
      if (!std::isfinite(a)) continue;  // a probe's NaN/inf must not make the tolerance infinite
      mx = std::max(mx, a);
      sum += a;
    }
  }
  vars["max|x|"] = mx;
  vars["sum|x|"] = sum;
  vars["L"] = accumulation_length(call);
  return vars;
}

// ---- Generic probes

namespace ops::detail {

std::vector<std::string> float_input_names(const Call& call) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < call.tensors.size(); ++i)
    if (call.roles[i] != Role::kOut && dtype_info(call.tensors[i].dtype()).is_float)
      out.push_back(call.names[i]);
  return out;
}

std::int64_t density_count(double density, std::int64_t n) {
  if (n <= 0) return 0;
  const double d = std::clamp(std::isnan(density) ? 0.0 : density, 0.0, 1.0);
  const auto c = static_cast<std::int64_t>(std::llround(d * static_cast<double>(n)));
  return std::clamp<std::int64_t>(c, 1, n);
}

std::vector<std::int64_t> pick_positions(std::int64_t n, std::int64_t count, Rng& rng) {
  // Partial Fisher-Yates: the first `count` entries of a random permutation.
  std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  count = std::clamp<std::int64_t>(count, 0, n);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t j = rng.uniform_int(i, n - 1);
    std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(j)]);
  }
  idx.resize(static_cast<std::size_t>(count));
  std::sort(idx.begin(), idx.end());
  return idx;
}

Status apply_generic_probe(Call& call, const Probe& probe, Rng& rng,
                           const std::vector<std::string>& targets, double accumulation_length) {
  const std::string& p = probe.name;
  auto arg = [&](std::size_t i, double fallback) {
    return probe.args.size() > i ? probe.args[i] : fallback;
  };
  for (const std::string& name : targets) {
    if (!call.has(name)) return invalid_argument("probe target '" + name + "' is not a tensor of " + call.op);
  }
  const double inf = std::numeric_limits<double>::infinity();

  if (p == "nan" || p == "inf" || p == "neg_inf") {
    const double v = p == "nan" ? std::numeric_limits<double>::quiet_NaN() : (p == "inf" ? inf : -inf);
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      for (std::int64_t j : pick_positions(t.numel(), density_count(probe.density, t.numel()), rng))
        t.set(j, v);
    }
    return ok_status();
  }
  if (p == "nonfinite") {
    // NaN, +Inf and -Inf in turn at sparse random positions: one probe shows
    // all three propagation rules (C-EXC-01) on the same call.
    const double cycle[3] = {std::numeric_limits<double>::quiet_NaN(), inf, -inf};
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      const auto at = pick_positions(t.numel(), std::max<std::int64_t>(3, density_count(probe.density, t.numel())), rng);
      for (std::size_t k = 0; k < at.size(); ++k) t.set(at[k], cycle[k % 3]);
    }
    return ok_status();
  }
  if (p == "subnormal") {
    // Values +-v * [1, 2): with the default v = min_normal / 16 they lie four
    // binades below min_normal, subnormal in the tensor's format.
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      const double v = arg(0, dtype_info(t.dtype()).min_normal / 16);
      for (std::int64_t j : pick_positions(t.numel(), density_count(probe.density, t.numel()), rng)) {
        const double s = rng.uniform() < 0.5 ? -1.0 : 1.0;
        t.set(j, s * v * rng.uniform(1.0, 2.0));
      }
    }
    return ok_status();
  }
  if (p == "zero") {
    // Every element of every target becomes +0: an all-zero output is then right
    // and any other constant is wrong.
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, 0.0);
    }
    return ok_status();
  }
  if (p == "saturation") {
    // Positive terms with mean 4v/L, so an accumulation of L of them reaches
    // ~4v and passes v (FP16 max 65504 by default) a quarter of the way in: an
    // accumulator of the narrow format saturates or overflows, an fp32 one does not.
    const double v = arg(0, 65504.0);
    const double per_term = 4 * v / std::max(1.0, accumulation_length);
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, per_term * rng.uniform(0.5, 1.5));
    }
    return ok_status();
  }
  if (p == "mantissa") {
    // 1 + j 2^-bits with odd j in {1, 3, 5, 7}: exact with `bits` fraction bits
    // and changed by rounding to any format with fewer (1 + 2^-13 survives fp32,
    // not tf32/fp16/bf16). Random signs avoid a one-sided drift.
    const int bits = static_cast<int>(arg(0, 13));
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      for (std::int64_t j = 0; j < t.numel(); ++j) {
        const double jj = static_cast<double>(2 * rng.uniform_int(0, 3) + 1);
        const double s = rng.uniform() < 0.5 ? -1.0 : 1.0;
        t.set(j, s * (1 + std::ldexp(jj, -bits)));
      }
    }
    return ok_status();
  }
  if (p == "offset") {
    // Large mean, small spread (C-PRC-02): x0 is added to every element, so a
    // value_range [-50, 50] fill becomes [x0 - 50, x0 + 50]. With several
    // offsets, row r (index along dim 0) gets x0_{r mod k}: one call holds a
    // growing sequence of offsets, e.g. offset(0, 100, 1e4, 1e5).
    if (probe.args.empty()) return invalid_argument("offset takes one or more offsets: offset(x0, ...)");
    for (const std::string& name : targets) {
      Tensor& t = call.t(name);
      const std::int64_t n = t.numel();
      const std::int64_t row_len = t.rank() >= 2 && t.dim(0) > 0 ? n / t.dim(0) : std::max<std::int64_t>(n, 1);
      for (std::int64_t j = 0; j < n; ++j) {
        const auto row = static_cast<std::size_t>(j / row_len);
        t.set(j, t.at(j) + probe.args[row % probe.args.size()]);
      }
    }
    return ok_status();
  }
  if (p == "values") {
    // Pinned inputs (a shrunk counterexample): per named tensor, its elements
    // in row-major order, repeated when the list is shorter than the tensor.
    // The plan lays the lists out in args as [count, values..., count, ...],
    // one per name in probe.tensors (engine/plan.cpp).
    if (probe.tensors.empty()) return invalid_argument("values needs a tensor name first: values(x, 1.5, -2)");
    std::size_t at = 0;
    for (const std::string& name : probe.tensors) {
      if (!call.has(name)) return invalid_argument("values: " + call.op + " has no tensor '" + name + "'");
      if (at >= probe.args.size()) return invalid_argument("values: no values given for tensor '" + name + "'");
      const auto count = static_cast<std::size_t>(probe.args[at++]);
      if (count == 0 || at + count > probe.args.size())
        return invalid_argument("values: tensor '" + name + "' needs at least one value");
      Tensor& t = call.t(name);
      for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, probe.args[at + static_cast<std::size_t>(j) % count]);
      at += count;
    }
    return ok_status();
  }
  if (p == "oob") return invalid_argument("probe 'oob' applies to indexing ops, not " + call.op);
  return invalid_argument("unknown probe '" + p +
                          "' (known: nan, inf, neg_inf, nonfinite, subnormal, zero, saturation, mantissa, offset, "
                          "values, oob)");
}

}  // namespace ops::detail
}  // namespace kc
