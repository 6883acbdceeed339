#include "kc/declaration.h"

#include <algorithm>
#include <cmath>

#include "kc/metrics.h"

#include <array>

namespace kc {

namespace {

constexpr std::array<EnumEntry<Determinism>, 3> kDeterminism{{
    {Determinism::kBitwise, "BITWISE", "identical bits on every invocation with the same inputs"},
    {Determinism::kRunToRun, "RUN_TO_RUN", "invocations agree within relative 1e-7"},
    {Determinism::kNone, "NONE", "no determinism promised"},
}};

constexpr std::array<EnumEntry<NanPolicy>, 3> kNan{{
    {NanPolicy::kIeeePropagate, "IEEE_PROPAGATE", "NaN/Inf inputs propagate as IEEE 754 says"},
    {NanPolicy::kMask, "MASK", "NaN inputs are masked (replaced) by a documented value"},
    {NanPolicy::kRaise, "RAISE", "the kernel reports an error on NaN/Inf input"},
}};

constexpr std::array<EnumEntry<DenormalPolicy>, 4> kDenormal{{
    {DenormalPolicy::kIeee, "IEEE", "subnormal inputs and results are kept (gradual underflow)"},
    {DenormalPolicy::kFtz, "FTZ", "subnormal results are flushed to zero"},
    {DenormalPolicy::kDaz, "DAZ", "subnormal inputs are treated as zero"},
    {DenormalPolicy::kFtzDaz, "FTZ_DAZ", "both flush-to-zero and denormals-are-zero"},
}};

constexpr std::array<EnumEntry<OobPolicy>, 4> kOob{{
    {OobPolicy::kRaise, "RAISE", "an out-of-range index is reported as an error"},
    {OobPolicy::kClamp, "CLAMP", "an out-of-range index is clamped to [0, bound-1]"},
    {OobPolicy::kZero, "ZERO", "an out-of-range index yields zeros"},
    {OobPolicy::kUndefined, "UNDEFINED", "no promise (the caller must not pass one)"},
}};

template <typename E, std::size_t N>
bool set_enum(const std::array<EnumEntry<E>, N>& table, const std::string& value, E* out,
              std::string* error) {
  auto v = enum_parse(std::span<const EnumEntry<E>>(table), value);
  if (!v) {
    if (error) *error = "expected one of " + enum_choices(std::span<const EnumEntry<E>>(table));
    return false;
  }
  *out = *v;
  return true;
}

}  // namespace

std::span<const EnumEntry<Determinism>> determinism_table() { return kDeterminism; }

bool runs_agree(double a, double b, DType t, Determinism d) {
  switch (d) {
    case Determinism::kBitwise: return bitwise_equal(a, b, t);
    case Determinism::kRunToRun:
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
      if (a == b) return true;  // same infinities, +0 and -0
      return std::fabs(a - b) <= kRunToRunRelative * std::max(std::fabs(a), std::fabs(b));
    case Determinism::kNone: return true;
  }
  return false;
}
std::span<const EnumEntry<NanPolicy>> nan_policy_table() { return kNan; }
std::span<const EnumEntry<DenormalPolicy>> denormal_policy_table() { return kDenormal; }
std::span<const EnumEntry<OobPolicy>> oob_policy_table() { return kOob; }

std::string Declaration::get(const std::string& key) const {
  if (key == "accumulator") return accumulator ? std::string(dtype_name(*accumulator)) : "";
  if (key == "determinism") return std::string(enum_name(determinism_table(), determinism));
  if (key == "nan") return std::string(enum_name(nan_policy_table(), nan));
  if (key == "denormal") return std::string(enum_name(denormal_policy_table(), denormal));
  if (key == "oob") return std::string(enum_name(oob_policy_table(), oob));
  if (key == "shape_class") return shape_class;
  auto it = extra.find(key);
  return it == extra.end() ? "" : it->second;
}

bool Declaration::set(const std::string& key, const std::string& value, std::string* error) {
  if (key == "accumulator") {
    auto t = parse_dtype(value);
    if (!t) {
      if (error) *error = "unknown precision '" + value + "'";
      return false;
    }
    accumulator = *t;
    return true;
  }
  if (key == "determinism") return set_enum(kDeterminism, value, &determinism, error);
  if (key == "nan") return set_enum(kNan, value, &nan, error);
  if (key == "denormal") return set_enum(kDenormal, value, &denormal, error);
  if (key == "oob") return set_enum(kOob, value, &oob, error);
  if (key == "shape_class") {
    shape_class = value;
    return true;
  }
  // Also kept as an extra: declared text stays among the impl's facts.
  if (key == "broken_on_purpose") broken_on_purpose = value;
  extra[key] = value;
  return true;
}

}  // namespace kc
