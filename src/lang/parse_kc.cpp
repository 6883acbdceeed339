// kc — the .kc text front end: blocks, clause segmentation, comments.
//
// A file is a sequence of blocks `KIND NAME {` ... `}` (KIND: contract, impl,
// calibration, suite). Inside a block, indentation decides: a line indented
// deeper than the entry above continues it, whatever word it starts with; any
// other line starts an entry and must begin with one of the block's keywords.
// A block left open is reported once, at the next block's header. `--` starts
// a comment (outside quotes). Comment lines above a block or a clause are kept
// and printed back by fmt.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "kc/lang.h"
#include "lang/clauses.h"
#include "lang/source.h"

namespace kc::lang {
namespace detail {
namespace {

const std::vector<std::string>& block_kinds() {
  static const std::vector<std::string> v = {"contract", "impl", "calibration", "suite"};
  return v;
}

struct Line {
  int number = 0;        ///< 1-based
  std::string code;      ///< the line without its comment, right-trimmed
  std::string comment;   ///< comment text after `--` (empty if none)
  bool has_comment = false;
  int indent = 0;        ///< column of the first non-space character (0-based)
};

Line lex_line(const std::string& raw, int number) {
  Line l;
  l.number = number;
  bool in_quote = false;
  std::size_t cut = raw.size();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == '"') in_quote = false;
      continue;
    }
    if (c == '"') in_quote = true;
    else if (c == '-' && i + 1 < raw.size() && raw[i + 1] == '-') {
      cut = i;
      l.has_comment = true;
      std::string comment = raw.substr(i + 2);
      if (!comment.empty() && comment[0] == ' ') comment.erase(0, 1);
      while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.back()))) comment.pop_back();
      l.comment = comment;
      break;
    }
  }
  l.code = raw.substr(0, cut);
  while (!l.code.empty() && std::isspace(static_cast<unsigned char>(l.code.back()))) l.code.pop_back();
  for (char& c : l.code)
    if (c == '\t') c = ' ';  // tabs count as one column, like the caret display
  std::size_t first = 0;
  while (first < l.code.size() && l.code[first] == ' ') ++first;
  l.indent = static_cast<int>(first);
  return l;
}

/// Net brace depth change of a code line (outside quotes), and where depth
/// first drops to `floor` if it does (npos otherwise).
int brace_delta(const std::string& code, int start_depth, std::size_t* close_at) {
  int depth = start_depth;
  bool in_quote = false;
  *close_at = std::string::npos;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == '"') in_quote = false;
      continue;
    }
    if (c == '"') in_quote = true;
    else if (c == '{') ++depth;
    else if (c == '}') {
      --depth;
      if (depth == 0 && *close_at == std::string::npos) {
        *close_at = i;
        return depth;
      }
    }
  }
  return depth;
}

class KcParser {
 public:
  KcParser(std::string_view text, std::string_view file, ParseResult* out)
      : file_(file), lines_src_(split_lines(text)), out_(out), d_(&out->diagnostics) {
    out_->document.file = std::string(file);
    int n = 0;
    for (const auto& raw : *lines_src_) lines_.push_back(lex_line(raw, ++n));
  }

  void run() {
    std::vector<std::string> pending_comment;
    std::size_t i = 0;
    while (i < lines_.size()) {
      const Line& l = lines_[i];
      if (trim(l.code).empty()) {
        if (l.has_comment) pending_comment.push_back(l.comment);
        else if (!pending_comment.empty()) pending_comment.push_back("");  // keep paragraph breaks
        ++i;
        continue;
      }
      while (!pending_comment.empty() && pending_comment.back().empty()) pending_comment.pop_back();
      i = block(i, join(pending_comment, "\n"));
      pending_comment.clear();
    }
    while (!pending_comment.empty() && pending_comment.back().empty()) pending_comment.pop_back();
    out_->document.trailing_comment = join(pending_comment, "\n");
  }

 private:
  Span span_of(const Line& l, std::size_t from, std::size_t to) const {
    Span s(file_, lines_src_);
    to = std::min(to, l.code.size());
    from = std::min(from, to);
    s.append(std::string_view(l.code).substr(from, to - from), l.number, static_cast<int>(from) + 1);
    return s;
  }

  /// Parses one block starting at line i; returns the index after it.
  std::size_t block(std::size_t i, const std::string& comment) {
    const Line& h = lines_[i];
    const Span hs = span_of(h, 0, h.code.size());
    Cursor c(h.code);
    const std::size_t kind_at = skip(h.code, 0);
    const std::string kind = c.ident();
    if (std::find(block_kinds().begin(), block_kinds().end(), kind) == block_kinds().end()) {
      d_.error(hs, kind_at, kind.empty() ? "expected a block" : "unknown block '" + kind + "'",
               "contract, impl, calibration or suite", nearest_word(kind, block_kinds()));
      return skip_block(i);
    }
    const std::size_t name_at = skip(h.code, c.pos());
    const std::string name = c.word();
    if (name.empty()) {
      d_.error(hs, name_at, "expected a name after '" + kind + "'", kind + " NAME {");
      return skip_block(i);
    }
    if (!c.accept('{')) {
      d_.error(hs, skip(h.code, c.pos()), "expected '{' after '" + kind + " " + name + "'", "'{' at the end of the line");
      return skip_block(i);
    }
    if (!c.at_end()) {
      d_.error(hs, c.pos(), "put the block's first entry on its own line", "a line break after '{'");
      return skip_block(i);
    }
    SourceLoc loc = hs.loc(name_at);

    // Gather the body lines up to the closing brace.
    struct Entry {
      std::string keyword;
      Span body;
      int indent;
      std::string comment;
      SourceLoc loc;
    };
    std::vector<Entry> entries;
    std::vector<std::string> pending;
    const std::vector<std::string>& keywords = keywords_for(kind);
    std::size_t j = i + 1;
    bool closed = false;
    int open_in_entry = 0;   // brackets the current entry has opened and not closed
    int skip_deeper = -1;    // after an unknown entry: its continuation lines are skipped
    for (; j < lines_.size(); ++j) {
      const Line& l = lines_[j];
      const std::string code = trim(l.code);
      if (code.empty()) {
        if (l.has_comment) pending.push_back(l.comment);
        continue;
      }
      // Another block's header at or left of this one's: this block was never
      // closed. Said once, here; the next block parses on its own.
      if (l.indent <= h.indent && starts_block(l.code)) break;
      // '}' closes the block unless it closes a bracket the current entry opened
      // (a per_precision {...} over several lines); at the header's column it always does.
      if (code[0] == '}' && (open_in_entry <= 0 || l.indent <= h.indent)) {
        closed = true;
        if (code.size() > 1) {
          d_.error(span_of(l, 0, l.code.size()), static_cast<std::size_t>(l.indent) + 1,
                   "unexpected text after the block's closing '}'", "a line break after '}'");
        }
        break;
      }
      if (skip_deeper >= 0 && l.indent > skip_deeper) continue;
      skip_deeper = -1;
      // Indentation decides: deeper than the entry above continues it (whatever
      // its first word); otherwise the line starts an entry with a keyword.
      if (!entries.empty() && l.indent > entries.back().indent) {
        entries.back().body.append(code, l.number, l.indent + 1);
        open_in_entry += bracket_delta(code);
        if (!pending.empty()) {  // comments inside a clause stay with it
          if (!entries.back().comment.empty()) entries.back().comment += "\n";
          entries.back().comment += join(pending, "\n");
          pending.clear();
        }
        continue;
      }
      const std::size_t word_at = static_cast<std::size_t>(l.indent);
      Cursor wc(l.code, word_at);
      const std::string first = wc.ident();
      if (std::find(keywords.begin(), keywords.end(), first) == keywords.end()) {
        const Span ls = span_of(l, 0, l.code.size());
        const std::string word = first.empty() ? code.substr(0, code.find(' ')) : first;
        std::string expected = "one of: " + join(keywords, ", ");
        if (!entries.empty()) expected += "; or indent the line further to continue '" + entries.back().keyword + "'";
        d_.error(ls, word_at, "unknown " + kind + " entry '" + word + "'", expected, nearest_word(word, keywords));
        skip_deeper = l.indent;
        open_in_entry = 0;
        continue;
      }
      Entry e;
      e.keyword = first;
      e.indent = l.indent;
      e.loc = span_of(l, 0, l.code.size()).loc(word_at);
      e.body = span_of(l, wc.pos(), l.code.size());
      e.comment = join(pending, "\n");
      pending.clear();
      open_in_entry = bracket_delta(e.body.text());
      entries.push_back(std::move(e));
    }
    if (!closed) {
      d_.error(hs, h.code.find('{'), "'" + kind + " " + name + "' is not closed",
               j < lines_.size() ? "'}' before the next block (line " + std::to_string(lines_[j].number) + ")"
                                 : "'}' to close the block");
    }
    std::string block_comment = comment;
    if (!pending.empty()) {  // comments before the closing brace: keep them with the block
      if (!block_comment.empty()) block_comment += "\n";
      block_comment += join(pending, "\n");
    }

    std::set<std::string> seen;
    for (const Entry& e : entries) {
      if (!seen.insert(e.keyword).second) {
        Span at(file_, lines_src_);
        at.append(e.keyword, e.loc.line, e.loc.column);
        d_.error(at, 0, "duplicate '" + e.keyword + "' in " + kind + " " + name, "each entry once per block");
      }
    }
    if (kind == "contract") {
      Contract ct;
      ct.id = name;
      ct.loc = loc;
      ct.comment = block_comment;
      if (!valid_id(name)) d_.error(hs, name_at, "malformed contract id '" + name + "'", "an id such as C-PRC-01 or KC-GEMM-01");
      for (const Entry& e : entries) {
        const auto& meta = contract_meta_keywords();
        if (e.keyword == "depends") {
          if (!e.comment.empty()) ct.comment += (ct.comment.empty() ? "" : "\n") + e.comment;
          parse_depends(e.body, &ct, d_);
          continue;
        }
        if (std::find(meta.begin(), meta.end(), e.keyword) != meta.end()) {
          if (!e.comment.empty()) ct.comment += (ct.comment.empty() ? "" : "\n") + e.comment;
          parse_meta(e.keyword, e.body, &ct, d_);
          continue;
        }
        parse_clause(e.keyword, e.body, &ct, d_);
        ClauseInfo* info = clause_info(&ct, e.keyword);
        info->loc = e.loc;
        info->comment = e.comment;
      }
      check_cross_clauses(&ct);
      for (const auto& other : out_->document.contracts)
        if (other.id == ct.id) d_.error(hs, name_at, "contract '" + name + "' is defined twice", "a unique id");
      out_->document.contracts.push_back(std::move(ct));
    } else if (kind == "impl") {
      Declaration decl;
      decl.name = name;
      std::string all_comments = block_comment;
      for (const Entry& e : entries) {
        parse_impl_key(e.keyword, e.body, &decl, d_);
        if (!e.comment.empty()) all_comments += (all_comments.empty() ? "" : "\n") + e.comment;
      }
      out_->document.impls.push_back(std::move(decl));
      out_->document.impl_locs.push_back(loc);
      out_->document.impl_comments.push_back(all_comments);
    } else if (kind == "calibration") {
      Calibration cal;
      cal.contract = name;
      cal.loc = loc;
      cal.comment = block_comment;
      for (const Entry& e : entries) {
        parse_calibration_key(e.keyword, e.body, &cal, d_);
        if (!e.comment.empty()) cal.comment += (cal.comment.empty() ? "" : "\n") + e.comment;
      }
      for (const char* role : {"baseline", "bad", "good"})
        if (!seen.count(role))
          d_.error(hs, name_at, "calibration " + name + " names no " + role + " impl",
                   "baseline, bad and good impl names");
      out_->document.calibrations.push_back(std::move(cal));
    } else {
      Suite s;
      s.name = name;
      s.loc = loc;
      s.comment = block_comment;
      for (const Entry& e : entries) {
        parse_suite_key(e.keyword, e.body, &s, d_);
        if (!e.comment.empty()) s.comment += (s.comment.empty() ? "" : "\n") + e.comment;
      }
      out_->document.suites.push_back(std::move(s));
    }
    return closed ? j + 1 : j;
  }

  /// A block header: `KIND NAME {` (what ends an unclosed block).
  static bool starts_block(const std::string& code) {
    Cursor c(code);
    const std::string w = c.ident();
    if (std::find(block_kinds().begin(), block_kinds().end(), w) == block_kinds().end()) return false;
    if (c.word().empty()) return false;
    return c.accept('{') && c.at_end();
  }

  /// Brackets opened minus brackets closed (outside quotes).
  static int bracket_delta(const std::string& code) {
    int depth = 0;
    bool in_quote = false;
    for (std::size_t k = 0; k < code.size(); ++k) {
      const char c = code[k];
      if (in_quote) {
        if (c == '\\') ++k;
        else if (c == '"') in_quote = false;
        continue;
      }
      if (c == '"') in_quote = true;
      else if (c == '(' || c == '[' || c == '{') ++depth;
      else if (c == ')' || c == ']' || c == '}') --depth;
    }
    return depth;
  }

  static bool valid_id(const std::string& id) { return valid_contract_id(id); }

  static ClauseInfo* clause_info(Contract* c, const std::string& keyword) {
    if (keyword == "scope") return &c->scope_info;
    if (keyword == "pre") return &c->pre_info;
    if (keyword == "post") return &c->post_info;
    if (keyword == "tolerance") return &c->tolerance_info;
    if (keyword == "reference") return &c->reference_info;
    if (keyword == "measure") return &c->measure_info;
    return &c->violation_info;
  }

  static const std::vector<std::string>& keywords_for(const std::string& kind) {
    static const std::vector<std::string> contract = [] {
      std::vector<std::string> v = contract_clause_keywords();
      for (const auto& m : contract_meta_keywords()) v.push_back(m);
      v.push_back("depends");
      return v;
    }();
    if (kind == "contract") return contract;
    if (kind == "impl") return impl_keywords();
    if (kind == "calibration") return calibration_keywords();
    return suite_keywords();
  }

  static std::size_t skip(const std::string& s, std::size_t from) {
    while (from < s.size() && s[from] == ' ') ++from;
    return from;
  }

  /// After a malformed header: skip to the line after the matching '}' (or
  /// to the next line that starts a block at column 1).
  std::size_t skip_block(std::size_t i) {
    int depth = 0;
    for (std::size_t j = i; j < lines_.size(); ++j) {
      const Line& l = lines_[j];
      if (j > i && l.indent == 0 && depth <= 0) {
        Cursor c(l.code);
        const std::string w = c.ident();
        if (std::find(block_kinds().begin(), block_kinds().end(), w) != block_kinds().end()) return j;
      }
      std::size_t close_at = std::string::npos;
      const int before = depth;
      depth = brace_delta(l.code, depth, &close_at);
      if (before > 0 && close_at != std::string::npos) return j + 1;
      if (depth < 0) depth = 0;
    }
    return lines_.size();
  }

  std::string file_;
  SourceLines lines_src_;
  std::vector<Line> lines_;
  ParseResult* out_;
  Diags d_;
};

}  // namespace
}  // namespace detail

ParseResult parse_kc(std::string_view text, std::string_view file_name) {
  ParseResult r;
  {
    // Bytes first: a NUL, a lone CR or invalid UTF-8 is named once, and
    // nothing it would garble is parsed.
    detail::Diags d(&r.diagnostics);
    r.document.file = std::string(file_name);
    if (detail::check_bytes(text, r.document.file, detail::split_lines(text), d, false) > 0) return r;
  }
  detail::KcParser p(text, file_name, &r);
  p.run();
  detail::cap_diagnostics(&r.diagnostics, detail::kMaxDiagnosticsPerFile, std::string(file_name));
  return r;
}

ParseResult parse_text(std::string_view text, std::string_view file_name) {
  auto ends_with = [&](std::string_view suffix) {
    return file_name.size() >= suffix.size() && file_name.substr(file_name.size() - suffix.size()) == suffix;
  };
  if (ends_with(".yaml") || ends_with(".yml")) return parse_yaml(text, file_name);
  return parse_kc(text, file_name);
}

ParseResult parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ParseResult r;
    r.document.file = path;
    Diagnostic d;
    d.loc.file = path;
    d.message = "cannot read file";
    d.expected = "a readable .kc or .yaml contract file";
    r.diagnostics.push_back(std::move(d));
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_text(ss.str(), path);
}

}  // namespace kc::lang
