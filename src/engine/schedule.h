// kc — running cases on several threads with results kept in plan order
// (`--jobs`, docs/verify.md "Suite throughput").
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kc/engine.h"

namespace kc::engine {

/// Runs work(i) for every i < n, up to `jobs` at once; an i with serial(i) runs
/// with nothing else running. record(i) runs on the calling thread, in index
/// order, as soon as work(0..i) have all finished, so whatever record writes
/// (a hash-chained trace) is the same for any `jobs`, and a case is recorded
/// while later ones are still running. serial(i) is asked on the calling thread,
/// in order.
void run_ordered(std::size_t n, int jobs, const std::function<bool(std::size_t)>& serial,
                 const std::function<void(std::size_t)>& work, const std::function<void(std::size_t)>& record);

/// --jobs 0 means one and a half jobs per hardware thread, rounded up.
int effective_jobs(int jobs);

/// The jobs that run at once under the workers' memory budget
/// (isolate::memory_budget): fewer than `jobs` when jobs x the per-worker limit
/// exceeds it; lowers request.limits.memory_bytes when one worker's limit
/// does. What it changed and how the budget is held go to *notes (and, when
/// it changed something or was asked for, once per process to kc::say_once).
int budgeted_jobs(int jobs, CheckRequest& request, std::vector<std::string>* notes);

}  // namespace kc::engine
