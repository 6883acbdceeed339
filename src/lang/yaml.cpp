// kc — the YAML front end and printer: the same model, one key per part.
//
//   contracts:
//     - id: KC-GEMM-01
//       title: "..."
//       scope: matmul
//       pre: ["precision(A, B, C) in {FP32}", "K in {1, 33}"]
//       post: output C satisfies elementwise_close(C, ref(C))
//       tolerance: bound gamma(K + 2, P) * |A||B|
//       reference: higher_precision FP64
//       measure: sample 2 random inputs per config; compute max bound_ratio; pass if <= 1
//       violation: {text: "...", signatures: ["SATURATION(65504)"]}
//   impls: [...]   calibrations: [...]   suites: [...]
//
// Clause values are parsed by the same clause parsers as the .kc form, so the
// two forms cannot drift apart. Unknown keys are errors.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "kc/lang.h"
#include "lang/clauses.h"
#include "lang/source.h"

namespace kc::lang {
namespace detail {
namespace {

class YamlParser {
 public:
  YamlParser(std::string_view text, std::string_view file, ParseResult* out)
      : text_(text), file_(file), lines_(split_lines(text)), out_(out), d_(&out->diagnostics) {
    out_->document.file = std::string(file);
  }

  void run() {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text_));
    } catch (const YAML::Exception& e) {
      Span s = at(e.mark);
      d_.error(s, 0, "malformed YAML: " + e.msg, "valid YAML (see schemas/contract.schema.json)");
      return;
    }
    if (!root || root.IsNull()) return;
    if (!root.IsMap()) {
      d_.error(at(root.Mark()), 0, "the document must be a map", "keys contracts, impls, calibrations, suites");
      return;
    }
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = scalar_key(it->first);
      const YAML::Node v = it->second;
      if (key == "contracts") for_each_item(v, key, [&](const YAML::Node& n) { contract(n); });
      else if (key == "impls") for_each_item(v, key, [&](const YAML::Node& n) { impl(n); });
      else if (key == "calibrations") for_each_item(v, key, [&](const YAML::Node& n) { calibration(n); });
      else if (key == "suites") for_each_item(v, key, [&](const YAML::Node& n) { suite(n); });
      else if (key == "comment") out_->document.trailing_comment = text(v);
      else unknown(it->first, key, {"contracts", "impls", "calibrations", "suites", "comment"});
    }
  }

 private:
  Span at(const YAML::Mark& m) const {
    Span s(file_, lines_);
    s.append("", m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0);
    return s;
  }

  /// The node's text as a span (scalars), located at the node.
  Span span(const YAML::Node& n) const {
    Span s(file_, lines_);
    const YAML::Mark m = n.Mark();
    s.append(n.IsScalar() ? n.Scalar() : std::string(), m.line + 1, m.column + 1);
    return s;
  }

  std::string scalar_key(const YAML::Node& k) {
    if (!k.IsScalar()) {
      d_.error(at(k.Mark()), 0, "keys must be plain words");
      return {};
    }
    return k.Scalar();
  }

  std::string text(const YAML::Node& n) {
    if (n.IsScalar()) {
      std::string s = n.Scalar();
      while (!s.empty() && s.back() == '\n') s.pop_back();  // a literal block's final newline
      return s;
    }
    if (!n.IsNull()) d_.error(at(n.Mark()), 0, "expected a string");
    return {};
  }

  void unknown(const YAML::Node& key_node, const std::string& key, const std::vector<std::string>& allowed) {
    d_.error(at(key_node.Mark()), 0, "unknown key '" + key + "'", "one of: " + join(allowed, ", "),
             nearest_word(key, allowed));
  }

  template <typename F>
  void for_each_item(const YAML::Node& v, const std::string& key, F&& f) {
    if (v.IsNull()) return;
    if (!v.IsSequence()) {
      d_.error(at(v.Mark()), 0, "'" + key + "' must be a list");
      return;
    }
    for (const auto& item : v) {
      if (!item.IsMap()) {
        d_.error(at(item.Mark()), 0, "each item of '" + key + "' must be a map");
        continue;
      }
      f(item);
    }
  }

  /// A list value (sequence, or a comma-separated string) as one span "a, b, c".
  Span list_span(const YAML::Node& v) {
    if (v.IsSequence()) {
      Span s(file_, lines_);
      std::string joined;
      bool first = true;
      for (const auto& item : v) {
        if (!item.IsScalar()) {
          d_.error(at(item.Mark()), 0, "list items must be strings");
          continue;
        }
        const YAML::Mark m = item.Mark();
        s.append((first ? "" : ", ") + item.Scalar(), m.line + 1, m.column + 1);
        first = false;
      }
      return s;
    }
    return span(v);
  }

  void contract(const YAML::Node& n) {
    Contract c;
    c.loc = at(n.Mark()).loc(0);
    static const std::vector<std::string> keys = {"id",        "comment",   "title",   "version",
                                                  "class",     "scope",     "pre",     "post",
                                                  "tolerance", "reference", "measure", "violation",
                                                  "comments",  "depends",   "retest"};
    std::vector<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar_key(it->first);
      const YAML::Node v = it->second;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        unknown(it->first, key, keys);
        continue;
      }
      // A key given twice is a duplicate clause, as in the .kc form: the
      // second would silently replace part of the first.
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        d_.error(at(it->first.Mark()), 0, "duplicate key '" + key + "' in contract", "each key once");
        continue;
      }
      seen.push_back(key);
      if (key == "id") {
        c.id = text(v);
        c.loc = at(v.Mark()).loc(0);
      } else if (key == "comment") {
        c.comment = text(v);
      } else if (std::find(contract_meta_keywords().begin(), contract_meta_keywords().end(), key) !=
                 contract_meta_keywords().end()) {
        parse_meta(key, span(v), &c, d_);
      } else if (key == "depends") {
        parse_depends(v.IsSequence() ? list_span(v) : span(v), &c, d_);
      } else if (key == "comments") {
        if (!v.IsMap()) {
          d_.error(at(v.Mark()), 0, "'comments' maps clause names to comment text");
          continue;
        }
        for (auto ct = v.begin(); ct != v.end(); ++ct) {
          const std::string clause = scalar_key(ct->first);
          ClauseInfo* info = info_of(&c, clause);
          if (!info) {
            unknown(ct->first, clause, contract_clause_keywords());
            continue;
          }
          info->comment = text(ct->second);
        }
      } else {
        const std::string comment_keep = info_of(&c, key)->comment;
        Span body = clause_span(key, v);
        parse_clause(key, body, &c, d_);
        info_of(&c, key)->loc = at(it->first.Mark()).loc(0);
        info_of(&c, key)->comment = comment_keep;
      }
    }
    check_cross_clauses(&c);
    if (c.id.empty()) d_.error(at(n.Mark()), 0, "contract has no id", "id: C-PRC-01");
    else if (!valid_contract_id(c.id))
      d_.error(at(n.Mark()), 0, "malformed contract id '" + c.id + "'", "an id such as C-PRC-01 or KC-GEMM-01");
    for (const auto& other : out_->document.contracts)
      if (!c.id.empty() && other.id == c.id)
        d_.error(at(n.Mark()), 0, "contract '" + c.id + "' is defined twice", "a unique id");
    out_->document.contracts.push_back(std::move(c));
  }

  Span clause_span(const std::string& key, const YAML::Node& v) {
    if (key == "pre" && v.IsSequence()) {
      Span s(file_, lines_);
      bool first = true;
      for (const auto& item : v) {
        if (!item.IsScalar()) {
          d_.error(at(item.Mark()), 0, "each pre conjunct is a string");
          continue;
        }
        const YAML::Mark m = item.Mark();
        if (!first) s.append("and", m.line + 1, m.column + 1);
        s.append(item.Scalar(), m.line + 1, m.column + 1);
        first = false;
      }
      return s;
    }
    if (key == "scope" && v.IsSequence()) return list_span(v);
    if (key == "violation" && v.IsMap()) {
      // Key order does not matter: the text first, then the signatures.
      Span s(file_, lines_);
      std::optional<YAML::Node> text_node, sig_node;
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string k = scalar_key(it->first);
        if (k == "text" || k == "signatures") {
          std::optional<YAML::Node>& slot = k == "text" ? text_node : sig_node;
          if (slot) {
            d_.error(at(it->first.Mark()), 0, "duplicate key '" + k + "' in violation", "each key once");
            continue;
          }
          slot = it->second;
        } else {
          unknown(it->first, k, {"text", "signatures"});
        }
      }
      if (text_node) {
        const YAML::Mark m = text_node->Mark();
        s.append(quote(text(*text_node)), m.line + 1, m.column + 1);
      }
      if (sig_node) {
        const YAML::Mark m = sig_node->Mark();
        Span list = list_span(*sig_node);
        s.append("signature " + list.text(), m.line + 1, m.column + 1);
      }
      return s;
    }
    if (!v.IsScalar()) {
      d_.error(at(v.Mark()), 0, "'" + key + "' must be a string");
      return Span(file_, lines_);
    }
    return span(v);
  }

  static ClauseInfo* info_of(Contract* c, const std::string& k) {
    if (k == "scope") return &c->scope_info;
    if (k == "pre") return &c->pre_info;
    if (k == "post") return &c->post_info;
    if (k == "tolerance") return &c->tolerance_info;
    if (k == "reference") return &c->reference_info;
    if (k == "measure") return &c->measure_info;
    if (k == "violation") return &c->violation_info;
    return nullptr;
  }

  void impl(const YAML::Node& n) {
    Declaration decl;
    std::string comment;
    std::vector<std::string> keys = {"name", "comment"};
    for (const auto& k : impl_keywords()) keys.push_back(k);
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar_key(it->first);
      const YAML::Node v = it->second;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        unknown(it->first, key, keys);
        continue;
      }
      if (key == "name") decl.name = text(v);
      else if (key == "comment") comment = text(v);
      else if (key == "declares" && v.IsMap()) {
        Span s(file_, lines_);
        bool first = true;
        for (auto dt = v.begin(); dt != v.end(); ++dt) {
          const YAML::Mark m = dt->second.Mark();
          s.append((first ? "" : ", ") + scalar_key(dt->first) + " = " + text(dt->second), m.line + 1, m.column + 1);
          first = false;
        }
        parse_impl_key(key, s, &decl, d_);
      } else if (key == "dtypes" || key == "schedules") {
        parse_impl_key(key, list_span(v), &decl, d_);
      } else if (key == "source" || key == "description") {
        decl.source = key == "source" ? text(v) : decl.source;
        decl.description = key == "description" ? text(v) : decl.description;
      } else {
        parse_impl_key(key, span(v), &decl, d_);
      }
    }
    if (decl.name.empty()) d_.error(at(n.Mark()), 0, "impl has no name", "name: my.matmul");
    else if (!valid_plain_name(decl.name))
      d_.error(at(n.Mark()), 0, "malformed impl name '" + decl.name + "'", "one word such as my.matmul");
    out_->document.impls.push_back(std::move(decl));
    out_->document.impl_locs.push_back(at(n.Mark()).loc(0));
    out_->document.impl_comments.push_back(comment);
  }

  void calibration(const YAML::Node& n) {
    Calibration cal;
    cal.loc = at(n.Mark()).loc(0);
    std::vector<std::string> keys = {"contract", "comment"};
    for (const auto& k : calibration_keywords()) keys.push_back(k);
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar_key(it->first);
      const YAML::Node v = it->second;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) unknown(it->first, key, keys);
      else if (key == "contract") cal.contract = text(v);
      else if (key == "comment") cal.comment = text(v);
      else if (key == "visible") cal.visible = text(v);
      else parse_calibration_key(key, span(v), &cal, d_);
    }
    if (cal.contract.empty()) d_.error(at(n.Mark()), 0, "calibration names no contract", "contract: C-PRC-01");
    else if (!valid_contract_id(cal.contract))
      d_.error(at(n.Mark()), 0, "malformed contract id '" + cal.contract + "'", "an id such as C-PRC-01");
    // As in the .kc form: a trio names all three roles.
    for (const auto& [role, impl] : {std::pair<const char*, const std::string*>{"baseline", &cal.baseline},
                                     {"bad", &cal.bad},
                                     {"good", &cal.good}})
      if (impl->empty())
        d_.error(at(n.Mark()), 0, "calibration " + cal.contract + " names no " + role + " impl",
                 "baseline, bad and good impl names");
    out_->document.calibrations.push_back(std::move(cal));
  }

  void suite(const YAML::Node& n) {
    Suite s;
    s.loc = at(n.Mark()).loc(0);
    std::vector<std::string> keys = {"name", "comment"};
    for (const auto& k : suite_keywords()) keys.push_back(k);
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar_key(it->first);
      const YAML::Node v = it->second;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) unknown(it->first, key, keys);
      else if (key == "name") s.name = text(v);
      else if (key == "comment") s.comment = text(v);
      else if (key == "tier") parse_suite_key(key, span(v), &s, d_);
      else parse_suite_key(key, list_span(v), &s, d_);
    }
    if (s.name.empty()) d_.error(at(n.Mark()), 0, "suite has no name", "name: ci");
    else if (!valid_plain_name(s.name)) d_.error(at(n.Mark()), 0, "malformed suite name '" + s.name + "'", "one word such as ci");
    out_->document.suites.push_back(std::move(s));
  }

  std::string_view text_;
  std::string file_;
  SourceLines lines_;
  ParseResult* out_;
  Diags d_;
};

void emit_text(YAML::Emitter& e, const std::string& key, const std::string& value) {
  e << YAML::Key << key << YAML::Value;
  if (value.find('\n') != std::string::npos) e << YAML::Literal;
  else e << YAML::DoubleQuoted;
  e << value;
}

void emit_list(YAML::Emitter& e, const std::string& key, const std::vector<std::string>& items) {
  e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& i : items) e << YAML::DoubleQuoted << i;
  e << YAML::EndSeq;
}

}  // namespace
}  // namespace detail

ParseResult parse_yaml(std::string_view text, std::string_view file_name) {
  ParseResult r;
  {
    // Bytes first, with positions: yaml-cpp's own messages for a tab or a bad
    // byte do not say which one.
    detail::Diags d(&r.diagnostics);
    r.document.file = std::string(file_name);
    if (detail::check_bytes(text, r.document.file, detail::split_lines(text), d, true) > 0) return r;
  }
  detail::YamlParser p(text, file_name, &r);
  p.run();
  detail::cap_diagnostics(&r.diagnostics, detail::kMaxDiagnosticsPerFile, std::string(file_name));
  return r;
}

std::string print_yaml(const Document& doc) {
  using detail::emit_list;
  using detail::emit_text;
  YAML::Emitter e;
  e << YAML::BeginMap;
  if (!doc.contracts.empty()) {
    e << YAML::Key << "contracts" << YAML::Value << YAML::BeginSeq;
    for (const Contract& c : doc.contracts) {
      e << YAML::BeginMap;
      e << YAML::Key << "id" << YAML::Value << c.id;
      if (!c.comment.empty()) emit_text(e, "comment", c.comment);
      for (const auto& key : detail::contract_meta_keywords()) {
        auto it = c.meta.find(key);
        if (it != c.meta.end()) emit_text(e, key, it->second);
      }
      if (!c.depends.empty()) emit_list(e, "depends", c.depends);
      const ClauseInfo* infos[] = {&c.scope_info, &c.pre_info, &c.post_info, &c.tolerance_info,
                                   &c.reference_info, &c.measure_info, &c.violation_info};
      const auto& keys = detail::contract_clause_keywords();
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!infos[i]->present) continue;
        std::vector<std::string> lines = detail::print_clause(keys[i], c);
        if (keys[i] == "pre") {
          for (auto& l : lines)
            if (l.rfind("and ", 0) == 0) l.erase(0, 4);
          emit_list(e, "pre", lines);
        } else if (keys[i] == "violation" && infos[i]->gap.empty()) {
          e << YAML::Key << "violation" << YAML::Value << YAML::BeginMap;
          // An empty text with no signature is still written: `violation: {}`
          // would read back as a clause with nothing in it, not an empty text.
          if (!c.violation.text.empty() || c.violation.signatures.empty()) emit_text(e, "text", c.violation.text);
          if (!c.violation.signatures.empty()) {
            std::vector<std::string> sigs;
            for (const auto& s : c.violation.signatures) sigs.push_back(s.to_string());
            emit_list(e, "signatures", sigs);
          }
          e << YAML::EndMap;
        } else {
          emit_text(e, keys[i], detail::join(lines, " "));
        }
      }
      bool any_comment = false;
      for (const ClauseInfo* info : infos) any_comment = any_comment || !info->comment.empty();
      if (any_comment) {
        e << YAML::Key << "comments" << YAML::Value << YAML::BeginMap;
        for (std::size_t i = 0; i < keys.size(); ++i)
          if (!infos[i]->comment.empty()) emit_text(e, keys[i], infos[i]->comment);
        e << YAML::EndMap;
      }
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!doc.impls.empty()) {
    e << YAML::Key << "impls" << YAML::Value << YAML::BeginSeq;
    for (std::size_t i = 0; i < doc.impls.size(); ++i) {
      const Declaration& d = doc.impls[i];
      e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << d.name;
      if (i < doc.impl_comments.size() && !doc.impl_comments[i].empty()) emit_text(e, "comment", doc.impl_comments[i]);
      for (const auto& [k, v] : detail::print_impl(d)) {
        if (k == "source") emit_text(e, k, d.source);
        else if (k == "description") emit_text(e, k, d.description);
        else if (k == "schedules") emit_list(e, k, d.schedules);
        else emit_text(e, k, v);
      }
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!doc.calibrations.empty()) {
    e << YAML::Key << "calibrations" << YAML::Value << YAML::BeginSeq;
    for (const Calibration& c : doc.calibrations) {
      e << YAML::BeginMap << YAML::Key << "contract" << YAML::Value << c.contract;
      if (!c.comment.empty()) emit_text(e, "comment", c.comment);
      if (!c.baseline.empty()) e << YAML::Key << "baseline" << YAML::Value << c.baseline;
      if (!c.bad.empty()) e << YAML::Key << "bad" << YAML::Value << c.bad;
      if (!c.good.empty()) e << YAML::Key << "good" << YAML::Value << c.good;
      if (!c.visible.empty()) emit_text(e, "visible", c.visible);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!doc.suites.empty()) {
    e << YAML::Key << "suites" << YAML::Value << YAML::BeginSeq;
    for (const Suite& s : doc.suites) {
      e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name;
      if (!s.comment.empty()) emit_text(e, "comment", s.comment);
      e << YAML::Key << "tier" << YAML::Value << s.tier;
      if (!s.contracts.empty()) emit_list(e, "contracts", s.contracts);
      if (!s.impls.empty()) emit_list(e, "impls", s.impls);
      e << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!doc.trailing_comment.empty()) emit_text(e, "comment", doc.trailing_comment);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace kc::lang
