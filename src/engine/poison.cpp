#include "engine/poison.h"

#include <cstring>

namespace kc::engine {

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

}  // namespace kc::engine
