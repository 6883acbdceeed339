// kc — spans, cursor and diagnostic sink shared by the language front ends.
#include "lang/source.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kc::lang::detail {

SourceLines split_lines(std::string_view text) {
  auto lines = std::make_shared<std::vector<std::string>>();
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string line(text.substr(start, nl - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines->push_back(std::move(line));
    start = nl + 1;
  }
  return lines;
}

void Span::append(std::string_view piece, int line, int column) {
  if (!text_.empty()) text_ += ' ';
  pieces_.push_back({text_.size(), line, column});
  text_ += piece;
}

SourceLoc Span::loc(std::size_t offset) const {
  SourceLoc l;
  l.file = file_;
  if (pieces_.empty()) return l;
  offset = std::min(offset, text_.size());
  std::size_t i = 0;
  while (i + 1 < pieces_.size() && pieces_[i + 1].offset <= offset) ++i;
  const Piece& p = pieces_[i];
  l.line = p.line;
  l.column = p.column + static_cast<int>(offset >= p.offset ? offset - p.offset : 0);
  return l;
}

std::string Span::line_text(int line) const {
  if (!lines_ || line < 1 || static_cast<std::size_t>(line) > lines_->size()) return {};
  return (*lines_)[static_cast<std::size_t>(line) - 1];
}

Span Span::sub(std::size_t begin, std::size_t end) const {
  Span out(file_, lines_);
  begin = std::min(begin, text_.size());
  end = std::clamp(end, begin, text_.size());
  out.text_ = text_.substr(begin, end - begin);
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    const std::size_t p_begin = pieces_[i].offset;
    const std::size_t p_end = i + 1 < pieces_.size() ? pieces_[i + 1].offset : text_.size() + 1;
    if (p_end <= begin || p_begin >= end) continue;
    const std::size_t from = std::max(p_begin, begin);
    out.pieces_.push_back({from - begin, pieces_[i].line,
                           pieces_[i].column + static_cast<int>(from - p_begin)});
  }
  if (out.pieces_.empty()) {
    const SourceLoc l = loc(begin);
    out.pieces_.push_back({0, l.line, l.column});
  }
  return out;
}

Span Span::trimmed() const {
  std::size_t b = 0, e = text_.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text_[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text_[e - 1]))) --e;
  return sub(b, e);
}

void Diags::emit(Diagnostic::Severity s, const Span& span, std::size_t offset, std::string message,
                 std::string expected, std::string suggestion) {
  Diagnostic d;
  d.severity = s;
  d.loc = span.loc(offset);
  d.message = std::move(message);
  d.expected = std::move(expected);
  d.suggestion = std::move(suggestion);
  d.line_text = span.line_text(d.loc.line);
  out_->push_back(std::move(d));
}

void Diags::error(const Span& span, std::size_t offset, std::string message, std::string expected,
                  std::string suggestion) {
  emit(Diagnostic::Severity::kError, span, offset, std::move(message), std::move(expected),
       std::move(suggestion));
}

void Diags::warning(const Span& span, std::size_t offset, std::string message, std::string expected,
                    std::string suggestion) {
  emit(Diagnostic::Severity::kWarning, span, offset, std::move(message), std::move(expected),
       std::move(suggestion));
}

void Diags::note(const Span& span, std::size_t offset, std::string message, std::string expected,
                 std::string suggestion) {
  emit(Diagnostic::Severity::kNote, span, offset, std::move(message), std::move(expected), std::move(suggestion));
}

std::size_t Diags::error_count() const {
  return static_cast<std::size_t>(std::count_if(out_->begin(), out_->end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::kError;
  }));
}

bool valid_contract_id(std::string_view id) {
  // `--` starts a comment in the .kc form: an id holding it would not read back.
  if (id.empty() || !is_ident_start(id[0]) || id.find("--") != std::string_view::npos) return false;
  for (char c : id)
    if (!is_ident_char(c) && c != '-') return false;
  return id.back() != '-' && id.back() != '.';
}

bool valid_plain_name(std::string_view name) {
  if (name.empty() || name.find("--") != std::string_view::npos) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == ',' || c == '{' || c == '}' || c == '(' || c == ')' || c == '[' || c == ']' ||
        c == ';' || u == 0x7f)
      return false;
  }
  return true;
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }

bool Cursor::at_end() {
  skip_ws();
  return pos_ >= s_.size();
}

void Cursor::skip_ws() {
  while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
}

char Cursor::peek() {
  skip_ws();
  return pos_ < s_.size() ? s_[pos_] : '\0';
}

bool Cursor::accept(char c) {
  if (peek() != c) return false;
  ++pos_;
  return true;
}

bool Cursor::accept(std::string_view literal) {
  skip_ws();
  if (s_.compare(pos_, literal.size(), literal) != 0) return false;
  pos_ += literal.size();
  return true;
}

bool Cursor::accept_word(std::string_view word) {
  skip_ws();
  if (s_.compare(pos_, word.size(), word) != 0) return false;
  const std::size_t after = pos_ + word.size();
  if (after < s_.size() && is_ident_char(s_[after])) return false;
  pos_ = after;
  return true;
}

std::string Cursor::peek_ident() {
  const std::size_t save = pos_;
  std::string id = ident();
  pos_ = save;
  return id;
}

std::string Cursor::ident() {
  skip_ws();
  if (pos_ >= s_.size() || !is_ident_start(s_[pos_])) return {};
  const std::size_t b = pos_;
  while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
  // A trailing '.' is punctuation, not part of the name.
  while (pos_ > b + 1 && s_[pos_ - 1] == '.') --pos_;
  return s_.substr(b, pos_ - b);
}

std::string Cursor::word() {
  skip_ws();
  const std::size_t b = pos_;
  while (pos_ < s_.size()) {
    const char c = s_[pos_];
    if (is_ident_char(c) || c == '-' || c == '+' || c == '*') {
      // '-'/'+' only inside a word (C-PRC-01, 1e-5), never leading an operator run.
      if ((c == '-' || c == '+') && pos_ == b) break;
      ++pos_;
    } else {
      break;
    }
  }
  return s_.substr(b, pos_ - b);
}

bool Cursor::quoted(std::string* out, bool* unterminated) {
  *unterminated = false;
  if (peek() != '"') return false;
  ++pos_;
  out->clear();
  while (pos_ < s_.size() && s_[pos_] != '"') {
    if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
      ++pos_;
      // \n, \t, \r and \xHH: a string's line breaks and control characters,
      // escaped so it stays on one line (quote() writes them).
      const char e = s_[pos_++];
      auto hex = [](char h) {
        return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      };
      if (e == 'x' && pos_ + 1 < s_.size() && hex(s_[pos_]) >= 0 && hex(s_[pos_ + 1]) >= 0) {
        out->push_back(static_cast<char>(hex(s_[pos_]) * 16 + hex(s_[pos_ + 1])));
        pos_ += 2;
        continue;
      }
      out->push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
      continue;
    }
    out->push_back(s_[pos_++]);
  }
  if (pos_ >= s_.size()) {
    *unterminated = true;
    return true;
  }
  ++pos_;
  return true;
}

namespace {
// Walks text, calling at(i) for each top-level position (outside brackets and quotes).
template <typename F>
void walk_top_level(const std::string& text, F&& at) {
  int depth = 0;
  bool in_quote = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == '"') in_quote = false;
      continue;
    }
    if (c == '"') { in_quote = true; continue; }
    if (c == '(' || c == '{' || c == '[') { ++depth; continue; }
    if ((c == ')' || c == '}' || c == ']') && depth > 0) { --depth; continue; }
    if (depth == 0 && at(i)) return;
  }
}
}  // namespace

std::string Cursor::until_top_level(char stop) {
  const std::size_t b = pos_;
  std::size_t end = s_.size();
  const std::string tail = s_.substr(b);
  walk_top_level(tail, [&](std::size_t i) {
    if (tail[i] != stop) return false;
    end = b + i;
    return true;
  });
  pos_ = end;
  return s_.substr(b, end - b);
}

std::string Cursor::rest() {
  std::string r = s_.substr(std::min(pos_, s_.size()));
  pos_ = s_.size();
  return r;
}

std::vector<std::pair<std::size_t, std::size_t>> split_top_level(const std::string& text, char sep) {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  std::size_t start = 0;
  walk_top_level(text, [&](std::size_t i) {
    if (text[i] == sep) {
      parts.emplace_back(start, i);
      start = i + 1;
    }
    return false;
  });
  parts.emplace_back(start, text.size());
  return parts;
}

std::vector<std::pair<std::size_t, std::size_t>> split_top_level_word(const std::string& text,
                                                                      std::string_view word) {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  std::size_t start = 0;
  walk_top_level(text, [&](std::size_t i) {
    if (text.compare(i, word.size(), word) != 0) return false;
    const bool left_ok = i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1]));
    const std::size_t after = i + word.size();
    const bool right_ok = after >= text.size() || std::isspace(static_cast<unsigned char>(text[after]));
    if (left_ok && right_ok) {
      parts.emplace_back(start, i);
      start = after;
    }
    return false;
  });
  parts.emplace_back(start, text.size());
  return parts;
}

namespace {
/// Length of the valid UTF-8 sequence at text[i], or 0 if it is not one.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}
}  // namespace

std::size_t check_bytes(std::string_view text, const std::string& file, const SourceLines& lines, Diags& d,
                        bool tabs_are_errors) {
  std::size_t errors = 0;
  bool seen_nul = false, seen_cr = false, seen_utf8 = false, seen_tab = false;
  int line = 1, column = 1;
  bool at_indent = true;
  auto report = [&](std::string message, std::string expected) {
    Span s(file, lines);
    s.append("", line, column);
    d.error(s, 0, std::move(message), std::move(expected));
    ++errors;
  };
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = 1;
      at_indent = true;
      ++i;
      continue;
    }
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
        continue;
      }
      if (!seen_cr) {
        seen_cr = true;
        report("carriage return without a line feed (CR-only line endings)",
               "lines ending in LF or CR LF; convert the file (e.g. tr '\\r' '\\n')");
      }
      ++i;
      ++column;
      continue;
    }
    if (c == '\0') {
      if (!seen_nul) {
        seen_nul = true;
        report("NUL byte in the text", "a text file without NUL bytes");
      }
      ++i;
      ++column;
      continue;
    }
    if (c == '\t' && tabs_are_errors && at_indent) {
      if (!seen_tab) {
        seen_tab = true;
        report("tab in indentation (YAML indents with spaces only)", "spaces instead of the tab");
      }
    }
    if (c != ' ' && c != '\t') at_indent = false;
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      if (!seen_utf8) {
        seen_utf8 = true;
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
        report(std::string("invalid UTF-8 (byte ") + hex + ")", "text encoded as UTF-8");
      }
      ++i;
      ++column;
      continue;
    }
    i += n;
    column += static_cast<int>(n);  // byte columns, as everywhere else
  }
  return errors;
}

bool check_brackets(const Span& span, Diags& d, std::string_view what) {
  const std::string& t = span.text();
  std::vector<std::size_t> open;
  bool in_quote = false;
  std::size_t quote_at = 0;
  auto partner = [](char c) { return c == ')' ? '(' : c == ']' ? '[' : '{'; };
  auto closer = [](char c) { return c == '(' ? ')' : c == '[' ? ']' : '}'; };
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == '"') in_quote = false;
      continue;
    }
    if (c == '"') {
      in_quote = true;
      quote_at = i;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(i);
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty()) {
        d.error(span, i, std::string("unmatched '") + c + "' in the " + std::string(what) + " clause",
                std::string("a '") + partner(c) + "' before it, or no '" + c + "'");
        return false;
      }
      const char o = t[open.back()];
      if (o != partner(c)) {
        d.error(span, i, std::string("'") + c + "' closes the '" + o + "' opened before it",
                std::string("'") + closer(o) + "'");
        return false;
      }
      open.pop_back();
    }
  }
  if (in_quote) {
    d.error(span, quote_at, "unterminated string in the " + std::string(what) + " clause", "a closing '\"'");
    return false;
  }
  if (!open.empty()) {
    const char o = t[open.back()];
    d.error(span, open.back(), std::string("'") + o + "' is never closed in the " + std::string(what) + " clause",
            std::string("'") + closer(o) + "' before the clause ends");
    return false;
  }
  return true;
}

void cap_diagnostics(std::vector<Diagnostic>* diagnostics, std::size_t limit, const std::string& file) {
  if (diagnostics->size() <= limit) return;
  const std::size_t more = diagnostics->size() - limit;
  std::size_t more_errors = 0;
  for (std::size_t i = limit; i < diagnostics->size(); ++i)
    more_errors += (*diagnostics)[i].severity == Diagnostic::Severity::kError ? 1 : 0;
  diagnostics->resize(limit);
  Diagnostic n;
  // An error stays an error: the note keeps the file failing when what was left out was.
  n.severity = more_errors ? Diagnostic::Severity::kError : Diagnostic::Severity::kNote;
  n.loc.file = file;
  n.message = std::to_string(more) + " more diagnostic" + (more == 1 ? "" : "s") + " in this file not shown (" +
              std::to_string(more_errors) + " of them errors)";
  n.expected = "the problems above fixed first";
  diagnostics->push_back(std::move(n));
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool parse_number(std::string_view text, double* value) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (*first == '+') ++first;
  if (first == last) return false;
  auto [ptr, ec] = std::from_chars(first, last, *value);
  return ec == std::errc() && ptr == last;
}

std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace kc::lang::detail
