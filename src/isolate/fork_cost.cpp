// kc — huge pages for kc's large touched anonymous regions (fork_cost.h).
#include "isolate/fork_cost.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

namespace kc::isolate::detail {

namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
constexpr std::uintptr_t kMinRegion = std::uintptr_t{8} << 20;
constexpr std::uintptr_t kMaxRegion = std::uintptr_t{64} << 30;

struct Region {
  std::uintptr_t begin = 0, end = 0;
  bool candidate = false;        ///< private, writable, no file behind it
  std::uintptr_t anonymous = 0;  ///< bytes touched
  std::string flags;             ///< VmFlags
};

bool has_flag(const std::string& flags, const char* flag) {
  std::istringstream in(flags);
  for (std::string f; in >> f;)
    if (f == flag) return true;
  return false;
}

std::vector<Region> anonymous_regions() {
  std::vector<Region> out;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  while (std::getline(smaps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    if (line.find(':') != std::string::npos && line.find('-') > line.find(':')) {
      // A "Key: value" line of the current region.
      if (out.empty()) continue;
      if (line.rfind("Anonymous:", 0) == 0) {
        std::string key;
        std::uintptr_t kb = 0;
        in >> key >> kb;
        out.back().anonymous = kb << 10;
      } else if (line.rfind("VmFlags:", 0) == 0) {
        out.back().flags = line.substr(8);
      }
      continue;
    }
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in, path);
    const auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    Region r;
    r.begin = std::stoull(range.substr(0, dash), nullptr, 16);
    r.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    r.candidate = perms == "rw-p" && inode == "0" && path.find_first_not_of(' ') == std::string::npos;
    out.push_back(r);
  }
  return out;
}

/// kc's resident anonymous memory in kB ("RssAnon:" of /proc/self/status); -1 if unknown.
std::int64_t rss_anon_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::strtoll(line.c_str() + 8, nullptr, 10);
  return -1;
}

/// The 2 MiB-aligned ranges of [begin, end) at least half resident (mincore),
/// merged where adjacent: worth one huge page each. A range mostly untouched
/// is left alone (collapsing it would make its untouched part resident).
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> resident_chunks(std::uintptr_t begin, std::uintptr_t end) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> out;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec(kHugePage / page);
  for (std::uintptr_t at = begin; at < end; at += kHugePage) {
    if (mincore(reinterpret_cast<void*>(at), kHugePage, vec.data()) != 0) continue;
    std::size_t resident = 0;
    for (unsigned char v : vec) resident += v & 1;
    if (resident * 2 < vec.size()) continue;
    if (!out.empty() && out.back().second == at)
      out.back().second = at + kHugePage;
    else
      out.emplace_back(at, at + kHugePage);
  }
  return out;
}

void collapse_pass() {
  for (const Region& r : anonymous_regions()) {
    if (!r.candidate || r.end - r.begin < kMinRegion || r.anonymous < kHugePage) continue;
    // A reservation of address space (a sanitizer's shadow, terabytes mostly
    // untouched) is not a heap: its 2 MiB ranges are not walked one by one.
    if (r.end - r.begin > kMaxRegion) continue;
    if (has_flag(r.flags, "nh") || has_flag(r.flags, "wf") || has_flag(r.flags, "dc")) continue;
    const std::uintptr_t begin = (r.begin + kHugePage - 1) & ~(kHugePage - 1);
    const std::uintptr_t end = r.end & ~(kHugePage - 1);
    if (end <= begin) continue;
    // Later faults in the region get huge pages too (a heap that grows in place).
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) != 0) continue;
    for (const auto& [from, to] : resident_chunks(begin, end))
      madvise(reinterpret_cast<void*>(from), to - from, MADV_COLLAPSE);
  }
}

}  // namespace

void collapse_for_fork() {
  // A pass before the first fork, and again whenever kc's anonymous memory
  // has grown by a quarter since the last one (what kc allocated since, such
  // as a grade's results): a few passes over a whole run, each reading
  // /proc/self/smaps once.
  static std::mutex mu;
  static std::int64_t anon_kb_after_last = -1;
  const std::lock_guard lock(mu);
  const std::int64_t anon_kb = rss_anon_kb();
  if (anon_kb_after_last >= 0 && (anon_kb < 0 || anon_kb * 4 < anon_kb_after_last * 5)) return;
  collapse_pass();
  // After the pass: collapsing fills the untouched pages of half-resident ranges.
  anon_kb_after_last = std::max<std::int64_t>(rss_anon_kb(), 1);
}

}  // namespace kc::isolate::detail
