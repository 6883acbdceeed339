// kc — the contract language front ends: .kc text and YAML, diagnostics,
// canonical printing (fmt) and lint.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kc/model.h"
#include "kc/status.h"

namespace kc::lang {

struct Diagnostic {
  enum class Severity { kError, kWarning, kNote };
  Severity severity = Severity::kError;
  SourceLoc loc;
  std::string message;     ///< "unknown op class 'matmull'"
  std::string expected;    ///< "one of: matmul, reduction, ..." (may be empty)
  std::string suggestion;  ///< "matmul" — nearest known word (may be empty)
  std::string line_text;   ///< the offending source line, for the caret display

  /// file:line:col: error: message
  ///   <line>
  ///       ^
  ///   expected ...; did you mean 'x'?
  std::string render() const;
};

struct ParseResult {
  Document document;
  std::vector<Diagnostic> diagnostics;
  bool has_errors() const;
};

enum class Format { kKc, kYaml };

/// Parses .kc text. Never throws, never crashes: any input yields a result
/// whose diagnostics say what went wrong.
ParseResult parse_kc(std::string_view text, std::string_view file_name);
/// Parses the YAML form (unknown keys are errors).
ParseResult parse_yaml(std::string_view text, std::string_view file_name);
/// Chooses the front end by extension (.yaml/.yml -> YAML, else .kc).
ParseResult parse_text(std::string_view text, std::string_view file_name);
/// Reads and parses a file; a read failure is a diagnostic, not a crash.
ParseResult parse_file(const std::string& path);

/// Canonical printing. print(parse(print(doc))) == print(doc) for both formats,
/// and converting .kc -> YAML -> .kc is lossless.
std::string print_kc(const Document& doc);
std::string print_yaml(const Document& doc);
std::string print_contract_kc(const Contract& contract);
std::string print_expr(const Expr& expr);

/// Evaluates a tolerance expression; unknown variables are an error.
Result<double> eval_expr(const Expr& expr, const ExprEnv& env);
/// Parses a standalone expression ("N * eps(FP32) * max|x|").
Result<Expr> parse_expr(std::string_view text);

/// One lint finding per clause that is not executable (or other problem).
struct LintFinding {
  std::string contract;  ///< id
  std::string clause;    ///< scope | pre | post | tolerance | reference | measure | violation
  SourceLoc loc;
  std::string message;   ///< what would make it executable
};
/// Clause-by-clause gaps of every contract in the document (empty = all executable).
std::vector<LintFinding> lint(const Document& doc);

/// Checks the `depends` lines of a set of contracts: every id names a contract
/// of the set (else an error with the nearest id as suggestion), and the graph
/// is acyclic (else one error per cycle).
std::vector<Diagnostic> resolve_depends(const std::vector<Contract>& contracts);

/// The op words the parser validates `scope` and `op` against (also used for
/// suggestions): the op registry's names (kc/op.h builtin_ops, with any op
/// added by register_op) and the scope classes its ops name (Op::scope_classes).
const std::vector<std::string>& known_op_classes();
const std::vector<std::string>& known_signatures();

/// Why `compute failing_fraction METRIC; pass if <= p` cannot be enforced in
/// this contract as written (empty when it can): the fraction is counted over a
/// config's random samples, each judged by an oracle comparison of the outputs,
/// so it needs the sample protocol, a post that compares outputs and an allowed
/// fraction in [0, 1]. Lint and the engine both read it.
std::string sample_fraction_gap(const Contract& c);

/// Levenshtein-nearest word within a small distance; empty if none is close.
std::string nearest_word(std::string_view word, const std::vector<std::string>& vocabulary);

}  // namespace kc::lang
