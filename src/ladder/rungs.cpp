// kc — the four rungs of the verification ladder (kc/ladder.h, docs/ladder.md).
//
// Every judgement goes through engine::run_case with the contract as written:
// one config (CheckRequest::config), one sample, and the ladder's inputs put in
// place by CheckRequest::prepare_inputs. A rung never judges by itself.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kc/json_writer.h"
#include "kc/ladder.h"
#include "kc/plan.h"
#include "kc/report_common.h"
#include "ladder/domain.h"

namespace kc::ladder {

using detail::EnumerableKind;
using detail::ValueDomain;
using engine::CaseResult;
using engine::CheckRequest;
using engine::Verdict;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string g(double v) { return report::format_double(v); }

RungResult start_rung(const Contract& c, const Impl& impl, Level level, std::uint64_t seed) {
  RungResult r;
  r.contract = c.id;
  r.contract_hash = c.content_hash();
  r.impl = impl.declaration().name;
  r.backend = impl.declaration().backend;
  r.op = impl.declaration().op;
  r.level = level;
  r.seed = seed;
  r.time = report::utc_timestamp();
  return r;
}

bool is_failure(Verdict v) { return v == Verdict::kViolation || v == Verdict::kError; }

/// The engine's plan for this contract x impl (configs, fill, dtypes, op).
struct Setup {
  engine::Plan plan;
  std::string not_applicable;
  std::string error;
  std::vector<DType> dtypes;
};

Setup make_setup(const Contract& contract, const Impl& impl, const CheckRequest& base) {
  Setup s;
  CheckRequest r = base;
  r.config.reset();
  auto plan = engine::make_plan(contract, impl.declaration(), r, &s.not_applicable);
  if (!plan.ok()) {
    s.error = plan.status().message();
    return s;
  }
  s.plan = std::move(plan).value();
  for (const Config& c : s.plan.configs)
    if (std::find(s.dtypes.begin(), s.dtypes.end(), c.dtype) == s.dtypes.end()) s.dtypes.push_back(c.dtype);
  return s;
}

/// Ends the rung when the contract does not apply to the impl (not_applicable)
/// or cannot be planned (error); false when the rung goes on.
bool ended_at_setup(const Setup& s, Clock::time_point t0, RungResult& r) {
  if (s.error.empty() && s.not_applicable.empty()) return false;
  r.outcome = s.error.empty() ? Outcome::kNotApplicable : Outcome::kError;
  r.summary = s.error.empty() ? s.not_applicable : s.error;
  r.seconds = since(t0);
  return true;
}

/// Input tensors (not pure outputs) with a floating dtype.
std::vector<std::size_t> float_inputs(const Call& call) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < call.tensors.size(); ++k)
    if (call.roles[k] != Role::kOut && dtype_info(call.tensors[k].dtype()).is_float) out.push_back(k);
  return out;
}

/// Runs the contract on one config; `hook` sets the inputs.
CaseResult judge(const Contract& contract, const std::string& file, const Impl& impl, const BackendInfo& backend,
                 const Config& config, std::function<void(Call&)> hook, std::uint64_t seed, const CheckRequest& base) {
  CheckRequest r = base;
  r.config = config.to_string();
  r.samples = 1;
  r.sample_index.reset();
  r.trace_path.clear();
  r.on_progress = nullptr;
  r.seed = seed;
  r.prepare_inputs = std::move(hook);
  return engine::run_case(contract, file, impl, backend, r);
}

/// Sets tensor k of `call` from a row-major value list laid out in `shape`:
/// an element inside both shapes keeps its value, a new one is 0.
void set_from(Tensor& t, const std::vector<std::int64_t>& shape, const std::vector<double>& values,
              const std::vector<std::int64_t>& offset = {}) {
  const std::int64_t n = t.numel();
  std::vector<std::int64_t> idx(t.rank(), 0);
  for (std::int64_t j = 0; j < n; ++j) {
    // idx = multi-index of j in t's shape (row-major)
    std::int64_t rem = j;
    for (std::size_t d = t.rank(); d-- > 0;) {
      idx[d] = rem % t.dim(d);
      rem /= t.dim(d);
    }
    double v = 0;
    if (shape.size() == t.rank()) {
      std::int64_t flat = 0;
      bool inside = true;
      for (std::size_t d = 0; d < t.rank(); ++d) {
        const std::int64_t at = idx[d] + (d < offset.size() ? offset[d] : 0);  // window into the old values
        if (at >= shape[d]) inside = false;
        flat = flat * shape[d] + at;
      }
      if (inside && flat < static_cast<std::int64_t>(values.size())) v = values[static_cast<std::size_t>(flat)];
    }
    t.set(j, v);
  }
}

Counterexample capture(const Call& call, const std::string& verdict) {
  Counterexample cx;
  cx.config = call.config.to_string();
  for (std::size_t k : float_inputs(call)) {
    cx.shapes[call.names[k]] = call.tensors[k].shape();
    cx.inputs[call.names[k]] = call.tensors[k].to_doubles();
  }
  cx.verdict = verdict;
  return cx;
}

std::function<void(Call&)> replay_hook(const Counterexample& cx) {
  return [cx](Call& call) {
    for (std::size_t k : float_inputs(call)) {
      auto it = cx.inputs.find(call.names[k]);
      auto sh = cx.shapes.find(call.names[k]);
      if (it == cx.inputs.end() || sh == cx.shapes.end()) continue;
      set_from(call.tensors[k], sh->second, it->second);
    }
  };
}

// ------------------------------------------------------------------ values

/// A value of dtype in the domain, chosen to make failures visible: zeros,
/// units, the domain's ends, subnormals, and magnitudes spread over binades.
double special_value(Rng& rng, const ValueDomain& d, DType dtype) {
  const DTypeInfo& info = dtype_info(dtype);
  const double tiny = info.min_normal * std::ldexp(1.0, -info.mantissa_bits);  // smallest subnormal
  const double amax = std::max(std::fabs(d.lo), std::fabs(d.hi));
  double v = 0;
  switch (rng.uniform_int(0, 7)) {
    case 0: v = 0; break;
    case 1: v = -0.0; break;
    case 2: v = rng.uniform() < 0.5 ? 1 : -1; break;
    case 3: v = d.lo; break;
    case 4: v = d.hi; break;
    case 5: v = (rng.uniform() < 0.5 ? -1 : 1) * info.min_normal * rng.uniform(0.0, 1.0); break;  // subnormal
    case 6: v = static_cast<double>(rng.uniform_int(-8, 8)); break;
    default: {
      // log-uniform magnitude from the smallest subnormal to the domain's largest
      const double l0 = std::log2(tiny), l1 = std::log2(std::max(amax, tiny));
      v = (rng.uniform() < 0.5 ? -1 : 1) * std::exp2(rng.uniform(l0, l1));
    }
  }
  v = round_to(v, dtype);
  if (!d.contains(v)) v = std::clamp(v, d.lo, d.hi);
  return v;
}

Config random_config(Rng& rng, const Setup& s, const Contract& contract, std::int64_t max_extent) {
  Config c;
  c.dtype = s.dtypes[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(s.dtypes.size()) - 1))];
  for (const Param& p : s.plan.op->params()) c.params[p.name] = p.default_value;
  const std::vector<std::string> ext = detail::extent_params(*s.plan.op);
  // Non-extent axes of the contract (activation, trans_a, ...): one of its values.
  for (const Predicate& p : contract.pre) {
    if (p.kind != Predicate::Kind::kParamIn || p.values.empty()) continue;
    if (std::find(ext.begin(), ext.end(), p.key) != ext.end()) continue;
    c.params[p.key] = p.values[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(p.values.size()) - 1))];
  }
  for (const std::string& e : ext) c.params[e] = std::to_string(rng.uniform_int(1, max_extent));
  return c;
}

/// The base config of L1/L2/L4: each extent `extent`, every other axis the
/// contract's pre restricts (causal in {1}, trans_a in {...}) at its first
/// value, the rest the op's defaults. (The op's default may lie outside the
/// contract: attention's causal = 0 under KC-ATTN-CAUSAL's causal in {1}
/// made every edge case under_specified.)
Config base_config(const Setup& s, const Contract& contract, DType dtype, std::int64_t extent) {
  Config c;
  c.dtype = dtype;
  for (const Param& p : s.plan.op->params()) c.params[p.name] = p.default_value;
  const std::vector<std::string> ext = detail::extent_params(*s.plan.op);
  for (const Predicate& p : contract.pre) {
    if (p.kind != Predicate::Kind::kParamIn || p.values.empty()) continue;
    if (std::find(ext.begin(), ext.end(), p.key) != ext.end()) continue;
    c.params[p.key] = p.values.front();
  }
  for (const std::string& e : ext) c.params[e] = std::to_string(extent);
  return c;
}

}  // namespace

// ======================================================================= L1

RungResult run_type_rung(const Contract& contract, const std::string&, const Impl& impl, const BackendInfo&,
                         const LadderRequest& request) {
  const auto t0 = Clock::now();
  RungResult r = start_rung(contract, impl, Level::kType, request.check.seed);
  Setup s = make_setup(contract, impl, request.check);
  if (ended_at_setup(s, t0, r)) return r;
  const Op& op = *s.plan.op;
  auto check = [&](const std::string& name, bool ok, const std::string& detail) {
    ++r.runs;
    if (!ok) ++r.failed;
    r.cases.push_back(name + ": " + (ok ? "passed" : "FAILED") + (detail.empty() ? "" : " (" + detail + ")"));
  };
  // 1. Every planned config builds a call whose tensors match the op signature
  //    (names, roles; dtypes are the op's: an index output is I64 in any config),
  //    satisfies the contract's shape predicates, and is accepted by the impl.
  std::int64_t built = 0, accepted = 0;
  std::string first_problem;
  for (const Config& c : s.plan.configs) {
    auto call = op.make_call(c);
    if (!call.ok()) {
      if (first_problem.empty()) first_problem = c.to_string() + ": " + call.status().message();
      continue;
    }
    bool sig_ok = call->tensors.size() == op.signature().size();
    for (std::size_t k = 0; sig_ok && k < call->tensors.size(); ++k)
      sig_ok = call->names[k] == op.signature()[k].name && call->roles[k] == op.signature()[k].role;
    if (!sig_ok && first_problem.empty()) first_problem = c.to_string() + ": tensors differ from the signature";
    if (Status sp = engine::check_shape_predicates(contract, *call); !sp.ok()) {
      if (first_problem.empty()) first_problem = sp.message();
      continue;
    }
    built += sig_ok ? 1 : 0;
    if (impl.can_implement(*call).ok()) ++accepted;
  }
  const auto n = static_cast<std::int64_t>(s.plan.configs.size());
  check("planned configs build calls matching the signature and shape predicates", built == n,
        std::to_string(built) + "/" + std::to_string(n) + (first_problem.empty() ? "" : "; " + first_problem));
  check("impl accepts every planned config of its declared dtypes", accepted == n,
        std::to_string(accepted) + "/" + std::to_string(n));
  // 2. Ill-typed calls are rejected before a kernel runs: extents 0 and -1.
  for (const std::string& e : detail::extent_params(op)) {
    for (const char* bad : {"0", "-1"}) {
      Config c = base_config(s, contract, s.dtypes.front(), 4);
      c.params[e] = bad;
      auto call = op.make_call(c);
      check("op rejects " + e + "=" + bad, !call.ok(), call.ok() ? "accepted" : call.status().message());
    }
  }
  // 3. A dtype the impl does not declare is refused by can_implement.
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16}) {
    const auto& dts = impl.declaration().dtypes;
    if (std::find(dts.begin(), dts.end(), t) != dts.end()) continue;
    auto call = op.make_call(base_config(s, contract, t, 4));
    if (!call.ok()) continue;  // the op itself refuses the dtype: also a type check
    const Status st = impl.can_implement(*call);
    check("impl refuses undeclared dtype " + std::string(dtype_name(t)), !st.ok(),
          st.ok() ? "accepted" : st.message());
    break;
  }
  r.outcome = r.failed == 0 ? Outcome::kPassed : Outcome::kFailed;
  r.summary = std::to_string(r.runs - r.failed) + "/" + std::to_string(r.runs) +
              " boundary type checks hold (runtime checks at the call boundary)";
  r.seconds = since(t0);
  return r;
}

// ======================================================================= L2

RungResult run_falsification_rung(const Contract& contract, const std::string& file, const Impl& impl,
                                  const BackendInfo& backend, const LadderRequest& request) {
  const auto t0 = Clock::now();
  RungResult r = start_rung(contract, impl, Level::kFalsification, request.check.seed);
  Setup s = make_setup(contract, impl, request.check);
  if (ended_at_setup(s, t0, r)) return r;
  const Op& op = *s.plan.op;
  struct EdgeCase {
    std::string name;
    Config config;
    std::function<void(Call&)> hook;  // empty: the contract's own fill and probe
    const Contract* contract;
  };
  std::vector<EdgeCase> cases;
  Contract dense = contract;  // the probe at every element
  if (dense.measure.kind == Protocol::Kind::kInject) dense.measure.density = 1.0;
  const std::vector<std::string> ext = detail::extent_params(op);
  for (DType dt : s.dtypes) {
    const std::string tag = s.dtypes.size() > 1 ? " " + std::string(dtype_name(dt)) : "";
    const Config base = base_config(s, contract, dt, 4);
    const ValueDomain d = detail::value_domain(contract, dt);
    // Boundary shapes: each extent at 1, 2 and 17 (odd, one past a 16-wide tile).
    for (const std::string& e : ext)
      for (int v : {1, 2, 17}) {
        Config c = base;
        c.params[e] = std::to_string(v);
        cases.push_back({"shape " + e + "=" + std::to_string(v) + tag, c, nullptr, &contract});
      }
    if (contract.measure.kind == Protocol::Kind::kInject) {
      cases.push_back({"probe " + contract.measure.anomaly + " at every element" + tag, base, nullptr, &dense});
      cases.push_back({"probe " + contract.measure.anomaly + " as planned" + tag, base, nullptr, &contract});
      continue;  // value edges would overwrite the probe: the probe is this contract's edge
    }
    // Value edges inside the domain, on every floating input.
    auto all = [](double v) {
      return [v](Call& call) {
        for (std::size_t k : float_inputs(call))
          for (std::int64_t j = 0; j < call.tensors[k].numel(); ++j) call.tensors[k].set(j, v);
      };
    };
    auto add_value = [&](const std::string& name, double v) {
      v = round_to(v, dt);
      if (d.contains(v)) cases.push_back({"value " + name + tag, base, all(v), &contract});
    };
    add_value("all +0", 0.0);
    add_value("all -0", -0.0);
    add_value("all 1", 1.0);
    add_value("all -1", -1.0);
    add_value("all domain max " + g(round_to(d.hi, dt)), d.hi);
    add_value("all domain min " + g(round_to(d.lo, dt)), d.lo);
    add_value("all min normal", dtype_info(dt).min_normal);
    add_value("all subnormal (min normal / 4)", dtype_info(dt).min_normal / 4);
    const double hi = round_to(d.hi, dt), lo = round_to(d.lo, dt);
    cases.push_back({"value alternating domain ends" + tag, base,
                     [hi, lo](Call& call) {
                       for (std::size_t k : float_inputs(call))
                         for (std::int64_t j = 0; j < call.tensors[k].numel(); ++j)
                           call.tensors[k].set(j, j % 2 ? lo : hi);
                     },
                     &contract});
    cases.push_back({"value one element at domain max, rest 0" + tag, base,
                     [hi](Call& call) {
                       for (std::size_t k : float_inputs(call)) {
                         Tensor& t = call.tensors[k];
                         for (std::int64_t j = 0; j < t.numel(); ++j) t.set(j, j + 1 == t.numel() ? hi : 0.0);
                       }
                     },
                     &contract});
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const EdgeCase& ec = cases[i];
    const CaseResult cr = judge(*ec.contract, file, impl, backend, ec.config, ec.hook,
                                derive_seed(request.check.seed, i), request.check);
    std::string state;
    if (is_failure(cr.verdict)) {
      ++r.failed;
      state = "FAILED (" + std::string(engine::verdict_name(cr.verdict)) + ": " + cr.reason + ")";
    } else if (cr.verdict == Verdict::kConforming) {
      state = "passed";
    } else {
      state = std::string(engine::verdict_name(cr.verdict)) + " (" + cr.reason + ")";
      r.cases.push_back(ec.name + ": " + state);
      continue;  // not judged: does not count as a run
    }
    ++r.runs;
    r.cases.push_back(ec.name + ": " + state);
  }
  r.outcome = r.runs == 0 ? Outcome::kNotApplicable : (r.failed == 0 ? Outcome::kPassed : Outcome::kFailed);
  r.summary = std::to_string(r.runs - r.failed) + "/" + std::to_string(r.runs) + " named edge cases conform";
  r.seconds = since(t0);
  return r;
}

// ======================================================================= L3

namespace {

/// The shrinker: shapes first (each extent toward 1), then each value toward 0
/// (0 itself, its integer part, then bisection on the format's ordered bit
/// patterns to the failing value nearest 0: a boundary).
class Shrinker {
 public:
  Shrinker(const Contract& c, const std::string& file, const Impl& impl, const BackendInfo& b, const Op& op,
           const CheckRequest& base, std::int64_t budget)
      : c_(c), file_(file), impl_(impl), b_(b), op_(op), base_(base), budget_(budget) {}

  std::int64_t trials() const { return trials_; }

  /// Verdict on cx (counts against the budget); nullopt when out of budget.
  std::optional<CaseResult> try_judge(const Counterexample& cx) {
    if (trials_ >= budget_) return std::nullopt;
    ++trials_;
    auto cfg = engine::parse_config(cx.config);
    if (!cfg.ok()) return std::nullopt;
    return judge(c_, file_, impl_, b_, *cfg, replay_hook(cx), base_.seed, base_);
  }
  bool fails(Counterexample& cx) {
    auto r = try_judge(cx);
    if (!r || !is_failure(r->verdict)) return false;
    cx.verdict = r->reason;
    return true;
  }

  Counterexample shrink(Counterexample cx) {
    // Shapes.
    const std::vector<std::string> ext = detail::extent_params(op_);
    bool changed = true;
    while (changed) {
      changed = false;
      for (const std::string& e : ext) {
        auto cfg = engine::parse_config(cx.config);
        if (!cfg.ok()) return cx;
        const std::int64_t v = cfg->get_int(e, 1);
        std::vector<std::int64_t> cands;
        for (std::int64_t cand : {std::int64_t{1}, v / 2, v - 1})
          if (cand >= 1 && cand < v && std::find(cands.begin(), cands.end(), cand) == cands.end())
            cands.push_back(cand);
        for (std::int64_t cand : cands) {
          Config next = *cfg;
          next.params[e] = std::to_string(cand);
          // The leading window of the old values, then the trailing one.
          for (bool trailing : {false, true}) {
            Counterexample t = resized(cx, next, trailing);
            if (fails(t)) {
              cx = t;
              changed = true;
              break;
            }
          }
          if (changed) break;
        }
        if (changed) break;
      }
    }
    // Values.
    auto cfg = engine::parse_config(cx.config);
    const DType dt = cfg.ok() ? cfg->dtype : DType::kF32;
    std::vector<std::string> names;
    for (const auto& kv : cx.inputs) names.push_back(kv.first);
    for (const std::string& name : names) {
      for (std::size_t i = 0; i < cx.inputs[name].size(); ++i) {
        const double v = cx.inputs[name][i];
        if (v == 0 || std::isnan(v)) continue;
        auto with = [&](double x) {
          Counterexample t = cx;
          t.inputs[name][i] = x;
          return t;
        };
        Counterexample t = with(0.0);
        if (fails(t)) {
          cx = t;
          continue;
        }
        double hi = v;
        const double tr = std::trunc(v);
        if (tr != v && tr != 0) {
          t = with(tr);
          if (fails(t)) {
            cx = t;
            hi = tr;
          }
        }
        // Bisection between 0 (passes) and hi (fails) on ordered bit patterns.
        auto klo = detail::to_ordered(std::signbit(hi) ? -0.0 : 0.0, dt);
        auto khi = detail::to_ordered(hi, dt);
        if (!klo || !khi || std::isinf(hi)) continue;
        std::int64_t lo_k = *klo, hi_k = *khi;
        while ((hi_k > lo_k ? hi_k - lo_k : lo_k - hi_k) > 1) {
          const std::int64_t mid = lo_k + (hi_k - lo_k) / 2;
          t = with(detail::from_ordered(mid, dt));
          auto r = try_judge(t);
          if (!r) break;
          if (is_failure(r->verdict)) {
            t.verdict = r->reason;
            cx = t;
            hi_k = mid;
          } else {
            lo_k = mid;
          }
        }
      }
    }
    return cx;
  }

 private:
  /// cx at another config: each tensor's values kept where both shapes have them.
  Counterexample resized(const Counterexample& cx, const Config& next, bool trailing) {
    Counterexample t;
    t.config = next.to_string();
    auto call = op_.make_call(next);
    if (!call.ok()) return cx;
    for (std::size_t k : float_inputs(*call)) {
      const std::string& nm = call->names[k];
      auto it = cx.inputs.find(nm);
      auto sh = cx.shapes.find(nm);
      if (it != cx.inputs.end() && sh != cx.shapes.end()) {
        std::vector<std::int64_t> offset(sh->second.size(), 0);
        if (trailing && sh->second.size() == call->tensors[k].rank())
          for (std::size_t d = 0; d < offset.size(); ++d)
            offset[d] = std::max<std::int64_t>(0, sh->second[d] - call->tensors[k].dim(d));
        set_from(call->tensors[k], sh->second, it->second, offset);
      }
      t.shapes[nm] = call->tensors[k].shape();
      t.inputs[nm] = call->tensors[k].to_doubles();
    }
    return t;
  }

  const Contract& c_;
  const std::string& file_;
  const Impl& impl_;
  const BackendInfo& b_;
  const Op& op_;
  const CheckRequest& base_;
  std::int64_t budget_;
  std::int64_t trials_ = 0;
};

}  // namespace

RungResult run_property_rung(const Contract& contract, const std::string& file, const Impl& impl,
                             const BackendInfo& backend, const LadderRequest& request) {
  const auto t0 = Clock::now();
  RungResult r = start_rung(contract, impl, Level::kProperty, request.check.seed);
  Setup s = make_setup(contract, impl, request.check);
  if (ended_at_setup(s, t0, r)) return r;
  if (contract.measure.kind == Protocol::Kind::kInject) {
    // A probe contract's inputs are the probe; random values would replace it.
    r.outcome = Outcome::kNotApplicable;
    r.summary = "the contract's inputs are its '" + contract.measure.anomaly + "' probe, not random values";
    r.seconds = since(t0);
    return r;
  }
  // L3 calls the kernel 10,000 times: in kc's process (the L1/L2 rungs ran it
  // in a worker first), so a run costs microseconds, not a fork.
  CheckRequest base = request.check;
  base.isolation = isolate::Mode::kNone;
  std::int64_t not_judged = 0;
  std::optional<Counterexample> found;
  // Configs the op or impl refuses (an odd head dim, a GQA group that does
  // not divide) are drawn again, up to sixteen draws per required input: a
  // refusal costs microseconds, and grad_accum under micro_batches in
  // {2, 4, 8, 16, 64} with batch in 1..8 accepts 7 draws in 40 (batch must be
  // a multiple), which four draws per input left 3,000 short of 10,000.
  for (std::int64_t i = 0; r.runs < request.property_inputs && i < 16 * request.property_inputs; ++i) {
    const std::uint64_t seed = derive_seed(request.check.seed ^ 0x4c33u, static_cast<std::uint64_t>(i));
    Rng rng(seed);
    const Config cfg = random_config(rng, s, contract, request.max_extent);
    const ValueDomain d = detail::value_domain(contract, cfg.dtype);
    Counterexample seen;
    auto hook = [&](Call& call) {
      // Keep the contract's own fill for most elements (clamped into the
      // domain); replace a random quarter with special values.
      for (std::size_t k : float_inputs(call)) {
        Tensor& t = call.tensors[k];
        for (std::int64_t j = 0; j < t.numel(); ++j) {
          double v = t.at(j);
          if (rng.uniform() < 0.25) v = special_value(rng, d, cfg.dtype);
          else if (!d.contains(v)) v = std::clamp(v, d.lo, d.hi);
          t.set(j, v);
        }
      }
      seen = capture(call, "");
    };
    const CaseResult cr = judge(contract, file, impl, backend, cfg, hook, seed, base);
    if (cr.verdict == Verdict::kConforming) {
      ++r.runs;
      continue;
    }
    if (!is_failure(cr.verdict)) {
      ++not_judged;
      continue;
    }
    ++r.runs;
    ++r.failed;
    seen.verdict = cr.reason;
    found = seen;
    break;
  }
  if (found) {
    Shrinker sh(contract, file, impl, backend, *s.plan.op, base, request.shrink_budget);
    r.found = found;
    r.shrunk = sh.shrink(*found);
    r.shrink_trials = sh.trials();
    r.outcome = Outcome::kFailed;
    r.summary = "counterexample after " + std::to_string(r.runs) + " random inputs; shrunk in " +
                std::to_string(r.shrink_trials) + " trials to " + r.shrunk->text();
  } else if (r.runs == 0) {
    r.outcome = Outcome::kNotApplicable;
    r.summary = "no random config could be judged (" + std::to_string(not_judged) + " not applicable)";
  } else {
    r.outcome = r.runs >= request.property_inputs ? Outcome::kPassed : Outcome::kNotApplicable;
    r.summary = std::to_string(r.runs) + " random inputs conform (extents 1.." + std::to_string(request.max_extent) +
                ", values from the contract's fill and domain specials)" +
                (not_judged ? "; " + std::to_string(not_judged) + " refused configs drawn again" : "");
    if (r.runs < request.property_inputs) r.summary += "; fewer than required: " + std::to_string(request.property_inputs);
  }
  r.seconds = since(t0);
  return r;
}

// ======================================================================= L4

namespace {

struct SweepTotals {
  std::int64_t judged = 0, failed_chunks = 0, chunks = 0;
  double worst_metric = -1;
  std::string worst;
  std::string first_failure;
};

/// Describes the worst element of a chunk: which input, what came out.
std::string describe_worst(const CaseResult& cr, const std::vector<double>& xs, EnumerableKind kind, DType fmt) {
  if (!cr.evidence.worst) return cr.reason;
  const auto& w = *cr.evidence.worst;
  std::ostringstream o;
  if (kind == EnumerableKind::kUnary && w.index >= 0 && static_cast<std::size_t>(w.index) < xs.size()) {
    const double x = xs[static_cast<std::size_t>(w.index)];
    char bits[16];
    const unsigned b = fmt == DType::kF16 ? f32_to_f16_bits(static_cast<float>(x))
                     : fmt == DType::kBF16 ? f32_to_bf16_bits(static_cast<float>(x))
                                           : std::bit_cast<std::uint32_t>(static_cast<float>(x));
    std::snprintf(bits, sizeof bits, fmt == DType::kF32 ? "0x%08x" : "0x%04x", b);
    o << "x=" << g(x) << " (" << bits << ")";
  } else if (kind == EnumerableKind::kPairs && w.index >= 0) {
    const auto row = static_cast<std::size_t>(w.index / 2);
    if (2 * row + 1 < xs.size()) o << "row (" << g(xs[2 * row]) << ", " << g(xs[2 * row + 1]) << ")";
  }
  o << " got " << g(w.value) << " ref " << g(w.reference) << " " << cr.evidence.metric << " " << g(w.metric);
  return o.str();
}

void add_chunk(SweepTotals& t, const CaseResult& cr, std::int64_t n, const std::vector<double>& xs, EnumerableKind kind,
               DType fmt) {
  ++t.chunks;
  t.judged += n;
  if (is_failure(cr.verdict)) {
    ++t.failed_chunks;
    if (t.first_failure.empty()) t.first_failure = cr.reason;
  }
  const double m = cr.evidence.worst ? cr.evidence.worst->metric : cr.evidence.max;
  if (cr.evidence.worst && (m > t.worst_metric || std::isnan(m))) {
    t.worst_metric = std::isnan(m) ? std::numeric_limits<double>::infinity() : m;
    t.worst = describe_worst(cr, xs, kind, fmt);
  }
}

/// Sets the call's first float input to xs (the enumerated values).
std::function<void(Call&)> set_first_input(const std::vector<double>& xs) {
  return [&xs](Call& call) {
    Tensor& t = call.tensors[float_inputs(call).front()];
    for (std::size_t j = 0; j < xs.size(); ++j) t.set(static_cast<std::int64_t>(j), xs[j]);
  };
}

int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

/// What every sweep of one L4 rung shares, and what it adds to.
struct Sweep {
  const Contract& contract;
  const std::string& file;
  const Impl& impl;
  const BackendInfo& backend;
  const LadderRequest& request;
  const Setup& setup;
  EnumerableKind kind;
  RungResult& r;
  SweepTotals tot;
  std::vector<std::string> coverage;
  bool partial = false;  // a --fraction slice: evidence of cost, not of L4
};

/// Unary op, fp16 or bf16: every one of the 65536 values in the domain, in one call.
void sweep_all_16(Sweep& w, DType dt, const ValueDomain& d) {
  std::int64_t excluded = 0;
  const std::vector<double> xs = detail::all_values_16(dt, d, &excluded);
  Config c = base_config(w.setup, w.contract, dt, static_cast<std::int64_t>(xs.size()));
  const CaseResult cr = judge(w.contract, w.file, w.impl, w.backend, c, set_first_input(xs), w.request.check.seed,
                              w.request.check);
  add_chunk(w.tot, cr, static_cast<std::int64_t>(xs.size()), xs, w.kind, dt);
  w.coverage.push_back("all " + std::to_string(xs.size()) + " " + std::string(dtype_name(dt)) + " inputs in domain " +
                       d.text + " (" + std::to_string(excluded) + " of 65536 outside: NaN/Inf" +
                       (excluded > 2050 ? " or out of range" : "") + ")");
  w.r.cases.push_back(std::string(dtype_name(dt)) + ": " + (is_failure(cr.verdict) ? "FAILED " : "conforming ") +
                      cr.reason);
}

/// Unary op, fp32 (the opt-in job): every fp32 bit pattern in the domain, in
/// chunks over threads; a --fraction slice takes every k-th chunk, so it
/// samples every binade and sign.
void sweep_fp32(Sweep& w, const ValueDomain& d) {
  const LadderRequest& request = w.request;
  const std::uint64_t total = 1ull << 32;
  const auto limit =
      static_cast<std::uint64_t>(std::clamp(request.exhaustive_fraction, 0.0, 1.0) * static_cast<double>(total));
  constexpr std::uint64_t kChunk = 1ull << 18;
  const int threads = request.threads > 0 ? request.threads : hardware_threads();
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::int64_t> excluded{0};
  std::mutex mu;
  CheckRequest base = request.check;
  base.isolation = isolate::Mode::kNone;  // fork from many threads is not a safe place to be
  const auto ts = Clock::now();
  const std::clock_t cpu0 = std::clock();
  const std::uint64_t chunks_total = total / kChunk;
  const std::uint64_t chunks = std::max<std::uint64_t>(1, (limit + kChunk - 1) / kChunk);
  auto worker = [&] {
    for (;;) {
      const std::uint64_t j = next.fetch_add(1);
      if (j >= chunks) return;
      const std::uint64_t start = (j * chunks_total / chunks) * kChunk;
      const std::uint64_t end = start + kChunk;
      std::vector<double> xs;
      xs.reserve(static_cast<std::size_t>(end - start));
      std::int64_t ex = 0;
      for (std::uint64_t b = start; b < end; ++b) {
        const double x = std::bit_cast<float>(static_cast<std::uint32_t>(b));
        if (d.contains(x)) xs.push_back(x);
        else ++ex;
      }
      excluded += ex;
      if (xs.empty()) continue;
      Config c = base_config(w.setup, w.contract, DType::kF32, static_cast<std::int64_t>(xs.size()));
      const CaseResult cr =
          judge(w.contract, w.file, w.impl, w.backend, c, set_first_input(xs), request.check.seed, base);
      std::lock_guard<std::mutex> lock(mu);
      add_chunk(w.tot, cr, static_cast<std::int64_t>(xs.size()), xs, w.kind, DType::kF32);
      if (request.on_progress && w.tot.chunks % 256 == 0)
        request.on_progress({w.r.contract, w.r.impl, SweepProgress::Domain::kFp32Patterns, total,
                             static_cast<double>(w.tot.chunks) * kChunk / static_cast<double>(total), since(ts)});
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  const double secs = since(ts);
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const double frac = static_cast<double>(chunks * kChunk) / static_cast<double>(total);
  char line[512];
  std::snprintf(line, sizeof line,
                "%llu of 4294967296 FP32 bit patterns (%.4g%%, every %llu-th chunk of 2^18), %lld in domain %s judged, %lld outside; "
                "%.3g s wall, %.3g s CPU on %d threads",
                static_cast<unsigned long long>(chunks * kChunk), 100 * frac,
                static_cast<unsigned long long>(chunks_total / chunks), static_cast<long long>(w.tot.judged),
                d.text.c_str(), static_cast<long long>(excluded.load()), secs, cpu, threads);
  std::string cov = line;
  if (frac < 1) {
    std::snprintf(line, sizeof line, "; extrapolated full sweep %.4g s wall, %.4g s CPU", secs / frac, cpu / frac);
    cov += line;
    w.partial = true;
  }
  w.coverage.push_back(cov);
  w.r.cases.push_back("FP32: " + std::string(w.tot.failed_chunks ? "FAILED " + w.tot.first_failure : "conforming"));
}

/// Two-element op: every pair of bf16 values, one pair per row of a rows x 2
/// call (by default the values with |x| in [1/2, 8) and +-0; all of them with
/// the opt-in job, over threads).
void sweep_pairs(Sweep& w, DType dt, const ValueDomain& d) {
  const LadderRequest& request = w.request;
  std::int64_t excluded = 0;
  std::vector<double> vals = detail::all_values_16(DType::kBF16, d, &excluded);
  std::string set_text = "every bf16 value in " + d.text;
  if (!request.exhaustive_fp32) {
    // Default suite: bf16 values with |x| in [1/2, 8) and +-0 (4 binades, 1026 values).
    std::vector<double> keep;
    for (double v : vals)
      if (v == 0 || (std::fabs(v) >= 0.5 && std::fabs(v) < 8)) keep.push_back(v);
    vals = keep;
    set_text = "bf16 values with |x| in [1/2, 8) and +-0, in " + d.text;
  }
  const auto nv = static_cast<std::uint64_t>(vals.size());
  const std::uint64_t pairs = nv * nv;
  const auto limit =
      static_cast<std::uint64_t>(std::clamp(request.exhaustive_fraction, 0.0, 1.0) * static_cast<double>(pairs));
  constexpr std::uint64_t kRows = 1ull << 16;
  const int threads = request.exhaustive_fp32 ? (request.threads > 0 ? request.threads : hardware_threads()) : 1;
  std::atomic<std::uint64_t> next{0};
  std::mutex mu;
  CheckRequest base = request.check;
  if (threads > 1) base.isolation = isolate::Mode::kNone;
  const auto ts = Clock::now();
  auto worker = [&] {
    for (;;) {
      const std::uint64_t start = next.fetch_add(kRows);
      if (start >= limit) return;
      const std::uint64_t end = std::min(limit, start + kRows);
      std::vector<double> xs;
      xs.reserve(static_cast<std::size_t>(2 * (end - start)));
      for (std::uint64_t p = start; p < end; ++p) {
        xs.push_back(vals[static_cast<std::size_t>(p / nv)]);
        xs.push_back(vals[static_cast<std::size_t>(p % nv)]);
      }
      Config c = base_config(w.setup, w.contract, dt, 2);
      c.params["rows"] = std::to_string(end - start);
      c.params["cols"] = "2";
      const CaseResult cr =
          judge(w.contract, w.file, w.impl, w.backend, c, set_first_input(xs), request.check.seed, base);
      std::lock_guard<std::mutex> lock(mu);
      add_chunk(w.tot, cr, static_cast<std::int64_t>(end - start), xs, w.kind, dt);
      if (request.on_progress && w.tot.chunks % 256 == 0)
        request.on_progress({w.r.contract, w.r.impl, SweepProgress::Domain::kBf16Pairs, pairs,
                             static_cast<double>(std::min(limit, next.load())) / static_cast<double>(pairs),
                             since(ts)});
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  const double secs = since(ts);
  if (limit < pairs) w.partial = true;
  std::ostringstream cov;
  cov << limit << " of " << pairs << " pairs (" << set_text << ", cols = 2, as " << std::string(dtype_name(dt))
      << "), " << g(secs) << " s";
  if (limit < pairs && limit > 0)
    cov << "; extrapolated " << g(secs * static_cast<double>(pairs) / static_cast<double>(limit)) << " s";
  w.coverage.push_back(cov.str());
  w.r.cases.push_back(std::string(dtype_name(dt)) + " pairs: " +
                      (w.tot.failed_chunks ? "FAILED " + w.tot.first_failure : std::string("conforming")));
}

/// The rung's outcome and summary from what its sweeps judged and left out.
void conclude(Sweep& w, const std::vector<std::string>& skipped) {
  RungResult& r = w.r;
  const SweepTotals& tot = w.tot;
  r.runs = tot.judged;
  r.failed = tot.failed_chunks;
  r.worst = tot.worst;
  for (const auto& c : w.coverage) r.coverage += (r.coverage.empty() ? "" : "; ") + c;
  for (const auto& sk : skipped) r.cases.push_back("not enumerated: " + sk);
  if (tot.judged == 0) {
    r.outcome = Outcome::kNotApplicable;
    r.summary = "nothing enumerated" + (skipped.empty() ? std::string() : ": " + skipped.front());
    return;
  }
  // A dtype left to the opt-in job, or a slice, leaves the domain uncovered: L4 is not reached.
  r.outcome = tot.failed_chunks ? Outcome::kFailed
                                : (skipped.empty() && !w.partial ? Outcome::kPassed : Outcome::kNotApplicable);
  r.summary = std::to_string(tot.judged) + " enumerated inputs, " +
              (tot.failed_chunks ? "violations found" : "all conform") + "; worst " + tot.worst +
              (skipped.empty() ? "" : "; not covered: " + skipped.front()) +
              (w.partial ? "; a slice of the domain (--fraction): L4 needs all of it" : "");
}

}  // namespace

RungResult run_exhaustive_rung(const Contract& contract, const std::string& file, const Impl& impl,
                               const BackendInfo& backend, const LadderRequest& request) {
  const auto t0 = Clock::now();
  RungResult r = start_rung(contract, impl, Level::kExhaustive, request.check.seed);
  Setup s = make_setup(contract, impl, request.check);
  if (ended_at_setup(s, t0, r)) return r;
  const Op& op = *s.plan.op;
  const EnumerableKind kind = detail::enumerable_kind(op);
  if (kind == EnumerableKind::kNone || contract.measure.kind == Protocol::Kind::kInject) {
    r.outcome = Outcome::kNotApplicable;
    r.summary = kind == EnumerableKind::kNone
                    ? "op " + r.op + " has no enumerable input domain (not unary, not 2-element rows)"
                    : "the contract's inputs are its probe";
    r.seconds = since(t0);
    return r;
  }
  Sweep w{contract, file, impl, backend, request, s, kind, r, {}, {}, false};
  std::vector<std::string> skipped;
  for (DType dt : s.dtypes) {
    const ValueDomain d = detail::value_domain(contract, dt);
    if (kind == EnumerableKind::kPairs) sweep_pairs(w, dt, d);
    else if (dt == DType::kF16 || dt == DType::kBF16) sweep_all_16(w, dt, d);
    else if (dt == DType::kF32 && request.exhaustive_fp32) sweep_fp32(w, d);
    else skipped.push_back(std::string(dtype_name(dt)) + " (2^32 inputs: the opt-in job, kc ladder --exhaustive-fp32)");
  }
  conclude(w, skipped);
  r.seconds = since(t0);
  return r;
}

// ================================================================= the run

std::string Counterexample::text() const {
  std::ostringstream o;
  // the config without dtype/defaults noise: every param as written
  o << config;
  for (const auto& [name, v] : inputs) {
    o << " " << name << "=[";
    const std::size_t show = std::min<std::size_t>(v.size(), 8);
    for (std::size_t i = 0; i < show; ++i) o << (i ? ", " : "") << g(v[i]);
    if (v.size() > show) o << ", ... (" << v.size() << " values)";
    o << "]";
  }
  return o.str();
}

CaseResult judge_counterexample(const Contract& contract, const std::string& contract_file, const Impl& impl,
                                const BackendInfo& backend, const Counterexample& cx, const CheckRequest& base) {
  auto cfg = engine::parse_config(cx.config);
  CaseResult bad;
  if (!cfg.ok()) {
    bad.verdict = Verdict::kUnderSpecified;
    bad.reason = cfg.status().message();
    return bad;
  }
  return judge(contract, contract_file, impl, backend, *cfg, replay_hook(cx), base.seed, base);
}

}  // namespace kc::ladder
