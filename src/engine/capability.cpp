// kc — the capability and path judges (`declared_policy unsupported`,
// `declared_policy path`; docs/capability.md).
//
// Both read the impl's capability declaration against the call
// (kc/capability.h: shape_class, layouts, alignment against the tensors'
// placement, workspace against the workspace the call gives) and decide one
// call:
//  unsupported  inside the capability the outputs must be within the
//               contract's tolerance; outside it the impl must raise
//               (unsupported = RAISE) or compute within the tolerance on its
//               declared fallback (FALLBACK). A wrong result returned without
//               an error is CAPABILITY_VIOLATION; a right one where RAISE was
//               declared is MISSING_RAISE (an undeclared fallback ran).
//  path         the path the kernel reported must be the declared one inside
//               the capability and the declared fallback outside it (or where
//               the contract's set lists FALLBACK); any other is
//               SILENT_FALLBACK(selected path), with the library's reason.
#include "kc/capability.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "engine/case_run.h"
#include "engine/policy.h"
#include "kc/latency_jump.h"
#include "kc/ops/matmul_arithmetic.h"
#include "kc/signature.h"

namespace kc::engine {

namespace {

/// The declared unsupported policy, upper-cased (impl blocks may write it in
/// any case, as the language's value checks allow); UNDEFINED when undeclared.
std::string declared_unsupported(const Declaration& d) {
  std::string v = d.get("unsupported");
  for (char& ch : v) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return v.empty() ? "UNDEFINED" : v;
}

bool listed(const std::vector<std::string>* allowed, const std::string& v) {
  if (!allowed || allowed->empty()) return true;
  for (const auto& a : *allowed)
    if (iequals(a, v)) return true;
  return false;
}

/// The outputs against the oracle under the contract's tolerance: how many
/// elements exceed it, and the worst ratio.
struct Accuracy {
  std::int64_t elements = 0;
  std::int64_t beyond = 0;
  double worst = 0;
};

Result<Accuracy> accuracy(const PolicyInputs& in) {
  Accuracy a;
  if (!in.tolerance) return invalid_argument("the capability judge needs the contract's tolerance");
  for (std::size_t k = 0; k < in.oracle->output_names.size(); ++k) {
    const std::string& name = in.oracle->output_names[k];
    const std::vector<double> got = in.outputs->t(name).to_doubles();
    std::vector<double> allowed;
    KC_ASSIGN_OR_RETURN(std::vector<double> r,
                        output_ratios(*in.tolerance, *in.op, *in.outputs, name, got, in.oracle->outputs[k], &allowed));
    for (double x : r) {
      ++a.elements;
      if (!(x <= 1)) {
        ++a.beyond;
        a.worst = std::isnan(x) ? x : std::max(a.worst, x);
      } else if (!std::isnan(a.worst)) {
        a.worst = std::max(a.worst, x);
      }
    }
  }
  return a;
}

std::string ratio_text(double r) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", r);
  return buf;
}

std::string path_text(const PolicyInputs& in) {
  if (in.selected_path.empty()) return "";
  return "; the kernel reports path " + in.selected_path +
         (in.selected_reason.empty() ? std::string() : " (" + in.selected_reason + ")");
}

/// The matmul arithmetic probe's reading of the call (laid_out false when the
/// probe did not fill it).
ops::ArithmeticReading arithmetic_reading(const PolicyInputs& in) {
  if (in.op->name() != "matmul" || !in.outputs->has("C")) return {};
  return ops::read_arithmetic(*in.inputs, in.outputs->t("C").to_doubles());
}

/// What the arithmetic probe says of the inputs' width, as a note beside a
/// reported path (empty when the probe did not run or reads nothing).
std::string inferred_note(const PolicyInputs& in) {
  const ops::ArithmeticReading r = arithmetic_reading(in);
  if (!r.laid_out || !r.coherent) return "";
  const DType dtype = in.inputs->config.dtype;
  const bool rounded = ops::inputs_rounded(r) && r.input.lost_at < ops::significant_bits(dtype);
  return "the arithmetic probe shows the inputs keep " +
         std::to_string(rounded ? r.input.lost_at : ops::significant_bits(dtype)) + " significant bits (" +
         (rounded ? ops::input_format(r) : std::string(dtype_name(dtype))) + " arithmetic)";
}

/// Where the kernel reports no path: the path inferred from the precision its
/// outputs reveal. The matmul `arithmetic` probe's input rows (1 + 2^-j, -1)
/// read off how many significant bits the inputs keep; the declared
/// path_precision says how many the requested path keeps (FP32: all of the
/// call's; BF16, TF32, FP16: rounded to that format). A path the numbers show
/// to keep another width is SILENT_FALLBACK(<format> arithmetic, inferred).
Result<PolicyOutcome> judge_inferred_path(const PolicyInputs& in, const std::string& gap, PolicyOutcome o) {
  const Declaration& d = *in.decl;
  const std::string declared = d.get("path_precision");
  if (declared.empty() || in.op->name() != "matmul")
    return invalid_argument(d.name + (in.selected_path.empty() ? " reports no implementation path for its calls"
                                                                  : " declares no path to hold its reported path " +
                                                                        in.selected_path + " to") +
                            " (kc/capability.h, report_selected_path), and kc can infer one only for a matmul "
                            "that declares path_precision, under `inject arithmetic`");
  const std::optional<DType> want = parse_dtype(declared);
  if (!want) return invalid_argument(d.name + " declares path_precision = " + declared + ": not a precision");
  if (!gap.empty())
    return invalid_argument("the arithmetic probe's call is outside " + d.name + "'s capability (" + gap +
                            "): no path to infer");
  const ops::ArithmeticReading r = arithmetic_reading(in);
  if (!r.laid_out)
    return invalid_argument(d.name + " reports no implementation path; inferring it needs the matmul "
                            "`inject arithmetic` probe (M >= its rows, N >= 2, K >= 2)");
  if (!r.coherent) {
    o.pass = false;
    o.mismatches = 1;
    o.observed = "INCOHERENT";
    o.notes.push_back("the arithmetic probe's rows are wrong beyond any rounding (1 + 2^-1 is lost): no path can "
                      "be inferred from these outputs");
    return o;
  }
  const DType dtype = in.inputs->config.dtype;
  const bool rounded = ops::inputs_rounded(r) && r.input.lost_at < ops::significant_bits(dtype);
  const int kept = rounded ? r.input.lost_at : ops::significant_bits(dtype);
  const std::string seen = rounded ? ops::input_format(r) : std::string(dtype_name(dtype));
  const int want_bits = std::min(ops::significant_bits(*want), ops::significant_bits(dtype));
  o.observed = (kept == want_bits ? "DECLARED (" : "OTHER (") + seen + " arithmetic, inferred)";
  if (kept == want_bits) {
    o.notes.push_back("no path reported; the arithmetic probe shows inputs kept to " + std::to_string(kept) +
                      " significant bits (" + seen + "), the declared path_precision " + declared);
    return o;
  }
  o.pass = false;
  o.mismatches = 1;
  o.signatures.push_back({sig::kSilentFallback, {seen + " arithmetic (inferred)"}});
  o.notes.push_back(d.name + " reports no path; the arithmetic probe shows its inputs keep " + std::to_string(kept) +
                    " significant bits (" + seen + " arithmetic) where the declared path_precision " + declared +
                    " keeps " + std::to_string(want_bits) + ": another path than the requested one served the call");
  return o;
}

}  // namespace

Result<PolicyOutcome> judge_unsupported(const PolicyInputs& in) {
  PolicyOutcome o;
  const Declaration& d = *in.decl;
  KC_ASSIGN_OR_RETURN(const CapabilityGap cap, capability_gap(d, *in.inputs));
  const std::string& gap = cap.why;
  const std::string policy = declared_unsupported(d);
  if (!listed(in.allowed, policy))
    return invalid_argument(d.name + " declares unsupported = " + policy +
                            ", which this contract's declared_policy set does not list");
  const bool raised = in.status.code() == StatusCode::kKernelRaised;
  o.elements = 1;
  if (gap.empty()) {
    // Inside the declared capability: a result, within the tolerance.
    if (raised) {
      o.observed = "RAISE";
      o.pass = false;
      o.mismatches = 1;
      o.signatures.push_back({sig::kUnexpectedRaise, {}});
      std::string declared = "shape_class " + d.shape_class;
      for (const char* key : {"layouts", "alignment", "workspace", "device_capability"})
        if (!d.get(key).empty()) declared += std::string(", ") + key + " " + d.get(key);
      o.notes.push_back("the kernel raised on an input inside its declared capability (" + declared + "): " +
                        in.status.message());
      return o;
    }
    KC_ASSIGN_OR_RETURN(const Accuracy a, accuracy(in));
    o.observed = "SUPPORTED";
    o.elements = a.elements;
    if (a.beyond > 0) {
      o.pass = false;
      o.mismatches = a.beyond;
      o.signatures.push_back({sig::kToleranceExceeded, {ratio_text(a.worst)}});
      o.notes.push_back(std::to_string(a.beyond) + " of " + std::to_string(a.elements) +
                        " outputs beyond the tolerance (worst ratio " + ratio_text(a.worst) +
                        ") on an input inside the declared capability" + path_text(in));
    }
    return o;
  }
  // Outside the declared capability.
  if (policy == "UNDEFINED") {
    o.observed = "UNDEFINED";
    o.notes.push_back("outside the declared capability (" + gap + "); " + d.name +
                      " declares unsupported = UNDEFINED, so the call is not judged");
    return o;
  }
  if (raised) {
    o.observed = "RAISE";
    if (policy == "RAISE") {
      o.notes.push_back("raised outside the declared capability, as declared (" + gap + ")");
      return o;
    }
    o.pass = false;
    o.mismatches = 1;
    o.signatures.push_back({sig::kUnexpectedRaise, {}});
    o.notes.push_back("the kernel raised outside its capability (" + gap + ") where it declares unsupported = " +
                      policy + " (fallback " + (d.get("fallback").empty() ? "unnamed" : d.get("fallback")) +
                      "): " + in.status.message());
    return o;
  }
  KC_ASSIGN_OR_RETURN(const Accuracy a, accuracy(in));
  o.elements = a.elements;
  if (a.beyond > 0) {
    o.observed = "WRONG_RESULT";
    o.pass = false;
    o.mismatches = a.beyond;
    o.signatures.push_back({sig::kCapabilityViolation, {cap.key}});
    o.notes.push_back("outside the declared capability (" + gap + ") the kernel returned without an error and " +
                      std::to_string(a.beyond) + " of " + std::to_string(a.elements) +
                      " outputs are beyond the tolerance (worst ratio " + ratio_text(a.worst) + "), where it declares "
                      "unsupported = " + policy + path_text(in));
    return o;
  }
  if (policy == "RAISE") {
    // Right, but not what was promised: some path the declaration does not
    // name served the call.
    o.observed = "FALLBACK";
    o.pass = false;
    o.mismatches = 1;
    o.signatures.push_back({sig::kMissingRaise, {}});
    o.signatures.push_back({sig::kSilentFallback, {in.selected_path.empty() ? "unnamed" : in.selected_path}});
    o.notes.push_back("outside the declared capability (" + gap + ") the kernel returned a result within the "
                      "tolerance where it declares unsupported = RAISE: an undeclared fallback ran" + path_text(in));
    return o;
  }
  // FALLBACK, and the result is right: the declared fallback, if the kernel names its path.
  o.observed = "FALLBACK";
  const std::string fallback = d.get("fallback");
  if (!in.selected_path.empty() && !fallback.empty() && !path_matches(fallback, in.selected_path)) {
    o.pass = false;
    o.mismatches = 1;
    o.signatures.push_back({sig::kSilentFallback, {in.selected_path}});
    o.notes.push_back("outside the declared capability (" + gap + ") the kernel ran path " + in.selected_path +
                      ", not its declared fallback " + fallback +
                      (in.selected_reason.empty() ? std::string() : " (" + in.selected_reason + ")"));
    return o;
  }
  o.notes.push_back("the declared fallback served an input outside the capability (" + gap + ")" + path_text(in));
  return o;
}

Result<PolicyOutcome> judge_path(const PolicyInputs& in) {
  PolicyOutcome o;
  const Declaration& d = *in.decl;
  const std::string declared = d.get("path");
  const std::string fallback = d.get("fallback");
  if (declared.empty() && d.get("path_precision").empty())
    return invalid_argument(d.name + " declares neither a path nor a path_precision: nothing to hold its path to");
  KC_ASSIGN_OR_RETURN(const CapabilityGap cap, capability_gap(d, *in.inputs));
  const std::string& gap = cap.why;
  const std::string policy = declared_unsupported(d);
  o.elements = 1;
  if (in.status.code() == StatusCode::kKernelRaised) {
    o.observed = "RAISE";
    if (!gap.empty() && policy == "RAISE") return o;
    o.pass = false;
    o.mismatches = 1;
    o.signatures.push_back({sig::kUnexpectedRaise, {}});
    o.notes.push_back("the kernel raised (" + in.status.message() + ") where " +
                      (gap.empty() ? "its declared path " + declared + " serves the call"
                                   : "it declares unsupported = " + policy));
    return o;
  }
  if (in.selected_path.empty() || declared.empty()) return judge_inferred_path(in, gap, o);
  const bool is_declared = path_matches(declared, in.selected_path);
  const bool is_fallback = !is_declared && !fallback.empty() && path_matches(fallback, in.selected_path);
  o.observed = std::string(is_declared ? "DECLARED" : is_fallback ? "FALLBACK" : "OTHER") + " (" +
               in.selected_path + ")";
  // What the call may run: the declared path inside the capability (and the
  // fallback where the contract's set lists it); outside it, the fallback
  // when one is declared.
  const bool fallback_accepted =
      in.allowed && std::find(in.allowed->begin(), in.allowed->end(), "FALLBACK") != in.allowed->end();
  bool ok = false;
  if (gap.empty()) ok = is_declared || (is_fallback && fallback_accepted);
  else ok = policy == "FALLBACK" ? is_fallback : policy == "UNDEFINED";
  const std::string numbers = inferred_note(in);
  if (ok) {
    if (!numbers.empty()) o.notes.push_back("path " + in.selected_path + "; " + numbers);
    return o;
  }
  o.pass = false;
  o.mismatches = 1;
  o.signatures.push_back({sig::kSilentFallback, {in.selected_path}});
  std::string why = "the kernel ran path " + in.selected_path + " where " +
                    (gap.empty() ? "it declares path " + declared
                                 : "the input is outside its capability (" + gap + ") and it declares unsupported = " +
                                       policy + (fallback.empty() ? "" : ", fallback " + fallback));
  if (is_fallback) why += "; that is its declared fallback " + fallback;
  if (!in.selected_reason.empty()) why += "; reason: " + in.selected_reason;
  if (!numbers.empty()) why += "; " + numbers;
  o.notes.push_back(why);
  return o;
}

std::string device_capability_crash(const CaseRun& c, const isolate::Outcome& o) {
  // SIGILL is the CPU refusing an instruction it does not implement (or a
  // deliberate trap such as ud2): the one crash a device declaration speaks to.
  if (!o.failure || o.failure->name != sig::kCrash || o.failure->args.empty() || o.failure->args[0] != "SIGILL")
    return "";
  if (c.contract.post.kind != Postcondition::Kind::kDeclaredPolicy || c.contract.post.policy != "unsupported")
    return "";
  const std::string declared = c.decl.get("device_capability");
  if (declared.empty()) return "";
  const Result<DeviceNeeds> needs = declared_device_capability(c.decl);
  if (!needs.ok()) return "";  // the case's capability judge says why it cannot read it
  if (needs->cpu.empty() && needs->gpu) return "";  // a GPU kernel's host code: SIGILL is not the device's refusal
  const std::string missing = missing_cpu_features(needs->cpu);
  if (missing.empty())
    return "the kernel was killed by SIGILL (an instruction the CPU does not execute) on a CPU with every feature " +
           c.decl.name + " declares (device_capability = " + declared +
           "): it executes an instruction its declaration does not cover";
  const std::string policy = declared_unsupported(c.decl);
  if (policy == "UNDEFINED") return "";
  return "outside the declared capability (this CPU lacks " + missing + ", device_capability = " + declared +
         ") the kernel was killed by SIGILL, where " + c.decl.name + " declares unsupported = " + policy +
         (policy == "RAISE" ? ": an error was due, not an instruction this CPU does not have"
                            : ": its declared fallback was due to serve the call");
}

Step time_latency(CaseRun& c, const Config& config, ConfigRun& cr) {
  const LatencyAcross& across = *c.plan.latency;
  const std::string step = "time latency across " + across.to_string();
  if (config.get(across.size).empty())
    return Step::end_case(Verdict::kUnderSpecified,
                          step + ": the config " + config.to_string() + " sets no " + across.size);
  // Nothing to time where the config did not run to a result, or already failed.
  if (!cr.ce.note.empty() || cr.ce.failures > 0) return Step::next();
  const std::int64_t n = across.absolute ? across.value : config.get_int(across.size) + across.value;
  if (n < 1)
    return Step::end_case(Verdict::kUnderSpecified, step + ": " + across.size + " = " + std::to_string(n) + " past " +
                                                        config.to_string() + " is not a size");
  Config outside = config;
  outside.params[across.size] = std::to_string(n);
  LatencyProbe probe;
  probe.mode = c.request.isolation;
  probe.limits = c.request.limits;
  probe.fill = c.plan.fill;
  probe.seed = c.request.seed;
  const Result<LatencyJump> j = latency_jump(c.impl, config, outside, probe);
  if (!j.ok()) {
    // Sizes too small to time are the contract's to fix; a call the impl
    // refuses or raises on past the boundary has no path to time.
    if (j.status().code() == StatusCode::kInvalidArgument)
      return Step::end_case(Verdict::kUnderSpecified, step + ": " + j.status().message());
    c.ev.note(step + ": not timed: " + j.status().message());
    return Step::next();
  }
  // The contract's factor: a change of time per unit of work smaller than it
  // is what one path's edge handling may cost, not another path.
  const bool material = j->ratio >= across.beyond || j->ratio <= 1 / across.beyond;
  // A kernel that reports its path has said which one ran: that report is
  // the evidence (declared_policy path judges it), not a timing inference.
  const bool reported = !j->inside.path.empty() || !j->outside.path.empty();
  if (j->contradicts && material && !reported) {
    c.ev.fail_with(cr.ce, {sig::kSilentFallback, {"latency (inferred)"}}, step + ": " + j->note);
  } else {
    std::string note = step + ": " + j->note;
    if (j->contradicts && reported) {
      note += "; the kernel reports its path, which is the evidence of which one ran: the inference is not counted";
    } else if (j->contradicts) {
      note +=
          "; within the contract's factor " + ratio_text(across.beyond) + ", so not counted against the declared path";
    }
    c.ev.note(note);
  }
  return Step::next();
}

}  // namespace kc::engine
