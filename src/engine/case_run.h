// kc — one case (contract x impl) along the data flow: a sample's inputs and
// oracle answer, the kernel's invocations, the integrity checks around them,
// one judge per kind of postcondition, and the evidence builder that owns
// every counter. run_case (run_case.cpp) drives these stages and turns the
// evidence into a verdict.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/classify.h"
#include "kc/engine.h"
#include "kc/isolate.h"
#include "kc/peak.h"
#include "kc/plan.h"

namespace kc::engine {

std::string fmt_g4(double v);  ///< "%.4g"
std::string hex64(std::uint64_t v);
/// FNV-1a over the pure inputs (an in/out tensor is the impl's to overwrite).
std::uint64_t inputs_hash(const Call& call);
/// Whether every input tensor of `call` holds the same bytes as in `pristine`
/// (the same call before the kernel ran): the INPUT_MUTATED test, exact.
bool inputs_equal(const Call& call, const Call& pristine);

/// Owns a case's evidence: every failure and every judged element is counted
/// once, in its config and in the case's total together; signatures and notes
/// are kept once each; the first failure is kept for the classifiers.
class EvidenceBuilder {
 public:
  explicit EvidenceBuilder(CaseResult& result) : result_(result) {}

  void fail(ConfigEvidence& ce, std::int64_t n = 1) {
    tally(ce, n);
    accuracy_only = false;
  }
  /// A finite result outside the tolerance of a finite reference: a failure
  /// of accuracy and nothing else (what an impl whose library documents no
  /// accuracy never promised; see decide() in run_case.cpp).
  void fail_accuracy(ConfigEvidence& ce, std::int64_t n = 1) { tally(ce, n); }
  void count(ConfigEvidence& ce, std::int64_t n) {
    ce.elements += n;
    result_.evidence.elements += n;
  }
  /// A failure with its signature and note (signature and note kept once).
  void fail_with(ConfigEvidence& ce, const Signature& s, const std::string& note, std::int64_t n = 1) {
    fail(ce, n);
    add_signature(s);
    this->note(note);
  }
  void add_signature(const Signature& s) {
    if (seen_sigs_.insert(s.to_string()).second) signatures.push_back(s);
  }
  void note(const std::string& n) {
    auto& notes = result_.evidence.notes;
    if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
  }
  /// The sample the repro line points at.
  void point_at(const std::string& config, std::int64_t sample, std::uint64_t seed, std::uint64_t in_hash) {
    worst_config = config;
    worst_sample = sample;
    worst_seed = seed;
    result_.input_hash = hex64(in_hash);
  }
  CaseResult& result() { return result_; }

  bool any_fail = false;
  bool accuracy_only = true;  ///< every failure so far came through fail_accuracy
  bool any_run = false;
  std::vector<Signature> signatures;
  std::vector<double> all_ratios;  ///< every judged metric, for p99 / mean
  std::optional<Observation> first_failure;
  std::optional<Call> first_failure_inputs;
  std::uint64_t worst_seed = 0;
  std::string worst_config;
  std::int64_t worst_sample = 0;
  double worst_metric = -1;
  std::string property_evidence;       ///< the worst check of an algebraic property, in words
  std::string first_property_failure;  ///< the first failing sample's evidence
  std::int64_t fast_decided = 0;  ///< samples judged by kc::verify alone
  std::int64_t full_decided = 0;  ///< samples judged by the full oracle
  std::int64_t fast_flagged = 0;  ///< of those, samples the fast check sent there
  std::string fast_method;        ///< verify::method_name of the fast check that decided
  std::string fast_flag_note;     ///< the first flag, noted after the classifier's findings
  /// Per config that compared outputs: its samples judged, and those with at
  /// least one failing element (the failing_fraction statistic).
  struct SampleTally {
    std::string config;
    std::int64_t judged = 0;
    std::int64_t failing = 0;
  };
  std::vector<SampleTally> sample_tallies;
  /// What a measuring probe read off the outputs (accumulator_bits), noted
  /// after the classifier's findings, which lead a violation's reason.
  std::vector<std::string> readings;

 private:
  void tally(ConfigEvidence& ce, std::int64_t n) {
    ce.failures += n;
    result_.evidence.failures += n;
    any_fail = true;
  }
  CaseResult& result_;
  std::set<std::string> seen_sigs_;
};

/// A fast verifier `kc check --fast` may judge an op's samples with instead of
/// the oracle (kc/verify.h, docs/verify.md); null where the op has none.
struct FastCheck;
const FastCheck* fast_check_for(std::string_view op);
std::string fast_check_what(const FastCheck& check, const CheckRequest& request);

/// `reference alternate_stack S`: one impl S names, run in a worker of its
/// own on each sample's inputs; its outputs are the oracle's answer.
struct AlternateRef {
  ReferenceImpl ref;
  std::unique_ptr<isolate::Worker> worker;
  std::int64_t answers = 0;  ///< samples it answered
};

/// What every stage of one case shares.
struct CaseRun {
  CaseRun(const Contract& c, const std::string& file, const Impl& i, const CheckRequest& r, const Plan& p,
          CaseResult& result)
      : contract(c), contract_file(file), impl(i), decl(i.declaration()), request(r), plan(p), op(*p.op),
        worker(i, r.isolation, r.limits), ev(result) {}
  const Contract& contract;
  const std::string& contract_file;
  const Impl& impl;
  const Declaration& decl;
  const CheckRequest& request;
  const Plan& plan;
  const Op& op;
  OracleOptions oracle_options;
  isolate::Worker worker;
  EvidenceBuilder ev;
  const FastCheck* fast_check = nullptr;
  bool fast_eligible = false;
  bool stale_checked = false;  ///< STALE_OUTPUT runs once per case
  bool time_checked = false;   ///< host kernels: the timing floor applies
  /// The determinism judge's concurrency sweep: the impl invoked k at once
  /// (k = 2, 4), each level in a worker of its own.
  std::vector<std::unique_ptr<Impl>> sweep_impls;
  std::vector<std::unique_ptr<isolate::Worker>> sweep_workers;
  /// Under `reference alternate_stack S`, the impls S names, tried in order
  /// for each config (the first that can run it answers); empty otherwise.
  std::vector<AlternateRef> alternates;
};

/// One config's running state.
struct ConfigRun {
  ConfigEvidence ce;
  std::vector<double> ratios;          ///< every judged metric of the config
  std::string observed;                ///< behaviour class a policy judge saw
  std::vector<double> kernel_seconds;  ///< random-input calls that returned OK
  std::int64_t samples_judged = 0;     ///< samples whose outputs were judged
  std::int64_t samples_failing = 0;    ///< of those, samples with a failure
  TimeFloor floor;
};

/// One sample, as the execute step yields it.
struct Sample {
  const Config* config = nullptr;
  std::int64_t index = 0;
  std::uint64_t seed = 0;
  Call call;     ///< the kernel's call: inputs, then what the kernel wrote
  Call inputs;   ///< pristine copy: re-runs, properties and fingerprints start from it
  /// The inputs' checksum, as a failure's record cites it (computed from the
  /// pristine inputs when first asked: most samples never need it).
  std::uint64_t in_hash() const {
    if (!in_hash_) in_hash_ = inputs_hash(inputs);
    return *in_hash_;
  }
  mutable std::optional<std::uint64_t> in_hash_;
  std::optional<OracleResult> oracle;
  /// Under --fast, the bound the fast verifier judges with (the oracle is then
  /// computed only if it flags the sample); null otherwise.
  const Tolerance* fast_tol = nullptr;
  std::function<Result<OracleResult>(const Call&)> reference;  ///< the (shared) oracle answer
  bool compared = false;  ///< a numeric comparison ran on this sample
  /// The implementation path the kernel reported for its last call, and why
  /// (kc/capability.h); empty when it reported none.
  std::string selected_path;
  std::string selected_reason;
  bool captured = false;  ///< this sample holds the case's first failure
  // Repeated invocations (determinism): the first run's outputs, the runs
  // compared, how many of them differed from the first, and at which
  // concurrency level (alone, 2 at once, 4 at once).
  std::vector<std::vector<double>> first_outputs;
  int runs_judged = 0;
  std::int64_t mismatched_runs = 0;
  std::array<std::int64_t, 3> runs_at{}, mismatched_at{};
};

/// How a stage ends: go on, end this sample's invocations, or end the case.
struct Step {
  enum class Kind { kNext, kEndSample, kEndCase };
  Kind kind = Kind::kNext;
  Verdict verdict = Verdict::kError;
  std::string reason;
  static Step next() { return {}; }
  static Step end_sample() { return {Kind::kEndSample, Verdict::kError, {}}; }
  static Step end_case(Verdict v, std::string why) { return {Kind::kEndCase, v, std::move(why)}; }
  /// The worker failed (crash, timeout, memory, guard): an error verdict with
  /// its signature; or, where an illegal instruction breaks a declared
  /// device_capability (device_capability_crash), a failure of the config, and the case goes on.
  static Step worker_failed(CaseRun& c, ConfigRun& cr, const isolate::Outcome& o, const Sample& s,
                            std::uint64_t in_hash);
};

/// One judge per kind of postcondition, behind one interface: it turns one
/// invocation of the kernel into evidence through the case's EvidenceBuilder.
class Judge {
 public:
  virtual ~Judge() = default;
  /// Whether the kernel raising is an outcome this judge judges (declared
  /// policies); otherwise the common raise rules apply before it is called.
  virtual bool judges_raises() const { return false; }
  /// Invocation `run` of the sample; `status` is OK unless judges_raises().
  virtual Step judge(CaseRun& c, ConfigRun& cr, Sample& s, int run, const Status& status) const = 0;
  /// After the sample's invocations.
  virtual void end_sample(CaseRun& c, ConfigRun& cr, Sample& s) const {}
  /// After the case's last sample: notes on how the judge measured.
  virtual void end_case(CaseRun& c) const {}
  /// Starts the extra workers the judge invokes the kernel in, before the
  /// oracle's answer exists (a worker is a copy of kc's memory).
  virtual Status prepare(CaseRun& c, const Call& call) const { return ok_status(); }
  /// The worker invocation `run` goes to; *timed says whether its time is one
  /// kernel call alone (the timing floor's sample).
  virtual isolate::Worker& worker_for(CaseRun& c, int run, bool* timed) const {
    *timed = true;
    return c.worker;
  }
};

/// The judge for a plan: declared policy, algebraic property, repeated
/// invocations (determinism) or the numeric comparison (oracle, or kc::verify under --fast).
std::unique_ptr<Judge> make_judge(const Plan& plan);

/// The raise rules every judge but the policy judge shares: a raise where the
/// contract expects a result is UNEXPECTED_RAISE (unless `or raise E` accepts
/// it), a normal return where it must raise MISSING_RAISE.
Step judge_raise(CaseRun& c, ConfigRun& cr, Sample& s, const Status& status);

// Integrity checks the contract need not name (integrity.cpp).

/// INPUT_MUTATED: the inputs' checksum changed across the call.
void check_inputs_untouched(CaseRun& c, ConfigRun& cr, const Sample& s);
/// Poison bits after the call mean "never written" or "computed from the
/// poisoned buffer"; a second call with a finite sentinel tells them apart and
/// narrows the first failure's unwritten mask.
Step confirm_unwritten(CaseRun& c, ConfigRun& cr, Sample& s);
/// STALE_OUTPUT, once per case: the same addresses re-filled with new values.
Step check_stale_output(CaseRun& c, ConfigRun& cr, Sample& s, std::int64_t failures_before);
/// Under `declared_policy unsupported`, a kernel killed by SIGILL where the
/// impl declares a device_capability: the reason it breaks the declaration (the
/// CPU has every declared feature, or it lacks one and RAISE or FALLBACK was
/// declared), or "" where the crash stays an error (capability.cpp).
std::string device_capability_crash(const CaseRun& c, const isolate::Outcome& o);
/// TIMING_IMPLAUSIBLE: the config's fastest kernel call below the physical floor.
void check_timing_floor(CaseRun& c, ConfigRun& cr);
/// `time latency across SIZE + N`: the config's call timed against the call
/// past the boundary (kc/latency_jump.h). A path change inferred where the
/// declaration promises one path on both sides, the kernel reports none and
/// the change reaches the contract's factor is SILENT_FALLBACK(latency
/// (inferred)); any other outcome is a note (capability.cpp).
Step time_latency(CaseRun& c, const Config& config, ConfigRun& cr);

// Tolerances (tolerance.cpp).

/// Per-element allowed error for a tolerance in a given config.
Result<std::vector<double>> allowed_errors(const Tolerance& tol, const Op& op, const Call& call,
                                           const std::string& output, const std::vector<double>& ref);
/// Ratios (metric / allowed) for one output; ULP tolerances compare ULP distances.
Result<std::vector<double>> output_ratios(const Tolerance& tol, const Op& op, const Call& call,
                                          const std::string& output, const std::vector<double>& got,
                                          const std::vector<double>& ref, std::vector<double>* allowed);
/// The tolerance that applies at a precision: the tolerance itself, or its
/// per_precision entry for `dtype` (kNotFound when it has none).
Result<const Tolerance*> tolerance_at(const Tolerance& tol, DType dtype);
/// The `bound` tolerance that applies to a precision, if the tolerance is one.
const Tolerance* bound_tolerance(const Tolerance& tol, DType dtype);

/// Facts about the inputs the classifier needs (run_case.cpp).
void describe_inputs(const Call& call, Observation* obs);
std::string position_of(const Tensor& t, std::int64_t flat);

}  // namespace kc::engine
