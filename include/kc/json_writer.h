// kc — a small streaming JSON writer shared by every renderer (one escaping
// routine, one number format), so the trace, the JSON report and the case
// records agree byte for byte on how a value is spelt.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kc::report {

/// Length of the valid UTF-8 sequence that starts at s[i], or 0 when the byte
/// there does not start one (overlong forms, surrogates and code points above
/// U+10FFFF are invalid). ASCII bytes give 1.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

/// Appends s to out as a JSON string literal (with quotes). `"` and `\` are
/// escaped, control characters become \n, \t, ... or \u00XX, valid UTF-8 passes
/// through unchanged and each byte of an invalid UTF-8 sequence becomes \ufffd,
/// so the output is always valid JSON text.
void append_json_string(std::string& out, std::string_view s);

/// s as a JSON string literal (with quotes).
std::string json_string(std::string_view s);

/// Shortest decimal text that reads back as exactly v ("0.1", "65504", "1e-07").
/// Non-finite values give "inf", "-inf", "nan" (callers decide how to quote them).
std::string format_double(double v);

/// Writes one JSON value incrementally. Commas, colons and (when indent > 0)
/// newlines are placed by the writer; callers only say what comes next.
/// Misuse (a value where a key is needed, unbalanced containers) is a bug and
/// trips a KC_DCHECK.
class JsonWriter {
 public:
  /// indent = 0: compact, one line (the trace format); indent > 0: pretty.
  explicit JsonWriter(int indent = 0) : indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// Next member's name; must be inside an object.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  /// Finite doubles as numbers; inf, -inf and nan as the strings "inf", "-inf",
  /// "nan" (JSON has no non-finite numbers).
  JsonWriter& value(double d);
  template <std::integral I>
  requires(!std::same_as<I, bool>) JsonWriter& value(I v) {
    before_value();
    out_ += std::to_string(v);
    return *this;
  }
  JsonWriter& null();

  /// key(k).value(v) in one call.
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  /// The text so far (complete once every container is closed).
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }
  bool complete() const { return stack_.empty() && !out_.empty(); }

 private:
  struct Frame {
    bool object;
    bool empty = true;
  };
  void before_value();
  void newline(std::size_t depth);

  int indent_;
  std::string out_;
  std::vector<Frame> stack_;
  bool after_key_ = false;
};

}  // namespace kc::report
