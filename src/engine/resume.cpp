// Resuming a run: the run state file and reading the interrupted run's records back.
#include "kc/resume.h"

#include <algorithm>
#include <filesystem>

#include "kc/json_writer.h"
#include "kc/report.h"
#include "kc/report_common.h"
#include "report/yaml_read.h"

namespace kc::engine {

namespace {

constexpr const char* kRunStateFormat = "kc-run-state/1";
const std::string kGenesis(64, '0');

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

}  // namespace

std::string run_state_path(const std::string& trace_path) { return trace_path + ".run.json"; }

std::vector<std::pair<std::string, std::string>> run_identity(const CheckRequest& r) {
  std::vector<std::string> paths, plugins;
  for (const auto& p : r.paths) paths.push_back(absolute_path(p));
  for (const auto& p : r.plugin_paths) plugins.push_back(absolute_path(p));
  return {
      {"--seed", report::seed_hex(r.seed)},
      {"--samples", r.samples ? std::to_string(*r.samples) : ""},
      {"--config", r.config.value_or("")},
      {"--sample", r.sample_index ? std::to_string(*r.sample_index) : ""},
      {"--fast", r.fast ? "on" : ""},
      {"--fast-probes", r.fast ? std::to_string(r.fast_probes) : ""},
      {"--fast-samples", r.fast ? std::to_string(r.fast_samples) : ""},
      {"--timing", r.timing_calls > 0 ? std::to_string(r.timing_calls) : ""},
      {"--isolate", std::string(isolate::mode_name(r.isolation))},
      {"paths", joined(paths)},
      {"--contract", joined(r.contracts)},
      {"--impl", joined(r.impls)},
      {"--backend", joined(r.backends)},
      {"--suite", r.suite},
      {"--plugin", joined(plugins)},
      {"--shard", r.shard ? r.shard->text() : ""},
      {"--shard-balance", r.shard_balance.empty() ? "" : absolute_path(r.shard_balance)},
  };
}

std::string plan_fingerprint(const CheckRequest& request,
                             const std::vector<std::pair<std::string, std::string>>& contracts) {
  // Not the paths (machines mount the checkout in different places: the
  // contract hashes stand for the files), not the impl selection (shards on
  // GPU and CPU nodes select different backends), not the shard itself.
  static const char* const kNotPlan[] = {"paths", "--impl", "--backend", "--plugin", "--shard", "--shard-balance"};
  std::string text = "kc-plan/1\n";
  for (const auto& [k, v] : run_identity(request)) {
    if (std::find(std::begin(kNotPlan), std::end(kNotPlan), k) != std::end(kNotPlan)) continue;
    text += k + "=" + v + "\n";
  }
  for (const auto& [id, hash] : contracts) text += "contract " + id + " " + hash + "\n";
  return report::sha256_hex(text);
}

std::string selection_fingerprint(const CheckRequest& request, const std::vector<std::string>& impl_names) {
  std::string text = "kc-selection/1\n--impl=" + joined(request.impls) + "\n--backend=" + joined(request.backends) + "\n";
  for (const auto& n : impl_names) text += "impl " + n + "\n";
  return report::sha256_hex(text);
}

Status write_run_state(const CheckRequest& request, std::size_t records_before, const std::string& hash_before) {
  report::JsonWriter w(2);
  w.begin_object();
  w.field("format", kRunStateFormat);
  w.field("trace", request.trace_path);
  w.field("records_before", static_cast<std::int64_t>(records_before));
  w.field("hash_before", hash_before);
  w.key("options").begin_object();
  for (const auto& [k, v] : run_identity(request)) w.field(k, v);
  w.end_object();
  w.end_object();
  return report::write_file(run_state_path(request.trace_path), w.take() + "\n");
}

Result<Resumed> read_resume(const CheckRequest& request) {
  const std::string& trace = request.trace_path;
  const std::string state = run_state_path(trace);
  std::error_code ec;
  if (!std::filesystem::exists(trace, ec))
    return invalid_argument(trace + ": no trace to resume (start the run without --resume)");
  if (!std::filesystem::exists(state, ec))
    return invalid_argument(state + ": missing; kc writes it beside every trace a run starts, and resumes only "
                                    "from it: start a new run (another --out or --trace)");
  report::YamlDoc doc;
  KC_RETURN_IF_ERROR(doc.load(state));
  KC_ASSIGN_OR_RETURN(const std::string format, doc.str(doc.root, "format"));
  if (format != kRunStateFormat)
    return doc.error(doc.root["format"], "format '" + format + "' is not one this kc reads", kRunStateFormat);
  const YAML::Node options = doc.root["options"];
  if (!options || !options.IsMap()) return doc.error(doc.root, "no \"options\" object", "the run's options");
  std::string differ;
  for (const auto& [k, v] : run_identity(request)) {
    KC_ASSIGN_OR_RETURN(const std::string was, doc.str(options, k.c_str(), true));
    if (was == v) continue;
    differ += "\n  " + k + ": the interrupted run had " + (was.empty() ? "(none)" : "'" + was + "'") + ", this one " +
              (v.empty() ? "(none)" : "'" + v + "'");
  }
  if (!differ.empty())
    return invalid_argument(trace + ": cannot resume with other options: its records would mix two runs;" + differ +
                            "\nresume with the interrupted run's options, or start a new run (another --out or --trace)");
  KC_ASSIGN_OR_RETURN(const double before_d, doc.number(doc.root, "records_before"));
  KC_ASSIGN_OR_RETURN(const std::string hash_before, doc.str(doc.root, "hash_before"));
  const auto before = static_cast<std::size_t>(before_d);

  Resumed out;
  std::string cut;
  KC_ASSIGN_OR_RETURN(const std::vector<report::TraceRecord> records, report::read_trace_records(trace, &cut));
  if (!cut.empty()) out.notes.push_back(cut);
  const std::string& at = before == 0 ? kGenesis : (before <= records.size() ? records[before - 1].hash : "");
  if (before > records.size() || at != hash_before)
    return invalid_argument(trace + ": the trace does not continue the run " + state +
                            " describes (its first " + std::to_string(before) +
                            " records changed); start a new run (another --out or --trace)");
  for (std::size_t i = before; i < records.size(); ++i) {
    KC_ASSIGN_OR_RETURN(CaseResult c,
                        report::case_from_json(records[i].body, trace + ":" + std::to_string(i + 1)));
    out.cases.push_back(std::move(c));
  }
  out.notes.push_back("resumed: " + std::to_string(out.cases.size()) + " case" + (out.cases.size() == 1 ? "" : "s") +
                      " read back from " + trace + " (lines " + std::to_string(before + 1) + ".." +
                      std::to_string(records.size()) + "), not run again");
  return out;
}

}  // namespace kc::engine
