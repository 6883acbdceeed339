// kc — internal to the language front ends: a clause body with its source
// positions, a character cursor over it, and the diagnostic sink.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kc/lang.h"

namespace kc::lang::detail {

/// The source lines of one file, shared by every span cut from it (for carets).
using SourceLines = std::shared_ptr<const std::vector<std::string>>;

SourceLines split_lines(std::string_view text);

/// Text gathered from one or more source lines, joined by single spaces,
/// that still knows where each character came from.
class Span {
 public:
  struct Piece {
    std::size_t offset;  ///< where this piece starts in text()
    int line;            ///< 1-based
    int column;          ///< 1-based column of text()[offset]
  };
  Span() = default;
  Span(std::string file, SourceLines lines) : file_(std::move(file)), lines_(std::move(lines)) {}

  /// Appends a piece of source (line:column is where `piece` starts); pieces
  /// after the first are separated by one space.
  void append(std::string_view piece, int line, int column);

  const std::string& text() const { return text_; }
  const std::string& file() const { return file_; }
  SourceLoc loc(std::size_t offset) const;
  std::string line_text(int line) const;
  /// The characters [begin, end) with their positions.
  Span sub(std::size_t begin, std::size_t end) const;
  /// Leading and trailing whitespace removed.
  Span trimmed() const;

 private:
  std::string file_;
  SourceLines lines_;
  std::string text_;
  std::vector<Piece> pieces_;
};

/// Collects diagnostics for one parse.
class Diags {
 public:
  explicit Diags(std::vector<Diagnostic>* out) : out_(out) {}
  void error(const Span& span, std::size_t offset, std::string message, std::string expected = {},
             std::string suggestion = {});
  void warning(const Span& span, std::size_t offset, std::string message, std::string expected = {},
               std::string suggestion = {});
  void add(Diagnostic d) { out_->push_back(std::move(d)); }
  void note(const Span& span, std::size_t offset, std::string message, std::string expected = {},
            std::string suggestion = {});
  std::size_t error_count() const;

 private:
  void emit(Diagnostic::Severity s, const Span& span, std::size_t offset, std::string message,
            std::string expected, std::string suggestion);
  std::vector<Diagnostic>* out_;
};

/// A cursor over a span's text with the small lexical helpers the clause
/// parsers share. Identifiers are [A-Za-z_][A-Za-z0-9_.]*.
class Cursor {
 public:
  explicit Cursor(const std::string& text, std::size_t pos = 0) : s_(text), pos_(pos) {}
  std::size_t pos() const { return pos_; }
  void set_pos(std::size_t p) { pos_ = p; }
  bool at_end();  ///< after skipping whitespace
  void skip_ws();
  char peek();    ///< next non-space char, or 0
  bool accept(char c);
  bool accept(std::string_view literal);  ///< exact characters (after whitespace)
  /// Accepts `word` as a whole identifier (case-sensitive).
  bool accept_word(std::string_view word);
  std::string peek_ident();
  std::string ident();  ///< empty if none here
  /// A "word": identifier or number-like run or hyphenated id (C-PRC-01, 1e-5, 2.0.1).
  std::string word();
  /// A double-quoted string (escapes \" and \\); nullopt-like: returns false if not at a quote.
  bool quoted(std::string* out, bool* unterminated);
  /// Text up to (not including) the first top-level `stop` char (outside (),{},[] and quotes),
  /// or to the end. Advances past the text but not past the stop char.
  std::string until_top_level(char stop);
  std::string rest();
  const std::string& text() const { return s_; }

 private:
  const std::string& s_;
  std::size_t pos_;
};

/// Splits `text` at top-level occurrences of `sep` (outside brackets and
/// quotes); returns [begin, end) offsets of each part.
std::vector<std::pair<std::size_t, std::size_t>> split_top_level(const std::string& text, char sep);
/// Splits at top-level whole-word occurrences of `word` ("and").
std::vector<std::pair<std::size_t, std::size_t>> split_top_level_word(const std::string& text,
                                                                      std::string_view word);

/// Byte-level checks every front end runs before parsing: NUL bytes, CR-only
/// line endings, invalid UTF-8 and (YAML, `tabs_are_errors`) tabs in
/// indentation are errors at file:line:col. Returns the number of errors.
std::size_t check_bytes(std::string_view text, const std::string& file, const SourceLines& lines, Diags& d,
                        bool tabs_are_errors);
/// Brackets and quotes of a clause body: every '(' '[' '{' closed by its
/// partner, no stray closer, no unterminated '"'. Reports the first problem
/// (an error at its position) and returns false.
bool check_brackets(const Span& span, Diags& d, std::string_view what);
/// Keeps the first `limit` diagnostics of a file and replaces the rest with
/// one note saying how many were left out.
void cap_diagnostics(std::vector<Diagnostic>* diagnostics, std::size_t limit, const std::string& file);
/// The most diagnostics one file reports.
inline constexpr std::size_t kMaxDiagnosticsPerFile = 50;

std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view s);
/// A double number with its source spelling, or nullopt.
bool parse_number(std::string_view text, double* value);
/// Formats a number the shortest way that reads back exactly.
std::string format_number(double v);
/// Quotes a string for .kc output.
std::string quote(std::string_view s);
/// A contract id: an identifier start, then identifier characters or '-'
/// (C-PRC-01, KC-GEMM-01); not ending in '-' or '.'.
bool valid_contract_id(std::string_view id);
/// A name that reads back as one word after `impl`, `suite` or in a list
/// (no spaces, quotes, braces, commas or comment dashes).
bool valid_plain_name(std::string_view name);
bool is_ident_start(char c);
bool is_ident_char(char c);

}  // namespace kc::lang::detail
