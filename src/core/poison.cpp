#include "kc/poison.h"

#include <algorithm>
#include <cstring>

namespace kc {

std::uint64_t poison_bits(DType t) {
  switch (t) {
    case DType::kF64: return 0x7FF8000000004B43ull;
    case DType::kF32:
    case DType::kTF32: return 0x7FC04B43u;
    case DType::kF16: return 0x7E00u | (0x4B43u & 0x1FFu);  // 9 payload bits below the quiet bit
    case DType::kBF16: return 0x7FC0u | (0x4B43u & 0x3Fu);  // 6 payload bits below the quiet bit
    case DType::kFP8E5M2: return 0x7Du;
    case DType::kFP8E4M3: return 0x7Fu;
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

void fill_logical(std::byte* storage, const Tensor& like, Fill fill) {
  const auto size = static_cast<std::size_t>(dtype_info(like.dtype()).storage_bytes);
  const std::uint64_t bits = fill_bits(like.dtype(), fill);
  for (std::int64_t i = 0; i < like.numel(); ++i)
    std::memcpy(storage + static_cast<std::size_t>(like.offset_of_flat(i)) * size, &bits, size);
}

std::vector<std::uint8_t> fill_mask(const Tensor& t, Fill fill) {
  const auto size = static_cast<std::size_t>(dtype_info(t.dtype()).storage_bytes);
  const std::uint64_t bits = fill_bits(t.dtype(), fill);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, t.raw() + static_cast<std::size_t>(t.offset_of_flat(i)) * size, size);
    mask[static_cast<std::size_t>(i)] = v == bits;
  }
  return mask;
}

std::optional<Fill> logical_fill(const Tensor& t) {
  if (t.numel() == 0) return std::nullopt;
  for (Fill fill : {Fill::kPoison, Fill::kSentinel}) {
    const std::vector<std::uint8_t> mask = fill_mask(t, fill);
    if (std::find(mask.begin(), mask.end(), 0) == mask.end()) return fill;
  }
  return std::nullopt;
}

}  // namespace kc
