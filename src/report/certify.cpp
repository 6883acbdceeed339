// kc certify: a run directory summarised into what a third party can check.
#include "kc/certify.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "kc/json_writer.h"
#include "kc/merge.h"
#include "kc/report.h"
#include "kc/report_common.h"

namespace kc::report {

namespace {

constexpr const char* kProves =
    "Each listed impl, on the machine profiled here, with the listed library version, gave the listed "
    "verdicts on the listed contracts (identified by content hash), for the inputs that the plan's seed "
    "generates. The trace holds each verdict with its evidence, chained up to the last hash given.";
constexpr const char* kDoesNotProve =
    "Nothing about other inputs, shapes, seeds, machines, library builds or environment settings; nothing "
    "about contracts not listed; and that the signer ran kc honestly: a signature says who vouches for the "
    "file, not how it was made.";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

Result<Certificate> make_certificate(const std::string& run_dir) {
  KC_ASSIGN_OR_RETURN(MergedRun run, merge_runs({run_dir}));
  const RunRecord record = merged_record(run);
  const engine::CheckResult& r = run.result;
  const std::string trace = (std::filesystem::path(run_dir) / "trace.jsonl").string();
  KC_ASSIGN_OR_RETURN(const std::size_t records, verify_trace(trace));
  KC_ASSIGN_OR_RETURN(const std::vector<TraceRecord> chain, read_trace_records(trace, nullptr));
  const std::string last_hash = chain.empty() ? std::string(64, '0') : chain.back().hash;

  // The suite: every contract of the plan, by content hash, sorted by id.
  std::map<std::string, std::string> contracts;
  for (const auto& c : r.cases) contracts[c.contract_id] = c.contract_hash;
  std::string suite_text;
  for (const auto& [id, hash] : contracts) suite_text += id + " " + hash + "\n";
  const std::string suite_hash = sha256_hex(suite_text);

  std::map<std::string, const engine::CaseResult*> any_case;  // impl -> a judged case (facts, version)
  for (const auto& c : r.cases)
    if (c.verdict != engine::Verdict::kNotApplicable || !any_case.count(c.impl)) any_case[c.impl] = &c;
  const std::vector<ImplGrade> grades = grade(r);
  const VerdictCounts k = count_verdicts(r);

  JsonWriter w(2);
  w.begin_object();
  w.field("format", "kc-certificate/1");
  w.field("issued", utc_timestamp());
  w.key("suite").begin_object();
  w.field("content_hash", suite_hash);
  w.field("contracts_count", static_cast<std::int64_t>(contracts.size()));
  w.key("contracts").begin_array();
  for (const auto& [id, hash] : contracts) {
    w.begin_object();
    w.field("id", id).field("content_hash", hash);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.key("plan").begin_object();
  w.field("fingerprint", record.plan.fingerprint).field("cases", static_cast<std::int64_t>(r.cases.size()));
  w.field("seed", record.run.seed).field("samples", record.run.samples).field("fast", record.run.fast);
  w.end_object();
  w.key("trace").begin_object();
  w.field("file", "trace.jsonl").field("records", static_cast<std::int64_t>(records)).field("last_hash", last_hash);
  w.end_object();
  w.key("summary").begin_object();
  for (const auto& e : engine::verdict_table()) w.field(e.name, k[e.value]);
  w.end_object();
  w.key("impls").begin_array();
  for (const ImplGrade& g : grades) {
    if (g.level == "untested") continue;  // nothing applied: nothing to certify
    const engine::CaseResult* c = any_case.count(g.impl) ? any_case.at(g.impl) : nullptr;
    w.begin_object();
    w.field("impl", g.impl).field("backend", g.backend);
    w.field("library_version", c ? c->backend_version : "");
    w.field("level", g.level).field("tier", g.tier);
    w.field("conforming", g.conforming).field("violations", g.violations).field("errors", g.errors);
    w.field("not_applicable", g.not_applicable);
    w.key("facts").begin_object();
    if (c)
      for (const auto& [key, v] : c->facts) w.field(key, v);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("profiles").begin_array();
  for (const auto& p : record.profiles) write_profile(w, p);
  w.end_array();
  w.field("proves", kProves);
  w.field("does_not_prove", kDoesNotProve);
  w.end_object();

  Certificate cert;
  cert.json = w.take() + "\n";
  std::size_t listed = 0, conforming = 0;
  std::string rows;
  for (const ImplGrade& g : grades) {
    if (g.level == "untested") continue;
    ++listed;
    conforming += g.level == "conforming" ? 1 : 0;
    const engine::CaseResult* c = any_case.count(g.impl) ? any_case.at(g.impl) : nullptr;
    rows += "<tr><td>" + escape(g.impl) + "</td><td>" + escape(g.backend) + " " +
            escape(c ? c->backend_version : "") + "</td><td class=\"" + escape(g.level) + "\">" + escape(g.level) +
            "</td><td>" + escape(g.tier) + "</td><td>" + std::to_string(g.conforming) + " / " +
            std::to_string(g.violations) + " / " + std::to_string(g.errors) + "</td></tr>\n";
  }
  std::string machine;
  for (const Profile& p : record.profiles) {
    auto get = [&](const char* key) { return p.facts.count(key) ? p.facts.at(key) : std::string("?"); };
    machine += "<li>" + escape(get("host")) + ": " + escape(get("cpu_model")) + ", " + escape(get("os")) + ", kc " +
               escape(get("kc_version")) + " (" + escape(get("kc_commit")) + ")</li>\n";
  }
  cert.html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>kc conformance certificate</title>\n"
      "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:.2em .5em}.conforming{color:#060}.violating,.error{color:#a00}"
      "code{font-size:.9em}</style></head><body>\n<h1>kc conformance certificate</h1>\n"
      "<p>Suite <code>" + suite_hash + "</code> (" + std::to_string(contracts.size()) +
      " contracts), plan <code>" + escape(record.plan.fingerprint) + "</code>, trace of " +
      std::to_string(records) + " records ending in <code>" + last_hash + "</code>.</p>\n"
      "<p>Verify: <code>kc certify verify certificate.json --key SIGNER.pub</code>; the rendering is not signed, "
      "certificate.json is.</p>\n<h2>Impls</h2>\n<table><tr><th>impl</th><th>library</th><th>level</th>"
      "<th>tier</th><th>conforming / violations / errors</th></tr>\n" +
      rows + "</table>\n<h2>Machines</h2>\n<ul>\n" + machine + "</ul>\n<h2>What it proves</h2>\n<p>" +
      escape(kProves) + "</p>\n<h2>What it does not prove</h2>\n<p>" + escape(kDoesNotProve) +
      "</p>\n</body></html>\n";
  cert.summary = std::to_string(listed) + " impls (" + std::to_string(conforming) + " conforming) over " +
                 std::to_string(contracts.size()) + " contracts, suite " + suite_hash.substr(0, 12) + "..., trace " +
                 std::to_string(records) + " records ending " + last_hash.substr(0, 12) + "...";
  return cert;
}

}  // namespace kc::report
