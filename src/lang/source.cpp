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

std::size_t Diags::error_count() const {
  return static_cast<std::size_t>(std::count_if(out_->begin(), out_->end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::kError;
  }));
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
    if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
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
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace kc::lang::detail
