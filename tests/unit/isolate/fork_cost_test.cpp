// Huge pages behind kc's anonymous memory before a worker forks
// (src/isolate/fork_cost.h): a densely touched region that grew since the
// last pass is collapsed; a sparsely touched one is not made resident.
#include "isolate/fork_cost.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace kc::isolate::detail {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

/// "Anonymous:" and "AnonHugePages:" of the mapping that starts at `at`, in kB.
struct Usage {
  std::int64_t anonymous = -1, huge = -1;
};
Usage usage_of(const void* at) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_region = false;
  Usage u;
  char head[32];
  std::snprintf(head, sizeof head, "%lx-", static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(at)));
  while (std::getline(smaps, line)) {
    if (line.find(':') == std::string::npos || line.find('-') < line.find(':')) {
      if (in_region) break;
      in_region = line.rfind(head, 0) == 0;
      continue;
    }
    if (!in_region) continue;
    std::istringstream in(line);
    std::string key;
    std::int64_t kb = 0;
    in >> key >> kb;
    if (key == "Anonymous:") u.anonymous = kb;
    if (key == "AnonHugePages:") u.huge = kb;
  }
  return u;
}

std::int64_t rss_anon_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8));
  return -1;
}

bool huge_pages_possible(std::string* why) {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  // Under [always] every fault in a 2 MiB range may take a huge page by
  // itself (a sparse region then is not sparse); under [never] none can.
  if (mode.find("[madvise]") == std::string::npos) {
    *why = "transparent huge pages are not in madvise mode here (" +
           (mode.empty() ? std::string("no sysfs entry") : mode) + ")";
    return false;
  }
  // MADV_COLLAPSE (Linux 6.1) on a probe region: EINVAL where the kernel lacks it.
  const std::size_t bytes = 4 * kMiB;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    *why = "mmap failed";
    return false;
  }
  std::memset(p, 1, bytes);
  const bool ok = madvise(p, bytes, 25 /* MADV_COLLAPSE */) == 0;
  const int err = errno;
  munmap(p, bytes);
  if (!ok) *why = std::string("MADV_COLLAPSE of a touched 4 MiB region failed here: ") + std::strerror(err);
  return ok;
}

/// An anonymous region aligned to 2 MiB, touched at one byte in every
/// `stride` bytes.
struct Region {
  std::byte* at = nullptr;
  std::size_t bytes = 0;
  void* base = nullptr;
  std::size_t mapped = 0;
  Region(std::size_t size, std::size_t stride) : bytes(size), mapped(size + 2 * kMiB) {
    base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return;
    const auto aligned = (reinterpret_cast<std::uintptr_t>(base) + 2 * kMiB - 1) & ~(2 * kMiB - 1);
    at = reinterpret_cast<std::byte*>(aligned);
    // Only the aligned part stays mapped: smaps then shows it as one region.
    const std::size_t before = aligned - reinterpret_cast<std::uintptr_t>(base);
    if (before) munmap(base, before);
    const std::size_t after = mapped - before - bytes;
    if (after) munmap(at + bytes, after);
    for (std::size_t i = 0; i < bytes; i += stride) at[i] = std::byte{1};
  }
  ~Region() {
    if (at) munmap(at, bytes);
  }
};

TEST(ForkCost, ADenseRegionGrownSinceTheLastPassIsCollapsedASparseOneStaysSparse) {
  std::string why;
  if (!huge_pages_possible(&why)) GTEST_SKIP() << why;
  collapse_for_fork();  // whatever this process did before: a pass now
  // Sparse: one page in each 2 MiB range. Dense: every page, and large
  // enough (half of what this process holds, at least 32 MiB) to count as
  // growth by a quarter.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const Region sparse(32 * kMiB, 2 * kMiB);
  const std::size_t dense_bytes = std::max<std::size_t>(
      32 * kMiB, (static_cast<std::size_t>(rss_anon_kb()) * 1024 / 2 + 2 * kMiB - 1) & ~(2 * kMiB - 1));
  if (dense_bytes > (std::size_t{1} << 30))
    GTEST_SKIP() << "this process holds " << dense_bytes * 2 / kMiB << " MiB: growing it by half is too slow a test";
  const Region dense(dense_bytes, page);
  ASSERT_NE(sparse.at, nullptr);
  ASSERT_NE(dense.at, nullptr);
  const Usage sparse_before = usage_of(sparse.at);
  ASSERT_GE(sparse_before.anonymous, 0) << "no smaps entry for the sparse region";

  collapse_for_fork();

  const Usage d = usage_of(dense.at);
  const Usage s = usage_of(sparse.at);
  EXPECT_GT(d.huge, 0) << "the dense region (" << dense_bytes / kMiB << " MiB) was not collapsed";
  // Collapsing a range with one resident page in 512 would make the rest resident.
  EXPECT_EQ(s.huge, 0);
  EXPECT_LE(s.anonymous, sparse_before.anonymous + 64) << "the sparse region became resident";
}

}  // namespace
}  // namespace kc::isolate::detail
