// kc — evidence out: the hash-chained trace and the report formats.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kc/engine.h"
#include "kc/status.h"

namespace kc::report {

/// SHA-256 of bytes, lower-case hex.
std::string sha256_hex(const std::string& bytes);

/// One JSON object (no trailing newline) for a verdict record, without the chain fields.
std::string case_json(const engine::CaseResult& c);

/// Appends records to a JSON-lines trace. Each line carries "prev" (the hash of
/// the previous line, or 64 zeros) and "hash" = sha256(prev + record body), so
/// editing or dropping any earlier line breaks the chain. Each record is
/// flushed and fsync'd as it is written: a crash loses nothing already recorded.
class TraceWriter {
 public:
  /// Opens (creating if needed) and reads the last hash of an existing trace.
  static Result<TraceWriter> open(const std::string& path);
  Status append(const engine::CaseResult& c);
  /// Appends any one-line JSON object (e.g. a ladder evidence record) to the chain.
  Status append_body(const std::string& body);
  const std::string& last_hash() const { return last_hash_; }

 private:
  std::string path_;
  std::string last_hash_;
};

/// One record of a trace: its body (case_json's text) and its hash.
struct TraceRecord {
  std::string body;
  std::string hash;
};
/// Every record of a trace whose chain holds, in order (an error names the
/// first line that breaks it). With cut_note (--resume), a last line without
/// its newline, the mark of a write killed part-way, is cut off the file
/// first and *cut_note says so; without it such a line is an error.
Result<std::vector<TraceRecord>> read_trace_records(const std::string& path, std::string* cut_note);

/// A verdict record read back from its JSON body (case_json's form): every
/// field case_json writes, so reports rendered from it equal the original's.
/// `where` prefixes errors ("trace.jsonl:12").
Result<engine::CaseResult> case_from_json(const std::string& body, const std::string& where);

/// Verifies a trace's chain; returns the number of records or the first broken line.
Result<std::size_t> verify_trace(const std::string& path);

/// Report renderers.
std::string render_table(const engine::CheckResult& result, bool color);
std::string render_json(const engine::CheckResult& result);
/// What a JUnit report holds beyond the verdicts.
struct JunitOptions {
  /// not_applicable pairs (an impl that does not implement the contract's op,
  /// precision or shape class) as skipped testcases. Off by default: a CI
  /// dashboard then lists only the pairs that were meant to run, and each
  /// suite's `kc.not_applicable` property says how many were left out.
  bool include_not_applicable = false;
};
/// JUnit XML: one <testsuite> per contract, one <testcase> per impl; each
/// suite's <properties> carry junit_properties(result) (seed, kc version and
/// commit, library versions).
std::string render_junit(const engine::CheckResult& result, const JunitOptions& options = {});
/// The run's provenance as name, value pairs, in this order: kc.seed (the
/// cases' base seed(s)), kc.version, kc.commit, then kc.library.<backend>
/// (its version) for each backend the run loaded.
std::vector<std::pair<std::string, std::string>> junit_properties(const engine::CheckResult& result);
std::string render_markdown(const engine::CheckResult& result);
/// One self-contained HTML file (inline CSS, one inline script, inline SVG; a
/// Content-Security-Policy that allows nothing else): summary, violations and
/// near misses, a matrix per op, bound-ratio plots, each violation's evidence
/// and repro, grades, backends; filters settable from the URL (docs/grading.md).
std::string render_html(const engine::CheckResult& result);

/// Grade of an impl over a suite (documented in docs/grading.md).
struct ImplGrade {
  std::string impl;
  std::string backend;
  int conforming = 0, violations = 0, not_applicable = 0, errors = 0, other = 0;
  std::string level;  ///< violating | error | untested | incomplete | conforming (docs/grading.md)
  /// What the impl has shown, in steps (docs/grading.md "Tiers"): declared |
  /// numeric | robust. ("exhaustive" is the ladder's L4: `kc ladder`, `kc status`.)
  std::string tier;
  std::string summary;
};
std::vector<ImplGrade> grade(const engine::CheckResult& result);
/// Roll-up of one backend: the worst level of its impls (docs/grading.md).
struct BackendGrade {
  std::string backend;
  std::string level;
  int impls = 0;
  std::string summary;  ///< "3 impls: 1 violating, 2 conforming"
};
std::vector<BackendGrade> grade_backends(const std::vector<ImplGrade>& impls);
/// Contracts × impls matrix, one cell per verdict (and signature).
std::string render_matrix(const engine::CheckResult& result, bool color);

/// Writes result as fmt ("table" | "json" | "junit" | "md") to path.
Status write_file(const std::string& path, const std::string& content);

}  // namespace kc::report
