// kc — one run from the run directories of its shards (`kc merge`,
// docs/scale-out.md).
#pragma once

#include <string>
#include <vector>

#include "kc/diff.h"
#include "kc/engine.h"
#include "kc/status.h"

namespace kc::report {

struct MergedRun {
  /// Every shard's cases in the unsharded run's order, the backends, the plan.
  engine::CheckResult result;
  /// The shards' run records, as read (after de-duplication): what the merged
  /// record and the merge's notes describe.
  std::vector<RunRecord> shards;
  /// What the merge decided: a retried shard dropped, a backend whose version
  /// differs between machines.
  std::vector<std::string> notes;
};

/// Reads each run directory (record.json, trace.jsonl and its run state) of
/// shards written by `kc grade --out DIR --shard I/N` or `kc check --out DIR
/// --trace ... --shard I/N`, and puts them together:
///  - every record must carry one plan fingerprint (else: different plans);
///  - shards are grouped by impl selection; each group needs every index of
///    its count once (a missing one is an error naming it; a shard given twice,
///    a retry, keeps the later record and says so);
///  - each shard's trace chain is verified and its judged cases are read from
///    it (with their evidence); not_applicable cases come from the record;
///  - no case may come from two groups, and each group's cases add up to its plan.
/// A run written without --shard counts as shard 0/1 of its plan.
Result<MergedRun> merge_runs(const std::vector<std::string>& dirs);

/// The merged run record: the first shard's run options, the plan without a
/// shard, every case with its plan position.
RunRecord merged_record(const MergedRun& merged);

}  // namespace kc::report
