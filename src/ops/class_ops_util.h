// kc — small helpers shared by the contract-class ops (stats, fused,
// elementwise, indexing, collective, train). Internal to src/ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kc/op.h"

namespace kc::ops::detail {

/// One tensor of a call under construction.
struct Slot {
  std::string name;
  Role role;
  Tensor tensor;
};

/// A Call for `op` from slots in signature order.
inline Call make_call_from(std::string_view op, const Config& config, std::vector<Slot> slots) {
  Call call;
  call.op = std::string(op);
  call.config = config;
  for (auto& s : slots) {
    call.names.push_back(std::move(s.name));
    call.roles.push_back(s.role);
    call.tensors.push_back(std::move(s.tensor));
  }
  return call;
}

/// The float dtype tensors of this op are stored in: the config's dtype when
/// it is a float format, else kInvalidArgument.
inline Result<DType> float_dtype(const Config& config) {
  if (!dtype_info(config.dtype).is_float)
    return invalid_argument("dtype " + std::string(dtype_name(config.dtype)) + " is not a float format");
  return config.dtype;
}

/// A strictly positive integer parameter, or kInvalidArgument naming it.
inline Result<std::int64_t> positive(const Config& config, const std::string& key, std::int64_t fallback) {
  const std::int64_t v = config.get_int(key, fallback);
  if (v <= 0) return invalid_argument("parameter " + key + " must be positive, got " + std::to_string(v));
  return v;
}

/// The names of the kOut/kInOut tensors of a call, in signature order.
inline std::vector<std::string> output_names(const Call& call) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < call.names.size(); ++i)
    if (call.roles[i] != Role::kIn) out.push_back(call.names[i]);
  return out;
}

/// max|x| and sum|x| over the finite elements of a tensor.
inline std::pair<double, double> abs_max_sum(const Tensor& t) {
  double mx = 0, sum = 0;
  const std::int64_t n = t.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const double a = std::fabs(t.at(i));
    if (!std::isfinite(a)) continue;
    mx = std::max(mx, a);
    sum += a;
  }
  return {mx, sum};
}

/// The base Op::expr_vars (integer params, max|x| and sum|x| over all float
/// inputs, L) overridden and extended by an op's own variables.
inline std::map<std::string, double> with_base_vars(std::map<std::string, double> base,
                                                    const std::map<std::string, double>& own) {
  for (const auto& [k, v] : own) base[k] = v;
  return base;
}

/// Standard normal cdf and pdf in long double.
inline long double std_normal_cdf(long double x) { return 0.5L * std::erfc(-x / std::sqrt(2.0L)); }
inline long double std_normal_pdf(long double x) {
  return std::exp(-0.5L * x * x) / std::sqrt(2.0L * 3.14159265358979323846264338327950288L);
}

}  // namespace kc::ops::detail
