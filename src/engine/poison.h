// kc — output poison in the engine: which tensors of a call arrive poisoned,
// and filling them (kc/poison.h gives the bit patterns and fill_mask, which
// reads back the elements the kernel left as they were).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kc/op.h"
#include "kc/poison.h"
#include "kc/tensor.h"

namespace kc::engine {

/// Whether tensor k of the call arrives poisoned: pure outputs, and in/out
/// tensors the op overwrites without reading in this call.
bool poisoned(const Op& op, const Call& call, std::size_t k);

/// Fills every storage element (padding included) of every poisoned tensor with the poison (or sentinel).
void poison_outputs(const Op& op, Call& call, Fill fill = Fill::kPoison);


}  // namespace kc::engine
