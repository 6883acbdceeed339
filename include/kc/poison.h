// kc — output poison: the bit patterns outputs are pre-filled with before a
// kernel runs, shared by the engine (host buffers) and the device backends
// (device copies), so an element the kernel never wrote is told apart, bit for
// bit, from one it wrote, even when both are NaN. Patterns are written into
// the low bytes of a storage element: little-endian hosts (x86-64, AArch64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kc/dtype.h"
#include "kc/tensor.h"

namespace kc {

/// The poison for one storage element of `t`, in its low dtype_info(t).storage_bytes bytes:
/// - F64, F32/TF32, F16, BF16: a quiet NaN carrying the payload 'KC' (0x4B43),
///   cut to the payload bits the format has. Arithmetic that makes a NaN gives
///   the default NaN (x86, Arm: payload 0), and NaN inputs kc generates carry
///   payload 0 too, so a NaN the kernel computed or copied never has these bits;
/// - FP8 E5M2: 0x7D, a NaN below the 0x7E/0x7F that conversions produce;
/// - FP8 E4M3FN: 0x7F, its positive NaN. The format has no other NaN but
///   0xFF, which is what the x86 default NaN (sign bit set) converts to; a
///   positive NaN the kernel writes there looks unwritten until the engine's
///   second call with the sentinel (below) shows it was written;
/// - integers: 0xA5 in every byte, a value no honest index output equals.
std::uint64_t poison_bits(DType t);

/// What outputs are pre-filled with: the poison above, or a finite sentinel,
/// -0.3125 (exact in every float format kc has; 0x5A bytes in integers). The
/// sentinel tells "never written" from "computed from the poisoned buffer":
/// a kernel that reads C at beta = 0 turns 0 * poison into the poison's own
/// bits (NaN payloads propagate), but 0 * sentinel into 0.
enum class Fill { kPoison, kSentinel };
std::uint64_t fill_bits(DType t, Fill fill = Fill::kPoison);

/// Writes the fill into every logical element of `storage`, laid out as
/// `like` (same dtype, shape, strides); padding keeps its bytes.
void fill_logical(std::byte* storage, const Tensor& like, Fill fill = Fill::kPoison);

/// Per logical element (row-major) of `t`: 1 where its storage holds the fill,
/// bit for bit (for an output: the element was left as kc pre-filled it).
std::vector<std::uint8_t> fill_mask(const Tensor& t, Fill fill = Fill::kPoison);

/// The fill a tensor's logical elements all hold, if they hold one of kc's:
/// a device backend pre-fills its device copy of an output with the fill the
/// host copy carries (the engine's poison, or the sentinel of its second
/// call), and with the poison when the host carries neither.
std::optional<Fill> logical_fill(const Tensor& t);

}  // namespace kc
