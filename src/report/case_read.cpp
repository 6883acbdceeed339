// A verdict record read back from its JSON body (the inverse of case_json),
// for --resume: a case the trace records is not run again, and the reports
// are rendered from what the record holds.
#include <yaml-cpp/yaml.h>

#include "kc/report.h"
#include "report/yaml_read.h"

namespace kc::report {

namespace {

/// "NAME(a, b)" back into a Signature (Signature::to_string's form).
Signature parse_signature(const std::string& text) {
  Signature s;
  const std::size_t open = text.find('(');
  if (open == std::string::npos || text.back() != ')') {
    s.name = text;
    return s;
  }
  s.name = text.substr(0, open);
  const std::string inner = text.substr(open + 1, text.size() - open - 2);
  int depth = 0;
  std::string arg;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    const char ch = inner[i];
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (depth == 0 && ch == ',' && i + 1 < inner.size() && inner[i + 1] == ' ') {
      s.args.push_back(arg);
      arg.clear();
      ++i;
      continue;
    }
    arg += ch;
  }
  s.args.push_back(arg);
  return s;
}

Result<std::int64_t> integer(const YamlDoc& doc, const YAML::Node& parent, const char* key) {
  KC_ASSIGN_OR_RETURN(double v, doc.number(parent, key, true));
  return static_cast<std::int64_t>(v);
}

}  // namespace

Result<engine::CaseResult> case_from_json(const std::string& body, const std::string& where) {
  YamlDoc doc;
  doc.path = where;
  try {
    doc.root = YAML::Load(body);
  } catch (const YAML::Exception& e) {
    return invalid_argument(where + ": malformed record: " + e.msg);
  }
  const YAML::Node& n = doc.root;
  if (!n.IsMap()) return invalid_argument(where + ": a record is a JSON object");
  engine::CaseResult c;
  KC_ASSIGN_OR_RETURN(c.contract_id, doc.str(n, "contract"));
  KC_ASSIGN_OR_RETURN(c.contract_hash, doc.str(n, "contract_hash"));
  KC_ASSIGN_OR_RETURN(c.contract_file, doc.str(n, "contract_file", true));
  KC_ASSIGN_OR_RETURN(c.impl, doc.str(n, "impl"));
  KC_ASSIGN_OR_RETURN(c.backend, doc.str(n, "backend", true));
  KC_ASSIGN_OR_RETURN(c.backend_version, doc.str(n, "backend_version", true));
  KC_ASSIGN_OR_RETURN(const std::string verdict, doc.str(n, "verdict"));
  const auto v = enum_parse(engine::verdict_table(), verdict);
  if (!v) return doc.error(n["verdict"], "unknown verdict '" + verdict + "'", enum_choices(engine::verdict_table()));
  c.verdict = *v;
  KC_ASSIGN_OR_RETURN(c.reason, doc.str(n, "reason", true));
  KC_ASSIGN_OR_RETURN(const std::vector<std::string> sigs, doc.strings(n, "signatures"));
  for (const auto& s : sigs) c.signatures.push_back(parse_signature(s));
  KC_ASSIGN_OR_RETURN(c.signature_expected, doc.boolean(n, "signature_expected", true));

  if (const YAML::Node e = n["evidence"]; e && e.IsMap()) {
    engine::Evidence& ev = c.evidence;
    KC_ASSIGN_OR_RETURN(ev.metric, doc.str(e, "metric", true));
    KC_ASSIGN_OR_RETURN(ev.tolerance, doc.str(e, "tolerance", true));
    KC_ASSIGN_OR_RETURN(ev.max, doc.number(e, "max", true));
    KC_ASSIGN_OR_RETURN(ev.p99, doc.number(e, "p99", true));
    KC_ASSIGN_OR_RETURN(ev.mean, doc.number(e, "mean", true));
    KC_ASSIGN_OR_RETURN(ev.p50, doc.number(e, "p50", true));
    KC_ASSIGN_OR_RETURN(ev.elements, integer(doc, e, "elements"));
    KC_ASSIGN_OR_RETURN(ev.failures, integer(doc, e, "failures"));
    if (const YAML::Node w = e["worst"]; w && w.IsMap()) {
      engine::WorstElement x;
      KC_ASSIGN_OR_RETURN(x.output, doc.str(w, "output", true));
      KC_ASSIGN_OR_RETURN(x.index, integer(doc, w, "index"));
      KC_ASSIGN_OR_RETURN(x.position, doc.str(w, "position", true));
      KC_ASSIGN_OR_RETURN(x.value, doc.number(w, "value", true));
      KC_ASSIGN_OR_RETURN(x.reference, doc.number(w, "reference", true));
      KC_ASSIGN_OR_RETURN(x.metric, doc.number(w, "metric", true));
      KC_ASSIGN_OR_RETURN(x.config, doc.str(w, "config", true));
      ev.worst = std::move(x);
    }
    if (const YAML::Node pcs = e["per_config"]; pcs && pcs.IsSequence())
      for (const auto& p : pcs) {
        engine::ConfigEvidence pc;
        KC_ASSIGN_OR_RETURN(pc.config, doc.str(p, "config", true));
        KC_ASSIGN_OR_RETURN(pc.max, doc.number(p, "max", true));
        KC_ASSIGN_OR_RETURN(pc.p99, doc.number(p, "p99", true));
        KC_ASSIGN_OR_RETURN(pc.mean, doc.number(p, "mean", true));
        KC_ASSIGN_OR_RETURN(pc.elements, integer(doc, p, "elements"));
        KC_ASSIGN_OR_RETURN(pc.failures, integer(doc, p, "failures"));
        KC_ASSIGN_OR_RETURN(pc.note, doc.str(p, "note", true));
        ev.per_config.push_back(std::move(pc));
      }
    KC_ASSIGN_OR_RETURN(ev.notes, doc.strings(e, "notes"));
    KC_ASSIGN_OR_RETURN(ev.method, doc.str(e, "method", true));
  }

  KC_ASSIGN_OR_RETURN(const std::string seed, doc.str(n, "seed"));
  char* end = nullptr;
  c.seed = std::strtoull(seed.c_str(), &end, 16);
  if (seed.rfind("0x", 0) != 0 || end == nullptr || *end != '\0')
    return doc.error(n["seed"], "seed '" + seed + "' is not hex", "\"0x6b63\"");
  KC_ASSIGN_OR_RETURN(c.input_hash, doc.str(n, "input_hash", true));
  KC_ASSIGN_OR_RETURN(c.repro, doc.str(n, "repro", true));
  KC_ASSIGN_OR_RETURN(c.seconds, doc.number(n, "seconds", true));
  KC_ASSIGN_OR_RETURN(c.output_hash, doc.str(n, "output_hash", true));
  KC_ASSIGN_OR_RETURN(c.covers, doc.strings(n, "covers"));
  if (const YAML::Node f = n["facts"]; f && f.IsMap())
    for (auto it = f.begin(); it != f.end(); ++it) c.facts[it->first.Scalar()] = it->second.Scalar();
  if (const YAML::Node t = n["timing"]; t && t.IsMap()) {
    engine::CaseResult::Timing tm;
    KC_ASSIGN_OR_RETURN(tm.config, doc.str(t, "config", true));
    KC_ASSIGN_OR_RETURN(tm.sample, integer(doc, t, "sample"));
    KC_ASSIGN_OR_RETURN(tm.cold_s, doc.number(t, "cold_s", true));
    KC_ASSIGN_OR_RETURN(tm.warm_s, doc.numbers(t, "warm_s"));
    c.timing = std::move(tm);
  }
  return c;
}

}  // namespace kc::report
