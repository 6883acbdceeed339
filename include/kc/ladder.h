// kc — the verification ladder (docs/ladder.md): how strongly each kernel is
// verified, by evidence, per contract (the obligation) and per impl.
//
//   L1 type            the call boundary rejects ill-typed calls (runtime checks; see docs)
//   L2 falsification   named edge cases: boundary shapes, domain-edge values, the probe
//   L3 property        >= 10,000 random configs and inputs, shrunk counterexample on failure
//   L4 exhaustive      every input of an enumerable domain (all 16-bit patterns of a
//                      unary op; every pair of values of a 2-element kernel; opt-in: fp32)
//
// Every rung is judged by the contract's own postcondition and tolerance (the
// engine's run_case), so a new contract or op gets the ladder without code here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/status.h"

namespace kc::ladder {

enum class Level { kNone = 0, kType = 1, kFalsification = 2, kProperty = 3, kExhaustive = 4 };
/// "L1 type", "L2 falsification", "L3 property", "L4 exhaustive", "L0".
std::string level_name(Level level);
/// "L1" .. "L4", "L0".
std::string level_tag(Level level);

enum class Outcome { kPassed, kFailed, kNotApplicable, kError };
std::string outcome_name(Outcome outcome);

/// An input that breaks the contract: a config and every input tensor's values.
struct Counterexample {
  std::string config;  ///< "dtype=FP32 n=7"
  std::map<std::string, std::vector<std::int64_t>> shapes;  ///< per input tensor
  std::map<std::string, std::vector<double>> inputs;        ///< per input tensor, row-major
  std::string verdict;  ///< the contract's verdict reason on it
  /// "n=7 x=[5.0000005]" (long tensors abbreviated).
  std::string text() const;
};

/// One rung of one kernel: what ran, when, with what result.
struct RungResult {
  std::string contract;
  std::string contract_hash;
  std::string impl;
  std::string backend;
  std::string op;
  Level level = Level::kNone;
  Outcome outcome = Outcome::kNotApplicable;
  std::int64_t runs = 0;     ///< judged inputs / cases / checks
  std::int64_t failed = 0;   ///< of those, how many broke the contract
  std::uint64_t seed = 0;
  std::string time;          ///< UTC, ISO 8601
  double seconds = 0;
  std::string summary;       ///< one line
  std::vector<std::string> cases;  ///< L1 checks / L2 edge cases: "name: passed"
  std::optional<Counterexample> found;   ///< L3: the first failing input as generated
  std::optional<Counterexample> shrunk;  ///< L3: after shrinking
  std::int64_t shrink_trials = 0;
  std::string coverage;      ///< L4: what was enumerated, of what
  std::string worst;         ///< L4: the worst input and its metric
  /// The kernel's place in the ladder plan (selected contract x applicable
  /// impl, in load and registry order) before any --shard split; kc merge
  /// orders by it. -1 in records that predate it.
  std::int64_t plan_index = -1;
};

/// The ladder of one kernel (contract x impl).
struct KernelLadder {
  std::string contract, impl, backend, op;
  std::vector<RungResult> rungs;  ///< in level order, every requested level
  Level reached = Level::kNone;   ///< highest level whose rung and all below passed
};

/// Where an opt-in L4 sweep stands (they run for minutes).
struct SweepProgress {
  enum class Domain { kFp32Patterns, kBf16Pairs };
  std::string contract, impl;
  Domain domain = Domain::kFp32Patterns;
  std::uint64_t size = 0;  ///< inputs in the whole domain (2^32 patterns, or pairs)
  double fraction = 0;     ///< of `size`, judged so far
  double seconds = 0;      ///< since the sweep began
};

struct LadderRequest {
  engine::CheckRequest check;  ///< paths, --contract/--impl/--backend filters, seed, plugins, isolation
  Level up_to = Level::kExhaustive;
  std::int64_t property_inputs = 10000;  ///< L3 random inputs per obligation
  std::int64_t max_extent = 8;           ///< L3 random extents are in [1, max_extent]
  std::int64_t shrink_budget = 4000;     ///< L3 judged inputs spent shrinking, at most
  /// L4 opt-in: every fp32 input (2^32 patterns) of unary elementwise kernels
  /// that run FP32, and every bf16 pair of 2-element kernels.
  bool exhaustive_fp32 = false;
  double exhaustive_fraction = 1.0;  ///< of the opt-in domain, a leading slice (for timing)
  int threads = 0;                   ///< opt-in job threads; 0 = hardware concurrency
  std::string evidence_path;         ///< append one hash-chained record per rung (empty = none)
  /// Called while an opt-in sweep runs, every 256 chunks, from one of its job
  /// threads (one call at a time); the library prints nothing. Empty: no calls.
  std::function<void(const SweepProgress&)> on_progress;
};

struct LadderResult {
  std::vector<KernelLadder> kernels;
  /// The ladder plan's fingerprint: the options that decide the rungs, the
  /// contracts' content hashes and the planned kernels (contract x impl).
  /// Shards of one plan share it; kc merge refuses any other.
  std::string fingerprint;
  std::size_t planned = 0;  ///< kernels of the whole plan, all shards together
  std::vector<lang::Diagnostic> diagnostics;
  /// 0 every run rung passed (or was not applicable; a shard assigned no kernel), 1 a rung
  /// failed, 2 a contract error or a selection matching no contract x impl pair, 4 every
  /// rung not applicable (nothing shown).
  int exit_code() const;
};

/// A regression contract (.kc text) from an L3 counterexample: `contract` with
/// its config fixed to the counterexample's (precision conjuncts, `KEY in {v}`
/// axes) and its inputs to the counterexample's values (`inject values(...)`),
/// id CONTRACT-PIN-<hash>, `retest always`. It is parsed back before it is
/// returned: an error if it would not run.
struct PinnedContract {
  std::string id;
  std::string text;
};
Result<PinnedContract> pin_counterexample(const Contract& contract, const Counterexample& cx, const std::string& impl);

/// Climbs the ladder for every selected contract x applicable impl.
LadderResult run_ladder(const LadderRequest& request, BackendRegistry& registry);
LadderResult run_ladder(const LadderRequest& request);

/// The pieces, for tests and for other drivers. `contract_file` is used in repro lines.
RungResult run_type_rung(const Contract& contract, const std::string& contract_file, const Impl& impl,
                         const BackendInfo& backend, const LadderRequest& request);
RungResult run_falsification_rung(const Contract& contract, const std::string& contract_file, const Impl& impl,
                                  const BackendInfo& backend, const LadderRequest& request);
RungResult run_property_rung(const Contract& contract, const std::string& contract_file, const Impl& impl,
                             const BackendInfo& backend, const LadderRequest& request);
RungResult run_exhaustive_rung(const Contract& contract, const std::string& contract_file, const Impl& impl,
                               const BackendInfo& backend, const LadderRequest& request);

/// Judges one exact input: the contract's verdict on `config` with every input
/// tensor set from `cx.inputs` (missing elements 0). Used to replay and shrink.
engine::CaseResult judge_counterexample(const Contract& contract, const std::string& contract_file,
                                        const Impl& impl, const BackendInfo& backend, const Counterexample& cx,
                                        const engine::CheckRequest& base);

/// Terminal rendering of a ladder run.
std::string render_ladder(const LadderResult& result);

// ---- evidence store: <dir>/ladder.jsonl, hash-chained like the trace

/// The evidence file of a report directory.
std::string evidence_file(const std::string& dir);
/// Appends one record for a rung (the chain of kc/report.h's trace).
Status append_evidence(const std::string& path, const RungResult& rung);
/// One JSON object for a rung (the record body, no chain fields).
std::string rung_json(const RungResult& rung);

/// `kc status`: per kernel and impl, the level reached and the evidence behind it.
struct KernelStatus {
  std::string contract, impl, backend, op;
  Level reached = Level::kNone;
  std::map<int, RungResult> latest;  ///< level -> the newest record of that level
  std::int64_t records = 0;
};
struct StatusReport {
  std::string path;
  std::size_t records = 0;  ///< verified chain length
  std::vector<KernelStatus> kernels;
};
/// Reads and verifies <dir>/ladder.jsonl. A broken chain is an error.
Result<StatusReport> read_status(const std::string& dir);
std::string render_status(const StatusReport& report);

/// A ladder plan record: written to the evidence before a run's rungs, so a
/// shard's evidence says which plan and shard its rungs belong to.
std::string plan_json(const LadderResult& result, const LadderRequest& request, std::size_t assigned);

/// --shard-balance for ladder: the seconds of each kernel's latest climb in
/// DIR/ladder.jsonl, "contract|impl" -> seconds.
Result<std::map<std::string, double>> read_durations(const std::string& dir);

/// Whether DIR holds ladder evidence and no run record (a `kc ladder --out DIR`).
bool is_ladder_dir(const std::string& dir);

/// kc merge over the run directories of one ladder plan's shards: verifies each
/// shard's chain, refuses another plan, names missing shards, keeps the later of a
/// retried shard, and writes OUT/ladder.jsonl, a new chain: the plan record,
/// then every shard's rungs in plan order. OUT/ladder.jsonl must not exist.
struct LadderMerge {
  std::size_t shards = 0;
  std::size_t kernels = 0;
  std::size_t records = 0;  ///< rung records written
  std::string fingerprint;
  std::vector<std::string> notes;  ///< retried shards, left out
};
Result<LadderMerge> merge_evidence(const std::vector<std::string>& dirs, const std::string& out_dir);

/// Level reached from rungs: the highest L with rungs L1..L passed; a rung
/// marked not applicable at L4 stops the climb at L3.
Level level_reached(const std::map<int, Outcome>& outcomes);

}  // namespace kc::ladder
