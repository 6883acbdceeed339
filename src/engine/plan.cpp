#include "kc/plan.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

#include "kc/capability.h"

namespace kc::engine {

namespace {

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" '\"$`\\*?;&|<>(){}") == std::string::npos) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

bool is_known_param(const Op& op, const std::string& name) {
  for (const auto& p : op.params())
    if (p.name == name) return true;
  // misalign_<tensor>: where the worker places that tensor; workspace_bytes:
  // the workspace tensor the call gives (kc/capability.h).
  std::vector<std::string> tensors;
  for (const auto& t : op.signature()) tensors.push_back(t.name);
  return name == "schedule" || name == kWorkspaceKey || is_placement_key(name, tensors);
}

bool any_op_has_param(const std::vector<std::string>& op_names, const std::string& name) {
  for (const auto& o : op_names) {
    const Op* op = builtin_ops().find(o);
    if (op && is_known_param(*op, name)) return true;
  }
  return false;
}

bool has_tensor(const Op& op, const std::string& name) {
  for (const auto& t : op.signature())
    if (t.name == name) return true;
  return false;
}

std::string param_names(const Op& op) {
  std::vector<std::string> names;
  for (const auto& p : op.params()) names.push_back(p.name);
  return join(names, ", ");
}

}  // namespace

std::uint64_t case_seed(std::uint64_t base, const std::string& contract_id, const Config& config,
                        std::int64_t sample) {
  return derive_seed(base, fnv1a(contract_id + "|" + config.to_string()) ^
                               (static_cast<std::uint64_t>(sample) * 0x9E3779B97F4A7C15ull));
}

Result<Config> parse_config(const std::string& text) {
  Config c;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq == std::string::npos || eq == 0)
      return invalid_argument("config item '" + tok + "' is not NAME=VALUE");
    const std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
    if (key == "dtype") {
      auto t = parse_dtype(value);
      if (!t) return invalid_argument("unknown dtype '" + value + "' in config");
      c.dtype = *t;
    } else {
      c.params[key] = value;
    }
  }
  return c;
}

namespace {

/// Config axes: a parameter and the values it takes.
using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// Preconditions: the precision set (narrows *dtypes), declarations, config
/// axes, the value range (plan.fill). Stack, flag and version conjuncts are
/// checked later (unmet_precondition, select.cpp). Sets *not_applicable when
/// the impl is outside the contract.
Status plan_preconditions(const Contract& contract, const Declaration& decl, const Op& op,
                          const std::vector<std::string>& scope_ops, Plan& plan, std::vector<DType>* dtypes, Axes* axes,
                          std::string* not_applicable) {
  bool have_range = false;
  for (const Predicate& p : contract.pre) {
    switch (p.kind) {
      case Predicate::Kind::kPrecision: {
        std::vector<DType> keep;
        for (DType t : *dtypes)
          if (std::find(p.dtypes.begin(), p.dtypes.end(), t) != p.dtypes.end()) keep.push_back(t);
        *dtypes = keep;
        break;
      }
      case Predicate::Kind::kDeclared: {
        const std::string have = decl.get(p.key);
        bool ok = false;
        // DECLARED: any value (a workspace size expression cannot be listed).
        for (const auto& v : p.values) ok = ok || iequals(v, have) || (v == "DECLARED" && !have.empty());
        if (!ok) {
          *not_applicable = "contract applies to impls declaring " + p.key + " " +
                            (p.cmp.empty() ? "=" : p.cmp) + " " + join(p.values, "|") + "; " +
                            (have.empty() ? "impl does not record its " + p.key + ": " + decl.name + " declares none"
                                          : decl.name + " declares " + have);
          return ok_status();
        }
        break;
      }
      case Predicate::Kind::kParamIn:
        if (!is_known_param(op, p.key)) {
          // In a scope of several ops, a clause on a parameter of some of them
          // leaves the others' configs alone (C-ORD-02's n sizes the
          // reductions, not matmul). A name no scoped op has is an error.
          if (any_op_has_param(scope_ops, p.key)) break;
          return invalid_argument("pre: '" + p.key + "' is not a parameter of op " + decl.op +
                                  (scope_ops.size() > 1 ? " or of any other op in scope" : "") +
                                  " (parameters: " + param_names(op) + ")");
        }
        axes->emplace_back(p.key, p.values);
        break;
      case Predicate::Kind::kValueRange:
        if (have_range) break;
        have_range = true;
        switch (p.range) {
          case Predicate::Range::kFinite: plan.fill = {FillSpec::Kind::kNormal, 0, 1}; break;
          case Predicate::Range::kBounded: plan.fill = {FillSpec::Kind::kUniform, -p.hi, p.hi}; break;
          case Predicate::Range::kInterval: plan.fill = {FillSpec::Kind::kUniform, p.lo, p.hi}; break;
          case Predicate::Range::kNormal: plan.fill = {FillSpec::Kind::kNormal, p.lo, p.hi}; break;
        }
        break;
      case Predicate::Kind::kShape:
        // Checked per call (check_shape_predicates). A dimension restricted by
        // `with D in {...}` that is also a parameter of the op is a config axis.
        for (const auto& [dim, sizes] : p.dim_sets) {
          if (!is_known_param(op, dim)) continue;
          bool axis_already = false;
          for (const auto& a : *axes) axis_already = axis_already || a.first == dim;
          if (!axis_already) axes->emplace_back(dim, sizes);
        }
        break;
      case Predicate::Kind::kStack:
      case Predicate::Kind::kFlag:
      case Predicate::Kind::kVersion:
        // Checked against what the impl and its backend record, which the
        // declaration alone does not hold (unmet_precondition, select.cpp).
        break;
      case Predicate::Kind::kProse:
        return invalid_argument("pre: prose conjunct is not executable: " + p.text);
    }
  }
  return ok_status();
}

/// `inject ANOMALY(args)`: the probe, its target tensors and arguments;
/// `inject values(T, v, ...)` fixes the inputs themselves.
Status plan_injection(const Protocol& m, const Op& op, Plan& plan) {
  Probe probe;
  probe.name = m.anomaly;
  if (m.anomaly == "values") {
    // values(T, v, ..., U, w, ...): each tensor name opens its list; the
    // probe reads them as [count, values...] per name (ops/op.cpp).
    std::vector<double> laid;
    std::size_t count_at = 0;
    for (const auto& a : m.anomaly_args) {
      if (has_tensor(op, a)) {
        probe.tensors.push_back(a);
        count_at = laid.size();
        laid.push_back(0);
        continue;
      }
      if (probe.tensors.empty())
        return invalid_argument("inject values: name the tensor first, then its values: values(x, 1.5, -2)");
      double value = 0;
      if (a == "nan" || a == "-nan") {
        value = std::numeric_limits<double>::quiet_NaN();
      } else if (a == "inf" || a == "-inf") {
        value = a[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      } else {
        auto e = lang::parse_expr(a);
        if (!e.ok()) return invalid_argument("inject values: argument '" + a + "': " + e.status().message());
        auto v = lang::eval_expr(*e, ExprEnv{});
        if (!v.ok()) return invalid_argument("inject values: argument '" + a + "': " + v.status().message());
        value = *v;
      }
      laid.push_back(value);
      laid[count_at] += 1;
    }
    for (std::size_t i = 0, t = 0; t < probe.tensors.size(); ++t) {
      if (laid[i] == 0) return invalid_argument("inject values: no values after tensor '" + probe.tensors[t] + "'");
      i += 1 + static_cast<std::size_t>(laid[i]);
    }
    probe.args = std::move(laid);
    plan.probe = probe;
    plan.samples = 1;  // the inputs are fixed: one sample is all there is
    return ok_status();
  }
  for (const auto& a : m.anomaly_args) {
    if (has_tensor(op, a)) {  // `inject nan(C)`: the probe targets tensor C
      probe.tensors.push_back(a);
      continue;
    }
    auto e = lang::parse_expr(a);
    if (!e.ok()) return invalid_argument("inject: argument '" + a + "': " + e.status().message());
    // `oob(-1, -bound, bound, bound + 10)`: values relative to the index
    // bound of each call; the indexing ops always inject that standard set
    // themselves, so an argument over `bound` is documentation, kept as NaN.
    ExprEnv oob_env;
    if (m.anomaly == "oob") oob_env.vars["bound"] = std::numeric_limits<double>::quiet_NaN();
    auto v = lang::eval_expr(*e, oob_env);
    if (!v.ok()) return invalid_argument("inject: argument '" + a + "': " + v.status().message());
    probe.args.push_back(*v);
  }
  if (m.density) probe.density = *m.density;
  plan.probe = probe;
  plan.samples = 3;
  return ok_status();
}

/// The measurement protocol: samples, sweep and enumerate axes, the probe,
/// the aggregate statistic and its pass-if bound.
Status plan_protocol(const Contract& contract, const Declaration& decl, const Op& op, const CheckRequest& request,
                     Plan& plan, Axes* axes, std::string* not_applicable) {
  const Protocol& m = contract.measure;
  switch (m.kind) {
    case Protocol::Kind::kSample:
      plan.samples = std::max<std::int64_t>(1, m.count);
      break;
    case Protocol::Kind::kSweep:
      if (!is_known_param(op, m.param))
        return invalid_argument("measure: sweep parameter '" + m.param + "' is not a parameter of op " +
                                decl.op + " (parameters: " + param_names(op) + ")");
      axes->emplace_back(m.param, m.values);
      plan.samples = 2;
      break;
    case Protocol::Kind::kInject:
      KC_RETURN_IF_ERROR(plan_injection(m, op, plan));
      break;
    case Protocol::Kind::kEnumerate: {
      std::string param = m.param == "schedules" ? "schedule" : m.param;
      std::vector<std::string> values = m.values;
      if (param == "schedule" && values.empty()) values = decl.schedules;
      if (values.empty()) {
        *not_applicable = decl.name + " declares no " + m.param + " to enumerate";
        return ok_status();
      }
      if (!is_known_param(op, param))
        return invalid_argument("measure: enumerate space '" + m.param + "' is not a parameter of op " +
                                decl.op);
      axes->emplace_back(param, values);
      plan.samples = 1;
      break;
    }
    case Protocol::Kind::kProse:
      return invalid_argument("measure clause is prose");
  }
  if (m.latency) {
    if (!is_known_param(op, m.latency->size))
      return invalid_argument("measure: time latency across " + m.latency->to_string() + ": '" + m.latency->size +
                              "' is not a parameter of op " + decl.op + " (parameters: " + param_names(op) + ")");
    plan.latency = m.latency;
  }
  if (request.samples) plan.samples = std::max<std::int64_t>(1, *request.samples);
  if (m.aggregate) plan.stat = m.aggregate->stat;
  if (plan.stat == "failing_fraction") {
    // The parser makes such a contract descriptive where this cannot hold;
    // a contract built another way gets the same answer here.
    if (const std::string gap = lang::sample_fraction_gap(contract); !gap.empty())
      return invalid_argument("measure: " + gap);
    auto v = lang::eval_expr(m.pass_if->bound, {});
    if (!v.ok()) return invalid_argument("measure: pass-if bound: " + v.status().message());
    plan.allowed_fraction = *v;
  } else if (m.pass_if && m.aggregate &&
      (m.aggregate->metric == "ratio" || m.aggregate->metric == "bound_ratio")) {
    auto v = lang::eval_expr(m.pass_if->bound, {});
    if (!v.ok()) return invalid_argument("measure: pass-if bound: " + v.status().message());
    plan.pass_bound = *v;
  }

  return ok_status();
}

/// The postcondition's judgement: repeated invocations, a policy judge, a
/// raise, or the tolerance's metric.
Status plan_judgement(const Contract& contract, const Declaration& decl, Plan& plan, std::string* not_applicable) {
  switch (contract.post.kind) {
    case Postcondition::Kind::kBitwiseIdentical:
      plan.invocations = static_cast<int>(std::clamp<std::int64_t>(contract.post.invocations, 2, 10000));
      plan.metric_name = "mismatched_runs";
      plan.pass_bound = 0;
      break;
    case Postcondition::Kind::kDeclaredPolicy:
      // The set names the declared policies the contract holds an impl to; an
      // impl that declares another (UNDEFINED: no promise) is outside it.
      // (unsupported and path: their judge says so, naming the declaration.)
      if (const std::string& key = contract.post.policy;
          !contract.post.allowed.empty() && (key == "nan" || key == "denormal" || key == "oob" || key == "determinism")) {
        const std::string declared = decl.get(key);
        bool listed = false;
        for (const auto& v : contract.post.allowed) listed = listed || v == declared;
        if (!listed) {
          std::string set;
          for (const auto& v : contract.post.allowed) set += (set.empty() ? "" : ", ") + v;
          *not_applicable = decl.name + " declares " + key + " = " + (declared.empty() ? "nothing" : declared) +
                            "; this contract holds impls to " + key + " in {" + set + "}";
          return ok_status();
        }
      }
      if (contract.post.policy == "determinism") {
        if (decl.determinism == Determinism::kNone) {
          *not_applicable = decl.name + " declares determinism = NONE: nothing to hold it to";
          return ok_status();
        }
        plan.invocations = 100;
        plan.agreement = decl.determinism;
        plan.metric_name = "mismatched_runs";
        plan.pass_bound = 0;
      } else {
        plan.metric_name = "policy_mismatches";
        plan.policy_judge = true;
        plan.pass_bound = 0;
      }
      break;
    case Postcondition::Kind::kRaise:
      plan.metric_name = "raised";
      break;
    default:
      switch (contract.tolerance.kind) {
        case Tolerance::Kind::kBound: plan.metric_name = "bound_ratio"; break;
        case Tolerance::Kind::kRelative: plan.metric_name = "rel_error/tolerance"; break;
        case Tolerance::Kind::kAbsolute: plan.metric_name = "abs_error/tolerance"; break;
        case Tolerance::Kind::kUlp: plan.metric_name = "ulp/tolerance"; break;
        case Tolerance::Kind::kElementwise: plan.metric_name = "err/(atol+rtol*|ref|)"; break;
        case Tolerance::Kind::kNone: plan.metric_name = "exact_mismatch"; break;
        default: plan.metric_name = "ratio"; break;
      }
  }

  return ok_status();
}

/// An algebraic property judges the samples instead of an oracle comparison.
/// Names without a dot (`determinism`, `associativity`) stay descriptive labels
/// of what the postcondition already checks.
Status plan_property(const Contract& contract, const Declaration& decl, Plan& plan, std::string* not_applicable) {
  if (contract.reference.kind == Reference::Kind::kAlgebraic && obligation::is_property_name(contract.reference.name)) {
    const std::string& name = contract.reference.name;
    const obligation::Property* property = obligation::find_property(name);
    if (!property) {
      const std::string near = obligation::nearest_property(name);
      return invalid_argument("reference algebraic " + name + ": no such property" +
                              (near.empty() ? std::string(" (`kc list properties` lists them)")
                                            : " (did you mean " + near + "?)"));
    }
    if (!property->applies_to(decl.op)) {
      *not_applicable = "property " + name + " is not defined for op " + decl.op;
      return ok_status();
    }
    if (contract.post.kind != Postcondition::Kind::kElementwiseClose)
      return invalid_argument("reference algebraic " + name +
                              ": the post clause must be 'output O satisfies elementwise_close(O, ref(O))' "
                              "(O satisfies what the property predicts)");
    if (plan.invocations != 1 || plan.policy_judge)
      return invalid_argument("reference algebraic " + name + " cannot judge repeated invocations or a policy");
    plan.property = property;
    plan.metric_name = "property_ratio";
  }

  return ok_status();
}

/// The configs: the product of every axis, for each precision (only the one
/// --config names, if any). Every config carries every op parameter (defaults
/// included), so a repro line is complete even if a default changes later.
Result<std::vector<Config>> plan_configs(const Declaration& decl, const Op& op, const std::vector<DType>& dtypes,
                                         const Axes& axes, const CheckRequest& request) {
  std::vector<Config> configs;
  for (DType t : dtypes) {
    Config c;
    c.dtype = t;
    c.accumulator = decl.accumulator;
    for (const auto& p : op.params()) c.params[p.name] = p.default_value;
    configs.push_back(c);
  }
  for (const auto& [name, values] : axes) {
    std::vector<Config> next;
    for (const auto& c : configs)
      for (const auto& v : values) {
        Config d = c;
        d.params[name] = v;
        next.push_back(d);
      }
    configs = std::move(next);
  }
  if (request.config) {
    KC_ASSIGN_OR_RETURN(Config only, parse_config(*request.config));
    for (const auto& p : op.params()) only.params.emplace(p.name, p.default_value);
    const std::string want = only.to_string();
    std::vector<Config> keep;
    for (const auto& c : configs)
      if (c.to_string() == want) keep.push_back(c);
    if (keep.empty()) keep.push_back(only);  // a repro may name a config outside the plan
    configs = keep;
  }
  return configs;
}

}  // namespace

Result<Plan> make_plan(const Contract& contract, const Declaration& decl, const CheckRequest& request,
                       std::string* not_applicable) {
  Plan plan;
  not_applicable->clear();

  // Scope: the impl's op must be one the scope names.
  std::vector<std::string> scope_ops;
  for (const auto& s : contract.scope)
    for (const auto& o : ops_for_scope(s)) scope_ops.push_back(o);
  if (!contains(scope_ops, decl.op)) {
    *not_applicable = "impl op '" + decl.op + "' is outside scope {" + join(contract.scope, ", ") + "}";
    return plan;
  }
  plan.op = builtin_ops().find(decl.op);
  if (!plan.op) return unimplemented("op '" + decl.op + "' is not registered in this kc build");
  const Op& op = *plan.op;

  std::vector<DType> dtypes = decl.dtypes;
  Axes axes;
  KC_RETURN_IF_ERROR(plan_preconditions(contract, decl, op, scope_ops, plan, &dtypes, &axes, not_applicable));
  if (!not_applicable->empty()) return plan;
  if (dtypes.empty()) {
    *not_applicable = "no precision both required by the contract and supported by " + decl.name;
    return plan;
  }
  KC_RETURN_IF_ERROR(plan_protocol(contract, decl, op, request, plan, &axes, not_applicable));
  if (!not_applicable->empty()) return plan;

  // `ref(A, B, ...)`: the reference applied to those inputs, which must be the
  // op's inputs (the oracle reads every input of the call).
  for (const auto& name : contract.post.ref_args) {
    bool input = false;
    for (const auto& t : op.signature()) input = input || (t.name == name && t.role != Role::kOut);
    if (!input)
      return invalid_argument("post: ref(" + join(contract.post.ref_args, ", ") + "): '" + name +
                              "' is not an input tensor of op " + decl.op);
  }

  KC_RETURN_IF_ERROR(plan_judgement(contract, decl, plan, not_applicable));
  if (!not_applicable->empty()) return plan;
  KC_RETURN_IF_ERROR(plan_property(contract, decl, plan, not_applicable));
  if (!not_applicable->empty()) return plan;
  KC_ASSIGN_OR_RETURN(plan.configs, plan_configs(decl, op, dtypes, axes, request));
  return plan;
}

Status check_shape_predicates(const Contract& contract, const Call& call) {
  std::map<std::string, std::int64_t> bound;
  for (const Predicate& p : contract.pre) {
    if (p.kind != Predicate::Kind::kShape) continue;
    for (const auto& name : p.tensors) {
      if (!call.has(name)) return invalid_argument("shape(" + name + "): op has no tensor " + name);
      const Tensor& t = call.t(name);
      if (t.rank() != p.dims.size())
        return invalid_argument("shape(" + name + ") has rank " + std::to_string(t.rank()) +
                                ", contract says " + std::to_string(p.dims.size()));
      for (std::size_t i = 0; i < p.dims.size(); ++i) {
        const std::string& d = p.dims[i];
        const std::int64_t have = t.dim(i);
        if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d[0])) != 0)) {
          if (std::stoll(d) != have)
            return invalid_argument("shape(" + name + ") dim " + std::to_string(i) + " is " +
                                    std::to_string(have) + ", contract says " + d);
        } else if (auto it = bound.find(d); it != bound.end() && it->second != have) {
          return invalid_argument("shape dimension " + d + " is both " + std::to_string(it->second) +
                                  " and " + std::to_string(have));
        } else {
          bound[d] = have;
        }
      }
    }
    // `with D in {64, 128}`: a config whose D is outside the set does not meet the precondition.
    for (const auto& [dim, sizes] : p.dim_sets) {
      auto it = bound.find(dim);
      if (it == bound.end()) continue;
      bool in_set = false;
      for (const auto& s : sizes) in_set = in_set || std::strtod(s.c_str(), nullptr) == static_cast<double>(it->second);
      if (!in_set)
        return invalid_argument("shape dimension " + dim + " = " + std::to_string(it->second) + " is outside {" +
                                join(sizes, ", ") + "} (pre: " + p.text + ")");
    }
  }
  return ok_status();
}

std::string repro_command(const Contract& contract, const std::string& contract_file,
                          const std::string& impl, const CheckRequest& request,
                          const std::string& config, std::int64_t sample) {
  std::ostringstream out;
  char seed[32];
  std::snprintf(seed, sizeof seed, "0x%llx", static_cast<unsigned long long>(request.seed));
  out << "kc check " << shell_quote(contract_file) << " --contract " << shell_quote(contract.id)
      << " --impl " << shell_quote(impl) << " --seed " << seed;
  if (request.samples) out << " --samples " << *request.samples;
  // The run's own verifier: a case that --fast passed is re-run the same way.
  if (request.fast) {
    const CheckRequest defaults;
    out << " --fast";
    if (request.fast_probes != defaults.fast_probes) out << " --fast-probes " << request.fast_probes;
    if (request.fast_samples != defaults.fast_samples) out << " --fast-samples " << request.fast_samples;
  }
  if (!config.empty()) out << " --config " << shell_quote(config) << " --sample " << sample;
  for (const auto& p : request.plugin_paths) out << " --plugin " << shell_quote(p);
  for (const auto& l : request.libraries) out << " --library " << shell_quote(l.spec());
  return out.str();
}

}  // namespace kc::engine
