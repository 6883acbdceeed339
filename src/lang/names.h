// kc — internal: every name a contract uses is checked against the table the
// engine acts on (kc/vocabulary.h, kc/signature.h, the op classes). A clause
// that has the shape of an executable form but names an unknown word is an
// error at the word (file:line:col, caret, nearest known word), never a silent
// fall back to prose: prose names nothing, so nothing in it can be misspelt.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kc/model.h"
#include "lang/source.h"

namespace kc::lang::detail {

/// True for an "unknown <what> '<word>'" error that has a nearest known word:
/// a typo, reported as an error even where a malformed clause would otherwise
/// be kept as prose. An unknown word near no known word makes the clause prose.
bool is_unknown_name(const Diagnostic& d);

/// Reports "unknown WHAT 'word'" at `at` with the known words and the nearest one.
void unknown_name(Diags& d, const Span& sp, std::size_t at, std::string_view what, const std::string& word,
                  const std::vector<std::string>& known);

/// Checks the names of a clause that parsed as an executable form (probe,
/// aggregate, metric, observed quantity, declaration keys and values,
/// signatures). Reports each unknown one to `d`; returns false if any.
bool check_clause_names(std::string_view keyword, const Span& body, const Contract& c, Diags& d);

/// Checks a meta line's value (`class precision`); false (reported) if unknown.
bool check_meta_name(std::string_view keyword, const Span& body, const std::string& value, Diags& d);

}  // namespace kc::lang::detail
