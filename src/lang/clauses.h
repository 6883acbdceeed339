// kc — internal: the clause parsers and printers both front ends share.
//
// A clause body arrives as a Span (text + source positions). Each parser fills
// the typed model and the clause's ClauseInfo. A body that does not start with
// one of the clause's structured forms is prose: kept verbatim, with a gap that
// says what would make it executable. A body that starts like a structured form
// but is malformed is an error (with position, expectation and suggestion).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kc/declaration.h"
#include "kc/model.h"
#include "lang/source.h"

namespace kc::lang::detail {

/// The clause keywords of a contract block, in canonical order.
const std::vector<std::string>& contract_clause_keywords();
/// Meta keywords of a contract block (title, version, class).
const std::vector<std::string>& contract_meta_keywords();

/// Parses one clause (`keyword` is one of contract_clause_keywords()).
void parse_clause(std::string_view keyword, const Span& body, Contract* c, Diags& d);
/// After every clause is parsed: a clause whose meaning depends on another
/// (measure's failing_fraction on post and reference) gets its gap when the
/// engine cannot enforce it as written, so lint and the engine agree.
void check_cross_clauses(Contract* c);
/// Parses a meta line body (title "...", version 1.2, class precision).
void parse_meta(std::string_view keyword, const Span& body, Contract* c, Diags& d);

/// Parses a `depends A, B` body into c->depends (ids checked for form only).
void parse_depends(const Span& body, Contract* c, Diags& d);

/// The canonical text of a clause body (what follows the keyword), one
/// string per output line (continuations are indented by the printer).
std::vector<std::string> print_clause(std::string_view keyword, const Contract& c);
/// Canonical text of one `pre` conjunct.
std::string print_predicate(const Predicate& p);
std::string print_tolerance(const Tolerance& t);

/// The canonical .kc form of a contract without comments (what content_hash hashes).
std::string contract_text_for_hash(const Contract& c);

/// impl / calibration / suite block keys.
const std::vector<std::string>& impl_keywords();
const std::vector<std::string>& calibration_keywords();
const std::vector<std::string>& suite_keywords();
void parse_impl_key(std::string_view keyword, const Span& body, Declaration* decl, Diags& d);
void parse_calibration_key(std::string_view keyword, const Span& body, Calibration* cal, Diags& d);
void parse_suite_key(std::string_view keyword, const Span& body, Suite* suite, Diags& d);
/// Canonical key/value lines of an impl block (keys with default values omitted).
std::vector<std::pair<std::string, std::string>> print_impl(const Declaration& decl);

/// A comma-separated list of words, each trimmed (empty items are reported).
std::vector<std::string> parse_list(const Span& body, Diags& d, std::string_view what);
/// A value that may be quoted ("...") or bare.
std::string parse_text_value(const Span& body, Diags& d);

}  // namespace kc::lang::detail
