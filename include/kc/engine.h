// kc — the conformance engine: plan, execute, judge (docs/architecture.md).
//
// A contract's protocol runs against impls; every case yields a Verdict with
// Evidence, zero or more named Signatures, and a one-line repro command.
// Outcomes of the kernel under test are data (a verdict), never an error of kc.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/backend.h"
#include "kc/enum_table.h"
#include "kc/isolate.h"
#include "kc/lang.h"
#include "kc/model.h"
#include "kc/op.h"
#include "kc/shard.h"
#include "kc/status.h"

namespace kc::engine {

enum class Verdict { kConforming, kViolation, kUnderSpecified, kNotApplicable, kError, kSkipped };
std::span<const EnumEntry<Verdict>> verdict_table();
inline std::string_view verdict_name(Verdict v) { return enum_name(verdict_table(), v); }

/// The worst element seen for a case.
struct WorstElement {
  std::string output;           ///< tensor name
  std::int64_t index = -1;      ///< logical flat index
  std::string position;         ///< "(row 3, col 17)" style
  double value = 0;             ///< what the impl produced
  double reference = 0;         ///< what the oracle says
  double metric = 0;            ///< the judged metric at that element
  std::string config;           ///< config it occurred in
};

/// Statistics for one config.
struct ConfigEvidence {
  std::string config;
  double max = 0, p99 = 0, mean = 0;
  std::int64_t elements = 0;
  std::int64_t failures = 0;  ///< elements (or runs) that broke the bound
  std::string note;           ///< why the config was skipped, if it was
};

struct Evidence {
  std::string metric;            ///< what max/p99 are: ratio, rel_error, ulp, mismatched_runs, ...
  std::string tolerance;         ///< tolerance as text, with its evaluated value
  double max = 0, p99 = 0, mean = 0;
  double p50 = 0;                ///< median of the same judged metrics (run records, docs/diff.md)
  std::int64_t elements = 0;     ///< compared elements over all configs/samples
  std::int64_t failures = 0;
  std::optional<WorstElement> worst;
  std::vector<ConfigEvidence> per_config;
  std::vector<std::string> notes;  ///< human-readable findings ("12 of 256 outputs capped at 65504")
  /// Which check decided the numeric verdict: "full_oracle", "freivalds+sampled"
  /// or "sampled" (kc::verify under --fast: matmul, attention), or
  /// "full_oracle after fast flag"; empty when no
  /// numeric comparison ran (policy, determinism and raise cases).
  std::string method;
};

/// One verdict record: contract × impl (over all its configs).
struct CaseResult {
  std::string contract_id;
  std::string contract_hash;
  std::string contract_file;
  std::string impl;
  std::string backend;
  std::string backend_version;
  Verdict verdict = Verdict::kSkipped;
  std::string reason;                ///< one line: why this verdict
  std::vector<Signature> signatures; ///< named failure patterns (violations only)
  bool signature_expected = false;   ///< a detected signature is one the contract lists
  Evidence evidence;
  std::uint64_t seed = 0;
  std::string input_hash;            ///< hash of the inputs of the worst case
  std::string repro;                 ///< one-line command that reproduces this case
  double seconds = 0;
  /// Where the case stands in the run's plan before any --shard split: its
  /// contract's position among the loaded contracts, and its own.
  std::size_t contract_index = 0, plan_index = 0;
  /// SHA-256 over the output tensors' bytes of every sample's first call, in
  /// plan order (docs/diff.md); empty when no call returned outputs.
  std::string output_hash;
  /// The impl's declared facts (accumulator, determinism, policies, library
  /// build keys) as text: what decides its code path, for run records.
  std::map<std::string, std::string> facts;
  /// --timing N: the case's first call (cold) and N more calls of the same
  /// inputs (warm) in its worker, wall seconds inside the kernel call.
  struct Timing {
    std::string config;  ///< the config timed (the case's first that ran)
    std::int64_t sample = 0;  ///< and its sample
    double cold_s = 0;
    std::vector<double> warm_s;
  };
  std::optional<Timing> timing;
  /// What a conforming verdict on this contract shows (docs/grading.md "Tiers"):
  /// "exceptional" (NaN/Inf/subnormal/OOB probes or a declared-policy judge),
  /// "held_out_shapes" (the contract names TILE_REMAINDER or HELD_OUT_SHAPE),
  /// else "numeric".
  std::vector<std::string> covers;
};

class SampleCache;  // src/engine/sample_cache.h

/// An impl a `reference alternate_stack S` clause may name as the oracle, with
/// its backend's probe result (docs/judge.md, "Cross-stack arbitration").
struct ReferenceImpl {
  std::shared_ptr<const Impl> impl;
  BackendInfo backend;
};

/// What sharing inputs and oracle answers across impls saved in one run.
struct SampleCacheStats {
  std::int64_t inputs_generated = 0, inputs_reused = 0;
  std::int64_t oracles_computed = 0, oracles_reused = 0;
  std::size_t bytes = 0;  ///< held at the end
};

/// Where a run stands, after one more case of its plan was recorded.
struct CheckProgress {
  std::size_t done = 0;     ///< cases recorded so far (read back from a trace included)
  std::size_t planned = 0;  ///< cases in the plan (this shard's, with --shard)
  std::size_t resumed = 0;  ///< of done, read back from the trace (--resume), not run
  const CaseResult* last = nullptr;  ///< the case just recorded
};

/// Inputs of a check run. Every CLI command is one of these functions.
struct CheckRequest {
  std::vector<std::string> paths;          ///< contract files or directories
  std::vector<std::string> contracts;      ///< id filters (glob: * ?), empty = all
  std::vector<std::string> impls;          ///< impl filters (glob), empty = all applicable
  std::vector<std::string> backends;       ///< backend filters (glob), empty = all
  /// --suite NAME: a `suite` block of the loaded files; its contract and impl
  /// globs select too (a case runs when it passes these filters and the suite's).
  std::string suite;
  /// Backends to load at all (glob), empty = every one: the others are never
  /// probed, so their libraries stay out of the process (--backend).
  std::vector<std::string> load_backends;
  std::vector<std::string> plugin_paths;
  /// --library NAME[@LABEL]=PATH: other builds of BLAS libraries (kc/backend.h).
  std::vector<LibraryOverride> libraries;
  std::vector<std::string> opencl_sources; ///< .cl files graded as backend opencl_user (kc vet)
  std::uint64_t seed = 0x6b63;
  std::optional<std::int64_t> samples;     ///< override the protocol's sample count
  std::optional<std::int64_t> sample_index;///< run only this sample (repro)
  std::optional<std::string> config;       ///< run only this config ("K=4096 M=16 dtype=FP32")
  std::string trace_path;                  ///< append JSONL records here (empty = none)
  /// --resume: continue the run whose trace is trace_path: the cases it records
  /// since the run began (TRACE.run.json) are read back, not run again; other
  /// options than that run's are refused (docs/trace.md).
  bool resume = false;
  /// Called after each case of the plan is recorded, in plan order, on the
  /// thread that called run_check (the CLI prints progress from it; the
  /// library prints nothing). Empty: no calls.
  std::function<void(const CheckProgress&)> on_progress;
  isolate::Mode isolation = isolate::Mode::kProcess;  ///< --isolate=process|none
  isolate::Limits limits;                  ///< --timeout, --memory-limit (per kernel call)
  /// --fast: matmul and attention cases compared elementwise with an FP64
  /// oracle under a `bound` tolerance are judged by kc::verify (matmul:
  /// Freivalds + sampled elements, O(n^2 k); attention: sampled query rows,
  /// O(seq head_dim) each) instead of the oracle; a flagged sample is re-judged by the oracle.
  bool fast = false;
  int fast_probes = 10;             ///< --fast-probes: Freivalds probe vectors (1..64)
  std::int64_t fast_samples = 64;   ///< --fast-samples: sampled elements (matmul) or query rows (attention)
  /// The verification ladder's hook (kc/ladder.h): called on every sample's
  /// call after the protocol's fill and probe, before the kernel runs. It may
  /// rewrite input values, never shapes. Empty: the protocol's inputs as they are.
  std::function<void(Call& call)> prepare_inputs;
  /// --jobs: cases run at once, each kernel in its own worker (0: one and a
  /// half per hardware thread, rounded up). Cases that measure time or determinism, and in-process
  /// kernels, run alone (case_schedule); results are recorded in plan order.
  int jobs = 0;
  /// Inputs and oracle answers shared by every impl of the run (sample_cache.h);
  /// run_check makes one when empty. Calls of run_case alone share nothing.
  std::shared_ptr<SampleCache> sample_cache;
  /// --allow-empty: a run that judged no case exits 0 instead of
  /// ExitCode::kNothingJudged (kc/exit_code.h).
  bool allow_empty = false;
  /// --timing N: after a case's first call, N more calls of the same inputs
  /// are timed (0: off); such cases run alone (case_schedule).
  int timing_calls = 0;
  /// The impls `reference alternate_stack S` chooses among: every impl of an
  /// available backend. run_check fills it from its registry when empty; a
  /// call of run_case alone that leaves it empty finds no alternate stack (the
  /// case is then not_applicable, never judged against the FP64 oracle).
  std::shared_ptr<const std::vector<ReferenceImpl>> reference_impls;
  /// --shard I/N: run only the plan cases kc::shard::assign gives shard I
  /// (kc/shard.h); the others are not planned here. Unset: the whole plan.
  std::optional<shard::Shard> shard;
  /// --shard-balance: an earlier run's case durations ("contract|impl" ->
  /// seconds) that the split balances by; empty: round robin.
  std::map<std::string, double> shard_durations;
  std::string shard_balance;  ///< where they were read from (a run identity option)
};

struct CheckResult {
  std::vector<CaseResult> cases;
  std::vector<lang::Diagnostic> diagnostics;  ///< contract-file problems
  std::vector<BackendInfo> backends;
  SampleCacheStats reuse;  ///< inputs and oracle answers generated vs reused
  bool allow_empty = false;  ///< from the request: judging nothing is not a failure
  std::string trace_path;       ///< the trace this run appended to (empty: none)
  std::string trace_last_hash;  ///< its last record's hash when the run ended: the anchor to keep
  /// Files kc could not write ("FILE: why"): a trace record, a report. Any
  /// makes the exit code kInternal (kc/exit_code.h).
  std::vector<std::string> write_errors;
  /// Run-wide notes, each also said as it happens (kc/message.h): what the
  /// memory budget changed (fewer jobs at once, a lower per-worker limit), how
  /// it is held, what --resume read back.
  std::vector<std::string> notes;
  /// SIGINT or SIGTERM stopped the run (kc/interrupt.h): `cases` holds only
  /// what finished before it; exit code ExitCode::kInterrupted.
  bool interrupted = false;
  std::size_t planned = 0;   ///< cases in the run's plan (this shard's, with --shard)
  /// The plan before any --shard split: its size and fingerprints (kc/diff.h
  /// RecordPlan says what each covers).
  std::size_t plan_total = 0;
  std::string plan_fingerprint, selection_fingerprint;
  std::optional<shard::Shard> shard;
  std::size_t resumed = 0;   ///< of `cases`, read back from the trace (--resume)
  /// The op of every impl the run planned (its declaration's), for reports
  /// that group impls by op; empty in a result put together from run records.
  std::map<std::string, std::string> impl_ops;
  /// Cases judged: conforming, violation or error verdicts.
  std::size_t judged() const;
  /// Why the run judged nothing ("0 of 12 cases judged: 10 not_applicable, 2
  /// skipped"); empty when some case was judged.
  std::string nothing_judged() const;
  /// kc/exit_code.h: 3 a file kc could not write, 2 contract or selection
  /// error, 130 interrupted, 1 some violation (or error verdict), 4 no case judged (unless
  /// allow_empty), else 0.
  int exit_code() const;
};

/// Loads contracts from files/directories (.kc, .yaml, .yml), recursively.
struct LoadedContracts {
  std::vector<Contract> contracts;
  std::vector<std::string> files;  ///< parallel to contracts
  std::vector<Declaration> impls;  ///< impl blocks found
  std::vector<Calibration> calibrations;
  std::vector<Suite> suites;
  std::vector<lang::Diagnostic> diagnostics;
};
LoadedContracts load_contracts(const std::vector<std::string>& paths);

/// Runs the selected contracts against applicable impls of the registry.
CheckResult run_check(const CheckRequest& request, BackendRegistry& registry);
/// Same, with the built-in backends (and request.plugin_paths).
CheckResult run_check(const CheckRequest& request);

/// Every impl of the registry's available backends, with its backend's info
/// (what CheckRequest::reference_impls holds).
std::shared_ptr<const std::vector<ReferenceImpl>> available_impls(BackendRegistry& registry);

/// Whether the contract's `stack = X`, `version CMP v` and `flag(F) = v`
/// preconditions hold for an impl, judged against what it records: its
/// declaration and its backend's probe (docs/judge.md, "Applicability").
/// Empty when they hold; else why not (the case is then not_applicable). An
/// error for a precondition that cannot be evaluated as written (a version
/// that is not dotted numeric).
Result<std::string> unmet_precondition(const Contract& contract, const Declaration& decl, const BackendInfo& backend);

/// The library version an impl records, as a dotted number ("0.3.21"): its
/// declaration's `version`, else the number its backend's version line gives
/// (in the part naming its compiler or library, or `stack_hint`, when the line
/// names several). nullopt, with *why_not set, when it records none.
std::optional<std::string> recorded_version(const Declaration& decl, const BackendInfo& backend,
                                            const std::string& stack_hint, std::string* why_not);

/// Compares dotted numeric versions component by component ("0.3.21" <
/// "0.3.100", "1.2" == "1.2.0"): <0, 0 or >0; nullopt when either is not one.
std::optional<int> compare_versions(std::string_view a, std::string_view b);

/// The names a `stack = X` (or `alternate_stack X`) may match for an impl:
/// its backend, its declared compiler, variant, vendor, device and library,
/// and the words of its backend's version line (library, vendor and device names).
std::vector<std::string> recorded_stack_names(const Declaration& decl, const BackendInfo& backend);

/// The impls `reference alternate_stack S` names for `under_test`, in the
/// order they are tried: impls of the same op other than under_test itself,
/// whose name S matches (as a glob, or as a dotted prefix: `compilers.gcc_O2`),
/// or whose stack names (recorded_stack_names) S matches; an exact name
/// first, then by name. Calibration and broken-on-purpose impls only when S
/// names them. Empty, with *why_none set, when none is available.
std::vector<ReferenceImpl> alternate_stack_impls(const std::string& stack, const Declaration& under_test,
                                                 const std::vector<ReferenceImpl>& available, std::string* why_none);

/// Runs one contract against one impl (the unit the engine schedules).
CaseResult run_case(const Contract& contract, const std::string& contract_file, const Impl& impl,
                    const BackendInfo& backend, const CheckRequest& request);

/// Whether a case may run alongside other cases (`--jobs`), and if not, why.
struct CaseSchedule {
  bool parallel = true;
  std::string reason;  ///< why it runs alone
};
CaseSchedule case_schedule(const Contract& contract, const Impl& impl, const CheckRequest& request);

/// Plain-language account of a contract: promise, protocol, tolerance, signature.
std::string explain(const Contract& contract, const std::string& file);

/// Op names a scope entry covers, from the op registry ("reduction" -> dot,
/// asum, nrm2, sum: the ops whose Op::scope_classes name it; an op name -> itself).
std::vector<std::string> ops_for_scope(const std::string& scope_entry);

/// Glob match with * and ?.
bool glob_match(std::string_view pattern, std::string_view text);

/// `kc vet`: a user's kernel file built into a plugin library.
struct VetBuild {
  std::string library;  ///< the shared library to load with --plugin
  std::string command;  ///< the build command run (empty for a .so given as is)
  std::string log;      ///< the compiler's output
  /// For a .cl file: the file itself, graded as backend opencl_user (library is then empty).
  std::string opencl_source;
};
/// Builds `source` against the plugin ABI (include/kc/kc_plugin.h) into a
/// shared library under `work_dir`: .c with cc, .cpp/.cc/.cxx with c++, .cu
/// with nvcc; a .so is used as is. `include_dir` holds kc/kc_plugin.h. A .cl
/// file is built with the OpenCL runtime instead (kc_<op> kernel convention,
/// docs/backends/opencl.md) and returned as opencl_source.
Result<VetBuild> build_kernel_library(const std::string& source, const std::string& work_dir,
                                      const std::string& include_dir);

}  // namespace kc::engine
