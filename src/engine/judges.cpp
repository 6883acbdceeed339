// kc — the judges: one per kind of postcondition (engine/case_run.h). Each
// turns one invocation of the kernel into evidence; none decides the verdict.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/case_run.h"
#include "engine/oracle_reference.h"
#include "engine/poison.h"
#include "engine/policy.h"
#include "kc/metrics.h"
#include "kc/obligation.h"
#include "kc/signature.h"
#include "kc/verify.h"

namespace kc::engine {

struct FastCheck {
  kc::Result<verify::Result> (*verify)(const Call& inputs, const Call& outputs, verify::Options options);
  std::string output;  ///< the output tensor it judges
  bool freivalds;      ///< probes and sampled elements (matmul), or sampled rows only (attention)
};

const FastCheck* fast_check_for(std::string_view op_name) {
  // The op says which verifier of src/verify judges it (Op::fast_check, in
  // its folder); this binds the verifier to its function. One FastCheck per
  // op, kept for the process (a CaseRun holds a pointer to it).
  const Op* op = builtin_ops().find(op_name);
  const std::optional<OpFastCheck> hook = op ? op->fast_check() : std::nullopt;
  if (!hook) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<FastCheck>, std::less<>> made;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made.find(op_name); it != made.end()) return it->second.get();
  auto check = std::make_unique<FastCheck>(FastCheck{nullptr, hook->output, hook->freivalds});
  switch (hook->verifier) {
    case OpFastCheck::Verifier::kMatmul:
      check->verify = verify::verify_matmul;
      break;
    case OpFastCheck::Verifier::kFusedMatmul:
      check->verify = verify::verify_fused_matmul;
      break;
    case OpFastCheck::Verifier::kAttention:
      check->verify = verify::verify_attention;
      break;
  }
  if (!check->verify) return nullptr;
  return made.emplace(std::string(op_name), std::move(check)).first->second.get();
}

std::string fast_check_what(const FastCheck& check, const CheckRequest& request) {
  const std::string s = std::to_string(request.fast_samples);
  return check.freivalds ? "Freivalds, " + std::to_string(request.fast_probes) + " Rademacher probes, + " + s +
                               " sampled elements"
                         : "up to " + s + " sampled query rows, every element judged";
}

Step judge_raise(CaseRun& c, ConfigRun& cr, Sample& s, const Status& status) {
  const Postcondition& post = c.contract.post;
  if (status.code() == StatusCode::kKernelRaised) {
    // `... or raise E`: refusing a config is an accepted outcome; noted per config.
    if (!post.or_raise.empty()) {
      cr.ce.note = "raised (accepted: or raise " + post.or_raise + "): " + status.message();
      return Step::end_sample();
    }
    const bool expected = post.kind == Postcondition::Kind::kRaise || s.oracle->raises.has_value() ||
                          (post.kind == Postcondition::Kind::kDeclaredPolicy && c.decl.get(post.policy) == "RAISE");
    if (!expected)
      c.ev.fail_with(cr.ce, {sig::kUnexpectedRaise, {}},
                     "the kernel raised where the contract expects a result: " + status.message());
    return Step::end_sample();
  }
  if (!status.ok()) return Step::end_case(Verdict::kError, "impl failed: " + status.to_string());
  if (post.kind == Postcondition::Kind::kRaise ||
      (s.oracle->raises && post.kind != Postcondition::Kind::kBitwiseIdentical)) {
    c.ev.fail_with(cr.ce, {sig::kMissingRaise, {}},
                   "the kernel returned normally where it must raise" +
                       (s.oracle->raises ? ": " + *s.oracle->raises : std::string()));
    return Step::end_sample();
  }
  return Step::next();
}

namespace {

/// `declared_policy nan | denormal | oob`: the behaviour observed on the probe
/// against the one the impl declares (engine/policy.cpp). A raise is one of
/// the behaviours it judges.
class PolicyJudge final : public Judge {
 public:
  bool judges_raises() const override { return true; }
  Step judge(CaseRun& c, ConfigRun& cr, Sample& s, int, const Status& status) const override {
    if (!status.ok() && status.code() != StatusCode::kKernelRaised)
      return Step::end_case(Verdict::kError, "impl failed: " + status.to_string());
    PolicyInputs pin;
    pin.op = &c.op;
    pin.decl = &c.decl;
    pin.inputs = &s.inputs;
    pin.outputs = &s.call;
    pin.oracle = &*s.oracle;
    pin.options = c.oracle_options;
    pin.status = status;
    pin.tolerance = &c.contract.tolerance;
    pin.allowed = &c.contract.post.allowed;
    pin.selected_path = s.selected_path;
    pin.selected_reason = s.selected_reason;
    auto judged = judge_policy(c.contract.post.policy, pin);
    if (!judged.ok()) return Step::end_case(Verdict::kUnderSpecified, judged.status().message());
    c.ev.count(cr.ce, judged->elements);
    cr.ratios.push_back(static_cast<double>(judged->mismatches));
    if (!judged->observed.empty()) cr.observed = judged->observed;
    for (const auto& n : judged->notes) c.ev.note(n);
    if (judged->pass) return Step::next();
    c.ev.fail(cr.ce, std::max<std::int64_t>(1, judged->mismatches));
    for (const auto& sg : judged->signatures) c.ev.add_signature(sg);
    if (c.ev.worst_config.empty()) c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
    return Step::next();
  }
};

/// The rounding factor, output rounding and absolute slack an algebraic
/// property's checks get from the contract's tolerance (kc/obligation.h):
/// `bound E` gives factor E (evaluated for the call) and the output format's
/// unit roundoff; `absolute E` gives E; `none` gives nothing (exact).
Status property_tolerance(const Tolerance& tol, const Op& op, const Call& call, obligation::Context* ctx) {
  KC_ASSIGN_OR_RETURN(const Tolerance* t, tolerance_at(tol, call.config.dtype));
  ExprEnv env;
  env.vars = op.expr_vars(call);
  env.precision = call.config.dtype;
  env.accumulator = call.config.accumulator;
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

/// `reference algebraic family.property`: the property judges the sample,
/// re-running the kernel (in the same worker) on the inputs it transforms.
class PropertyJudge final : public Judge {
 public:
  Step judge(CaseRun& c, ConfigRun& cr, Sample& s, int, const Status&) const override {
    const obligation::Property& property = *c.plan.property;
    s.compared = true;
    std::optional<isolate::Outcome> rerun_failure;
    const obligation::Invoke invoke = [&](Call& call) -> Status {
      if (rerun_failure) return internal_error("the worker failed on an earlier re-invocation");
      KC_RETURN_IF_ERROR(c.impl.can_implement(call));
      poison_outputs(c.op, call);
      KC_RETURN_IF_ERROR(c.worker.prepare(call));
      isolate::Outcome o = c.worker.run(call);
      if (o.failure) rerun_failure = o;
      return o.status;
    };
    Rng prop_rng(derive_seed(s.seed, 0x70726f70ull));  // "prop"
    obligation::Context ctx{c.op, s.call, invoke, prop_rng};
    ctx.inputs = &s.inputs;
    if (Status ts = property_tolerance(c.contract.tolerance, c.op, s.call, &ctx); !ts.ok())
      return Step::end_case(Verdict::kUnderSpecified, ts.message());
    auto judged = property.check(ctx);
    if (rerun_failure) return Step::worker_failed(c, cr, *rerun_failure, s, s.in_hash());
    if (!judged.ok()) {
      const Status& js = judged.status();
      if (js.code() == StatusCode::kUnimplemented) {
        cr.ce.note = "impl cannot run the property's transformed call: " + js.message();
        return Step::end_sample();
      }
      if (js.code() == StatusCode::kKernelRaised) {
        c.ev.fail_with(cr.ce, {sig::kUnexpectedRaise, {}},
                       "the kernel raised on the property's transformed input: " + js.message());
        return Step::end_sample();
      }
      return Step::end_case(Verdict::kUnderSpecified, property.name + ": " + js.message());
    }
    record(c, cr, s, *judged);
    return Step::next();
  }

 private:
  static void record(CaseRun& c, ConfigRun& cr, const Sample& s, const obligation::Outcome& po) {
    const obligation::Property& property = *c.plan.property;
    const auto checks = static_cast<std::int64_t>(po.ratios.size());
    c.ev.count(cr.ce, checks);
    cr.ratios.insert(cr.ratios.end(), po.ratios.begin(), po.ratios.end());
    if (po.max_ratio > c.ev.worst_metric && checks > 0) {
      c.ev.worst_metric = po.max_ratio;
      WorstElement w;
      w.output = property.name;
      w.position = po.worst.to_string();
      w.value = po.worst_residual;
      w.reference = po.worst_allowed;
      w.metric = po.max_ratio;
      w.config = cr.ce.config;
      c.ev.result().evidence.worst = w;
      c.ev.property_evidence = property.name + ": " + po.evidence;
      if (po.failures == 0) c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
    }
    if (po.failures == 0) return;
    // A finite residual beyond the bound is a failure of accuracy only.
    if (std::isfinite(po.worst_residual)) c.ev.fail_accuracy(cr.ce, po.failures);
    else c.ev.fail(cr.ce, po.failures);
    if (c.ev.first_property_failure.empty()) {
      c.ev.first_property_failure = property.name + ": " + po.evidence;
      c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
    }
    c.ev.add_signature({sig::kPropertyViolated, {property.name}});
  }
};

/// A call with storage of its own (a worker's call holds views of guarded
/// buffers, and copies of a view alias them). Each tensor's copy sits at the
/// same offset within a 4 KiB page as the original: a kernel whose summation
/// order follows its data's alignment (Eigen's vectorized redux peels to an
/// aligned address) then sums in the same order, so what the sweep sees is
/// concurrency, not a different address.
struct PrivateCall {
  std::vector<std::unique_ptr<std::byte[]>> storage;
  Call call;
};
PrivateCall private_copy(const Call& call) {
  constexpr std::uintptr_t kPage = 4096;
  PrivateCall copy;
  copy.call = call;
  for (Tensor& t : copy.call.tensors) {
    const std::size_t n = t.nbytes();
    auto buffer = std::make_unique<std::byte[]>(n + 2 * kPage);
    const auto base = reinterpret_cast<std::uintptr_t>(buffer.get());
    std::byte* at = buffer.get() + (kPage - base % kPage) + reinterpret_cast<std::uintptr_t>(t.raw()) % kPage;
    if (n > 0) std::memcpy(at, t.raw(), n);
    t = Tensor::view(t, at);
    copy.storage.push_back(std::move(buffer));
  }
  return copy;
}

/// Whether two calls' outputs agree under a determinism class.
bool outputs_agree(const Call& a, const Call& b, Determinism agreement) {
  for (std::size_t k = 0; k < a.tensors.size(); ++k) {
    if (a.roles[k] == Role::kIn) continue;
    const std::vector<double> x = a.tensors[k].to_doubles(), y = b.tensors[k].to_doubles();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!runs_agree(x[i], y[i], a.tensors[k].dtype(), agreement)) return false;
  }
  return true;
}

/// An impl invoked `copies` times at once: on the call itself and on private
/// copies of it, each on a thread of its own, as concurrent requests of a
/// serving process would. The call's outputs are its own invocation's, unless
/// a copy's outputs differ from them: then the first differing copy's are
/// returned, so the comparison with the first (lone) invocation sees it.
class ConcurrentImpl final : public Impl {
 public:
  ConcurrentImpl(const Impl& impl, int copies, Determinism agreement)
      : impl_(impl), copies_(copies), agreement_(agreement) {}
  const Declaration& declaration() const override { return impl_.declaration(); }
  Status can_implement(const Call& call) const override { return impl_.can_implement(call); }
  Status load_in_worker() const override { return impl_.load_in_worker(); }
  Status load_before_fork() const override { return impl_.load_before_fork(); }
  Status run(Call& call) const override {
    std::vector<PrivateCall> copies;
    for (int i = 1; i < copies_; ++i) copies.push_back(private_copy(call));
    std::vector<Status> status(copies.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < copies.size(); ++i)
      threads.emplace_back([&, i] { status[i] = impl_.run(copies[i].call); });
    const Status own = impl_.run(call);
    for (auto& t : threads) t.join();
    if (!own.ok()) return own;
    for (std::size_t i = 0; i < copies.size(); ++i) {
      if (!status[i].ok()) return status[i];
      const Call& other = copies[i].call;
      if (outputs_agree(call, other, agreement_)) continue;
      for (std::size_t k = 0; k < call.tensors.size(); ++k)
        if (call.roles[k] != Role::kIn && call.tensors[k].nbytes() == other.tensors[k].nbytes())
          std::memcpy(call.tensors[k].raw(), other.tensors[k].raw(), call.tensors[k].nbytes());
      break;
    }
    return ok_status();
  }

 private:
  const Impl& impl_;
  int copies_;
  Determinism agreement_;
};

/// `bitwise_identical across N` and `declared_policy determinism`: every
/// repeat compared with the first under the plan's agreement (BITWISE, or the
/// impl's declared RUN_TO_RUN), under a concurrency sweep: half the
/// invocations alone, then the rest 2 and 4 at once (host kernels whose
/// runtime survives fork, unless the impl declares reentrant = false).
class RepeatJudge final : public Judge {
 public:
  static constexpr int kLevels[] = {1, 2, 4};

  Status prepare(CaseRun& c, const Call& call) const override {
    if (c.sweep_workers.empty() && sweeps(c)) {
      for (int k : {kLevels[1], kLevels[2]}) {
        c.sweep_impls.push_back(std::make_unique<ConcurrentImpl>(c.impl, k, c.plan.agreement));
        c.sweep_workers.push_back(
            std::make_unique<isolate::Worker>(*c.sweep_impls.back(), c.request.isolation, c.request.limits));
      }
    }
    for (auto& w : c.sweep_workers) KC_RETURN_IF_ERROR(w->prepare(call));
    return ok_status();
  }
  isolate::Worker& worker_for(CaseRun& c, int run, bool* timed) const override {
    const int slot = level_slot(c, run);
    *timed = slot == 0;
    return slot == 0 ? c.worker : *c.sweep_workers[static_cast<std::size_t>(slot - 1)];
  }
  Step judge(CaseRun& c, ConfigRun&, Sample& s, int run, const Status&) const override {
    std::vector<std::vector<double>> outs;
    for (const auto& name : s.oracle->output_names) outs.push_back(s.call.t(name).to_doubles());
    ++s.runs_judged;
    const int slot = level_slot(c, run);
    ++s.runs_at[static_cast<std::size_t>(slot)];
    if (run == 0) {
      s.first_outputs = std::move(outs);
      return Step::next();
    }
    bool same = true;
    for (std::size_t o = 0; o < outs.size() && same; ++o) {
      const DType dt = s.call.t(s.oracle->output_names[o]).dtype();
      for (std::size_t i = 0; i < outs[o].size() && same; ++i)
        same = runs_agree(outs[o][i], s.first_outputs[o][i], dt, c.plan.agreement);
    }
    if (!same) {
      ++s.mismatched_runs;
      ++s.mismatched_at[static_cast<std::size_t>(slot)];
    }
    return Step::next();
  }
  void end_sample(CaseRun& c, ConfigRun& cr, Sample& s) const override {
    if (s.runs_judged == 0) return;  // no invocation got as far as a result
    cr.ratios.push_back(static_cast<double>(s.mismatched_runs));
    c.ev.count(cr.ce, s.runs_judged);
    if (s.mismatched_runs == 0) return;
    const std::string of = std::to_string(s.mismatched_runs) + " of " + std::to_string(s.runs_judged - 1);
    std::string where;
    for (std::size_t l = 0; l < 3; ++l)
      if (s.runs_at[l] > 0)
        where += std::string(where.empty() ? "" : ", ") + level_name(l) + ": " + std::to_string(s.mismatched_at[l]) +
                 " of " + std::to_string(s.runs_at[l] - (l == 0 ? 1 : 0));
    c.ev.fail_with(cr.ce, {sig::kNondeterministic, {of}},
                   of + " repeated invocations on identical inputs differ from the first " +
                       (c.plan.agreement == Determinism::kRunToRun
                            ? "by more than relative " + fmt_g4(kRunToRunRelative) + " (declared RUN_TO_RUN)"
                            : std::string("bitwise")) +
                       " (" + where + ")",
                   s.mismatched_runs);
    c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
  }
  void end_case(CaseRun& c) const override {
    if (c.ev.any_run) c.ev.note(sweep_note(c));
  }

 private:
  static bool sweeps(const CaseRun& c) {
    const isolate::RuntimeTraits traits = isolate::runtime_traits(c.decl);
    const auto reentrant = c.decl.extra.find("reentrant");
    return traits.survives_fork && traits.runs_on_host &&
           (reentrant == c.decl.extra.end() || reentrant->second != "false");
  }
  /// 0 alone, 1 two at once, 2 four at once. The first half of the
  /// invocations (rounded up) run alone, the first one included, so lone calls
  /// stay the majority the timing floor is taken over (a result cached after
  /// the first call is fast on most of them); then half the rest 2 at once
  /// (rounded up), then the others 4 at once. Each level runs in a worker of
  /// its own, so the order changes nothing a kernel can see from one level to
  /// the next; in blocks, a level's calls follow one another in its worker
  /// instead of alternating with another worker's, whose threads (a thread
  /// pool spinning after its call) would still be using the cores.
  static int level_slot(const CaseRun& c, int run) {
    if (c.sweep_workers.empty()) return 0;
    const int n = c.plan.invocations;
    const int alone = (n + 1) / 2;
    const int two = (n - alone + 1) / 2;
    if (run < alone) return 0;
    return run < alone + two ? 1 : 2;
  }
  static std::string level_name(std::size_t slot) {
    return slot == 0 ? "alone" : std::to_string(kLevels[slot]) + " at once";
  }
  static std::string sweep_note(const CaseRun& c) {
    if (c.sweep_workers.empty())
      return "invocations ran one at a time: no concurrency sweep (the impl declares reentrant = false, or its "
             "runtime is not a host runtime that survives fork)";
    return "concurrency sweep: the first half of the invocations ran alone, then half the rest 2 at once and the "
           "others 4 at once, each level in a worker of its own";
  }
};

/// Whether the tolerance that applies at `dtype` tells +0 from -0 (`ulp E signed`).
bool signed_zeros(const Tolerance& tol, DType dtype) {
  auto t = tolerance_at(tol, dtype);
  return t.ok() && (*t)->signed_zeros;
}

/// `output O satisfies elementwise_close / close`: every element against the
/// oracle under the contract's tolerance; under --fast, kc::verify first, and
/// the oracle only for a sample it flags.
class NumericJudge final : public Judge {
 public:
  Step judge(CaseRun& c, ConfigRun& cr, Sample& s, int, const Status&) const override {
    s.compared = true;
    if (s.fast_tol) {
      bool passed = false;
      if (Step f = judge_fast(c, cr, s, &passed); f.kind != Step::Kind::kNext || passed) return f;
    }
    ++c.ev.full_decided;
    for (std::size_t o = 0; o < s.oracle->output_names.size(); ++o)
      if (Step j = judge_output(c, cr, s, o); j.kind != Step::Kind::kNext) return j;
    return confirm_unwritten(c, cr, s);
  }

 private:
  /// kc::verify with the contract's bound; a flagged sample gets the oracle.
  static Step judge_fast(CaseRun& c, ConfigRun& cr, Sample& s, bool* passed) {
    ExprEnv env;
    env.vars = c.op.expr_vars(s.call);
    env.precision = s.call.config.dtype;
    env.accumulator = s.call.config.accumulator;
    auto factor = lang::eval_expr(s.fast_tol->value, env);
    if (!factor.ok()) return Step::end_case(Verdict::kUnderSpecified, factor.status().message());
    verify::Options vo;
    vo.gamma = *factor;  // the contract's E (c * gamma(K + 2, P), gamma(L, P)): the same per-element bound
    vo.precision = s.call.config.dtype;
    vo.seed = derive_seed(s.seed, 0x66617374ull);  // "fast"
    vo.probes = c.request.fast_probes;
    vo.samples = c.request.fast_samples;
    auto fr = c.fast_check->verify(s.inputs, s.call, vo);
    if (fr.ok() && fr->pass) {
      ++c.ev.fast_decided;
      c.ev.fast_method = std::string(verify::method_name(fr->method));
      cr.ratios.push_back(fr->worst_ratio);
      // Elements judged: all of them for Freivalds, the sampled ones otherwise.
      c.ev.count(cr.ce, fr->method == verify::Method::kSampled ? fr->samples : s.call.t(c.fast_check->output).numel());
      *passed = true;
      return Step::next();
    }
    ++c.ev.fast_flagged;
    if (c.ev.fast_flag_note.empty())
      c.ev.fast_flag_note = fr.ok() ? "fast verifier flagged a sample (" + fr->detail + "); the full oracle judged it"
                                    : "fast verifier could not judge a sample (" + fr.status().message() +
                                          "); the full oracle judged it";
    auto oracle = s.reference(s.inputs);
    if (!oracle.ok()) return Step::end_case(Verdict::kError, "oracle failed: " + oracle.status().message());
    s.oracle = std::move(*oracle);
    return Step::next();
  }

  /// The ratios of one output: elementwise (one per element) or normwise (one per output).
  static Result<std::vector<double>> ratios_of(const CaseRun& c, const Sample& s, const std::string& name,
                                               const std::vector<double>& got, const std::vector<double>& ref,
                                               std::vector<double>* allowed) {
    // The tolerance is a function of the inputs (a bound's magnitude reads
    // them): s.inputs, not s.call, whose in-place tensors (scal's x, gemv's y
    // at beta != 0) hold what the kernel wrote.
    if (c.contract.post.kind != Postcondition::Kind::kClose)
      return output_ratios(c.contract.tolerance, c.op, s.inputs, name, got, ref, allowed);
    // Normwise: ||got - ref||_F / ||ref||_F against the tolerance value.
    KC_ASSIGN_OR_RETURN(*allowed, allowed_errors(c.contract.tolerance, c.op, s.inputs, name, ref));
    double ref_norm = 0;
    for (double v : ref) ref_norm += v * v;
    const double tol = ref.empty() || ref_norm == 0 ? 0 : (*allowed)[0] / std::max(std::fabs(ref[0]), 1e-300);
    const double nw = normwise_error(got, ref);
    return std::vector<double>(1, tol > 0 ? nw / tol : (nw == 0 ? 0 : std::numeric_limits<double>::infinity()));
  }

  /// A written, finite result for a finite reference: its failure is one of accuracy only.
  static bool finite_result(double got, double ref, const std::vector<std::uint8_t>& unwritten, std::size_t i) {
    return std::isfinite(got) && std::isfinite(ref) && !(i < unwritten.size() && unwritten[i]);
  }
  static bool all_finite_results(const std::vector<double>& got, const std::vector<double>& ref,
                                 const std::vector<std::uint8_t>& unwritten) {
    for (std::size_t i = 0; i < got.size() && i < ref.size(); ++i)
      if (!finite_result(got[i], ref[i], unwritten, i)) return false;
    return true;
  }

  static Step judge_output(CaseRun& c, ConfigRun& cr, Sample& s, std::size_t o) {
    const std::string& name = s.oracle->output_names[o];
    const Tensor& out = s.call.t(name);
    std::vector<double> got = out.to_doubles();
    const std::vector<double>& ref = s.oracle->outputs[o];
    std::vector<double> allowed;
    auto r = ratios_of(c, s, name, got, ref, &allowed);
    if (!r.ok()) return Step::end_case(Verdict::kUnderSpecified, r.status().message());
    std::vector<double> ratios = std::move(*r);
    // An element still holding the poison was never written: it fails
    // whatever the reference is (a NaN reference included).
    std::vector<std::uint8_t> unwritten;
    for (std::size_t k = 0; k < s.call.names.size(); ++k)
      if (s.call.names[k] == name && poisoned(c.op, s.call, k)) unwritten = fill_mask(out);
    for (std::size_t i = 0; i < unwritten.size(); ++i)
      if (unwritten[i]) ratios[ratios.size() == unwritten.size() ? i : 0] = std::numeric_limits<double>::infinity();
    // A spec's special values are exact: no tolerance applies there.
    judge_exact_elements(c, s, o, got, unwritten, &ratios);
    // A measuring probe's reading (matmul's accumulator_bits and arithmetic)
    // is evidence whatever the verdict: the op reads it (Op::probe_readings).
    if (c.plan.probe) {
      auto& readings = c.ev.readings;
      for (std::string& line : c.op.probe_readings(*c.plan.probe, s.inputs, name, got, ref))
        if (std::find(readings.begin(), readings.end(), line) == readings.end()) readings.push_back(std::move(line));
    }
    c.ev.count(cr.ce, static_cast<std::int64_t>(ratios.size()));
    std::int64_t worst_i = -1;
    double worst = -1;
    bool failed_here = false;
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      const double x = std::isnan(ratios[i]) ? std::numeric_limits<double>::infinity() : ratios[i];
      cr.ratios.push_back(x);
      if (x > worst) {
        worst = x;
        worst_i = static_cast<std::int64_t>(i);
      }
      if (x > c.plan.pass_bound) {
        // Elementwise: that element; normwise: the whole output.
        const bool elementwise = ratios.size() == got.size();
        const bool finite = elementwise ? finite_result(got[i], ref[i], unwritten, i)
                                        : all_finite_results(got, ref, unwritten);
        finite ? c.ev.fail_accuracy(cr.ce) : c.ev.fail(cr.ce);
        failed_here = true;
      }
    }
    if (worst > c.ev.worst_metric && worst_i >= 0) {
      c.ev.worst_metric = worst;
      WorstElement w;
      w.output = name;
      w.index = worst_i;
      w.position = position_of(out, worst_i);
      w.value = worst_i < static_cast<std::int64_t>(got.size()) ? got[worst_i] : 0;
      w.reference = worst_i < static_cast<std::int64_t>(ref.size()) ? ref[worst_i] : 0;
      w.metric = worst;
      w.config = cr.ce.config;
      c.ev.result().evidence.worst = w;
      c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
    }
    if (failed_here && !c.ev.first_failure) {
      Observation obs;
      obs.output = name;
      obs.dtype = out.dtype();
      obs.got = std::move(got);
      obs.ref = ref;
      obs.allowed = std::move(allowed);
      obs.unwritten = std::move(unwritten);
      obs.signed_zeros = signed_zeros(c.contract.tolerance, s.call.config.dtype);
      if (c.plan.probe) obs.probe = c.plan.probe->name;
      describe_inputs(s.inputs, &obs);
      c.ev.first_failure = std::move(obs);
      c.ev.first_failure_inputs = s.inputs;
      c.ev.point_at(cr.ce.config, s.index, s.seed, s.in_hash());
      s.captured = true;
    }
    return Step::next();
  }
};

}  // namespace

std::unique_ptr<Judge> make_judge(const Plan& plan) {
  if (plan.policy_judge) return std::make_unique<PolicyJudge>();
  if (plan.property) return std::make_unique<PropertyJudge>();
  if (plan.invocations > 1) return std::make_unique<RepeatJudge>();
  return std::make_unique<NumericJudge>();
}

}  // namespace kc::engine
