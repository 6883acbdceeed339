// kc — comparable run records, `kc diff OLD NEW`, and known-violation
// baselines (docs/diff.md).
//
// A run record (record.json) lists every contract x impl case of a run with
// its verdict, signatures, output hash, bound-ratio statistics, the impl's
// declared facts and, under --timing, its cold and warm call times. Two
// records are compared case by case; a baseline file excuses violations that
// are known, each with a reason and an expiry date.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kc/engine.h"
#include "kc/profile.h"
#include "kc/status.h"

namespace kc::report {

inline constexpr const char* kRecordFormat = "kc-run-record/1";
inline constexpr const char* kBaselineFormat = "kc-baseline/1";

/// One contract x impl case of a run record.
struct RecordCase {
  std::string contract, contract_hash, impl, backend, backend_version;
  std::string contract_file;  ///< the contract's file as the run loaded it
  std::string verdict;  ///< engine::verdict_name
  std::string reason;
  std::vector<std::string> signatures;  ///< as printed: "SATURATION(65504)"
  bool signature_expected = false;
  std::string output_hash;  ///< empty: no outputs were recorded
  std::string metric;       ///< what the statistics are (ratio, ulp, ...)
  double max = 0, p99 = 0, p50 = 0;
  std::int64_t elements = 0, failures = 0;
  std::map<std::string, std::string> facts;
  std::optional<engine::CaseResult::Timing> timing;
  std::string repro;
  double seconds = -1;  ///< wall time of the case (-1: not recorded); --shard-balance reads it
  /// Position in the run's plan (contracts in load order, then impls), before
  /// any --shard split; -1 in records that predate it. kc merge orders by it.
  std::int64_t contract_index = -1, plan_index = -1;
  /// "contract|impl": the key two records are compared by.
  std::string key() const { return contract + "|" + impl; }
};

struct RecordBackend {
  std::string name, version, reason;
  bool available = false;
};

/// What decides whether two runs' outputs can be compared bit for bit.
struct RecordRun {
  std::string seed;     ///< hex
  std::string samples;  ///< override, empty: each protocol's own
  std::string config;   ///< --config filter, empty: all
  std::string sample;   ///< --sample filter, empty: all
  bool fast = false;
  int timing_calls = 0;
};

/// Which plan a run belongs to, and which part of it it ran (docs/scale-out.md).
struct RecordPlan {
  /// SHA-256 of what decides the plan's cases and their inputs: the options that
  /// change samples or verdicts (seed, samples, config, sample, fast, timing,
  /// isolation, contract filters, suite) and each planned contract's content hash.
  std::string fingerprint;
  /// SHA-256 of the impl selection: --impl/--backend filters and the impl names
  /// the plan holds. Shards restricted to different backends (GPU nodes, CPU
  /// nodes) share the fingerprint and differ here.
  std::string selection;
  std::int64_t planned = 0;  ///< cases of the whole plan of this selection, all shards together
  std::string shard;         ///< "I/N", empty: the whole plan
  std::string shard_source;  ///< where I/N came from ("--shard 1/4", "SLURM_ARRAY_TASK_ID")
  std::vector<std::string> selection_filters;  ///< the --impl/--backend filters, as given
};

struct RunRecord {
  std::string format = kRecordFormat;
  std::string kc_version, created, host;
  RecordRun run;
  RecordPlan plan;
  std::vector<RecordBackend> backends;
  /// The machine of the run (kc/profile.h); a merged run lists each shard's.
  std::vector<Profile> profiles;
  std::vector<RecordCase> cases;
  std::string source;  ///< the file it was read from (not written)
};

/// The record of a finished run.
RunRecord make_record(const engine::CheckResult& result, const engine::CheckRequest& request);
/// Pretty JSON (docs/diff.md "Run record").
std::string render_record(const RunRecord& record);
/// Reads a record file, or DIR/record.json for a run directory. Errors name
/// the file, the line and column where they can, and what to do.
Result<RunRecord> read_record(const std::string& path);

// ---------------------------------------------------------------------------
// kc diff

/// What makes `kc diff` exit 1 (--fail-on, comma-separated).
struct FailOn {
  bool new_violation = false;    ///< new-violation
  bool new_error = false;        ///< new-error
  bool signature_change = false; ///< signature-change
  bool output_change = false;    ///< output-change
  bool missing = false;          ///< missing: a case of OLD that NEW did not judge
  std::optional<double> ratio;   ///< ratio:F  new max bound ratio > F x old (and > 1 x its bound)
  std::optional<double> latency; ///< latency:R significantly slower with median ratio > R
};
/// Parses "new-violation,signature-change,latency:1.10"; the default (empty
/// text) is new-violation,new-error.
Result<FailOn> parse_fail_on(const std::string& text);

struct LatencyChange {
  std::size_t old_n = 0, new_n = 0;
  double old_median = 0, new_median = 0;
  double old_cold = 0, new_cold = 0;
  double mwu_u = 0, mwu_p = 1, mwu_p_holm = 1;
  double ks_d = 0, ks_p = 1, ks_p_holm = 1;
  double ratio = 1, ratio_low = 1, ratio_high = 1;  ///< median new / old, bootstrap 95 %
  std::string judgement;  ///< slower | faster | unchanged | shape changed
};

struct CaseDiff {
  std::string contract, impl, backend;
  std::string old_verdict, new_verdict;  ///< empty: absent from that record
  std::vector<std::string> old_signatures, new_signatures;
  std::string change;  ///< new_violation | fixed | new_error | error_gone | signature_change | verdict_change | same
  bool contract_changed = false;  ///< contract text hash differs
  bool compared_outputs = false, output_changed = false;
  std::string metric;
  double old_max = 0, new_max = 0, old_p50 = 0, new_p50 = 0;
  bool compared_ratios = false;
  std::optional<LatencyChange> latency;
  std::vector<std::string> failed_on;  ///< the --fail-on rules this case trips
};

struct DiffResult {
  std::string old_source, new_source;
  std::vector<CaseDiff> cases;  ///< every key of either record, OLD's order then NEW's additions
  std::vector<std::string> not_compared;  ///< "what and why", each a line
  std::vector<std::string> notes;         ///< run-level differences (seed, backend versions, ...)
  std::size_t output_compared = 0, output_changed = 0;
  std::size_t latency_compared = 0;
  std::vector<std::string> failures;  ///< one line per tripped rule
  bool regression() const { return !failures.empty(); }
};

struct DiffOptions {
  FailOn fail_on;
  double alpha = 0.05;
  int resamples = 2000;
  std::uint64_t seed = 0x6b63;
};

DiffResult diff_records(const RunRecord& old_run, const RunRecord& new_run, const DiffOptions& options);
std::string render_diff_text(const DiffResult& d);
std::string render_diff_json(const DiffResult& d);
std::string render_diff_junit(const DiffResult& d);
std::string render_diff_html(const DiffResult& d, const RunRecord& old_run, const RunRecord& new_run);

// ---------------------------------------------------------------------------
// Baselines

struct BaselineEntry {
  std::string contract;   ///< glob
  std::string impl;       ///< glob
  std::string signature;  ///< glob over a signature's name or its whole text; "*" any
  std::string reason, expires, link;  ///< expires: YYYY-MM-DD, the last day it excuses
  int line = 0;           ///< where it is in the file
};

struct Baseline {
  std::string path;
  std::vector<BaselineEntry> entries;
};

/// Reads a baseline (YAML or JSON, docs/diff.md "Baseline").
Result<Baseline> read_baseline(const std::string& path);

struct BaselineOutcome {
  std::size_t excused = 0;              ///< violation cases every signature of which a live entry covers
  std::vector<std::string> unexcused;   ///< "contract × impl: signatures" of violations not covered
  std::vector<std::string> warnings;    ///< expired entries, entries that no longer occur or were not run
  /// 0 when every violation was excused and nothing else fails; otherwise the
  /// run's own exit code (kc/exit_code.h) stands.
  int exit_code = 0;
};

/// Applies a baseline to a run. `today` is YYYY-MM-DD; an entry whose
/// `expires` is before it no longer excuses.
BaselineOutcome apply_baseline(const Baseline& baseline, const engine::CheckResult& result, const std::string& today);

/// A baseline listing the record's violations; entries of `previous` that
/// still match keep their reason, link and expiry; new entries expire 90 days
/// after `today`.
std::string render_baseline(const RunRecord& record, const Baseline* previous, const std::string& today,
                            const std::string& run_source);

/// Today's date, UTC, as YYYY-MM-DD (SOURCE_DATE_EPOCH overrides the clock).
std::string today_utc();

}  // namespace kc::report
