// kc — guarded buffers for the worker process (see kc/isolate.h).
//
//   [guard page][canary slack ... data][< 16-byte canary gap][guard page]
//
// The data ends as close to the rear guard page as 16-byte alignment allows
// (operator new's alignment, which is what a kernel run in-process gets), so
// an overrun faults at once or, within the gap, damages a canary. An underrun
// damages the canary slack (at least kFrontCanaryBytes) or faults on the front
// guard page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kc/status.h"

namespace kc::isolate::detail {

inline constexpr std::size_t kDataAlignment = 16;
inline constexpr std::size_t kFrontCanaryBytes = 64;
inline constexpr std::size_t kPlacementBase = 64;  ///< kc/capability.h kPlacementBase

enum class Side { kBefore, kAfter };

struct GuardedBuffer {
  std::byte* map = nullptr;   ///< whole mapping, guard pages included
  std::size_t map_bytes = 0;
  std::byte* body = nullptr;  ///< first byte after the front guard page
  std::byte* data = nullptr;  ///< the tensor's bytes
  std::size_t nbytes = 0;
  std::byte* rear = nullptr;  ///< first byte of the rear guard page
  std::size_t page = 0;

  std::uintptr_t front_guard_begin() const { return reinterpret_cast<std::uintptr_t>(map); }
  std::uintptr_t rear_guard_end() const { return reinterpret_cast<std::uintptr_t>(rear) + page; }
};

/// Maps a guarded buffer for nbytes of data (0 is allowed: data then points at
/// the rear guard page, so any access faults). With a placement (below
/// kPlacementBase) the data starts that many bytes past a kPlacementBase-byte
/// boundary; without one it is 16-byte aligned.
Status make_guarded(std::size_t nbytes, GuardedBuffer* out, std::optional<std::size_t> placement = std::nullopt);
void free_guarded(GuardedBuffer* buffer);

/// Writes the canary pattern into the slack before and the gap after the data.
void fill_canaries(const GuardedBuffer& buffer);
/// Which side's canary changed, if any (before wins when both did).
std::optional<Side> damaged_canary(const GuardedBuffer& buffer);

/// Whether addr lies in one of the buffer's guard pages, and which.
std::optional<Side> guard_page_side(const GuardedBuffer& buffer, std::uintptr_t addr);

}  // namespace kc::isolate::detail
