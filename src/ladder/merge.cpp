// kc — ladder shards: the durations that balance a split, and `kc merge` of
// the evidence of one ladder plan's shards (kc/ladder.h).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "kc/json_writer.h"
#include "kc/ladder.h"
#include "kc/report.h"
#include "kc/report_common.h"
#include "kc/shard.h"
#include "ladder/evidence.h"

namespace kc::ladder {

namespace {

/// One shard directory's latest ladder run: its plan record and the rungs after it.
struct ShardEvidence {
  std::string dir;
  std::string fingerprint, time, shard_text;
  shard::Shard shard;
  std::int64_t planned = 0, assigned = 0;
  std::vector<RungResult> rungs;
};

Result<ShardEvidence> read_shard(const std::string& dir) {
  ShardEvidence s;
  s.dir = dir;
  const std::string path = evidence_file(dir);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return invalid_argument(dir + ": no ladder.jsonl (kc ladder --out DIR writes one)");
  KC_RETURN_IF_ERROR(report::verify_trace(path).status());
  KC_ASSIGN_OR_RETURN(std::vector<report::TraceRecord> records, report::read_trace_records(path, nullptr));
  bool have_plan = false;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string where = path + ":" + std::to_string(i + 1);
    YAML::Node n;
    try {
      n = YAML::Load(records[i].body);
      const std::string kind = n["record"].as<std::string>("");
      if (kind == "ladder_plan") {
        // A later run in the same directory starts over: its rungs are the shard's.
        have_plan = true;
        s.rungs.clear();
        s.fingerprint = n["fingerprint"].as<std::string>("");
        s.time = n["time"].as<std::string>("");
        s.planned = n["planned"].as<std::int64_t>(0);
        s.assigned = n["assigned"].as<std::int64_t>(0);
        s.shard_text = n["shard"].as<std::string>("");
      } else if (kind == "ladder" && have_plan) {
        RungResult r = rung_from_node(n);
        if (r.plan_index < 0) return invalid_argument(where + ": a rung without its plan_index");
        s.rungs.push_back(std::move(r));
      }
    } catch (const YAML::Exception& e) {
      return invalid_argument(where + ": malformed ladder record: " + e.what());
    }
  }
  if (!have_plan)
    return invalid_argument(path + ": no ladder plan record; its rungs were recorded by a kc that predates "
                                   "sharded ladders: run kc ladder again");
  if (s.shard_text.empty()) {
    s.shard = shard::Shard{0, 1, "unsharded", ""};
  } else {
    KC_ASSIGN_OR_RETURN(s.shard, shard::parse(s.shard_text));
  }
  return s;
}

}  // namespace

bool is_ladder_dir(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::exists(evidence_file(dir), ec) &&
         !std::filesystem::exists(std::filesystem::path(dir) / "record.json", ec);
}

Result<std::map<std::string, double>> read_durations(const std::string& dir) {
  KC_ASSIGN_OR_RETURN(StatusReport rep, read_status(dir));
  std::map<std::string, double> out;
  for (const auto& k : rep.kernels) {
    double seconds = 0;
    for (const auto& [level, r] : k.latest) seconds += r.seconds;
    out[k.contract + "|" + k.impl] = seconds;
  }
  if (out.empty()) return invalid_argument(rep.path + ": no rung records to balance by");
  return out;
}

Result<LadderMerge> merge_evidence(const std::vector<std::string>& dirs, const std::string& out_dir) {
  LadderMerge m;
  std::vector<ShardEvidence> shards;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (std::filesystem::is_directory(d, ec) && !std::filesystem::exists(evidence_file(d), ec)) {
      // A shard that died before its first record: if no retry covers its
      // index, the merge names it as missing.
      m.notes.push_back(d + ": no ladder.jsonl (the run did not start): left out");
      continue;
    }
    KC_ASSIGN_OR_RETURN(ShardEvidence s, read_shard(d));
    if (!shards.empty() && s.fingerprint != shards.front().fingerprint)
      return invalid_argument(d + " is a shard of another ladder plan than " + shards.front().dir + " (plan " +
                              s.fingerprint.substr(0, 12) + "... against " +
                              shards.front().fingerprint.substr(0, 12) +
                              "...): the contracts, options or selected impls differ");
    if (!shards.empty() && s.shard.count != shards.front().shard.count)
      return invalid_argument(d + " is shard " + s.shard.text() + ", " + shards.front().dir + " shard " +
                              shards.front().shard.text() + ": one plan, one shard count");
    shards.push_back(std::move(s));
  }
  if (shards.empty()) return invalid_argument("no shard directories given");
  // A retried shard: the later run counts (the plan record's time, then the later argument).
  std::map<int, std::size_t> by_index;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto [it, fresh] = by_index.emplace(shards[i].shard.index, i);
    if (fresh) continue;
    const ShardEvidence& was = shards[it->second];
    const bool later = shards[i].time >= was.time;
    m.notes.push_back("shard " + shards[i].shard.text() + " given twice: kept " +
                      (later ? shards[i].dir : was.dir) + ", left out " + (later ? was.dir : shards[i].dir) +
                      " (the later run, as of a retried job)");
    if (later) it->second = i;
  }
  const int count = shards.front().shard.count;
  std::string missing;
  for (int k = 0; k < count; ++k)
    if (!by_index.count(k)) missing += (missing.empty() ? "" : ", ") + std::to_string(k) + "/" + std::to_string(count);
  if (!missing.empty())
    return invalid_argument("missing shard" + std::string(missing.find(',') == std::string::npos ? " " : "s ") +
                            missing + " of ladder plan " + shards.front().fingerprint.substr(0, 12) + "...");

  std::vector<RungResult> rungs;
  std::int64_t assigned = 0;
  for (const auto& [index, i] : by_index) {
    const ShardEvidence& s = shards[i];
    // Fewer rungs than kernels assigned: the run stopped part-way.
    std::map<std::int64_t, int> kernels;
    for (const auto& r : s.rungs) ++kernels[r.plan_index];
    if (static_cast<std::int64_t>(kernels.size()) != s.assigned)
      return invalid_argument(s.dir + ": shard " + s.shard.text() + " recorded rungs of " +
                              std::to_string(kernels.size()) + " of its " + std::to_string(s.assigned) +
                              " kernels: the run did not finish; run the shard again");
    assigned += s.assigned;
    rungs.insert(rungs.end(), s.rungs.begin(), s.rungs.end());
  }
  if (assigned != shards.front().planned)
    return invalid_argument("the shards hold " + std::to_string(assigned) + " kernels of a plan of " +
                            std::to_string(shards.front().planned));
  std::stable_sort(rungs.begin(), rungs.end(), [](const RungResult& a, const RungResult& b) {
    return std::tie(a.plan_index, a.level) < std::tie(b.plan_index, b.level);
  });

  const std::string out = evidence_file(out_dir);
  std::error_code ec;
  if (std::filesystem::exists(out, ec))
    return invalid_argument(out + " exists; the merged evidence starts a new chain: give a new --out");
  std::filesystem::create_directories(out_dir, ec);
  KC_ASSIGN_OR_RETURN(report::TraceWriter w, report::TraceWriter::open(out));
  report::JsonWriter plan;
  plan.begin_object()
      .field("record", "ladder_plan")
      .field("fingerprint", shards.front().fingerprint)
      .field("planned", shards.front().planned)
      .field("assigned", assigned)
      .field("shard", std::string())
      .field("shard_source", "kc merge of " + std::to_string(count) + " shards")
      .field("time", report::utc_timestamp())
      .end_object();
  KC_RETURN_IF_ERROR(w.append_body(plan.take()));
  for (const auto& r : rungs) KC_RETURN_IF_ERROR(w.append_body(rung_json(r)));
  m.shards = by_index.size();
  m.kernels = static_cast<std::size_t>(assigned);
  m.records = rungs.size();
  m.fingerprint = shards.front().fingerprint;
  return m;
}

}  // namespace kc::ladder
