// kc — guarded buffers (see guard.h).
#include "isolate/guard.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kc::isolate::detail {

namespace {

// Position-dependent, so a kernel that fills a region with one value never
// reproduces it by accident.
std::byte canary_at(const std::byte* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::byte>(0xC5u ^ ((a * 0x1Du) & 0xFFu));
}

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

}  // namespace

Status make_guarded(std::size_t nbytes, GuardedBuffer* out, std::optional<std::size_t> placement) {
  if (placement && *placement >= kPlacementBase)
    return {StatusCode::kInvalidArgument, "a placement of " + std::to_string(*placement) + " bytes: it must be below " +
                                              std::to_string(kPlacementBase)};
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t body = round_up(nbytes + kFrontCanaryBytes + 2 * kPlacementBase, page);
  const std::size_t total = body + 2 * page;
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    return {StatusCode::kResourceExhausted,
            "mmap of a " + std::to_string(total) + "-byte guarded buffer: " + std::strerror(errno)};
  }
  GuardedBuffer b;
  b.map = static_cast<std::byte*>(m);
  b.map_bytes = total;
  b.page = page;
  b.body = b.map + page;
  b.rear = b.body + body;
  const auto end = reinterpret_cast<std::uintptr_t>(b.rear);
  if (placement) {
    // The last address at or below end - nbytes that is `placement` past a
    // kPlacementBase boundary.
    const std::uintptr_t last = end - nbytes;
    std::uintptr_t at = last / kPlacementBase * kPlacementBase + *placement;
    if (at > last) at -= kPlacementBase;
    b.data = reinterpret_cast<std::byte*>(at);
  } else {
    b.data = reinterpret_cast<std::byte*>((end - nbytes) / kDataAlignment * kDataAlignment);
  }
  b.nbytes = nbytes;
  if (mprotect(b.map, page, PROT_NONE) != 0 || mprotect(b.rear, page, PROT_NONE) != 0) {
    const std::string why = std::strerror(errno);
    munmap(m, total);
    return {StatusCode::kInternal, "mprotect of a guard page: " + why};
  }
  *out = b;
  return ok_status();
}

void free_guarded(GuardedBuffer* buffer) {
  if (buffer->map) munmap(buffer->map, buffer->map_bytes);
  *buffer = GuardedBuffer{};
}

void fill_canaries(const GuardedBuffer& b) {
  for (std::byte* p = b.body; p < b.data; ++p) *p = canary_at(p);
  for (std::byte* p = b.data + b.nbytes; p < b.rear; ++p) *p = canary_at(p);
}

std::optional<Side> damaged_canary(const GuardedBuffer& b) {
  for (const std::byte* p = b.body; p < b.data; ++p)
    if (*p != canary_at(p)) return Side::kBefore;
  for (const std::byte* p = b.data + b.nbytes; p < b.rear; ++p)
    if (*p != canary_at(p)) return Side::kAfter;
  return std::nullopt;
}

std::optional<Side> guard_page_side(const GuardedBuffer& b, std::uintptr_t addr) {
  const auto front = reinterpret_cast<std::uintptr_t>(b.map);
  const auto rear = reinterpret_cast<std::uintptr_t>(b.rear);
  if (addr >= front && addr < front + b.page) return Side::kBefore;
  if (addr >= rear && addr < rear + b.page) return Side::kAfter;
  return std::nullopt;
}

}  // namespace kc::isolate::detail
