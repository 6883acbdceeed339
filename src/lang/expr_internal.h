// kc — internal: expression parsing with an error offset for diagnostics.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kc/model.h"

namespace kc::lang::detail {

struct ExprError {
  std::size_t offset = 0;
  std::string message;
  std::string expected;
};

/// Parses the whole of `text` as an expression. On failure fills *err (offset into text).
/// A trailing `* |A||B|` magnitude term is not consumed (the caller splits it off first).
bool parse_expr_text(const std::string& text, Expr* out, ExprError* err);
/// Parses the longest expression at the start of `text`; *end = where it stopped.
bool parse_expr_prefix(const std::string& text, Expr* out, ExprError* err, std::size_t* end);
/// Function names eval_expr knows.
const std::vector<std::string>& known_functions();
/// Names of every function called in `e`.
void collect_calls(const Expr& e, std::vector<std::string>* names);

}  // namespace kc::lang::detail
