// kc — output poison: outputs are pre-filled before every call with a bit
// pattern no honest kernel writes, so an element the kernel never wrote is
// told apart, bit for bit, from one it wrote, even when both are NaN.
#pragma once

#include <cstddef>
#include <cstdint>
// Bit patterns are written into the low bytes of a storage element: little-endian hosts (x86-64, AArch64).
#include <vector>

#include "kc/op.h"
#include "kc/tensor.h"

namespace kc::engine {

/// The poison for one storage element of `t`, in its low dtype_info(t).storage_bytes bytes:
/// - F64, F32/TF32, F16, BF16: a quiet NaN carrying the payload 'KC' (0x4B43),
///   cut to the payload bits the format has. Arithmetic that makes a NaN gives
///   the default NaN (x86, Arm: payload 0), and NaN inputs kc generates carry
///   payload 0 too, so a NaN the kernel computed or copied never has these bits;
/// - FP8 E5M2: 0x7D, a NaN below the 0x7E/0x7F that conversions produce;
/// - FP8 E4M3FN: 0xFF, its negative NaN (conversions produce 0x7F); the format
///   has no other NaN, so a kernel that writes -NaN there looks unwritten;
/// - integers: 0xA5 in every byte, a value no honest index output equals.
std::uint64_t poison_bits(DType t);

/// What outputs are pre-filled with: the poison above, or a finite sentinel,
/// -0.3125 (exact in every float format kc has; 0x5A bytes in integers). The
/// sentinel tells "never written" from "computed from the poisoned buffer":
/// a kernel that reads C at beta = 0 turns 0 * poison into the poison's own
/// bits (NaN payloads propagate), but 0 * sentinel into 0.
enum class Fill { kPoison, kSentinel };
std::uint64_t fill_bits(DType t, Fill fill);

/// Whether tensor k of the call arrives poisoned: pure outputs, and in/out
/// tensors the op overwrites without reading in this call.
bool poisoned(const Op& op, const Call& call, std::size_t k);

/// Fills every storage element (padding included) of every poisoned tensor with the poison (or sentinel).
void poison_outputs(const Op& op, Call& call, Fill fill = Fill::kPoison);

/// Per logical element (row-major) of `t`: 1 where its storage still holds the poison (or sentinel).
std::vector<std::uint8_t> unwritten_mask(const Tensor& t, Fill fill = Fill::kPoison);

}  // namespace kc::engine
