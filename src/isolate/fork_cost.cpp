// kc — huge pages for kc's large touched anonymous regions (fork_cost.h).
#include "isolate/fork_cost.h"

#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

namespace kc::isolate::detail {

namespace {

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
constexpr std::uintptr_t kMinRegion = std::uintptr_t{8} << 20;

struct Region {
  std::uintptr_t begin = 0, end = 0;
  bool candidate = false;  ///< private, writable, no file behind it
  std::uintptr_t anonymous = 0;  ///< bytes touched
  std::string flags;       ///< VmFlags
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

}  // namespace

void collapse_for_fork() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Region& r : anonymous_regions()) {
      if (!r.candidate || r.end - r.begin < kMinRegion) continue;
      if (r.anonymous * 10 < (r.end - r.begin) * 9) continue;  // mostly untouched: nothing to gain
      if (has_flag(r.flags, "nh") || has_flag(r.flags, "wf") || has_flag(r.flags, "dc")) continue;
      const std::uintptr_t begin = (r.begin + kHugePage - 1) & ~(kHugePage - 1);
      const std::uintptr_t end = r.end & ~(kHugePage - 1);
      if (end <= begin) continue;
      void* at = reinterpret_cast<void*>(begin);
      if (madvise(at, end - begin, MADV_HUGEPAGE) == 0) madvise(at, end - begin, MADV_COLLAPSE);
    }
  });
}

}  // namespace kc::isolate::detail
