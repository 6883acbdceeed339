// kc — climbing the ladder over a contract set, rendering it, and the
// evidence store that `kc status` reads (kc/ladder.h).
#include "kc/ladder.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kc/exit_code.h"
#include "kc/json_writer.h"
#include "kc/plan.h"
#include "kc/report.h"
#include "kc/report_common.h"
#include "kc/resume.h"
#include "kc/shard.h"
#include "ladder/evidence.h"

namespace kc::ladder {

namespace {

struct LevelEntry {
  Level level;
  const char* tag;
  const char* name;
};
constexpr LevelEntry kLevels[] = {
    {Level::kNone, "L0", "L0"},
    {Level::kType, "L1", "L1 type"},
    {Level::kFalsification, "L2", "L2 falsification"},
    {Level::kProperty, "L3", "L3 property"},
    {Level::kExhaustive, "L4", "L4 exhaustive"},
};

struct OutcomeEntry {
  Outcome outcome;
  const char* name;
};
constexpr OutcomeEntry kOutcomes[] = {
    {Outcome::kPassed, "passed"},
    {Outcome::kFailed, "failed"},
    {Outcome::kNotApplicable, "not_applicable"},
    {Outcome::kError, "error"},
};

bool selected(const std::vector<std::string>& filters, const std::string& name) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (engine::glob_match(f, name)) return true;
  return false;
}

}  // namespace

std::string level_name(Level level) {
  for (const auto& e : kLevels)
    if (e.level == level) return e.name;
  return "L?";
}
std::string level_tag(Level level) {
  for (const auto& e : kLevels)
    if (e.level == level) return e.tag;
  return "L?";
}
std::string outcome_name(Outcome outcome) {
  for (const auto& e : kOutcomes)
    if (e.outcome == outcome) return e.name;
  return "?";
}

Level level_reached(const std::map<int, Outcome>& outcomes) {
  Level reached = Level::kNone;
  for (int l = 1; l <= 4; ++l) {
    auto it = outcomes.find(l);
    if (it == outcomes.end() || it->second != Outcome::kPassed) break;
    reached = static_cast<Level>(l);
  }
  return reached;
}

int LadderResult::exit_code() const {
  for (const auto& d : diagnostics)
    if (d.severity == lang::Diagnostic::Severity::kError) return exit_value(ExitCode::kUsage);
  // A selection that matches no contract x impl pair is a usage error, not a green run.
  if (planned == 0) return exit_value(ExitCode::kUsage);
  bool judged = false;
  for (const auto& k : kernels)
    for (const auto& r : k.rungs) {
      if (r.outcome == Outcome::kFailed || r.outcome == Outcome::kError) return exit_value(ExitCode::kViolation);
      judged = judged || r.outcome == Outcome::kPassed;
    }
  // Every rung not applicable (or this shard assigned nothing): nothing was shown.
  return judged || kernels.empty() ? exit_value(ExitCode::kOk) : exit_value(ExitCode::kNothingJudged);
}

namespace {
/// One kernel of the ladder plan: a selected contract x an applicable impl.
struct PlannedKernel {
  std::size_t contract;  ///< index into the loaded contracts
  const Impl* impl;
  const BackendInfo* info;
};

std::string ladder_fingerprint(const LadderRequest& request, const engine::LoadedContracts& loaded,
                               const std::vector<PlannedKernel>& plan) {
  std::vector<std::pair<std::string, std::string>> contracts;
  for (const auto& c : loaded.contracts) contracts.emplace_back(c.id, c.content_hash());
  std::ostringstream text;
  text << "kc-ladder-plan/1\n" << engine::plan_fingerprint(request.check, contracts) << "\n"
       << "level=" << static_cast<int>(request.up_to) << "\nproperty_inputs=" << request.property_inputs
       << "\nmax_extent=" << request.max_extent << "\nshrink_budget=" << request.shrink_budget
       << "\nexhaustive_fp32=" << request.exhaustive_fp32 << "\nexhaustive_fraction=" << request.exhaustive_fraction
       << "\n";
  // The kernels too: unlike a check, ladder shards must select the same impls.
  for (const auto& k : plan)
    text << "kernel " << loaded.contracts[k.contract].id << " " << k.impl->declaration().name << "\n";
  return report::sha256_hex(text.str());
}
}  // namespace

LadderResult run_ladder(const LadderRequest& request, BackendRegistry& registry) {
  LadderResult result;
  engine::LoadedContracts loaded = engine::load_contracts(request.check.paths);
  result.diagnostics = loaded.diagnostics;
  const auto infos = registry.infos();
  using RungFn = RungResult (*)(const Contract&, const std::string&, const Impl&, const BackendInfo&,
                                const LadderRequest&);
  const RungFn rungs[] = {run_type_rung, run_falsification_rung, run_property_rung, run_exhaustive_rung};
  // `reference alternate_stack S` chooses among the registry's impls.
  LadderRequest with_references = request;
  if (!with_references.check.reference_impls)
    with_references.check.reference_impls = engine::available_impls(registry);

  // The plan: every selected contract x applicable impl, in load and registry order.
  std::vector<PlannedKernel> plan;
  for (std::size_t ci = 0; ci < loaded.contracts.size(); ++ci) {
    const Contract& contract = loaded.contracts[ci];
    if (!selected(request.check.contracts, contract.id) || !contract.executable()) continue;
    for (const auto& impl : registry.impls()) {
      const Declaration& d = impl->declaration();
      if (!selected(request.check.impls, d.name) || !selected(request.check.backends, d.backend)) continue;
      // Impls wrong on purpose (calibration, incident replays): only when a filter names them.
      if (request.check.impls.empty() && !d.broken_on_purpose.empty()) continue;
      const BackendInfo* info = nullptr;
      for (const auto& b : infos)
        if (b.name == d.backend) info = &b;
      if (!info || !info->available) continue;
      std::string why;
      if (auto p = engine::make_plan(contract, d, request.check, &why); !p.ok() || !why.empty()) continue;
      // stack, version and flag preconditions: against what the impl records.
      if (auto unmet = engine::unmet_precondition(contract, d, *info); !unmet.ok() || !unmet->empty()) continue;
      plan.push_back({ci, impl.get(), info});
    }
  }
  result.planned = plan.size();
  result.fingerprint = ladder_fingerprint(request, loaded, plan);

  // --shard I/N: the kernels kc::shard::assign gives this shard.
  std::vector<int> shard_of(plan.size(), 0);
  if (request.check.shard) {
    std::vector<double> durations(plan.size(), -1);
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto it = request.check.shard_durations.find(loaded.contracts[plan[i].contract].id + "|" +
                                                         plan[i].impl->declaration().name);
      if (it != request.check.shard_durations.end()) durations[i] = it->second;
    }
    shard_of = shard::assign(durations, request.check.shard->count);
  }
  const int mine = request.check.shard ? request.check.shard->index : 0;
  const auto assigned =
      static_cast<std::size_t>(std::count(shard_of.begin(), shard_of.end(), mine));

  auto record = [&](const std::string& body) {
    if (request.evidence_path.empty()) return;
    auto w = report::TraceWriter::open(request.evidence_path);
    const Status s = w.ok() ? w->append_body(body) : w.status();
    if (!s.ok()) {
      lang::Diagnostic diag;
      diag.loc.file = request.evidence_path;
      diag.message = "cannot record evidence: " + s.message();
      result.diagnostics.push_back(diag);
    }
  };
  record(plan_json(result, request, assigned));

  for (std::size_t pi = 0; pi < plan.size(); ++pi) {
    if (shard_of[pi] != mine) continue;
    const Contract& contract = loaded.contracts[plan[pi].contract];
    const Impl& impl = *plan[pi].impl;
    const Declaration& d = impl.declaration();
    KernelLadder k{contract.id, d.name, d.backend, d.op, {}, Level::kNone};
    std::map<int, Outcome> outcomes;
    for (int l = 1; l <= static_cast<int>(request.up_to); ++l) {
      RungResult r = rungs[l - 1](contract, loaded.files[plan[pi].contract], impl, *plan[pi].info, with_references);
      r.plan_index = static_cast<std::int64_t>(pi);
      outcomes[l] = r.outcome;
      record(rung_json(r));
      // Every rung runs (a failed L2 still gets its L3 counterexample); a
      // level is reached only over passed ones below it (level_reached).
      k.rungs.push_back(std::move(r));
    }
    k.reached = level_reached(outcomes);
    result.kernels.push_back(std::move(k));
  }
  return result;
}

LadderResult run_ladder(const LadderRequest& request) {
  BackendRegistry registry;
  BackendOptions options;
  options.plugin_paths = request.check.plugin_paths;
  options.libraries = request.check.libraries;
  if (Status s = register_builtin_backends(registry, options); !s.ok()) {
    LadderResult r;
    lang::Diagnostic d;
    d.message = "backend registration failed: " + s.to_string();
    r.diagnostics.push_back(d);
    return r;
  }
  return run_ladder(request, registry);
}

namespace {
void render_rung(std::ostringstream& o, const RungResult& r, const std::string& indent) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f s", r.seconds);
  o << indent << level_name(r.level) << ": " << outcome_name(r.outcome) << " — " << r.summary << " [" << secs
    << "]\n";
  const bool detail = r.outcome != Outcome::kPassed || r.level == Level::kExhaustive;
  if (detail)
    for (const auto& c : r.cases)
      if (r.outcome != Outcome::kFailed || c.find("FAILED") != std::string::npos || r.level == Level::kExhaustive)
        o << indent << "    " << c << "\n";
  if (!r.coverage.empty()) o << indent << "    coverage: " << r.coverage << "\n";
  if (r.found) o << indent << "    found:  " << r.found->text() << "\n";
  if (r.shrunk) o << indent << "    shrunk: " << r.shrunk->text() << "\n" << indent << "            " << r.shrunk->verdict << "\n";
}
}  // namespace

std::string render_ladder(const LadderResult& result) {
  std::ostringstream o;
  for (const auto& d : result.diagnostics) o << d.render() << "\n";
  for (const auto& k : result.kernels) {
    o << k.contract << " x " << k.impl << " (" << k.op << "): reached " << level_name(k.reached) << "\n";
    for (const auto& r : k.rungs) render_rung(o, r, "  ");
  }
  if (result.planned == 0)
    o << "no contract x impl pair selected (kc list impls; --impl and --backend take globs, and an impl must be "
         "in a contract's scope)\n";
  else if (result.kernels.empty())
    o << "this shard was assigned none of the plan's " << result.planned << " contract x impl pairs\n";
  return o.str();
}

// ---------------------------------------------------------------- evidence

std::string evidence_file(const std::string& dir) { return dir + "/ladder.jsonl"; }

namespace {
void write_cx(report::JsonWriter& w, const Counterexample& cx) {
  w.begin_object().field("config", cx.config).field("verdict", cx.verdict).field("text", cx.text());
  w.key("inputs").begin_object();
  for (const auto& [name, values] : cx.inputs) {
    w.key(name).begin_object();
    w.key("shape").begin_array();
    auto it = cx.shapes.find(name);
    if (it != cx.shapes.end())
      for (auto d : it->second) w.value(d);
    w.end_array();
    w.key("values").begin_array();
    for (double v : values) w.value(v);
    w.end_array().end_object();
  }
  w.end_object().end_object();
}
}  // namespace

std::string rung_json(const RungResult& r) {
  report::JsonWriter w;
  w.begin_object()
      .field("record", "ladder")
      .field("contract", r.contract)
      .field("contract_hash", r.contract_hash)
      .field("impl", r.impl)
      .field("backend", r.backend)
      .field("op", r.op)
      .field("level", static_cast<int>(r.level))
      .field("level_name", level_name(r.level))
      .field("outcome", outcome_name(r.outcome))
      .field("runs", r.runs)
      .field("failed", r.failed)
      .field("seed", r.seed)
      .field("time", r.time)
      .field("seconds", r.seconds)
      .field("summary", r.summary);
  if (r.plan_index >= 0) w.field("plan_index", r.plan_index);
  w.key("cases").begin_array();
  for (const auto& c : r.cases) w.value(c);
  w.end_array();
  if (!r.coverage.empty()) w.field("coverage", r.coverage);
  if (!r.worst.empty()) w.field("worst", r.worst);
  if (r.found) {
    w.key("counterexample");
    write_cx(w, *r.found);
  }
  if (r.shrunk) {
    w.key("shrunk");
    write_cx(w, *r.shrunk);
    w.field("shrink_trials", r.shrink_trials);
  }
  w.end_object();
  return w.take();
}

std::string plan_json(const LadderResult& result, const LadderRequest& request, std::size_t assigned) {
  report::JsonWriter w;
  w.begin_object()
      .field("record", "ladder_plan")
      .field("fingerprint", result.fingerprint)
      .field("planned", static_cast<std::int64_t>(result.planned))
      .field("assigned", static_cast<std::int64_t>(assigned))
      .field("shard", request.check.shard ? request.check.shard->text() : std::string())
      .field("shard_source", request.check.shard ? request.check.shard->source : std::string())
      .field("time", report::utc_timestamp())
      .end_object();
  return w.take();
}

Status append_evidence(const std::string& path, const RungResult& rung) {
  KC_ASSIGN_OR_RETURN(report::TraceWriter w, report::TraceWriter::open(path));
  return w.append_body(rung_json(rung));
}

namespace {
Counterexample read_cx(const YAML::Node& n) {
  Counterexample cx;
  cx.config = n["config"].as<std::string>("");
  cx.verdict = n["verdict"].as<std::string>("");
  if (const YAML::Node in = n["inputs"]; in && in.IsMap()) {
    for (auto it = in.begin(); it != in.end(); ++it) {
      const std::string name = it->first.as<std::string>();
      for (const auto& d : it->second["shape"]) cx.shapes[name].push_back(d.as<std::int64_t>());
      for (const auto& v : it->second["values"]) {
        const std::string s = v.as<std::string>();
        cx.inputs[name].push_back(s == "nan" ? std::nan("") : s == "inf" ? HUGE_VAL : s == "-inf" ? -HUGE_VAL : std::stod(s));
      }
    }
  }
  return cx;
}
}  // namespace

RungResult rung_from_node(const YAML::Node& n) {
  RungResult r;
  r.contract = n["contract"].as<std::string>("");
  r.contract_hash = n["contract_hash"].as<std::string>("");
  r.impl = n["impl"].as<std::string>("");
  r.backend = n["backend"].as<std::string>("");
  r.op = n["op"].as<std::string>("");
  r.level = static_cast<Level>(std::clamp(n["level"].as<int>(0), 0, 4));
  const std::string oc = n["outcome"].as<std::string>("");
  for (const auto& e : kOutcomes)
    if (oc == e.name) r.outcome = e.outcome;
  r.runs = n["runs"].as<std::int64_t>(0);
  r.failed = n["failed"].as<std::int64_t>(0);
  r.seed = n["seed"].as<std::uint64_t>(0);
  r.time = n["time"].as<std::string>("");
  r.seconds = n["seconds"].as<double>(0);
  r.summary = n["summary"].as<std::string>("");
  for (const auto& c : n["cases"]) r.cases.push_back(c.as<std::string>());
  r.coverage = n["coverage"].as<std::string>("");
  r.worst = n["worst"].as<std::string>("");
  if (n["counterexample"]) r.found = read_cx(n["counterexample"]);
  if (n["shrunk"]) r.shrunk = read_cx(n["shrunk"]);
  r.shrink_trials = n["shrink_trials"].as<std::int64_t>(0);
  r.plan_index = n["plan_index"].as<std::int64_t>(-1);
  return r;
}

Result<StatusReport> read_status(const std::string& dir) {
  StatusReport rep;
  rep.path = evidence_file(dir);
  KC_ASSIGN_OR_RETURN(rep.records, report::verify_trace(rep.path));
  std::ifstream in(rep.path);
  std::string line;
  std::size_t line_no = 0;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  while (std::getline(in, line)) {
    ++line_no;
    YAML::Node n;
    try {
      n = YAML::Load(line);
    } catch (const YAML::Exception& e) {
      return invalid_argument(rep.path + ":" + std::to_string(line_no) + ": not a JSON record: " + e.what());
    }
    try {
      if (n["record"].as<std::string>("") != "ladder") continue;  // other trace records may share the file
      RungResult r = rung_from_node(n);
      const auto key = std::make_pair(r.contract, r.impl);
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, rep.kernels.size()).first;
        KernelStatus k;
        k.contract = r.contract;
        k.impl = r.impl;
        k.backend = r.backend;
        k.op = r.op;
        rep.kernels.push_back(std::move(k));
      }
      KernelStatus& k = rep.kernels[it->second];
      ++k.records;
      // A new climb starts at L1: rungs from an older climb above the new
      // climb's stopping point no longer count.
      if (r.level == Level::kType) k.latest.clear();
      k.latest[static_cast<int>(r.level)] = std::move(r);
    } catch (const YAML::Exception& e) {
      return invalid_argument(rep.path + ":" + std::to_string(line_no) + ": malformed ladder record: " + e.what());
    }
  }
  for (auto& k : rep.kernels) {
    std::map<int, Outcome> o;
    for (const auto& [l, r] : k.latest) o[l] = r.outcome;
    k.reached = level_reached(o);
  }
  std::sort(rep.kernels.begin(), rep.kernels.end(), [](const KernelStatus& a, const KernelStatus& b) {
    return std::tie(a.contract, a.impl) < std::tie(b.contract, b.impl);
  });
  return rep;
}

std::string render_status(const StatusReport& rep) {
  std::ostringstream o;
  o << rep.path << ": " << rep.records << " records, chain intact\n";
  char head[256];
  std::snprintf(head, sizeof head, "%-18s %-28s %-10s %s\n", "contract", "impl", "level", "evidence");
  o << head;
  for (const auto& k : rep.kernels) {
    char row[256];
    std::snprintf(row, sizeof row, "%-18s %-28s %-10s ", k.contract.c_str(), k.impl.c_str(),
                  level_tag(k.reached).c_str());
    o << row << k.records << " records\n";
    for (const auto& [l, r] : k.latest) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.2f s", r.seconds);
      o << "    " << level_tag(r.level) << " " << outcome_name(r.outcome) << "  " << r.time << "  seed 0x" << std::hex
        << r.seed << std::dec << "  runs " << r.runs << "  " << secs << "  contract " << r.contract_hash.substr(0, 12)
        << "\n       " << r.summary << "\n";
      if (!r.coverage.empty()) o << "       coverage: " << r.coverage << "\n";
      if (r.shrunk) o << "       counterexample: " << r.shrunk->text() << "\n";
    }
  }
  return o.str();
}

}  // namespace kc::ladder
