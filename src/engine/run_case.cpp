// kc — executes one contract against one impl along the data flow
// (engine/case_run.h): plan configs, generate each sample's inputs and oracle
// answer, run the kernel, apply the integrity checks and the postcondition's
// judge, name the failure, decide the verdict.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "engine/case_run.h"
#include "engine/oracle_reference.h"
#include "engine/poison.h"
#include "engine/sample_cache.h"
#include "kc/capability.h"
#include "kc/metrics.h"
#include "kc/obligation.h"
#include "kc/oracle_options.h"
#include "kc/report.h"
#include "kc/signature.h"

namespace kc::engine {

std::string fmt_g4(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string hex64(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t inputs_hash(const Call& call) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (call.roles[k] != Role::kIn) continue;
    h = (h ^ call.tensors[k].hash()) * 1099511628211ull;
  }
  return h;
}

bool inputs_equal(const Call& call, const Call& pristine) {
  if (call.tensors.size() != pristine.tensors.size()) return false;
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (call.roles[k] != Role::kIn) continue;
    const Tensor& now = call.tensors[k];
    const Tensor& was = pristine.tensors[k];
    if (now.nbytes() != was.nbytes() || std::memcmp(now.raw(), was.raw(), now.nbytes()) != 0) return false;
  }
  return true;
}

namespace {

/// Injects NaN/±Inf into the named tensors (every storage element at density
/// 1, padding included; otherwise a random fraction, at least one element).
Status inject_into_tensors(Call& call, const Probe& probe, Rng& rng) {
  double v = 0;
  if (probe.name == "nan") v = std::numeric_limits<double>::quiet_NaN();
  else if (probe.name == "inf") v = std::numeric_limits<double>::infinity();
  else if (probe.name == "neg_inf") v = -std::numeric_limits<double>::infinity();
  else return invalid_argument("only nan, inf and neg_inf can target a named tensor");
  for (const auto& name : probe.tensors) {
    if (!call.has(name)) return invalid_argument("op has no tensor '" + name + "'");
    Tensor& t = call.t(name);
    if (probe.density >= 1) {
      t.fill_storage(v);
      continue;
    }
    const std::int64_t n = t.numel();
    if (n == 0) continue;
    std::int64_t k = std::max<std::int64_t>(1, static_cast<std::int64_t>(probe.density * n));
    for (std::int64_t j = 0; j < k; ++j) t.set(rng.uniform_int(0, n - 1), v);
  }
  return ok_status();
}

/// |mean| / standard deviation of the finite values in v[begin, end) (two
/// passes); 0 for fewer than two values or no spread.
double offset_ratio(const std::vector<double>& v, std::size_t begin, std::size_t end) {
  double sum = 0;
  std::int64_t n = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (!std::isfinite(v[i])) continue;
    sum += v[i];
    ++n;
  }
  if (n < 2) return 0;
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (std::size_t i = begin; i < end; ++i)
    if (std::isfinite(v[i])) ss += (v[i] - mean) * (v[i] - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n));
  return sd > 0 ? std::fabs(mean) / sd : 0;
}

}  // namespace

/// Facts about the inputs the classifier needs: any NaN/Inf, and how large
/// their mean is relative to their spread: over all floating inputs, and
/// row by row for matrices (a row-wise op such as variance or softmax
/// cancels within a row, and a probe may give each row its own offset).
void describe_inputs(const Call& call, Observation* obs) {
  std::vector<double> all;
  double worst_row = 0;
  bool seen_tensor = false;
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (call.roles[k] != Role::kIn || !dtype_info(call.tensors[k].dtype()).is_float) continue;
    const Tensor& t = call.tensors[k];
    const std::vector<double> v = t.to_doubles();
    obs->input_format_max = std::max(obs->input_format_max, dtype_info(t.dtype()).max_finite);
    double tensor_max = 0;
    for (double x : v) {
      obs->inputs_finite = obs->inputs_finite && std::isfinite(x);
      if (std::isfinite(x)) tensor_max = std::max(tensor_max, std::fabs(x));
    }
    obs->input_max_abs = std::max(obs->input_max_abs, tensor_max);
    if (tensor_max > 0) {  // an all-zero tensor (a beta of 0) has no squares to underflow
      obs->least_input_max_abs = seen_tensor ? std::min(obs->least_input_max_abs, tensor_max) : tensor_max;
      seen_tensor = true;
    }
    if (t.rank() >= 2 && t.dim(0) > 1) {
      const auto row = v.size() / static_cast<std::size_t>(t.dim(0));
      for (std::size_t b = 0; row > 1 && b + row <= v.size(); b += row)
        worst_row = std::max(worst_row, offset_ratio(v, b, b + row));
    }
    all.insert(all.end(), v.begin(), v.end());
  }
  obs->input_offset_ratio = std::max(offset_ratio(all, 0, all.size()), worst_row);
}

std::string position_of(const Tensor& t, std::int64_t flat) {
  if (t.rank() == 2) {
    const auto cols = t.dim(1);
    return "(row " + std::to_string(flat / cols) + ", col " + std::to_string(flat % cols) + ")";
  }
  if (t.rank() > 2) {  // e.g. attention's (batch, head, pos, dim)
    std::string idx;
    std::int64_t rest = flat;
    for (std::size_t d = t.rank(); d-- > 0;) {
      const std::int64_t n = std::max<std::int64_t>(t.dim(d), 1);
      idx = std::to_string(rest % n) + (idx.empty() ? "" : ", ") + idx;
      rest /= n;
    }
    return "(" + idx + ")";
  }
  return "[" + std::to_string(flat) + "]";
}


namespace {

/// What conforming on this contract shows, for the grade's tiers (docs/grading.md).
std::vector<std::string> coverage(const Contract& contract, const Plan& plan) {
  std::vector<std::string> covers;
  const auto cls = contract.meta.find("class");
  const bool probe_exceptional =
      plan.probe && (plan.probe->name == "nan" || plan.probe->name == "inf" || plan.probe->name == "neg_inf" ||
                     plan.probe->name == "subnormal" || plan.probe->name == "oob");
  if (probe_exceptional || plan.policy_judge || (cls != contract.meta.end() && cls->second == "exceptional"))
    covers.push_back("exceptional");
  for (const Signature& s : contract.violation.signatures)
    if (s.name == sig::kTileRemainder || s.name == sig::kHeldOutShape) {
      covers.push_back("held_out_shapes");
      break;
    }
  if (covers.empty()) covers.push_back("numeric");
  return covers;
}


/// The impl of the alternate stack that answers for this call: the first, in
/// order, that supports the config's precision and can run the call; null
/// (with *why set) when none can.
AlternateRef* alternate_for(CaseRun& c, const Call& call, std::string* why) {
  for (AlternateRef& a : c.alternates) {
    const Declaration& d = a.ref.impl->declaration();
    const bool dtype_ok = std::find(d.dtypes.begin(), d.dtypes.end(), call.config.dtype) != d.dtypes.end();
    const Status ci = dtype_ok ? a.ref.impl->can_implement(call)
                               : unimplemented("supports no " + std::string(dtype_name(call.config.dtype)));
    if (ci.ok()) return &a;
    *why += (why->empty() ? "" : "; ") + d.name + ": " + ci.message();
  }
  *why = "no impl of alternate stack " + c.contract.reference.name + " can run this config (" + *why + ")";
  return nullptr;
}

/// The oracle's answer under `reference alternate_stack S`: the reference
/// impl run in its own worker on a copy of the inputs, its outputs poisoned
/// first. It is untrusted like the impl under test: a crash, a raise or an
/// output it leaves unwritten is no answer, and the case ends as an error.
Result<OracleResult> alternate_answer(const Op& op, AlternateRef& a, const Call& inputs) {
  const std::string& name = a.ref.impl->declaration().name;
  Call call = inputs;
  poison_outputs(op, call);
  const isolate::Outcome o = a.worker->run(call);
  if (o.failure)
    return internal_error("the alternate stack's impl " + name + " failed: " + o.failure->to_string() +
                          (o.status.ok() ? std::string() : " (" + o.status.message() + ")"));
  if (!o.status.ok()) return internal_error("the alternate stack's impl " + name + " did not answer: " + o.status.to_string());
  OracleResult answer;
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (call.roles[k] == Role::kIn) continue;
    if (poisoned(op, call, k)) {
      const std::vector<std::uint8_t> mask = fill_mask(call.tensors[k]);
      const auto unwritten = std::count(mask.begin(), mask.end(), std::uint8_t{1});
      if (unwritten > 0)
        return internal_error("the alternate stack's impl " + name + " left " + std::to_string(unwritten) + " of " +
                              std::to_string(mask.size()) + " elements of " + call.names[k] +
                              " unwritten: it cannot arbitrate");
    }
    answer.outputs.push_back(call.tensors[k].to_doubles());
    answer.output_names.push_back(call.names[k]);
  }
  ++a.answers;
  return answer;
}

/// `reference alternate_stack S`: the impls S names become the case's oracle.
/// Not applicable when S names no available impl (never a silent fallback to
/// the FP64 oracle); under-specified for a postcondition that compares no outputs.
Step setup_alternate_stack(CaseRun& c) {
  const std::string& stack = c.contract.reference.name;
  const Postcondition::Kind post = c.contract.post.kind;
  if ((post != Postcondition::Kind::kElementwiseClose && post != Postcondition::Kind::kClose) || c.plan.policy_judge ||
      c.plan.property || c.plan.invocations != 1)
    return Step::end_case(Verdict::kUnderSpecified,
                          "reference alternate_stack " + stack +
                              " judges outputs against another stack's: the post clause must be "
                              "'output O satisfies elementwise_close(O, ref(O))' or 'close(O, ref(O))'");
  std::string why;
  const std::vector<ReferenceImpl> none;
  const std::vector<ReferenceImpl>& available = c.request.reference_impls ? *c.request.reference_impls : none;
  std::vector<ReferenceImpl> found = alternate_stack_impls(stack, c.decl, available, &why);
  if (found.empty())
    return Step::end_case(Verdict::kNotApplicable,
                          why + (c.request.reference_impls ? "" : " (no impls were given to choose among)"));
  for (ReferenceImpl& r : found) {
    auto worker = std::make_unique<isolate::Worker>(*r.impl, c.request.isolation, c.request.limits);
    c.alternates.push_back({std::move(r), std::move(worker), 0});
  }
  return Step::next();
}

/// Every alternate-stack impl that answered: "compilers.gcc_O2.sum", or with
/// its backend "compilers.gcc_O2.sum (compilers: clang++ 14.0.6 ; g++ 12.2.0)".
std::string alternates_used(const CaseRun& c, bool with_backend) {
  std::string out;
  for (const AlternateRef& a : c.alternates) {
    if (a.answers == 0) continue;
    out += (out.empty() ? "" : ", ") + a.ref.impl->declaration().name;
    if (with_backend)
      out += " (" + a.ref.backend.name + (a.ref.backend.version.empty() ? "" : ": " + a.ref.backend.version) + ")";
  }
  return out;
}

/// The evidence of a case judged against an alternate stack names the impls
/// that answered (after the verdict's own findings, which come first).
void note_alternates(CaseRun& c) {
  const std::string used = alternates_used(c, true);
  if (used.empty()) return;
  c.ev.result().evidence.method = "alternate_stack";
  c.ev.note("oracle: alternate stack " + c.contract.reference.name + " = " + used +
            ", run in a worker of its own on the same inputs; " + c.decl.name + " compared with it under `" +
            c.contract.tolerance_info.text + "`");
  if (c.alternates.size() > 1) {
    std::string names;
    for (const auto& a : c.alternates) names += (names.empty() ? "" : ", ") + a.ref.impl->declaration().name;
    c.ev.note("alternate stack " + c.contract.reference.name + " names " + std::to_string(c.alternates.size()) +
              " impls (" + names + "); each config is answered by the first of them, in this order, that can run it");
  }
}

/// `reference higher_precision P` with P narrower than FP64: the oracle's
/// answer (FP64 elementwise arithmetic, sums as its `with` options say) with
/// every output rounded to P once, as a computation in P ends.
std::function<Result<OracleResult>(const Call&)> rounded_to(std::function<Result<OracleResult>(const Call&)> ref,
                                                             DType p) {
  return [ref = std::move(ref), p](const Call& call) -> Result<OracleResult> {
    Result<OracleResult> r = ref(call);
    if (!r.ok()) return r;
    for (auto& out : r->outputs)
      for (double& v : out) v = round_to(v, p);
    return r;
  };
}

/// A reference precision P is higher than the config's only when P carries
/// more significand bits; otherwise the clause does not say what to compare with.
std::string reference_not_higher(const CaseRun& c, const Config& config) {
  const Reference& r = c.contract.reference;
  if (r.kind != Reference::Kind::kHigherPrecision || r.precision == DType::kF64) return {};
  if (dtype_info(r.precision).mantissa_bits > dtype_info(config.dtype).mantissa_bits) return {};
  return "reference higher_precision " + std::string(dtype_name(r.precision)) + " is not higher than the config's " +
         std::string(dtype_name(config.dtype)) + " (" + config.to_string() +
         "): the contract names no reference for it; write higher_precision FP64";
}

/// The sample's inputs (generated, or shared with the run's other impls),
/// after the contract's shape predicates and the impl's can_implement; the
/// worker is started before any oracle answer exists. kEndSample with the
/// config's note set when the config cannot run.
Step prepare_sample(CaseRun& c, const Judge& judge, ConfigRun& cr, const Config& config, std::int64_t index,
                    Sample* s) {
  s->config = &config;
  s->index = index;
  s->seed = case_seed(c.request.seed, c.contract.id, config, index);
  Rng rng(s->seed);
  auto call_or = c.op.make_call(config);
  if (!call_or.ok()) {
    cr.ce.note = "config rejected by op: " + call_or.status().message();
    return Step::end_sample();
  }
  s->call = std::move(call_or).value();
  if (Status w = add_workspace(s->call); !w.ok()) {  // workspace_bytes (kc/capability.h)
    cr.ce.note = w.message();
    return Step::end_sample();
  }
  if (Status sp = check_shape_predicates(c.contract, s->call); !sp.ok()) {
    cr.ce.note = sp.message();
    return Step::end_sample();
  }
  Status ci = c.impl.can_implement(s->call);
  if (ci.ok()) ci = check_increments(c.impl.declaration(), s->call);  // also for impls overriding can_implement
  if (!ci.ok()) {
    // kUnavailable: the impl exists but cannot run on this machine (e.g. a
    // build for a SIMD level the CPU lacks): skipped, like an unavailable backend.
    if (ci.code() == StatusCode::kUnavailable) return Step::end_case(Verdict::kSkipped, "impl unavailable: " + ci.message());
    cr.ce.note = "impl cannot run this config: " + ci.message();
    return Step::end_sample();
  }
  AlternateRef* alternate = nullptr;
  if (!c.alternates.empty()) {
    std::string why;
    alternate = alternate_for(c, s->call, &why);
    if (!alternate) {
      cr.ce.note = why;
      return Step::end_sample();
    }
  }
  // Inputs depend on the contract, config, sample and seed only: the first
  // impl generates them, the others of this run reuse them (sample_cache.h).
  SampleCache* cache = c.request.sample_cache.get();
  const Plan& plan = c.plan;
  const std::string inputs_key =
      cache ? SampleCache::inputs_key(c.op.name(), c.ev.result().contract_hash, cr.ce.config, index, s->seed,
                                      plan.fill, plan.probe)
            : std::string();
  if (std::optional<Call> cached = cache ? cache->find_inputs(inputs_key) : std::nullopt) {
    // The inputs are shared, the config is this impl's: it carries the
    // declared accumulator (ACC in a tolerance), which the key leaves out.
    Config own = std::move(s->call.config);
    s->call = std::move(*cached);
    s->call.config = std::move(own);
  } else {
    c.op.fill(s->call, plan.fill, rng);
    if (plan.probe) {
      const bool named_nonfinite = !plan.probe->tensors.empty() && plan.probe->name != "values";
      const Status ps = named_nonfinite ? inject_into_tensors(s->call, *plan.probe, rng)
                                        : c.op.apply_probe(s->call, *plan.probe, rng);
      if (!ps.ok()) return Step::end_case(Verdict::kUnderSpecified, "probe '" + plan.probe->name + "': " + ps.message());
    }
    if (cache) cache->put_inputs(inputs_key, s->call);
  }
  if (c.request.prepare_inputs) c.request.prepare_inputs(s->call);
  // The oracle's answer to these inputs, shared the same way (not when a
  // prepare_inputs hook rewrote them: the key no longer names the inputs).
  const std::string oracle_key =
      cache && !c.request.prepare_inputs ? SampleCache::oracle_key(inputs_key, c.oracle_options) : std::string();
  const Op& op = c.op;
  const OracleOptions options = c.oracle_options;
  s->reference = [&op, options, cache, oracle_key](const Call& call) -> Result<OracleResult> {
    if (oracle_key.empty()) return op.oracle(call, options);
    if (std::optional<OracleResult> hit = cache->find_oracle(oracle_key)) return std::move(*hit);
    Result<OracleResult> computed = op.oracle(call, options);
    if (computed.ok()) cache->put_oracle(oracle_key, *computed);
    return computed;
  };
  // `reference stable_algorithm NAME` / `spec NAME`: the named oracle (kc/oracles.h).
  if (auto named = named_reference(c, cache, inputs_key)) s->reference = std::move(named);
  if (c.contract.reference.kind == Reference::Kind::kHigherPrecision && c.contract.reference.precision != DType::kF64)
    s->reference = rounded_to(std::move(s->reference), c.contract.reference.precision);
  if (alternate) {
    // Shared like the oracle's: every impl of the run judged against this
    // reference impl on these inputs gets the answer it gave once.
    OracleOptions keyed = options;
    keyed.with["alternate_stack"] = alternate->ref.impl->declaration().name;
    const std::string key =
        cache && !c.request.prepare_inputs ? SampleCache::oracle_key(inputs_key, keyed) : std::string();
    s->reference = [&op, alternate, cache, key](const Call& call) -> Result<OracleResult> {
      if (!key.empty())
        if (std::optional<OracleResult> hit = cache->find_oracle(key)) {
          ++alternate->answers;
          return std::move(*hit);
        }
      Result<OracleResult> answer = alternate_answer(op, *alternate, call);
      if (answer.ok() && !key.empty()) cache->put_oracle(key, *answer);
      return answer;
    };
  }
  // The worker starts before the oracle runs: its memory is a copy of kc's.
  if (Status ws = c.worker.prepare(s->call); !ws.ok())
    return Step::end_case(Verdict::kError, "cannot start a worker process: " + ws.message());
  if (alternate)
    if (Status ws = alternate->worker->prepare(s->call); !ws.ok())
      return Step::end_case(Verdict::kError, "cannot start the alternate stack's worker process: " + ws.message());
  if (Status ws = judge.prepare(c, s->call); !ws.ok())
    return Step::end_case(Verdict::kError, "cannot start a worker process: " + ws.message());
  s->inputs = s->call;
  return Step::next();
}

/// The oracle's answer, or under --fast (where the fast check applies) a
/// placeholder: the O(MNK) oracle is then computed only for a flagged sample.
Step compute_oracle(CaseRun& c, Sample& s) {
  s.fast_tol = c.fast_eligible && s.config->dtype != DType::kF64
                   ? bound_tolerance(c.contract.tolerance, s.config->dtype)
                   : nullptr;
  if (s.fast_tol) {
    s.oracle = OracleResult{};
    return Step::next();
  }
  // From the pristine inputs: by now the kernel has written its outputs (and
  // an in/out tensor, such as GEMM's C under beta != 0, holds its result).
  auto oracle = s.reference(s.inputs);
  if (!oracle.ok()) return Step::end_case(Verdict::kError, "oracle failed: " + oracle.status().message());
  s.oracle = std::move(*oracle);
  return Step::next();
}

/// A sample's first call returned: its outputs' digest joins the case's
/// output hash, and the case's first such call is its cold time (--timing).
void record_outputs(CaseRun& c, const ConfigRun& cr, const Sample& s, double seconds) {
  CaseResult& res = c.ev.result();
  for (std::size_t k = 0; k < s.call.tensors.size(); ++k)
    if (s.call.roles[k] != Role::kIn) res.output_hash += hex64(s.call.tensors[k].hash());
  if (c.request.timing_calls > 0 && !res.timing) res.timing = CaseResult::Timing{cr.ce.config, s.index, seconds, {}};
}

/// --timing N: the timed sample's inputs called N more times in the case's
/// worker, each call's wall time inside the kernel recorded. A failed call
/// ends the timing (the warm list is then shorter, and a note says why).
void time_warm_calls(CaseRun& c, Sample& s) {
  CaseResult& res = c.ev.result();
  if (!res.timing || !res.timing->warm_s.empty() || c.request.timing_calls <= 0) return;
  if (res.timing->sample != s.index || res.timing->config != s.config->to_string()) return;
  for (int k = 0; k < c.request.timing_calls; ++k) {
    s.call = s.inputs;
    poison_outputs(c.op, s.call);
    const isolate::Outcome o = c.worker.run(s.call);
    if (o.failure || !o.status.ok()) {
      c.ev.note("timing stopped after " + std::to_string(k) + " warm calls: " +
                (o.failure ? std::string("the worker failed") : o.status.message()));
      break;
    }
    res.timing->warm_s.push_back(o.seconds);
  }
}

/// The kernel's invocations of one sample, each poisoned, run in the worker,
/// checked and judged; then the per-sample integrity checks. The oracle's
/// answer is computed when the first call has returned (under an OracleScope):
/// while the kernel runs, other cases' workers may still be forked, and an
/// in-process kernel's first call never has the answer in its memory.
Step run_sample(CaseRun& c, const Judge& judge, ConfigRun& cr, Sample& s) {
  const std::int64_t failures_before = cr.ce.failures;
  // Held from the oracle's answer to the end of the sample: no other case's
  // worker is forked meanwhile (kc/isolate.h, OracleScope).
  std::optional<isolate::OracleScope> oracle_scope;
  for (int run = 0; run < c.plan.invocations; ++run) {
    if (run > 0) s.call = s.inputs;
    poison_outputs(c.op, s.call);
    bool timed = true;
    const isolate::Outcome outcome = judge.worker_for(c, run, &timed).run(s.call);
    if (outcome.failure) return Step::worker_failed(c, cr, outcome, s, s.in_hash());
    if (!s.oracle) {
      oracle_scope.emplace();
      if (Step o = compute_oracle(c, s); o.kind == Step::Kind::kEndCase) return o;
    }
    const Status& status = outcome.status;
    s.selected_path = outcome.path;
    s.selected_reason = outcome.path_reason;
    if (status.ok() && run == 0) record_outputs(c, cr, s, outcome.seconds);
    if (status.ok() && !c.plan.probe && c.time_checked && timed) {
      cr.kernel_seconds.push_back(outcome.seconds);
      if (cr.kernel_seconds.size() == 1) cr.floor = time_floor(s.call, host_peak());
    }
    // A config the impl turns down at run time is not a run: a case whose
    // every config is turned down is not_applicable, not "conforming" on
    // nothing compared (unless it also wrote into its inputs).
    const bool mutated = !inputs_equal(s.call, s.inputs);
    if (status.code() == StatusCode::kUnimplemented && !mutated) {
      cr.ce.note = "impl cannot run this config: " + status.message();
      break;
    }
    c.ev.any_run = true;
    check_inputs_untouched(c, cr, s);
    if (status.code() == StatusCode::kUnimplemented) {
      cr.ce.note = "impl cannot run this config: " + status.message();
      break;
    }
    if (!judge.judges_raises()) {
      const Step r = judge_raise(c, cr, s, status);
      if (r.kind == Step::Kind::kEndCase) return r;
      if (r.kind == Step::Kind::kEndSample) break;
    }
    const Step j = judge.judge(c, cr, s, run, status);
    if (j.kind == Step::Kind::kEndCase) return j;
    if (j.kind == Step::Kind::kEndSample) break;
  }
  if (Step st = check_stale_output(c, cr, s, failures_before); st.kind == Step::Kind::kEndCase) return st;
  judge.end_sample(c, cr, s);
  if (s.compared) {
    ++cr.samples_judged;
    if (cr.ce.failures > failures_before) ++cr.samples_failing;
  }
  time_warm_calls(c, s);
  return Step::next();
}

/// Every sample of one config; kEndCase ends the case.
Step run_config(CaseRun& c, const Judge& judge, const Config& config, ConfigRun& cr) {
  if (const std::string why = reference_not_higher(c, config); !why.empty())
    return Step::end_case(Verdict::kUnderSpecified, why);
  for (std::int64_t index = 0; index < c.plan.samples; ++index) {
    if (c.request.sample_index && *c.request.sample_index != index) continue;
    Sample s;
    const Step prepared = prepare_sample(c, judge, cr, config, index, &s);
    if (prepared.kind == Step::Kind::kEndCase) return prepared;
    if (prepared.kind == Step::Kind::kEndSample) break;
    // kc's arithmetic is its own: whatever FP environment an in-process kernel left.
    const isolate::FpEnvScope fp_env;
    if (Step r = run_sample(c, judge, cr, s); r.kind == Step::Kind::kEndCase) return r;
    if (!cr.ce.note.empty()) break;
  }
  check_timing_floor(c, cr);
  return Step::next();
}

/// The classifiers' names for the first failure, and the config axis the failures follow.
void name_failures(CaseRun& c) {
  EvidenceBuilder& ev = c.ev;
  if (ev.first_failure) {
    std::vector<Signature> sigs;
    std::vector<std::string> notes;
    classify_failure(c.op, *ev.first_failure_inputs, c.oracle_options, *ev.first_failure, &sigs, &notes);
    for (const auto& s : sigs) ev.add_signature(s);
    for (const auto& n : notes) ev.note(n);
  }
  const std::vector<ConfigEvidence>& per_config = ev.result().evidence.per_config;
  if (!ev.any_fail || c.plan.configs.size() < 2 || per_config.size() != c.plan.configs.size()) return;
  std::vector<bool> failed, ran;
  for (const auto& ce : per_config) {
    failed.push_back(ce.failures > 0);
    ran.push_back(ce.elements > 0);
  }
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  classify_axes(c.plan.configs, failed, ran, &sigs, &notes);
  for (const auto& sg : sigs) ev.add_signature(sg);
  for (const auto& n : notes) ev.note(n);
}

/// The statistics over every judged metric, and the notes that close the evidence.
void close_evidence(CaseRun& c) {
  EvidenceBuilder& ev = c.ev;
  Evidence& e = ev.result().evidence;
  if (!ev.all_ratios.empty()) {
    const ResidualStats rs = summarize(ev.all_ratios);
    e.max = rs.max;
    e.p99 = rs.p99;
    e.mean = rs.mean;
    std::vector<double> sorted = ev.all_ratios;
    const auto mid = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    std::nth_element(sorted.begin(), mid, sorted.end());
    e.p50 = *mid;  // the upper median: a value that occurred
  }
  // The per-sample output digests, folded into one hash (run records).
  CaseResult& res = ev.result();
  if (!res.output_hash.empty()) res.output_hash = report::sha256_hex(res.output_hash);
  // An algebraic property's evidence: the first failure, else the worst check.
  if (!ev.first_property_failure.empty()) ev.note(ev.first_property_failure);
  else if (!ev.property_evidence.empty()) ev.note(ev.property_evidence);
  name_failures(c);
  for (const auto& r : ev.readings) ev.note(r);
  // What the workers observed about themselves: a weaker sandbox than the
  // strict profile, the kernel's captured stdout/stderr, FP state it left.
  for (const auto& n : c.worker.evidence_notes()) ev.note(n);
  for (const auto& w : c.sweep_workers)
    for (const auto& n : w->evidence_notes()) ev.note(n);
  for (const AlternateRef& a : c.alternates)
    for (const auto& n : a.worker->evidence_notes()) ev.note(a.ref.impl->declaration().name + " (alternate stack): " + n);
  if (ev.fast_decided > 0 || ev.full_decided > 0) {
    e.method = ev.fast_flagged > 0 ? "full_oracle after fast flag" : ev.fast_decided == 0 ? "full_oracle" : ev.fast_method;
    if (!ev.fast_flag_note.empty()) ev.note(ev.fast_flag_note);
    if (ev.fast_decided + ev.fast_flagged > 0)
      ev.note(std::to_string(ev.fast_decided) + " of " + std::to_string(ev.fast_decided + ev.full_decided) +
              " samples passed by the fast verifier (" + fast_check_what(*c.fast_check, c.request) +
              "; docs/verify.md)");
  }
}

/// `compute failing_fraction`: whether every config's failing samples are
/// within the allowed fraction, and the worst config's count in words.
struct FractionJudgement {
  bool within = true;
  std::string text;
};
FractionJudgement judge_fraction(const EvidenceBuilder& ev, double allowed) {
  FractionJudgement j;
  const EvidenceBuilder::SampleTally* worst = nullptr;
  std::int64_t judged = 0;
  for (const auto& t : ev.sample_tallies) {
    judged += t.judged;
    // Counts, not rounded fractions: failing <= p * judged (a fraction equal to p passes).
    if (static_cast<double>(t.failing) > allowed * static_cast<double>(t.judged) * (1 + 1e-12)) j.within = false;
    if (!worst || t.failing * worst->judged > worst->failing * t.judged) worst = &t;
  }
  const std::string allowed_text = "allowed: at most " + fmt_g4(100 * allowed) + "% of each config's samples";
  if (!worst) {
    j.text = "no sample was judged (" + allowed_text + ")";
    return j;
  }
  const double pct = 100.0 * static_cast<double>(worst->failing) / static_cast<double>(worst->judged);
  if (worst->failing == 0) {
    j.text = "no sample of " + std::to_string(judged) + " in " + std::to_string(ev.sample_tallies.size()) +
             " configs has an element beyond the tolerance (" + allowed_text + ")";
    return j;
  }
  j.text = std::to_string(worst->failing) + " of " + std::to_string(worst->judged) + " samples (" + fmt_g4(pct) +
           "%) have an element beyond the tolerance in " + worst->config +
           (ev.sample_tallies.size() > 1 ? " (the worst config)" : "") + "; " + allowed_text;
  return j;
}

/// The verdict the evidence supports, with its one-line reason.
std::pair<Verdict, std::string> decide(CaseRun& c, std::int64_t skipped_configs) {
  EvidenceBuilder& ev = c.ev;
  CaseResult& res = ev.result();
  const Plan& plan = c.plan;
  // The aggregate the protocol asks for decides the verdict when it is not max.
  bool pass = !ev.any_fail;
  std::string fraction;  // failing_fraction: the measured and the allowed fraction
  if (plan.allowed_fraction) {
    // Only accuracy misses are allowed to a fraction of the samples; any
    // other failure (non-finite, unwritten, raise, integrity) fails the case.
    const FractionJudgement fj = judge_fraction(ev, *plan.allowed_fraction);
    fraction = fj.text;
    pass = !ev.any_fail || (ev.accuracy_only && fj.within);
    if (ev.any_fail && !ev.accuracy_only)
      fraction += "; a failure other than an accuracy miss counts whatever the fraction";
    ev.note("failing_fraction: " + fraction);
  } else if ((plan.stat == "p99" || plan.stat == "mean") && !ev.all_ratios.empty() && ev.signatures.empty()) {
    pass = (plan.stat == "p99" ? res.evidence.p99 : res.evidence.mean) <= plan.pass_bound;
  }
  res.repro = repro_command(c.contract, c.contract_file, c.decl.name, c.request, ev.worst_config, ev.worst_sample);
  if (!ev.any_run)
    return {Verdict::kNotApplicable,
            "no config could run (" + std::to_string(skipped_configs) + " skipped): " +
                (res.evidence.per_config.empty() ? std::string("no configs") : res.evidence.per_config.front().note)};
  if (pass) {
    res.repro.clear();
    if (!fraction.empty())
      return {Verdict::kConforming, "failing_fraction: " + fraction + "; " + plan.metric_name + " max " +
                                        fmt_g4(res.evidence.max)};
    return {Verdict::kConforming,
            plan.metric_name + " max " + fmt_g4(res.evidence.max) + " within bound " + fmt_g4(plan.pass_bound)};
  }
  // No pattern recognised, but the numbers broke the bound: a contract that
  // names the plain exceedance (TOLERANCE_EXCEEDED, ERROR_BOUND_EXCEEDED) gets
  // it, with the worst metric / allowed ratio, so the verdict is still named.
  if (ev.signatures.empty())
    for (const auto& e : c.contract.violation.signatures)
      if (e.name == sig::kToleranceExceeded || e.name == sig::kErrorBoundExceeded) {
        ev.signatures.push_back({e.name, {fmt_g4(res.evidence.max)}});
        ev.note(e.name + "(" + fmt_g4(res.evidence.max) + "): the worst " + plan.metric_name + " is " +
                fmt_g4(res.evidence.max) + " times what the tolerance allows, with no more specific pattern in it");
        break;
      }
  // Signatures the contract names come first: they are what the contract is about.
  auto listed = [&](const Signature& sg) {
    for (const auto& e : c.contract.violation.signatures)
      if (signature_matches(e.name, sg.name)) return true;
    return false;
  };
  res.signatures = ev.signatures;
  std::stable_partition(res.signatures.begin(), res.signatures.end(), listed);
  res.signature_expected = std::any_of(res.signatures.begin(), res.signatures.end(), listed);
  // A verdict of violation rests on a promise. An impl whose library
  // documents no accuracy for the op (declared accuracy = UNDOCUMENTED) made
  // none that finite results outside the contract's derived bound break: the
  // measurement is reported, not judged. NaN, Inf, unwritten outputs and every
  // integrity, raise, policy or determinism failure are still violations.
  if (ev.accuracy_only && c.decl.get("accuracy") == "UNDOCUMENTED") {
    std::string seen;
    for (const auto& sg : res.signatures) seen += (seen.empty() ? "" : " ") + sg.to_string();
    if (!seen.empty()) ev.note("failure pattern seen (not a verdict): " + seen);
    res.signatures.clear();
    res.signature_expected = false;
    return {Verdict::kUnderSpecified,
            "measured, not judged: the worst " + plan.metric_name + " is " + fmt_g4(res.evidence.max) +
                " times the contract's derived tolerance, in " + std::to_string(res.evidence.failures) +
                " finite results; " + c.decl.name +
                " declares accuracy = UNDOCUMENTED (its library states no accuracy for this op), so no promise is broken"};
  }
  const std::string measured = fraction.empty() ? std::string() : "failing_fraction: " + fraction + "; ";
  if (res.signatures.empty())
    return {Verdict::kViolation, "violation without a recognised pattern; " + measured + plan.metric_name +
                                     " max " + fmt_g4(res.evidence.max) + " > " + fmt_g4(plan.pass_bound)};
  std::string first_note = "see evidence";
  for (const auto& n : res.evidence.notes)
    if (n.rfind("failing_fraction: ", 0) != 0) {
      first_note = n;
      break;
    }
  return {Verdict::kViolation, res.signatures.front().to_string() + ": " + measured + first_note};
}

}  // namespace

CaseResult run_case(const Contract& contract, const std::string& contract_file, const Impl& impl,
                    const BackendInfo& backend, const CheckRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const Declaration& decl = impl.declaration();
  CaseResult res;
  res.contract_id = contract.id;
  res.contract_hash = contract.content_hash();
  res.contract_file = contract_file;
  res.impl = decl.name;
  res.backend = decl.backend;
  res.backend_version = backend.version;
  res.seed = request.seed;
  for (const char* key : {"accumulator", "determinism", "nan", "denormal", "oob", "shape_class"})
    if (std::string v = decl.get(key); !v.empty()) res.facts[key] = std::move(v);
  for (const auto& [k, v] : decl.extra) res.facts[k] = v;
  auto finish = [&](CaseResult& r, Verdict v, std::string reason) {
    r.verdict = v;
    r.reason = std::move(reason);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  };
  if (!backend.available) return finish(res, Verdict::kSkipped, "backend unavailable: " + backend.reason);
  if (!contract.executable())
    return finish(res, Verdict::kUnderSpecified, "contract is descriptive; `kc lint` lists its gaps");
  // stack, version and flag preconditions, against what the impl records.
  auto unmet = unmet_precondition(contract, decl, backend);
  if (!unmet.ok()) return finish(res, Verdict::kUnderSpecified, unmet.status().message());
  if (!unmet->empty()) return finish(res, Verdict::kNotApplicable, *unmet);
  std::string why_not;
  auto plan_or = make_plan(contract, decl, request, &why_not);
  if (!plan_or.ok()) return finish(res, Verdict::kUnderSpecified, plan_or.status().message());
  if (!why_not.empty()) return finish(res, Verdict::kNotApplicable, why_not);
  const Plan& plan = *plan_or;
  // A `higher_precision` precision or `with` option the op's oracle does not
  // honour would be ignored by it: never judge against that oracle.
  if (const std::string why = unhonoured_reference(contract, *plan.op); !why.empty())
    return finish(res, Verdict::kUnderSpecified, why);
  res.covers = coverage(contract, plan);
  res.evidence.metric = plan.metric_name;
  res.evidence.tolerance = contract.tolerance_info.text;

  // The kernel runs in a worker process (kc/isolate.h) unless --isolate=none;
  // a crash, hang, memory blow-up or write outside a buffer ends the case as an
  // error verdict with the worker's signature.
  CaseRun c(contract, contract_file, impl, request, plan, res);
  for (const auto& [k, v] : contract.reference.with) c.oracle_options.with[k] = v;
  c.oracle_options.oob = decl.oob;
  // --fast applies where the full check would compare a matmul or attention
  // elementwise with a higher-precision oracle under a componentwise bound:
  // kc::verify judges with the same bound (docs/verify.md). Probes, policies
  // and repeated invocations keep the oracle.
  c.fast_check = request.fast ? fast_check_for(plan.op->name()) : nullptr;
  c.fast_eligible = c.fast_check && contract.post.kind == Postcondition::Kind::kElementwiseClose &&
                    contract.reference.kind == Reference::Kind::kHigherPrecision && !plan.probe &&
                    !plan.policy_judge && plan.invocations == 1;
  // The timing floor is a host peak: it says nothing about a device.
  c.time_checked = isolate::runtime_traits(decl).runs_on_host;
  const std::unique_ptr<Judge> judge = make_judge(plan);
  if (contract.reference.kind == Reference::Kind::kAlternateStack)
    if (Step st = setup_alternate_stack(c); st.kind == Step::Kind::kEndCase) return finish(res, st.verdict, st.reason);
  if (Step st = setup_named_reference(c); st.kind == Step::Kind::kEndCase) return finish(res, st.verdict, st.reason);

  std::int64_t skipped_configs = 0;
  for (const Config& config : plan.configs) {
    ConfigRun cr;
    cr.ce.config = config.to_string();
    if (Step st = run_config(c, *judge, config, cr); st.kind == Step::Kind::kEndCase)
      return finish(c.ev.result(), st.verdict, st.reason);
    if (plan.latency)
      if (Step st = time_latency(c, config, cr); st.kind == Step::Kind::kEndCase)
        return finish(c.ev.result(), st.verdict, st.reason);
    if (!cr.observed.empty() && cr.ce.note.empty()) cr.ce.note = "observed " + cr.observed;
    if (cr.samples_judged > 0) c.ev.sample_tallies.push_back({cr.ce.config, cr.samples_judged, cr.samples_failing});
    if (!cr.ratios.empty()) {
      const ResidualStats rs = summarize(cr.ratios);
      cr.ce.max = rs.max;
      cr.ce.p99 = rs.p99;
      cr.ce.mean = rs.mean;
      c.ev.all_ratios.insert(c.ev.all_ratios.end(), cr.ratios.begin(), cr.ratios.end());
    } else {
      ++skipped_configs;
    }
    res.evidence.per_config.push_back(std::move(cr.ce));
  }
  close_evidence(c);
  judge->end_case(c);
  auto [verdict, reason] = decide(c, skipped_configs);
  // After the verdict's own findings, like the alternate stack's note.
  if (const std::string named = close_named_reference(c); verdict != Verdict::kNotApplicable) reason += named;
  if (const std::string used = alternates_used(c, false); !used.empty() && verdict != Verdict::kNotApplicable)
    reason += " [oracle: alternate stack " + used + "]";
  note_alternates(c);
  return finish(res, verdict, std::move(reason));
}

}  // namespace kc::engine
