// kc — making kc cheaper to fork: every worker is a fork of kc (two, with
// its PID namespace), and a fork copies the page table entries of kc's
// touched anonymous memory.
#pragma once

namespace kc::isolate::detail {

/// Before a worker forks: kc's large private anonymous regions are asked to
/// be backed by 2 MiB pages (madvise MADV_HUGEPAGE, so later faults there get
/// them too), and each 2 MiB range of them that is at least half resident is
/// collapsed into one (MADV_COLLAPSE), so a fork copies one entry per 2 MiB
/// instead of one per 4 KiB there. The pass runs before the first fork and
/// again whenever kc's anonymous memory has grown by a quarter since the
/// last one. Regions marked no-huge-page (thread stacks), wipe-on-fork (the sample
/// cache) or not-copied-on-fork are left alone. Best effort: where the kernel
/// refuses, nothing changes. Thread-safe.
void collapse_for_fork();

}  // namespace kc::isolate::detail
