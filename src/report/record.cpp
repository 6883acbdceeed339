// kc — run records: what a run writes so that another run can be compared
// with it (kc/diff.h, docs/diff.md "Run record").
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "kc/diff.h"
#include "kc/json_writer.h"
#include "kc/report_common.h"
#include "report/yaml_read.h"

namespace kc::report {

RunRecord make_record(const engine::CheckResult& result, const engine::CheckRequest& request) {
  RunRecord r;
  r.kc_version = std::string(kKcVersion);
  r.created = utc_timestamp();
  r.host = host_name();
  r.run.seed = seed_hex(request.seed);
  if (request.samples) r.run.samples = std::to_string(*request.samples);
  if (request.config) r.run.config = *request.config;
  if (request.sample_index) r.run.sample = std::to_string(*request.sample_index);
  r.run.fast = request.fast;
  r.run.timing_calls = request.timing_calls;
  r.plan.fingerprint = result.plan_fingerprint;
  r.plan.selection = result.selection_fingerprint;
  r.plan.planned = static_cast<std::int64_t>(result.plan_total);
  if (result.shard) {
    r.plan.shard = result.shard->text();
    r.plan.shard_source = result.shard->source;
  }
  for (const auto& f : request.impls) r.plan.selection_filters.push_back("--impl " + f);
  for (const auto& f : request.backends) r.plan.selection_filters.push_back("--backend " + f);
  for (const auto& b : result.backends) r.backends.push_back({b.name, b.version, b.reason, b.available});
  r.profiles.push_back(collect_profile(result.backends));
  for (const auto& c : result.cases) {
    RecordCase rc;
    rc.contract = c.contract_id;
    rc.contract_hash = c.contract_hash;
    rc.contract_file = c.contract_file;
    rc.impl = c.impl;
    rc.backend = c.backend;
    rc.backend_version = c.backend_version;
    rc.verdict = std::string(engine::verdict_name(c.verdict));
    rc.reason = c.reason;
    for (const auto& s : c.signatures) rc.signatures.push_back(s.to_string());
    rc.signature_expected = c.signature_expected;
    rc.output_hash = c.output_hash;
    rc.metric = c.evidence.metric;
    rc.max = c.evidence.max;
    rc.p99 = c.evidence.p99;
    rc.p50 = c.evidence.p50;
    rc.elements = c.evidence.elements;
    rc.failures = c.evidence.failures;
    rc.facts = c.facts;
    rc.timing = c.timing;
    rc.repro = c.repro;
    rc.seconds = c.seconds;
    rc.contract_index = static_cast<std::int64_t>(c.contract_index);
    rc.plan_index = static_cast<std::int64_t>(c.plan_index);
    r.cases.push_back(std::move(rc));
  }
  return r;
}

std::string render_record(const RunRecord& r) {
  JsonWriter w(2);
  w.begin_object();
  w.field("format", r.format);
  w.field("kc_version", r.kc_version);
  w.field("created", r.created);
  w.field("host", r.host);
  w.key("run").begin_object();
  w.field("seed", r.run.seed).field("samples", r.run.samples).field("config", r.run.config);
  w.field("sample", r.run.sample).field("fast", r.run.fast).field("timing_calls", r.run.timing_calls);
  w.end_object();
  w.key("plan").begin_object();
  w.field("fingerprint", r.plan.fingerprint).field("selection", r.plan.selection).field("planned", r.plan.planned);
  w.field("shard", r.plan.shard).field("shard_source", r.plan.shard_source);
  w.key("selection_filters").begin_array();
  for (const auto& f : r.plan.selection_filters) w.value(f);
  w.end_array();
  w.end_object();
  w.key("backends").begin_array();
  for (const auto& b : r.backends) {
    w.begin_object();
    w.field("name", b.name).field("available", b.available).field("version", b.version).field("reason", b.reason);
    w.end_object();
  }
  w.end_array();
  w.key("profiles").begin_array();
  for (const auto& p : r.profiles) write_profile(w, p);
  w.end_array();
  w.key("cases").begin_array();
  for (const auto& c : r.cases) {
    w.begin_object();
    w.field("contract", c.contract).field("contract_hash", c.contract_hash).field("contract_file", c.contract_file);
    w.field("impl", c.impl).field("backend", c.backend).field("backend_version", c.backend_version);
    w.field("verdict", c.verdict);
    w.key("signatures").begin_array();
    for (const auto& s : c.signatures) w.value(s);
    w.end_array();
    w.field("signature_expected", c.signature_expected);
    w.field("reason", c.reason);
    w.field("output_hash", c.output_hash);
    w.key("bound_ratio").begin_object();
    w.field("metric", c.metric).field("max", c.max).field("p99", c.p99).field("p50", c.p50);
    w.field("elements", c.elements).field("failures", c.failures);
    w.end_object();
    w.key("facts").begin_object();
    for (const auto& [k, v] : c.facts) w.field(k, v);
    w.end_object();
    write_timing(w, c.timing);
    w.field("repro", c.repro);
    w.field("seconds", c.seconds).field("contract_index", c.contract_index).field("plan_index", c.plan_index);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

Result<RunRecord> read_record(const std::string& path_in) {
  std::string path = path_in;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    path = (std::filesystem::path(path) / "record.json").string();
    if (!std::filesystem::exists(path, ec))
      return invalid_argument(path_in + ": no record.json in this directory; write one with `kc grade --out " +
                              path_in + "` or `kc check ... --out " + path_in + "`");
  }
  YamlDoc doc;
  KC_RETURN_IF_ERROR(doc.load(path));
  const YAML::Node& root = doc.root;
  if (!root.IsMap()) return doc.error(root, "a run record is a JSON object", "a record.json written by kc");
  RunRecord r;
  r.source = path;
  KC_ASSIGN_OR_RETURN(r.format, doc.str(root, "format"));
  if (r.format != kRecordFormat)
    return doc.error(root["format"], "format '" + r.format + "' is not one this kc reads",
                     std::string("a record written as ") + kRecordFormat + " (rerun the older kc's run with this kc)");
  KC_ASSIGN_OR_RETURN(r.kc_version, doc.str(root, "kc_version", true));
  KC_ASSIGN_OR_RETURN(r.created, doc.str(root, "created", true));
  KC_ASSIGN_OR_RETURN(r.host, doc.str(root, "host", true));
  if (const YAML::Node run = root["run"]; run && run.IsMap()) {
    KC_ASSIGN_OR_RETURN(r.run.seed, doc.str(run, "seed", true));
    KC_ASSIGN_OR_RETURN(r.run.samples, doc.str(run, "samples", true));
    KC_ASSIGN_OR_RETURN(r.run.config, doc.str(run, "config", true));
    KC_ASSIGN_OR_RETURN(r.run.sample, doc.str(run, "sample", true));
    KC_ASSIGN_OR_RETURN(r.run.fast, doc.boolean(run, "fast", true));
    KC_ASSIGN_OR_RETURN(double tc, doc.number(run, "timing_calls", true));
    r.run.timing_calls = static_cast<int>(tc);
  }
  if (const YAML::Node p = root["plan"]; p && p.IsMap()) {
    KC_ASSIGN_OR_RETURN(r.plan.fingerprint, doc.str(p, "fingerprint", true));
    KC_ASSIGN_OR_RETURN(r.plan.selection, doc.str(p, "selection", true));
    KC_ASSIGN_OR_RETURN(double planned, doc.number(p, "planned", true));
    r.plan.planned = static_cast<std::int64_t>(planned);
    KC_ASSIGN_OR_RETURN(r.plan.shard, doc.str(p, "shard", true));
    KC_ASSIGN_OR_RETURN(r.plan.shard_source, doc.str(p, "shard_source", true));
    if (p["selection_filters"]) {
      KC_ASSIGN_OR_RETURN(r.plan.selection_filters, doc.strings(p, "selection_filters"));
    }
  }
  if (const YAML::Node bs = root["backends"]; bs && bs.IsSequence())
    for (const auto& b : bs) {
      RecordBackend rb;
      KC_ASSIGN_OR_RETURN(rb.name, doc.str(b, "name"));
      KC_ASSIGN_OR_RETURN(rb.version, doc.str(b, "version", true));
      KC_ASSIGN_OR_RETURN(rb.reason, doc.str(b, "reason", true));
      KC_ASSIGN_OR_RETURN(rb.available, doc.boolean(b, "available", true));
      r.backends.push_back(std::move(rb));
    }
  if (const YAML::Node ps = root["profiles"]; ps && ps.IsSequence())
    for (const auto& pn : ps) {
      if (!pn.IsMap()) return doc.error(pn, "a profile is an object", "{\"host\": ..., \"env\": {...}}");
      Profile p;
      for (auto it = pn.begin(); it != pn.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (k == "env" && it->second.IsMap()) {
          for (auto e = it->second.begin(); e != it->second.end(); ++e) p.env[e->first.Scalar()] = e->second.Scalar();
        } else if (it->second.IsScalar()) {
          p.facts[k] = it->second.Scalar();
        }
      }
      r.profiles.push_back(std::move(p));
    }
  const YAML::Node cases = root["cases"];
  if (!cases || !cases.IsSequence()) return doc.error(root, "no \"cases\" array", "a record.json written by kc");
  for (const auto& n : cases) {
    if (!n.IsMap()) return doc.error(n, "a case is an object", "{\"contract\": ..., \"impl\": ..., ...}");
    RecordCase c;
    KC_ASSIGN_OR_RETURN(c.contract, doc.str(n, "contract"));
    KC_ASSIGN_OR_RETURN(c.impl, doc.str(n, "impl"));
    KC_ASSIGN_OR_RETURN(c.verdict, doc.str(n, "verdict"));
    if (!enum_parse(engine::verdict_table(), c.verdict))
      return doc.error(n["verdict"], "unknown verdict '" + c.verdict + "'",
                       "one of " + enum_choices(engine::verdict_table()));
    KC_ASSIGN_OR_RETURN(c.contract_hash, doc.str(n, "contract_hash", true));
    KC_ASSIGN_OR_RETURN(c.contract_file, doc.str(n, "contract_file", true));
    KC_ASSIGN_OR_RETURN(c.backend, doc.str(n, "backend", true));
    KC_ASSIGN_OR_RETURN(c.backend_version, doc.str(n, "backend_version", true));
    KC_ASSIGN_OR_RETURN(c.reason, doc.str(n, "reason", true));
    KC_ASSIGN_OR_RETURN(c.signature_expected, doc.boolean(n, "signature_expected", true));
    KC_ASSIGN_OR_RETURN(c.output_hash, doc.str(n, "output_hash", true));
    KC_ASSIGN_OR_RETURN(c.repro, doc.str(n, "repro", true));
    KC_ASSIGN_OR_RETURN(c.signatures, doc.strings(n, "signatures"));
    if (n["seconds"]) {
      KC_ASSIGN_OR_RETURN(c.seconds, doc.number(n, "seconds"));
    }
    if (n["contract_index"]) {
      KC_ASSIGN_OR_RETURN(double ci, doc.number(n, "contract_index"));
      c.contract_index = static_cast<std::int64_t>(ci);
    }
    if (n["plan_index"]) {
      KC_ASSIGN_OR_RETURN(double pi, doc.number(n, "plan_index"));
      c.plan_index = static_cast<std::int64_t>(pi);
    }
    if (const YAML::Node b = n["bound_ratio"]; b && b.IsMap()) {
      KC_ASSIGN_OR_RETURN(c.metric, doc.str(b, "metric", true));
      KC_ASSIGN_OR_RETURN(c.max, doc.number(b, "max", true));
      KC_ASSIGN_OR_RETURN(c.p99, doc.number(b, "p99", true));
      KC_ASSIGN_OR_RETURN(c.p50, doc.number(b, "p50", true));
      KC_ASSIGN_OR_RETURN(double e, doc.number(b, "elements", true));
      KC_ASSIGN_OR_RETURN(double f, doc.number(b, "failures", true));
      c.elements = static_cast<std::int64_t>(e);
      c.failures = static_cast<std::int64_t>(f);
    }
    if (const YAML::Node f = n["facts"]; f && f.IsMap())
      for (auto it = f.begin(); it != f.end(); ++it) c.facts[it->first.Scalar()] = it->second.Scalar();
    if (const YAML::Node t = n["timing"]; t && t.IsMap()) {
      engine::CaseResult::Timing tm;
      KC_ASSIGN_OR_RETURN(tm.config, doc.str(t, "config", true));
      KC_ASSIGN_OR_RETURN(double s, doc.number(t, "sample", true));
      tm.sample = static_cast<std::int64_t>(s);
      KC_ASSIGN_OR_RETURN(tm.cold_s, doc.number(t, "cold_s"));
      KC_ASSIGN_OR_RETURN(tm.warm_s, doc.numbers(t, "warm_s"));
      c.timing = std::move(tm);
    }
    r.cases.push_back(std::move(c));
  }
  return r;
}

}  // namespace kc::report
