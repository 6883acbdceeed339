// kc — making kc cheaper to fork: every worker is a fork of kc (two, with
// its PID namespace), and a fork copies the page table entries of kc's
// touched anonymous memory.
#pragma once

namespace kc::isolate::detail {

/// Once per process, before the first worker forks: each large private
/// anonymous region that is (nearly) fully touched — a library's zero-filled
/// data segment, say — is asked to be backed by 2 MiB pages (madvise
/// MADV_HUGEPAGE, then MADV_COLLAPSE), so a fork copies one entry per 2 MiB
/// instead of one per 4 KiB there. Regions marked no-huge-page (thread
/// stacks), wipe-on-fork (the sample cache) or not-copied-on-fork are left
/// alone. Best effort: where the kernel refuses, nothing changes.
void collapse_for_fork();

}  // namespace kc::isolate::detail
