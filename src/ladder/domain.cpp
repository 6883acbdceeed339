// kc — value domains, extents, ordered bits and enumerable domains (see domain.h).
#include "ladder/domain.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kc/json_writer.h"

namespace kc::ladder::detail {

bool ValueDomain::contains(double v) const {
  if (std::isnan(v)) return !finite_only;
  if (std::isinf(v)) return !finite_only;
  return v >= lo && v <= hi;
}

ValueDomain value_domain(const Contract& contract, DType dtype) {
  ValueDomain d;
  const double mx = dtype_info(dtype).max_finite;
  d.lo = -mx;
  d.hi = mx;
  d.text = "finite " + std::string(dtype_name(dtype));
  for (const Predicate& p : contract.pre) {
    if (p.kind != Predicate::Kind::kValueRange) continue;
    switch (p.range) {
      case Predicate::Range::kFinite:
        break;
      case Predicate::Range::kBounded:
        d.lo = -p.hi;
        d.hi = p.hi;
        d.text = "[-" + report::format_double(p.hi) + ", " + report::format_double(p.hi) + "]";
        break;
      case Predicate::Range::kInterval:
        d.lo = p.lo;
        d.hi = p.hi;
        d.text = "[" + report::format_double(p.lo) + ", " + report::format_double(p.hi) + "]";
        break;
      case Predicate::Range::kNormal:
        d.lo = p.lo - 8 * p.hi;
        d.hi = p.lo + 8 * p.hi;
        d.text = "[" + report::format_double(d.lo) + ", " + report::format_double(d.hi) + "] (normal(" +
                 report::format_double(p.lo) + ", " + report::format_double(p.hi) + ") +- 8 sigma)";
        break;
    }
    break;  // the first value_range decides, as in the engine's plan
  }
  d.lo = std::max(d.lo, -mx);
  d.hi = std::min(d.hi, mx);
  return d;
}

std::vector<std::string> extent_params(const Op& op) {
  std::vector<std::string> out;
  for (const Param& p : op.params()) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(p.default_value.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0' && !p.default_value.empty() && v >= 2) out.push_back(p.name);
  }
  return out;
}

namespace {
std::int64_t order_bits(std::uint64_t bits, int width) {
  const std::uint64_t sign = 1ull << (width - 1);
  const std::uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
}
std::uint64_t unorder_bits(std::int64_t k, int width) {
  const std::uint64_t sign = 1ull << (width - 1);
  return k < 0 ? (static_cast<std::uint64_t>(-k) | sign) : static_cast<std::uint64_t>(k);
}
}  // namespace

std::optional<std::int64_t> to_ordered(double v, DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return order_bits(std::bit_cast<std::uint64_t>(v), 64);
    case DType::kF32:
      return order_bits(std::bit_cast<std::uint32_t>(static_cast<float>(v)), 32);
    case DType::kF16:
      return order_bits(f32_to_f16_bits(static_cast<float>(round_to(v, DType::kF16))), 16);
    case DType::kBF16:
      return order_bits(f32_to_bf16_bits(static_cast<float>(round_to(v, DType::kBF16))), 16);
    default:
      return std::nullopt;
  }
}

double from_ordered(std::int64_t k, DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return std::bit_cast<double>(unorder_bits(k, 64));
    case DType::kF32:
      return std::bit_cast<float>(static_cast<std::uint32_t>(unorder_bits(k, 32)));
    case DType::kF16:
      return f16_bits_to_f32(static_cast<std::uint16_t>(unorder_bits(k, 16)));
    case DType::kBF16:
      return bf16_bits_to_f32(static_cast<std::uint16_t>(unorder_bits(k, 16)));
    default:
      return 0;
  }
}

EnumerableKind enumerable_kind(const Op& op) {
  std::vector<const TensorSpec*> in, out;
  for (const TensorSpec& t : op.signature()) (t.role == Role::kOut ? out : in).push_back(&t);
  if (in.size() != 1 || out.empty()) return EnumerableKind::kNone;
  const std::vector<std::string> ext = extent_params(op);
  if (ext.size() == 1 && ext[0] == "n" && op.params().size() == 1) return EnumerableKind::kUnary;
  if (ext.size() == 2 && ext[0] == "rows" && ext[1] == "cols") return EnumerableKind::kPairs;
  return EnumerableKind::kNone;
}

std::vector<double> all_values_16(DType format, const ValueDomain& domain, std::int64_t* excluded) {
  std::vector<double> v;
  v.reserve(65536);
  *excluded = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double x = format == DType::kF16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
    if (domain.contains(x)) v.push_back(x);
    else ++*excluded;
  }
  return v;
}

}  // namespace kc::ladder::detail
