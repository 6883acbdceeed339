#include "engine/poison.h"

#include <cstring>

namespace kc::engine {

std::uint64_t poison_bits(DType t) {
  switch (t) {
    case DType::kF64: return 0x7FF8000000004B43ull;
    case DType::kF32:
    case DType::kTF32: return 0x7FC04B43u;
    case DType::kF16: return 0x7E00u | (0x4B43u & 0x1FFu);  // 9 payload bits below the quiet bit
    case DType::kBF16: return 0x7FC0u | (0x4B43u & 0x3Fu);  // 6 payload bits below the quiet bit
    case DType::kFP8E5M2: return 0x7Du;
    case DType::kFP8E4M3: return 0xFFu;
    case DType::kI32: return 0xA5A5A5A5u;
    case DType::kI64: return 0xA5A5A5A5A5A5A5A5ull;
  }
  return 0;
}

std::uint64_t fill_bits(DType t, Fill fill) {
  if (fill == Fill::kPoison) return poison_bits(t);
  switch (t) {  // -0.3125 = -1.25 * 2^-2
    case DType::kF64: return 0xBFD4000000000000ull;
    case DType::kF32:
    case DType::kTF32: return 0xBEA00000u;
    case DType::kF16: return 0xB500u;
    case DType::kBF16: return 0xBEA0u;
    case DType::kFP8E5M2: return 0xB5u;
    case DType::kFP8E4M3: return 0xAAu;
    case DType::kI32: return 0x5A5A5A5Au;
    case DType::kI64: return 0x5A5A5A5A5A5A5A5Aull;
  }
  return 0;
}

bool poisoned(const Op& op, const Call& call, std::size_t k) {
  return call.roles[k] == Role::kOut || (call.roles[k] == Role::kInOut && op.overwrites(call, call.names[k]));
}

void poison_outputs(const Op& op, Call& call, Fill fill) {
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (!poisoned(op, call, k)) continue;
    Tensor& t = call.tensors[k];
    const auto size = static_cast<std::size_t>(dtype_info(t.dtype()).storage_bytes);
    const std::uint64_t bits = fill_bits(t.dtype(), fill);
    std::byte* p = t.raw();
    for (std::int64_t i = 0; i < t.storage_elems(); ++i) std::memcpy(p + static_cast<std::size_t>(i) * size, &bits, size);
  }
}

std::vector<std::uint8_t> unwritten_mask(const Tensor& t, Fill fill) {
  const auto size = static_cast<std::size_t>(dtype_info(t.dtype()).storage_bytes);
  const std::uint64_t bits = fill_bits(t.dtype(), fill);
  const std::byte* p = t.raw();
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, p + static_cast<std::size_t>(t.offset_of_flat(i)) * size, size);
    mask[static_cast<std::size_t>(i)] = v == bits;
  }
  return mask;
}

}  // namespace kc::engine
