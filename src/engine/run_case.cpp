// kc — executes one contract against one impl: plan configs, generate inputs,
// run the impl, run the oracle, measure, judge.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "engine/classify.h"
#include "engine/plan.h"
#include "engine/poison.h"
#include "engine/policy.h"
#include "engine/sample_cache.h"
#include "kc/bound.h"
#include "kc/engine.h"
#include "kc/metrics.h"
#include "kc/obligation.h"
#include "kc/peak.h"
#include "kc/verify.h"

namespace kc::engine {

namespace {

std::string fmt_g(double v) {
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
    // Only pure inputs: an in/out tensor (BLAS C) is the impl's to overwrite.
    if (call.roles[k] != Role::kIn) continue;
    h = (h ^ call.tensors[k].hash()) * 1099511628211ull;
  }
  return h;
}

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

/// Facts about the inputs the classifier needs: any NaN/Inf, and how large
/// their mean is relative to their spread: over all floating inputs, and
/// row by row for matrices (a row-wise op such as variance or softmax
/// cancels within a row, and a probe may give each row its own offset).
void describe_inputs(const Call& call, Observation* obs) {
  std::vector<double> all;
  double worst_row = 0;
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    if (call.roles[k] != Role::kIn || !dtype_info(call.tensors[k].dtype()).is_float) continue;
    const Tensor& t = call.tensors[k];
    const std::vector<double> v = t.to_doubles();
    obs->input_format_max = std::max(obs->input_format_max, dtype_info(t.dtype()).max_finite);
    for (double x : v) {
      obs->inputs_finite = obs->inputs_finite && std::isfinite(x);
      if (std::isfinite(x)) obs->input_max_abs = std::max(obs->input_max_abs, std::fabs(x));
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

/// Per-element allowed error for a tolerance in a given config.
Result<std::vector<double>> allowed_errors(const Tolerance& tol, const Op& op, const Call& call,
                                           const std::string& output, const std::vector<double>& ref) {
  ExprEnv env;
  env.vars = op.expr_vars(call);
  env.precision = call.config.dtype;
  const std::size_t n = ref.size();
  switch (tol.kind) {
    case Tolerance::Kind::kAbsolute: {
      KC_ASSIGN_OR_RETURN(double v, lang::eval_expr(tol.value, env));
      return std::vector<double>(n, v);
    }
    case Tolerance::Kind::kRelative: {
      KC_ASSIGN_OR_RETURN(double v, lang::eval_expr(tol.value, env));
      std::vector<double> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = v * std::fabs(ref[i]);
      return a;
    }
    case Tolerance::Kind::kElementwise: {
      KC_ASSIGN_OR_RETURN(double ab, lang::eval_expr(tol.abs, env));
      KC_ASSIGN_OR_RETURN(double re, lang::eval_expr(tol.rel, env));
      std::vector<double> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = ab + re * std::fabs(ref[i]);
      return a;
    }
    case Tolerance::Kind::kBound: {
      KC_ASSIGN_OR_RETURN(double factor, lang::eval_expr(tol.value, env));
      KC_ASSIGN_OR_RETURN(std::vector<double> mag, op.magnitude(call, output));
      // The bound |err| <= c * gamma * |A||B| assumes exact rounding of the
      // result into the output format: half an ulp of the reference is added,
      // so a correctly rounded result is never judged beyond the bound. So is
      // gradual underflow (Op::underflow_allowance, Higham (2.8)): each of the
      // L products (plus alpha/beta scalings) may add lambda = half the
      // smallest subnormal; without it a product of two subnormals (exactly 0
      // in FP32) breaks the bound. kc::verify's sampled rows use the same BoundAllowance.
      const BoundAllowance bound = bound_allowance(op, call, factor);
      for (std::size_t i = 0; i < mag.size() && i < n; ++i) mag[i] = bound.allowed(mag[i], ref[i]);
      mag.resize(n, 0);
      return mag;
    }
    case Tolerance::Kind::kPerPrecision: {
      for (const auto& [dt, sub] : tol.per_precision)
        if (dt == call.config.dtype) return allowed_errors(sub, op, call, output, ref);
      return not_found("per_precision has no entry for " + std::string(dtype_name(call.config.dtype)));
    }
    case Tolerance::Kind::kNone:
      return std::vector<double>(n, 0.0);
    case Tolerance::Kind::kUlp:
    case Tolerance::Kind::kProse:
      break;
  }
  return invalid_argument("tolerance kind has no per-element form");
}

/// Ratios (metric / allowed) for one output; ULP tolerances compare ULP distances.
Result<std::vector<double>> output_ratios(const Tolerance& tol, const Op& op, const Call& call,
                                          const std::string& output, const std::vector<double>& got,
                                          const std::vector<double>& ref, std::vector<double>* allowed) {
  const Tolerance* t = &tol;
  if (tol.kind == Tolerance::Kind::kPerPrecision) {
    t = nullptr;
    for (const auto& [dt, sub] : tol.per_precision)
      if (dt == call.config.dtype) t = &sub;
    if (!t) return not_found("per_precision has no entry for " + std::string(dtype_name(call.config.dtype)));
  }
  std::vector<double> r(got.size());
  if (t->kind == Tolerance::Kind::kUlp) {
    ExprEnv env;
    env.vars = op.expr_vars(call);
    env.precision = call.config.dtype;
    KC_ASSIGN_OR_RETURN(double ulps, lang::eval_expr(t->value, env));
    const DType out_t = call.t(output).dtype();
    allowed->assign(got.size(), 0.0);
    for (std::size_t i = 0; i < got.size(); ++i) {
      // Reference rounded into the output format first: ULP distance is
      // measured between representable values.
      const double d = ulp_distance(got[i], round_to(ref[i], out_t), out_t);
      r[i] = d == 0 ? 0 : (ulps > 0 ? d / ulps : std::numeric_limits<double>::infinity());
      (*allowed)[i] = ulps * std::max(std::fabs(ref[i]) * eps(out_t), dtype_info(out_t).min_normal);
    }
    return r;
  }
  KC_ASSIGN_OR_RETURN(*allowed, allowed_errors(*t, op, call, output, ref));
  for (std::size_t i = 0; i < got.size(); ++i) r[i] = element_ratio(got[i], ref[i], (*allowed)[i]);
  return r;
}

/// The `bound` tolerance that applies to a precision, if the tolerance is one.
const Tolerance* bound_tolerance(const Tolerance& tol, DType dtype) {
  if (tol.kind == Tolerance::Kind::kBound) return &tol;
  if (tol.kind == Tolerance::Kind::kPerPrecision)
    for (const auto& [dt, sub] : tol.per_precision)
      if (dt == dtype && sub.kind == Tolerance::Kind::kBound) return &sub;
  return nullptr;
}

/// A fast verifier `kc check --fast` may judge an op's samples with instead of
/// the oracle (kc/verify.h, docs/verify.md).
struct FastCheck {
  kc::Result<verify::Result> (*verify)(const Call& inputs, const Call& outputs, verify::Options options);
  const char* output;  ///< the output tensor it judges
  bool freivalds;      ///< probes and sampled elements (matmul), or sampled rows only (attention)
  /// What it checks with the request's probe and sample counts, for the case's note.
  std::string what(const CheckRequest& request) const {
    const std::string s = std::to_string(request.fast_samples);
    return freivalds ? "Freivalds, " + std::to_string(request.fast_probes) + " Rademacher probes, + " + s +
                           " sampled elements"
                     : "up to " + s + " sampled query rows, every element judged";
  }
};

/// The fast check for an op, or null where every sample keeps the oracle.
const FastCheck* fast_check_for(std::string_view op) {
  static const FastCheck kMatmul{verify::verify_matmul, "C", true};
  static const FastCheck kFusedMatmul{verify::verify_fused_matmul, "C", true};
  static const FastCheck kAttention{verify::verify_attention, "out", false};
  if (op == "matmul") return &kMatmul;
  if (op == "fused_matmul") return &kFusedMatmul;
  if (op == "attention") return &kAttention;
  return nullptr;
}

/// The rounding factor, output rounding and absolute slack an algebraic
/// property's checks get from the contract's tolerance (kc/obligation.h):
/// `bound E` gives factor E (evaluated for the call) and the output format's
/// unit roundoff; `absolute E` gives E; `none` gives nothing (exact).
Status property_tolerance(const Tolerance& tol, const Op& op, const Call& call, obligation::Context* ctx) {
  const Tolerance* t = &tol;
  if (tol.kind == Tolerance::Kind::kPerPrecision) {
    t = nullptr;
    for (const auto& [dt, sub] : tol.per_precision)
      if (dt == call.config.dtype) t = &sub;
    if (!t) return not_found("per_precision has no entry for " + std::string(dtype_name(call.config.dtype)));
  }
  ExprEnv env;
  env.vars = op.expr_vars(call);
  env.precision = call.config.dtype;
  switch (t->kind) {
    case Tolerance::Kind::kBound: {
      KC_ASSIGN_OR_RETURN(ctx->factor, lang::eval_expr(t->value, env));
      ctx->rounding = unit_roundoff(call.config.dtype);
      ctx->underflow = true;
      return ok_status();
    }
    case Tolerance::Kind::kAbsolute: {
      KC_ASSIGN_OR_RETURN(ctx->absolute, lang::eval_expr(t->value, env));
      return ok_status();
    }
    case Tolerance::Kind::kNone:
      return ok_status();
    default:
      return invalid_argument("an algebraic property takes a `bound E`, `absolute E` or `none` tolerance");
  }
}

struct CaseState {
  CaseResult result;
  std::int64_t fast_decided = 0;  // samples judged by kc::verify alone
  std::int64_t full_decided = 0;  // samples judged by the full oracle
  std::int64_t fast_flagged = 0;  // of those, samples the fast check sent there
  std::string fast_method;        // verify::method_name of the fast check that decided
  std::string fast_flag_note;     // the first flag, noted after the classifier's findings
  std::vector<double> all_ratios;  // for p99/mean over everything
  bool any_fail = false;
  bool any_run = false;
  std::vector<Signature> signatures;
  std::set<std::string> seen_sigs;
  std::optional<Observation> first_failure;
  std::optional<Call> first_failure_inputs;
  std::uint64_t worst_seed = 0;
  std::string worst_config;
  std::int64_t worst_sample = 0;
  double worst_metric = -1;

  std::string property_evidence;       // the worst check of an algebraic property, in words
  std::string first_property_failure;  // the first failing sample's evidence

  /// Every failure and every judged element is counted here, in its config
  /// and in the case total at once, so the two always agree.
  void fail(ConfigEvidence& ce, std::int64_t n = 1) {
    ce.failures += n;
    result.evidence.failures += n;
  }
  void count(ConfigEvidence& ce, std::int64_t n) {
    ce.elements += n;
    result.evidence.elements += n;
  }
  void add_signature(const Signature& s) {
    if (seen_sigs.insert(s.to_string()).second) signatures.push_back(s);
  }
  void note(const std::string& n) {
    if (std::find(result.evidence.notes.begin(), result.evidence.notes.end(), n) ==
        result.evidence.notes.end())
      result.evidence.notes.push_back(n);
  }
};

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
    if (s.name == "TILE_REMAINDER" || s.name == "HELD_OUT_SHAPE") {
      covers.push_back("held_out_shapes");
      break;
    }
  if (covers.empty()) covers.push_back("numeric");
  return covers;
}

}  // namespace

CaseResult run_case(const Contract& contract, const std::string& contract_file, const Impl& impl,
                    const BackendInfo& backend, const CheckRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const Declaration& decl = impl.declaration();
  CaseState st;
  CaseResult& res = st.result;
  res.contract_id = contract.id;
  res.contract_hash = contract.content_hash();
  res.contract_file = contract_file;
  res.impl = decl.name;
  res.backend = decl.backend;
  res.backend_version = backend.version;
  res.seed = request.seed;

  auto finish = [&](Verdict v, std::string reason) {
    res.verdict = v;
    res.reason = std::move(reason);
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return res;
  };

  if (!backend.available) return finish(Verdict::kSkipped, "backend unavailable: " + backend.reason);
  if (!contract.executable())
    return finish(Verdict::kUnderSpecified, "contract is descriptive; `kc lint` lists its gaps");

  std::string why_not;
  auto plan_or = make_plan(contract, decl, request, &why_not);
  if (!plan_or.ok()) return finish(Verdict::kUnderSpecified, plan_or.status().message());
  if (!why_not.empty()) return finish(Verdict::kNotApplicable, why_not);
  const Plan& plan = *plan_or;
  const Op& op = *plan.op;
  res.covers = coverage(contract, plan);
  res.evidence.metric = plan.metric_name;
  res.evidence.tolerance = contract.tolerance_info.text;

  OracleOptions oracle_options;
  for (const auto& [k, v] : contract.reference.with) oracle_options.with[k] = v;
  oracle_options.oob = decl.oob;

  const Postcondition& post = contract.post;
  std::int64_t skipped_configs = 0;
  // --fast applies where the full check would compare a matmul or attention
  // elementwise with a higher-precision oracle under a componentwise bound:
  // kc::verify judges with the same bound (docs/verify.md). Probes, policies
  // and repeated invocations keep the oracle.
  const FastCheck* fast_check = request.fast ? fast_check_for(op.name()) : nullptr;
  const bool fast_eligible = fast_check &&
                             post.kind == Postcondition::Kind::kElementwiseClose &&
                             contract.reference.kind == Reference::Kind::kHigherPrecision && !plan.probe &&
                             !plan.policy_judge && plan.invocations == 1;

  // The kernel runs in a worker process (kc/isolate.h) unless --isolate=none;
  // a crash, hang, memory blow-up or write outside a buffer ends the case as an
  // error verdict with the worker's signature.
  isolate::Worker worker(impl, request.isolation, request.limits);
  auto worker_failed = [&](const isolate::Outcome& o, const std::string& config, std::int64_t sample,
                           std::uint64_t in_hash) {
    res.signatures = {*o.failure};
    res.input_hash = hex64(in_hash);
    res.repro = repro_command(contract, contract_file, decl.name, request, config, sample);
    return finish(Verdict::kError, o.failure->to_string() + ": " + o.status.message());
  };
  // Integrity checks the contract does not name: outputs that ignore their
  // inputs (once per case) and kernel times below the physical floor (host
  // kernels only: a host peak says nothing about a device).
  SampleCache* cache = request.sample_cache.get();
  bool stale_checked = false;
  const bool time_checked = isolate::runtime_traits(decl).runs_on_host;

  for (const Config& config : plan.configs) {
    ConfigEvidence ce;
    ce.config = config.to_string();
    std::vector<double> config_ratios;
    std::string observed;  // behaviour class seen by a policy judge
    std::vector<double> kernel_seconds;  // random-input calls that returned OK
    TimeFloor config_floor;
    for (std::int64_t s = 0; s < plan.samples; ++s) {
      if (request.sample_index && *request.sample_index != s) continue;
      const std::uint64_t seed = case_seed(request.seed, contract.id, config, s);
      Rng rng(seed);
      auto call_or = op.make_call(config);
      if (!call_or.ok()) {
        ce.note = "config rejected by op: " + call_or.status().message();
        break;
      }
      Call call = std::move(call_or).value();
      if (Status sp = check_shape_predicates(contract, call); !sp.ok()) {
        ce.note = sp.message();
        break;
      }
      if (Status ci = impl.can_implement(call); !ci.ok()) {
        // kUnavailable: the impl exists but cannot run on this machine (e.g. a
        // build for a SIMD level the CPU lacks): skipped, like an unavailable backend.
        if (ci.code() == StatusCode::kUnavailable) return finish(Verdict::kSkipped, "impl unavailable: " + ci.message());
        ce.note = "impl cannot run this config: " + ci.message();
        break;
      }
      // Inputs depend on the contract, config, sample and seed only: the first
      // impl generates them, the others of this run reuse them (sample_cache.h).
      const std::string inputs_key =
          cache ? SampleCache::inputs_key(op.name(), res.contract_hash, ce.config, s, seed, plan.fill, plan.probe)
                : std::string();
      if (std::optional<Call> cached = cache ? cache->find_inputs(inputs_key) : std::nullopt) {
        call = std::move(*cached);
      } else {
        op.fill(call, plan.fill, rng);
        if (plan.probe && !plan.probe->tensors.empty()) {
          if (Status ps = inject_into_tensors(call, *plan.probe, rng); !ps.ok())
            return finish(Verdict::kUnderSpecified, "probe '" + plan.probe->name + "': " + ps.message());
        } else if (plan.probe) {
          if (Status ps = op.apply_probe(call, *plan.probe, rng); !ps.ok()) {
            return finish(Verdict::kUnderSpecified, "probe '" + plan.probe->name + "': " + ps.message());
          }
        }
        if (cache) cache->put_inputs(inputs_key, call);
      }
      if (request.prepare_inputs) request.prepare_inputs(call);
      // The oracle's answer to these inputs, shared the same way (not when a
      // prepare_inputs hook rewrote them: the key no longer names the inputs).
      const std::string oracle_key =
          cache && !request.prepare_inputs ? SampleCache::oracle_key(inputs_key, oracle_options) : std::string();
      auto reference = [&](const Call& c) -> Result<OracleResult> {
        if (oracle_key.empty()) return op.oracle(c, oracle_options);
        if (std::optional<OracleResult> hit = cache->find_oracle(oracle_key)) return std::move(*hit);
        Result<OracleResult> computed = op.oracle(c, oracle_options);
        if (computed.ok()) cache->put_oracle(oracle_key, *computed);
        return computed;
      };
      // The worker starts before the oracle runs: its memory is a copy of kc's.
      if (Status ws = worker.prepare(call); !ws.ok())
        return finish(Verdict::kError, "cannot start a worker process: " + ws.message());
      // From here to the end of the sample the oracle's answer is in memory: no
      // other case's worker is forked meanwhile (kc/isolate.h, OracleScope).
      const isolate::OracleScope oracle_scope;
      const Tolerance* fast_tol =
          fast_eligible && config.dtype != DType::kF64 ? bound_tolerance(contract.tolerance, config.dtype) : nullptr;
      // Under --fast the oracle (O(MNK), O(batch heads seq^2 head_dim)) is
      // computed only if the fast check flags the sample.
      auto oracle = fast_tol ? Result<OracleResult>(OracleResult{{}, {fast_check->output}, std::nullopt})
                             : reference(call);
      if (!oracle.ok()) return finish(Verdict::kError, "oracle failed: " + oracle.status().message());

      const std::uint64_t in_hash = inputs_hash(call);
      const Call inputs = call;  // pristine copy: re-runs and fingerprints start from it
      const int runs = plan.invocations;
      std::vector<std::vector<double>> first_outputs;
      std::int64_t mismatched_runs = 0;
      const std::int64_t failures_before = ce.failures;
      bool compared = false;  // the numeric comparison ran on this sample

      for (int run = 0; run < runs; ++run) {
        if (run > 0) call = inputs;
        poison_outputs(op, call);
        const isolate::Outcome outcome = worker.run(call);
        if (outcome.failure) return worker_failed(outcome, ce.config, s, in_hash);
        Status status = outcome.status;
        if (status.ok() && !plan.probe && time_checked) {
          kernel_seconds.push_back(outcome.seconds);
          if (kernel_seconds.size() == 1) config_floor = time_floor(call, host_peak());
        }
        const bool mutated = inputs_hash(call) != in_hash;
        // A config the impl turns down at run time is not a run: a case whose
        // every config is turned down is not_applicable, not "conforming" on
        // nothing compared.
        if (status.code() == StatusCode::kUnimplemented && !mutated) {
          ce.note = "impl cannot run this config: " + status.message();
          break;
        }
        st.any_run = true;
        if (mutated) {
          st.any_fail = true;
          st.fail(ce);
          st.add_signature({"INPUT_MUTATED", {}});
          st.note("the impl modified an input tensor it does not own");
        }
        if (status.code() == StatusCode::kUnimplemented) {
          ce.note = "impl cannot run this config: " + status.message();
          break;
        }
        if (plan.policy_judge) {
          if (!status.ok() && status.code() != StatusCode::kKernelRaised)
            return finish(Verdict::kError, "impl failed: " + status.to_string());
          PolicyInputs pin;
          pin.op = &op;
          pin.decl = &decl;
          pin.inputs = &inputs;
          pin.outputs = &call;
          pin.oracle = &*oracle;
          pin.options = oracle_options;
          pin.status = status;
          pin.tolerance = &contract.tolerance;
          auto judged = judge_policy(post.policy, pin);
          if (!judged.ok()) return finish(Verdict::kUnderSpecified, judged.status().message());
          st.count(ce, judged->elements);
          config_ratios.push_back(static_cast<double>(judged->mismatches));
          if (!judged->observed.empty()) observed = judged->observed;
          if (!judged->pass) {
            st.any_fail = true;
            st.fail(ce, std::max<std::int64_t>(1, judged->mismatches));
            for (const auto& sg : judged->signatures) st.add_signature(sg);
            for (const auto& n : judged->notes) st.note(n);
            if (st.worst_config.empty()) {
              st.worst_config = ce.config;
              st.worst_sample = s;
              st.worst_seed = seed;
              res.input_hash = hex64(in_hash);
            }
          } else {
            for (const auto& n : judged->notes) st.note(n);
          }
          continue;
        }
        if (status.code() == StatusCode::kKernelRaised) {
          // `... or raise E`: refusing a config is an accepted outcome; noted per config.
          if (!post.or_raise.empty()) {
            ce.note = "raised (accepted: or raise " + post.or_raise + "): " + status.message();
            break;
          }
          const bool expected = post.kind == Postcondition::Kind::kRaise || oracle->raises.has_value() ||
                                (post.kind == Postcondition::Kind::kDeclaredPolicy &&
                                 decl.get(post.policy) == "RAISE");
          if (!expected) {
            st.any_fail = true;
            st.fail(ce);
            st.add_signature({"UNEXPECTED_RAISE", {}});
            st.note("the kernel raised where the contract expects a result: " + status.message());
          }
          break;
        }
        if (!status.ok()) return finish(Verdict::kError, "impl failed: " + status.to_string());
        if (post.kind == Postcondition::Kind::kRaise ||
            (oracle->raises && post.kind != Postcondition::Kind::kBitwiseIdentical)) {
          st.any_fail = true;
          st.fail(ce);
          st.add_signature({"MISSING_RAISE", {}});
          st.note("the kernel returned normally where it must raise" +
                  (oracle->raises ? ": " + *oracle->raises : std::string()));
          break;
        }

        // An algebraic property judges the sample, re-running the impl (in the
        // same worker) on the inputs it transforms.
        if (plan.property) {
          compared = true;
          std::optional<isolate::Outcome> rerun_failure;
          const obligation::Invoke invoke = [&](Call& c) -> Status {
            if (rerun_failure) return internal_error("the worker failed on an earlier re-invocation");
            KC_RETURN_IF_ERROR(impl.can_implement(c));
            poison_outputs(op, c);
            KC_RETURN_IF_ERROR(worker.prepare(c));
            isolate::Outcome o = worker.run(c);
            if (o.failure) rerun_failure = o;
            return o.status;
          };
          Rng prop_rng(derive_seed(seed, 0x70726f70ull));  // "prop"
          obligation::Context ctx{op, call, invoke, prop_rng};
          ctx.inputs = &inputs;
          if (Status ts = property_tolerance(contract.tolerance, op, call, &ctx); !ts.ok())
            return finish(Verdict::kUnderSpecified, ts.message());
          auto judged = plan.property->check(ctx);
          if (rerun_failure) return worker_failed(*rerun_failure, ce.config, s, in_hash);
          if (!judged.ok()) {
            const Status& js = judged.status();
            if (js.code() == StatusCode::kUnimplemented) {
              ce.note = "impl cannot run the property's transformed call: " + js.message();
              break;
            }
            if (js.code() == StatusCode::kKernelRaised) {
              st.any_fail = true;
              st.fail(ce);
              st.add_signature({"UNEXPECTED_RAISE", {}});
              st.note("the kernel raised on the property's transformed input: " + js.message());
              break;
            }
            return finish(Verdict::kUnderSpecified, plan.property->name + ": " + js.message());
          }
          const obligation::Outcome& po = *judged;
          const auto checks = static_cast<std::int64_t>(po.ratios.size());
          st.count(ce, checks);
          config_ratios.insert(config_ratios.end(), po.ratios.begin(), po.ratios.end());
          if (po.max_ratio > st.worst_metric && checks > 0) {
            st.worst_metric = po.max_ratio;
            WorstElement w;
            w.output = plan.property->name;
            w.position = po.worst.to_string();
            w.value = po.worst_residual;
            w.reference = po.worst_allowed;
            w.metric = po.max_ratio;
            w.config = ce.config;
            res.evidence.worst = w;
            st.property_evidence = plan.property->name + ": " + po.evidence;
            if (po.failures == 0) {
              st.worst_seed = seed;
              st.worst_config = ce.config;
              st.worst_sample = s;
              res.input_hash = hex64(in_hash);
            }
          }
          if (po.failures > 0) {
            st.fail(ce, po.failures);
            if (st.first_property_failure.empty()) {
              st.first_property_failure = plan.property->name + ": " + po.evidence;
              st.worst_seed = seed;
              st.worst_config = ce.config;
              st.worst_sample = s;
              res.input_hash = hex64(in_hash);
            }
            st.any_fail = true;
            st.add_signature({"PROPERTY_VIOLATED", {plan.property->name}});
          }
          continue;
        }

        // Determinism: compare every run bitwise with the first.
        if (runs > 1) {
          std::vector<std::vector<double>> outs;
          for (const auto& name : oracle->output_names) outs.push_back(call.t(name).to_doubles());
          if (run == 0) {
            first_outputs = std::move(outs);
          } else {
            bool same = true;
            for (std::size_t o = 0; o < outs.size() && same; ++o) {
              const DType dt = call.t(oracle->output_names[o]).dtype();
              for (std::size_t i = 0; i < outs[o].size() && same; ++i)
                same = runs_agree(outs[o][i], first_outputs[o][i], dt, plan.agreement);
            }
            if (!same) ++mismatched_runs;
          }
          continue;
        }

        // Numeric comparison: kc::verify under --fast, the oracle otherwise
        // (and whenever the fast check flags the sample, so a violation carries
        // the same evidence and signature as without --fast).
        compared = true;
        if (fast_tol) {
          ExprEnv env;
          env.vars = op.expr_vars(call);
          env.precision = call.config.dtype;
          auto factor = lang::eval_expr(fast_tol->value, env);
          if (!factor.ok()) return finish(Verdict::kUnderSpecified, factor.status().message());
          verify::Options vo;
          vo.gamma = *factor;  // the contract's E (c * gamma(K + 2, P), gamma(L, P)): the same per-element bound
          vo.precision = call.config.dtype;
          vo.seed = derive_seed(seed, 0x66617374ull);  // "fast"
          vo.probes = request.fast_probes;
          vo.samples = request.fast_samples;
          auto fr = fast_check->verify(inputs, call, vo);
          if (fr.ok() && fr->pass) {
            ++st.fast_decided;
            st.fast_method = std::string(verify::method_name(fr->method));
            config_ratios.push_back(fr->worst_ratio);
            // Elements judged: all of them for Freivalds, the sampled ones otherwise.
            const std::int64_t judged =
                fr->method == verify::Method::kSampled ? fr->samples : call.t(fast_check->output).numel();
            st.count(ce, judged);
            continue;
          }
          ++st.fast_flagged;
          if (st.fast_flag_note.empty())
            st.fast_flag_note = (fr.ok() ? "fast verifier flagged a sample (" + fr->detail + "); the full oracle judged it"
                          : "fast verifier could not judge a sample (" + fr.status().message() +
                                "); the full oracle judged it");
          oracle = reference(inputs);
          if (!oracle.ok()) return finish(Verdict::kError, "oracle failed: " + oracle.status().message());
        }
        ++st.full_decided;
        bool captured = false;  // this sample is the case's first failure
        for (std::size_t o = 0; o < oracle->output_names.size(); ++o) {
          const std::string& name = oracle->output_names[o];
          const Tensor& out = call.t(name);
          std::vector<double> got = out.to_doubles();
          const std::vector<double>& ref = oracle->outputs[o];
          std::vector<double> allowed;
          std::vector<double> ratios;
          if (post.kind == Postcondition::Kind::kClose) {
            // Normwise: one number per output, ||got - ref||_F / ||ref||_F against the tolerance value.
            auto al = allowed_errors(contract.tolerance, op, call, name, ref);
            if (!al.ok()) return finish(Verdict::kUnderSpecified, al.status().message());
            double ref_norm = 0;
            for (double v : ref) ref_norm += v * v;
            const double tol = ref.empty() || ref_norm == 0 ? 0 : (*al)[0] / std::max(std::fabs(ref[0]), 1e-300);
            const double nw = normwise_error(got, ref);
            ratios.assign(1, tol > 0 ? nw / tol : (nw == 0 ? 0 : std::numeric_limits<double>::infinity()));
            allowed = *al;
          } else {
            auto r = output_ratios(contract.tolerance, op, call, name, got, ref, &allowed);
            if (!r.ok()) return finish(Verdict::kUnderSpecified, r.status().message());
            ratios = std::move(*r);
          }
          // An element still holding the poison was never written: it fails
          // whatever the reference is (a NaN reference included).
          std::vector<std::uint8_t> unwritten;
          for (std::size_t k = 0; k < call.names.size(); ++k)
            if (call.names[k] == name && poisoned(op, call, k)) unwritten = unwritten_mask(out);
          for (std::size_t i = 0; i < unwritten.size(); ++i) {
            if (!unwritten[i]) continue;
            // Elementwise: that element; normwise (one ratio per output): the output.
            ratios[ratios.size() == unwritten.size() ? i : 0] = std::numeric_limits<double>::infinity();
          }
          st.count(ce, static_cast<std::int64_t>(ratios.size()));
          std::int64_t worst_i = -1;
          double worst = -1;
          bool failed_here = false;
          for (std::size_t i = 0; i < ratios.size(); ++i) {
            const double r = std::isnan(ratios[i]) ? std::numeric_limits<double>::infinity() : ratios[i];
            config_ratios.push_back(r);
            if (r > worst) {
              worst = r;
              worst_i = static_cast<std::int64_t>(i);
            }
            if (r > plan.pass_bound) {
              st.fail(ce);
              failed_here = true;
            }
          }
          if (worst > st.worst_metric && worst_i >= 0) {
            st.worst_metric = worst;
            WorstElement w;
            w.output = name;
            w.index = worst_i;
            w.position = position_of(out, worst_i);
            w.value = worst_i < static_cast<std::int64_t>(got.size()) ? got[worst_i] : 0;
            w.reference = worst_i < static_cast<std::int64_t>(ref.size()) ? ref[worst_i] : 0;
            w.metric = worst;
            w.config = ce.config;
            res.evidence.worst = w;
            res.input_hash = hex64(in_hash);
            st.worst_seed = seed;
            st.worst_config = ce.config;
            st.worst_sample = s;
          }
          if (failed_here) {
            st.any_fail = true;
            if (!st.first_failure) {
              Observation obs;
              obs.output = name;
              obs.dtype = out.dtype();
              obs.got = std::move(got);
              obs.ref = ref;
              obs.allowed = std::move(allowed);
              obs.unwritten = std::move(unwritten);
              describe_inputs(inputs, &obs);
              st.first_failure = std::move(obs);
              st.first_failure_inputs = inputs;
              captured = true;
              st.worst_config = ce.config;
              st.worst_sample = s;
              st.worst_seed = seed;
              res.input_hash = hex64(in_hash);
            }
          }
        }
        // Poison bits after the call mean "never written" or "computed from
        // the poisoned buffer" (0 * NaN keeps the NaN's bits). The same call
        // with a finite sentinel in the outputs tells them apart: only an
        // element that still holds the sentinel was never written.
        std::vector<std::uint8_t>* unwritten = captured ? &st.first_failure->unwritten : nullptr;
        if (unwritten && std::find(unwritten->begin(), unwritten->end(), 1) != unwritten->end()) {
          Call again = inputs;
          poison_outputs(op, again, Fill::kSentinel);
          const isolate::Outcome o = worker.run(again);
          if (o.failure) return worker_failed(o, ce.config, s, in_hash);
          if (o.status.ok()) {
            const std::vector<std::uint8_t> still = unwritten_mask(again.t(st.first_failure->output), Fill::kSentinel);
            std::size_t propagated = 0;
            for (std::size_t i = 0; i < unwritten->size() && i < still.size(); ++i) {
              propagated += (*unwritten)[i] && !still[i];
              (*unwritten)[i] &= still[i];
            }
            if (propagated > 0)
              st.note(std::to_string(propagated) + " elements of '" + st.first_failure->output +
                      "' came back as the NaN kc pre-filled it with, and as other values when it was pre-filled "
                      "with a finite number: the kernel read the output buffer before writing it");
          }
        }
      }
      // STALE_OUTPUT, once per case: re-fill the inputs at the same addresses
      // with new values. Outputs that stay bit-identical while the reference
      // changes were cached (by address) or never recomputed. "Changes" means
      // the rounded reference moves and the old outputs are wrong for the new
      // inputs: outside the contract's per-element tolerance of the new
      // reference (where the tolerance has a per-element form). An honest
      // kernel may return the same bits for other inputs: gelu_tanh(-32) and
      // gelu_tanh(-11) are both -0 in FP32, within the bound of references -0
      // and -7e-45.
      // (Skipped under --fast: deciding that the reference changed needs the oracle.)
      if (!stale_checked && compared && runs == 1 && ce.failures == failures_before && !plan.probe &&
          !oracle->output_names.empty() && !oracle->outputs.empty()) {
        stale_checked = true;
        Call fresh = inputs;
        Rng fresh_rng(derive_seed(seed, 0x7374616c65ull));  // "stale"
        op.fill(fresh, plan.fill, fresh_rng);
        auto fresh_oracle = op.oracle(fresh, oracle_options);
        std::vector<std::vector<double>> before;
        for (const auto& name : oracle->output_names) before.push_back(call.t(name).to_doubles());
        bool reference_changed = false;
        if (fresh_oracle.ok() && fresh_oracle->outputs.size() == oracle->outputs.size()) {
          for (std::size_t o = 0; o < oracle->outputs.size() && !reference_changed; ++o) {
            const std::string& name = oracle->output_names[o];
            const DType dt = call.t(name).dtype();
            const auto& a = oracle->outputs[o];
            const auto& b = fresh_oracle->outputs[o];
            auto band = allowed_errors(contract.tolerance, op, fresh, name, b);
            for (std::size_t i = 0; i < a.size() && i < b.size() && !reference_changed; ++i) {
              reference_changed = !bitwise_equal(round_to(a[i], dt), round_to(b[i], dt), dt);
              if (reference_changed && band.ok() && i < band->size() && i < before[o].size())
                reference_changed = !(std::fabs(before[o][i] - b[i]) <= (*band)[i]);
            }
          }
        }
        if (reference_changed) {
          for (std::size_t k = 0; k < call.tensors.size(); ++k)  // same buffers, new values
            if (call.tensors[k].nbytes() == fresh.tensors[k].nbytes() && call.tensors[k].nbytes() > 0)
              std::memcpy(call.tensors[k].raw(), fresh.tensors[k].raw(), call.tensors[k].nbytes());
          poison_outputs(op, call);
          const isolate::Outcome again = worker.run(call);
          if (again.failure) return worker_failed(again, ce.config, s, inputs_hash(fresh));
          bool same = again.status.ok();
          for (std::size_t o = 0; o < before.size() && same; ++o) {
            const Tensor& out = call.t(oracle->output_names[o]);
            const std::vector<double> got = out.to_doubles();
            for (std::size_t i = 0; i < got.size() && i < before[o].size() && same; ++i)
              same = bitwise_equal(got[i], before[o][i], out.dtype());
          }
          if (same) {
            st.any_fail = true;
            st.fail(ce);
            st.add_signature({"STALE_OUTPUT", {}});
            st.note("outputs stayed bit-identical when the inputs, at the same addresses, were re-filled "
                    "with new values that change the reference: a result cached by address, or never "
                    "recomputed");
            st.worst_config = ce.config;
            st.worst_sample = s;
            st.worst_seed = seed;
            res.input_hash = hex64(in_hash);
          }
        }
      }
      if (runs > 1) {
        config_ratios.push_back(static_cast<double>(mismatched_runs));
        st.count(ce, runs);
        if (mismatched_runs > 0) {
          st.any_fail = true;
          st.fail(ce, mismatched_runs);
          st.add_signature({"NONDETERMINISTIC",
                            {std::to_string(mismatched_runs) + " of " + std::to_string(runs - 1)}});
          st.note(std::to_string(mismatched_runs) + " of " + std::to_string(runs - 1) +
                  " repeated invocations on identical inputs differ from the first " +
                  (plan.agreement == Determinism::kRunToRun ? "by more than relative " + fmt_g(kRunToRunRelative) +
                                                                  " (declared RUN_TO_RUN)"
                                                            : std::string("bitwise")));
          st.worst_config = ce.config;
          st.worst_sample = s;
          st.worst_seed = seed;
          res.input_hash = hex64(in_hash);
        }
      }
      if (!ce.note.empty()) break;
    }
    // TIMING_IMPLAUSIBLE: noise only slows a kernel down, so a median below
    // the physical floor means the work was not done.
    if (!kernel_seconds.empty() && config_floor.seconds > 0) {
      auto mid = kernel_seconds.begin() + static_cast<std::ptrdiff_t>(kernel_seconds.size() / 2);
      std::nth_element(kernel_seconds.begin(), mid, kernel_seconds.end());
      const double median = *mid;
      if (median < config_floor.seconds) {
        st.any_fail = true;
        st.fail(ce);
        st.add_signature({"TIMING_IMPLAUSIBLE", {}});
        st.note("median kernel time " + fmt_g(median * 1e6) + " us over " + std::to_string(kernel_seconds.size()) +
                " call(s), warm cache, is below the physical floor " + fmt_g(config_floor.seconds * 1e6) +
                " us (" + config_floor.basis + "; " + host_peak().basis + ")");
        if (st.worst_config.empty()) st.worst_config = ce.config;
      }
    }
    if (!observed.empty() && ce.note.empty()) ce.note = "observed " + observed;
    if (!config_ratios.empty()) {
      const ResidualStats rs = summarize(config_ratios);
      ce.max = rs.max;
      ce.p99 = rs.p99;
      ce.mean = rs.mean;
      st.all_ratios.insert(st.all_ratios.end(), config_ratios.begin(), config_ratios.end());
    } else {
      ++skipped_configs;
    }
    res.evidence.per_config.push_back(std::move(ce));
  }

  if (!st.all_ratios.empty()) {
    const ResidualStats rs = summarize(st.all_ratios);
    res.evidence.max = rs.max;
    res.evidence.p99 = rs.p99;
    res.evidence.mean = rs.mean;
  }

  // An algebraic property's evidence: the first failure, else the worst check.
  if (!st.first_property_failure.empty()) st.note(st.first_property_failure);
  else if (!st.property_evidence.empty()) st.note(st.property_evidence);

  // Name the failure pattern.
  if (st.first_failure) {
    std::vector<Signature> sigs;
    std::vector<std::string> notes;
    classify_values(*st.first_failure, &sigs, &notes);
    const bool value_pattern_found = !sigs.empty();
    if (!value_pattern_found && st.first_failure_inputs)
      classify_fingerprint(op, *st.first_failure_inputs, oracle_options, *st.first_failure, &sigs, &notes);
    if (sigs.empty() && st.first_failure_inputs)
      classify_wire_precision(op, *st.first_failure_inputs, *st.first_failure, &sigs, &notes);
    if (sigs.empty() && st.first_failure_inputs)
      classify_accumulator_precision(op, *st.first_failure_inputs, *st.first_failure, &sigs, &notes);
    if (sigs.empty() && st.first_failure_inputs)
      classify_alternatives(op, *st.first_failure_inputs, oracle_options, *st.first_failure, &sigs, &notes);
    if (sigs.empty() && st.first_failure_inputs)
      classify_training(op, *st.first_failure_inputs, oracle_options, *st.first_failure, &sigs, &notes);
    for (const auto& s : sigs) st.add_signature(s);
    for (const auto& n : notes) st.note(n);
  }

  // Which config axis the failures follow (schedule, rank count, scale, shape).
  if (st.any_fail && plan.configs.size() > 1) {
    std::vector<bool> failed, ran;
    for (const auto& ce : res.evidence.per_config) {
      failed.push_back(ce.failures > 0);
      ran.push_back(ce.elements > 0);
    }
    if (failed.size() == plan.configs.size()) {
      std::vector<Signature> sigs;
      std::vector<std::string> notes;
      classify_axes(plan.configs, failed, ran, &sigs, &notes);
      for (const auto& sg : sigs) st.add_signature(sg);
      for (const auto& n : notes) st.note(n);
    }
  }

  if (st.fast_decided > 0 || st.full_decided > 0) {
    res.evidence.method = st.fast_flagged > 0    ? "full_oracle after fast flag"
                          : st.fast_decided == 0 ? "full_oracle"
                                                 : st.fast_method;
    if (!st.fast_flag_note.empty()) st.note(st.fast_flag_note);
    if (st.fast_decided + st.fast_flagged > 0)
      st.note(std::to_string(st.fast_decided) + " of " + std::to_string(st.fast_decided + st.full_decided) +
              " samples passed by the fast verifier (" + fast_check->what(request) + "; docs/verify.md)");
  }

  // The aggregate the protocol asks for decides the verdict when it is not max.
  bool pass = !st.any_fail;
  if (plan.stat != "max" && !st.all_ratios.empty() && st.signatures.empty()) {
    const double v = plan.stat == "p99" ? res.evidence.p99 : res.evidence.mean;
    pass = v <= plan.pass_bound;
  }

  res.repro = repro_command(contract, contract_file, decl.name, request, st.worst_config, st.worst_sample);
  if (!st.any_run) {
    return finish(Verdict::kNotApplicable,
                  "no config could run (" + std::to_string(skipped_configs) + " skipped): " +
                      (res.evidence.per_config.empty() ? std::string("no configs")
                                                       : res.evidence.per_config.front().note));
  }
  if (pass) {
    res.repro.clear();
    return finish(Verdict::kConforming, plan.metric_name + " max " + fmt_g(res.evidence.max) +
                                            " within bound " + fmt_g(plan.pass_bound));
  }
  // No pattern recognised, but the numbers broke the bound: a contract that
  // names the plain exceedance (TOLERANCE_EXCEEDED, ERROR_BOUND_EXCEEDED) gets
  // it, with the worst metric / allowed ratio, so the verdict is still named.
  if (st.signatures.empty() && st.any_fail)
    for (const auto& e : contract.violation.signatures)
      if (e.name == "TOLERANCE_EXCEEDED" || e.name == "ERROR_BOUND_EXCEEDED") {
        st.signatures.push_back({e.name, {fmt_g(res.evidence.max)}});
        st.note(e.name + "(" + fmt_g(res.evidence.max) + "): the worst " + plan.metric_name + " is " +
                fmt_g(res.evidence.max) + " times what the tolerance allows, with no more specific pattern in it");
        break;
      }
  // Signatures the contract names come first: they are what the contract is about.
  res.signatures = st.signatures;
  std::stable_partition(res.signatures.begin(), res.signatures.end(), [&](const Signature& sg) {
    for (const auto& e : contract.violation.signatures)
      if (e.name == sg.name) return true;
    return false;
  });
  for (const auto& sg : res.signatures)
    for (const auto& e : contract.violation.signatures)
      if (e.name == sg.name) res.signature_expected = true;
  std::string reason;
  if (res.signatures.empty()) {
    reason = "violation without a recognised pattern; " + plan.metric_name + " max " +
             fmt_g(res.evidence.max) + " > " + fmt_g(plan.pass_bound);
  } else {
    reason = res.signatures.front().to_string() + ": " +
             (res.evidence.notes.empty() ? std::string("see evidence") : res.evidence.notes.front());
  }
  return finish(Verdict::kViolation, reason);
}

}  // namespace kc::engine
