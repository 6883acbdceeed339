// kc merge: the shards of one plan, read back and put together in plan order.
#include "kc/merge.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "kc/report.h"
#include "report/yaml_read.h"

namespace kc::report {

namespace {

struct ShardRun {
  std::string dir;
  RunRecord record;
  int index = 0, count = 1;
  std::vector<engine::CaseResult> cases;  ///< record order, with plan positions
};

std::string describe_selection(const RunRecord& r) {
  if (r.plan.selection_filters.empty()) return "every impl";
  std::string out;
  for (const auto& f : r.plan.selection_filters) out += (out.empty() ? "" : " ") + f;
  return out;
}

/// The records this run appended to DIR/trace.jsonl: those after the
/// run state's records_before (a trace may hold earlier runs' records).
Result<std::vector<TraceRecord>> run_records(const std::string& dir) {
  const std::string trace = (std::filesystem::path(dir) / "trace.jsonl").string();
  std::error_code ec;
  if (!std::filesystem::exists(trace, ec))
    return invalid_argument(dir + ": no trace.jsonl; kc merge reads the verdicts with their evidence from the "
                                  "shard's trace (kc grade --out DIR writes one)");
  KC_RETURN_IF_ERROR(verify_trace(trace).status());
  KC_ASSIGN_OR_RETURN(std::vector<TraceRecord> records, read_trace_records(trace, nullptr));
  std::size_t before = 0;
  const std::string state = trace + ".run.json";
  if (std::filesystem::exists(state, ec)) {
    YamlDoc doc;
    KC_RETURN_IF_ERROR(doc.load(state));
    KC_ASSIGN_OR_RETURN(double b, doc.number(doc.root, "records_before"));
    before = static_cast<std::size_t>(b);
  }
  if (before > records.size())
    return invalid_argument(trace + ": shorter than its run state says (" + std::to_string(before) +
                            " records before the run, " + std::to_string(records.size()) + " now)");
  records.erase(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(before));
  return records;
}

/// A not_applicable case (not traced) from its record entry.
engine::CaseResult from_record(const RecordCase& rc, const RunRecord& record) {
  engine::CaseResult c;
  c.contract_file = rc.contract_file;
  char* end = nullptr;
  c.seed = std::strtoull(record.run.seed.c_str(), &end, 16);
  c.contract_id = rc.contract;
  c.contract_hash = rc.contract_hash;
  c.impl = rc.impl;
  c.backend = rc.backend;
  c.backend_version = rc.backend_version;
  c.verdict = enum_parse(engine::verdict_table(), rc.verdict).value_or(engine::Verdict::kNotApplicable);
  c.reason = rc.reason;
  c.facts = rc.facts;
  c.repro = rc.repro;
  c.seconds = std::max(0.0, rc.seconds);
  return c;
}

Result<ShardRun> read_shard(const std::string& dir) {
  ShardRun s;
  s.dir = dir;
  KC_ASSIGN_OR_RETURN(s.record, read_record(dir));
  if (s.record.plan.fingerprint.empty())
    return invalid_argument(s.record.source + ": records no plan fingerprint; it was written by a kc older than "
                                              "kc merge: run the shard again with this kc");
  if (!s.record.plan.shard.empty()) {
    KC_ASSIGN_OR_RETURN(const shard::Shard sh, shard::parse(s.record.plan.shard));
    s.index = sh.index;
    s.count = sh.count;
  }
  KC_ASSIGN_OR_RETURN(const std::vector<TraceRecord> traced, run_records(dir));
  std::map<std::string, engine::CaseResult> judged;
  for (std::size_t i = 0; i < traced.size(); ++i) {
    KC_ASSIGN_OR_RETURN(engine::CaseResult c,
                        case_from_json(traced[i].body, dir + "/trace.jsonl record " + std::to_string(i + 1)));
    judged.emplace(c.contract_id + "|" + c.impl, std::move(c));
  }
  for (const RecordCase& rc : s.record.cases) {
    if (rc.plan_index < 0 || rc.contract_index < 0)
      return invalid_argument(s.record.source + ": case " + rc.contract + " x " + rc.impl +
                              " has no plan position; run the shard again with this kc");
    engine::CaseResult c;
    if (auto it = judged.find(rc.key()); it != judged.end()) {
      c = std::move(it->second);
      judged.erase(it);
    } else if (rc.verdict == "not_applicable") {
      c = from_record(rc, s.record);
    } else {
      return invalid_argument(dir + ": the record has " + rc.contract + " x " + rc.impl + " (" + rc.verdict +
                              ") but the trace does not: the run directory is incomplete (was the run interrupted? "
                              "resume it with --resume " + dir + ")");
    }
    if (c.verdict != enum_parse(engine::verdict_table(), rc.verdict))
      return invalid_argument(dir + ": " + rc.contract + " x " + rc.impl + " is " + rc.verdict +
                              " in record.json but " + std::string(engine::verdict_name(c.verdict)) +
                              " in trace.jsonl: one of them was changed after the run");
    c.contract_index = static_cast<std::size_t>(rc.contract_index);
    c.plan_index = static_cast<std::size_t>(rc.plan_index);
    s.cases.push_back(std::move(c));
  }
  if (!judged.empty())
    return invalid_argument(dir + ": the trace has " + judged.begin()->second.contract_id + " x " +
                            judged.begin()->second.impl + " but record.json does not: the directory mixes runs");
  return s;
}

}  // namespace

Result<MergedRun> merge_runs(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return invalid_argument("kc merge needs the run directories of the shards");
  std::vector<ShardRun> runs;
  MergedRun out;
  for (const auto& d : dirs) {
    // A shard that died before its end wrote no record: left out, and said;
    // if no retry covers its index, the merge names it as missing.
    std::error_code ec;
    if (std::filesystem::is_directory(d, ec) && !std::filesystem::exists(std::filesystem::path(d) / "record.json", ec)) {
      out.notes.push_back(d + ": no record.json (the run did not finish): left out");
      continue;
    }
    KC_ASSIGN_OR_RETURN(ShardRun s, read_shard(d));
    runs.push_back(std::move(s));
  }
  if (runs.empty()) return invalid_argument("none of the directories holds a finished run (record.json)");
  const std::string& fingerprint = runs.front().record.plan.fingerprint;
  for (const auto& r : runs)
    if (r.record.plan.fingerprint != fingerprint)
      return invalid_argument(r.dir + " ran another plan than " + runs.front().dir + " (plan " +
                              r.record.plan.fingerprint.substr(0, 12) + "... vs " + fingerprint.substr(0, 12) +
                              "...): the seed, samples, config, isolation, contract selection or contract text "
                              "differ; only shards of one plan merge");

  // Groups by selection, in the order first seen; in each, one run per index.
  std::vector<std::string> group_order;
  std::map<std::string, std::map<int, std::size_t>> groups;  // selection -> index -> run
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ShardRun& r = runs[i];
    const std::string& sel = r.record.plan.selection;
    if (!groups.count(sel)) group_order.push_back(sel);
    auto& g = groups[sel];
    if (!g.empty()) {
      const ShardRun& first = runs[g.begin()->second];
      if (first.count != r.count)
        return invalid_argument(r.dir + " is shard " + r.record.plan.shard + " but " + first.dir + " is shard " +
                                first.record.plan.shard + " of the same selection (" + describe_selection(r.record) +
                                "): one split per selection");
      if (first.record.plan.planned != r.record.plan.planned)
        return invalid_argument(r.dir + " planned " + std::to_string(r.record.plan.planned) + " cases, " + first.dir +
                                " " + std::to_string(first.record.plan.planned) +
                                " for the same selection: the machines see different impls");
    }
    if (auto it = g.find(r.index); it != g.end()) {
      const ShardRun& was = runs[it->second];
      const bool later = r.record.created >= was.record.created;
      const ShardRun& kept = later ? r : was;
      const ShardRun& dropped = later ? was : r;
      out.notes.push_back("shard " + std::to_string(r.index) + "/" + std::to_string(r.count) + " given twice (" +
                          dropped.dir + ", " + kept.dir + "): kept " + kept.dir + ", created " + kept.record.created +
                          " (the later run, as of a retried job)");
      if (later) it->second = i;
      continue;
    }
    g[r.index] = i;
  }
  std::set<std::string> seen;
  // Plan order: contract, then selection group (in the order given), then plan index.
  struct Placed {
    std::size_t contract, group, plan;
    engine::CaseResult c;
  };
  std::vector<Placed> placed;
  for (std::size_t gi = 0; gi < group_order.size(); ++gi) {
    const auto& g = groups[group_order[gi]];
    const ShardRun& any = runs[g.begin()->second];
    std::string missing;
    for (int k = 0; k < any.count; ++k)
      if (!g.count(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k) + "/" + std::to_string(any.count);
    if (!missing.empty())
      return invalid_argument("missing shard" + std::string(missing.find(',') == std::string::npos ? " " : "s ") +
                              missing + " of the selection " + describe_selection(any.record) + " (given: " +
                              std::to_string(g.size()) + " of " + std::to_string(any.count) + ")");
    std::int64_t cases = 0;
    for (const auto& [k, ri] : g) {
      const ShardRun& r = runs[ri];
      cases += static_cast<std::int64_t>(r.cases.size());
      for (engine::CaseResult c : r.cases) {
        const std::string key = c.contract_id + "|" + c.impl;
        if (!seen.insert(key).second)
          return invalid_argument(c.contract_id + " x " + c.impl + " was judged by two shards (" + r.dir +
                                  " and another): their selections overlap");
        placed.push_back({c.contract_index, gi, c.plan_index, std::move(c)});
      }
      out.shards.push_back(r.record);
    }
    if (cases != any.record.plan.planned)
      return invalid_argument("the shards of " + describe_selection(any.record) + " hold " + std::to_string(cases) +
                              " cases, their plan " + std::to_string(any.record.plan.planned) +
                              ": a shard ran a different split (another --shard-balance record?)");
    out.result.plan_total += static_cast<std::size_t>(cases);
  }
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return std::tie(a.contract, a.group, a.plan) < std::tie(b.contract, b.group, b.plan);
  });
  for (Placed& p : placed) out.result.cases.push_back(std::move(p.c));
  out.result.planned = out.result.cases.size();
  out.result.plan_fingerprint = fingerprint;
  out.result.selection_fingerprint = groups.size() == 1 ? group_order.front() : "";

  // Backends: every one any shard saw; available where any machine had it.
  std::map<std::string, std::size_t> at;
  for (const RunRecord& r : out.shards)
    for (const RecordBackend& b : r.backends) {
      auto it = at.find(b.name);
      if (it == at.end()) {
        at[b.name] = out.result.backends.size();
        BackendInfo info;
        info.name = b.name;
        info.available = b.available;
        info.version = b.version;
        info.reason = b.reason;
        out.result.backends.push_back(info);
        continue;
      }
      BackendInfo& have = out.result.backends[it->second];
      if (b.available && have.available && b.version != have.version)
        out.notes.push_back("backend " + b.name + " is " + have.version + " on one machine and " + b.version + " on " +
                            r.host + ": the merged run mixes library versions");
      if (b.available && !have.available) {
        have.available = true;
        have.version = b.version;
        have.reason = b.reason;
      }
    }
  return out;
}

RunRecord merged_record(const MergedRun& merged) {
  const engine::CheckResult& r = merged.result;
  RunRecord out;
  const RunRecord& first = merged.shards.front();
  out.kc_version = first.kc_version;
  out.created = first.created;
  out.host = first.host;
  for (const RunRecord& s : merged.shards) {
    out.profiles.insert(out.profiles.end(), s.profiles.begin(), s.profiles.end());
    out.created = std::max(out.created, s.created);
    if (out.host.find(s.host) == std::string::npos) out.host += "," + s.host;
  }
  out.run = first.run;
  out.plan.fingerprint = r.plan_fingerprint;
  out.plan.selection = r.selection_fingerprint;
  out.plan.planned = static_cast<std::int64_t>(r.plan_total);
  out.plan.shard_source = "kc merge of " + std::to_string(merged.shards.size()) + " shard records";
  for (const auto& b : r.backends) out.backends.push_back({b.name, b.version, b.reason, b.available});
  std::map<std::string, const RecordCase*> by_key;
  for (const RunRecord& s : merged.shards)
    for (const RecordCase& c : s.cases) by_key[c.key()] = &c;
  for (const auto& c : r.cases) {
    RecordCase rc = *by_key.at(c.contract_id + "|" + c.impl);
    rc.plan_index = static_cast<std::int64_t>(c.plan_index);
    out.cases.push_back(std::move(rc));
  }
  return out;
}

}  // namespace kc::report
