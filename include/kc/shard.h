// kc — splitting one run's plan over machines, and putting it back together.
//
// A run's plan is its cases in plan order (contracts in load order, impls in
// registry order). `--shard I/N` runs the cases the split gives shard I of N;
// every shard of one plan computes the same split, so N machines run each case
// exactly once. `kc merge` reads the shards' run directories back into one run
// (docs/scale-out.md).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/status.h"

namespace kc::shard {

/// Shard `index` of `count` (0 <= index < count).
struct Shard {
  int index = 0;
  int count = 1;
  /// Where the numbers came from: "--shard 1/4", "SLURM_ARRAY_TASK_ID", ...
  std::string source;
  /// GoogleTest's GTEST_SHARD_STATUS_FILE when the numbers came from its
  /// variables: a runner that shards asks the program to create it, to show it
  /// understood sharding.
  std::string status_file;
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

/// "I/N" with 0 <= I < N (0-based, as GoogleTest and Kubernetes number them).
Result<Shard> parse(std::string_view text);

/// The index and count the scheduler gave this process, read from, in order:
///   GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS (GoogleTest; GTEST_SHARD_STATUS_FILE noted);
///   SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT (Slurm job arrays);
///   JOB_COMPLETION_INDEX with KC_SHARD_COUNT (Kubernetes Indexed Jobs: the count is the
///   Job's completions, which the pod sees only when the manifest passes it);
///   KC_SHARD_INDEX, KC_SHARD_COUNT.
/// An error names what was looked for, or what was inconsistent.
using Getenv = std::function<const char*(const char*)>;
Result<Shard> from_environment(const Getenv& get);
Result<Shard> from_environment();

/// The shard of each plan case. Without durations (all < 0) case i goes to
/// shard i mod count: neighbours in plan order (one contract's impls) spread
/// over the shards. With durations from an earlier run (seconds; < 0 where
/// unknown, taken as the median of the known), cases are placed longest first
/// on the least-loaded shard (ties: lowest plan index, lowest shard), so the
/// shards' expected times come close. Deterministic: the same inputs give the
/// same split on every machine.
std::vector<int> assign(const std::vector<double>& durations, int count);

/// Case durations of an earlier run, "contract|impl" -> seconds, read from its
/// run record (a run directory or its record.json).
Result<std::map<std::string, double>> read_durations(const std::string& record_path);

}  // namespace kc::shard
