// kc — the typed model of a contract's eight parts (docs/language.md).
//
// Both front ends (.kc text and YAML) produce this model; fmt prints it back;
// the engine runs it. Every clause keeps its source text and location, so a
// contract whose clauses are prose still parses (as *descriptive*); a clause
// whose kind is kProse is what keeps a contract from being *executable*.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kc/declaration.h"
#include "kc/dtype.h"

namespace kc {

struct SourceLoc {
  std::string file;
  int line = 0;    ///< 1-based; 0 = unknown
  int column = 0;  ///< 1-based
};

// ---------------------------------------------------------------------------
// Expressions: tolerance numbers are expressions over problem quantities.
//   variables: N, K, M, n (problem sizes), any shape/config parameter,
//              max|x|, sum|x| (input magnitudes)
//   calls:     eps(P), u(P), gamma(n, P), sqrt(x), log2(x), abs(x), min, max
//   P is a precision name (FP32, FP16, ...) or the variable P (the config's precision).
// ---------------------------------------------------------------------------
struct Expr {
  enum class Kind { kNumber, kVar, kCall, kBinary, kNeg };
  Kind kind = Kind::kNumber;
  double number = 0;         ///< kNumber
  std::string name;          ///< kVar (variable name) or kCall (function name)
  char op = 0;               ///< kBinary: + - * / ^
  std::vector<Expr> args;    ///< kCall arguments; kBinary {lhs, rhs}; kNeg {operand}
  std::string text;          ///< source spelling of a number ("1e-5"), kept for fmt

  static Expr num(double v, std::string text = {});
  static Expr var(std::string name);
  static Expr call(std::string fn, std::vector<Expr> args);
  static Expr binary(char op, Expr lhs, Expr rhs);
};

/// Values an expression is evaluated against.
struct ExprEnv {
  std::map<std::string, double> vars;   ///< N, K, M, max|x|, sum|x|, ...
  std::optional<DType> precision;       ///< what P means
  std::optional<DType> accumulator;     ///< what ACC means: the impl's declared accumulator
};

// ---------------------------------------------------------------------------
// The eight parts.
// ---------------------------------------------------------------------------

/// One `pre` conjunct.
struct Predicate {
  enum class Kind {
    kPrecision,   ///< precision(A, B) in {FP32, FP16}
    kShape,       ///< shape(A) = (M, K)
    kValueRange,  ///< value_range(A, B) finite | bounded X | in [a, b] | normal(mu, sigma)
    kStack,       ///< stack = NAME
    kFlag,        ///< flag(F) = v
    kVersion,     ///< version >= v
    kDeclared,    ///< declared KEY = VALUE  (or declared KEY in {V1, V2})
    kParamIn,     ///< NAME in {v1, v2, ...}   — a config axis (sizes, schedules, ...)
    kProse,       ///< English; keeps the contract descriptive
  };
  enum class Range { kFinite, kBounded, kInterval, kNormal };

  Kind kind = Kind::kProse;
  std::vector<std::string> tensors;  ///< precision / shape / value_range subjects
  std::vector<DType> dtypes;         ///< kPrecision
  std::vector<std::string> dims;     ///< kShape: dimension names or integer literals
  /// kShape `... with D in {64, 128}`: a dimension restricted to a set of
  /// sizes (a config whose D is outside it does not meet the precondition).
  std::vector<std::pair<std::string, std::vector<std::string>>> dim_sets;
  Range range = Range::kFinite;      ///< kValueRange
  double lo = 0, hi = 0;             ///< kValueRange: interval, bound (hi), normal (lo=mu, hi=sigma)
  std::string key;                   ///< kStack: "stack"; kFlag: flag name; kVersion: "version";
                                     ///< kDeclared: declaration key; kParamIn: parameter name
  std::string cmp;                   ///< kVersion: ">=", ...; kDeclared: "=" or "in"
  std::vector<std::string> values;   ///< kStack/kFlag/kVersion/kDeclared value(s); kParamIn set
  std::string text;                  ///< source text of this conjunct
  SourceLoc loc;
};

/// `post`
struct Postcondition {
  enum class Kind {
    kElementwiseClose,  ///< output O satisfies elementwise_close(O, ref(O))
    kClose,             ///< output O satisfies close(O, ref(O))   (normwise)
    kDeclaredPolicy,    ///< declared_policy KEY in {V1, ...}: behaviour must match the impl's declaration
    kBitwiseIdentical,  ///< bitwise_identical across N invocations
    kRaise,             ///< raise EXC
    kProse,
  };
  Kind kind = Kind::kProse;
  std::string output;               ///< O
  /// The arguments of `ref(...)`: empty for `ref(O)` (the reference's value of
  /// O); the op's input tensors for `ref(Q, K, V)` (the reference applied to them).
  std::vector<std::string> ref_args;
  std::string policy;               ///< kDeclaredPolicy key (nan, denormal, oob, determinism, accumulator)
  std::vector<std::string> allowed; ///< kDeclaredPolicy allowed values
  std::int64_t invocations = 0;     ///< kBitwiseIdentical
  std::string exception;            ///< kRaise
  /// `... elementwise_close(O, ref(O)) or raise E`: on a config the impl does
  /// not support, raising E is an accepted outcome (computes right or refuses).
  std::string or_raise;
};

struct PrecisionTolerance;

/// `tolerance`
struct Tolerance {
  enum class Kind {
    kAbsolute,      ///< absolute E
    kRelative,      ///< relative E
    kUlp,           ///< ulp E  (in the output format)
    kElementwise,   ///< elementwise absolute E and relative E  (|d| <= abs + rel*|ref|)
    kPerPrecision,  ///< per_precision {FP32: tol, FP16: tol}
    kBound,         ///< bound E * |A||B|   — componentwise error bound, pass iff max r <= 1
    kNone,          ///< none (exact / policy contracts)
    kProse,
  };
  Kind kind = Kind::kNone;
  Expr value;                  ///< absolute / relative / ulp / bound factor
  Expr abs, rel;               ///< kElementwise
  std::vector<PrecisionTolerance> per_precision;  ///< kPerPrecision, in source order
  std::string magnitude;       ///< kBound: the op's magnitude term, e.g. "|A||B|", "|x|"
  /// `ulp E signed`: +0 and -0 are different results (a zero of the wrong
  /// sign fails); plain `ulp E` counts them as equal, as IEEE comparison does.
  bool signed_zeros = false;
};

/// One `per_precision` entry.
struct PrecisionTolerance {
  DType dtype = DType::kF32;
  Tolerance tolerance;
};

/// `reference`
struct Reference {
  enum class Kind {
    kHigherPrecision,  ///< higher_precision FP64 [with k = v, ...]
    kAlternateStack,   ///< alternate_stack NAME
    kAlgebraic,        ///< algebraic PROPERTY
    kStableAlgorithm,  ///< stable_algorithm NAME
    kSpec,             ///< spec IEEE754-2019
    kProse,
  };
  Kind kind = Kind::kProse;
  DType precision = DType::kF64;
  std::vector<std::pair<std::string, std::string>> with;  ///< options in source order
  std::string name;  ///< stack / property / algorithm / spec name
};

/// What `compute AGG` aggregates: a statistic of a metric.
struct Aggregate {
  std::string stat = "max";    ///< max | p99 | mean | count
  std::string metric;          ///< abs_error | rel_error | ulp | bound_ratio | normwise |
                               ///< pairwise_rel | mismatches | ...
};

/// `pass if CMP EXPR`
struct PassIf {
  std::string cmp;  ///< "<=", "<", "==", ">=", ">"
  Expr bound;
};

/// `measure`
/// `time latency across SIZE + N [beyond F]` (or `SIZE = N`): each config's
/// call is timed against the same call with SIZE moved past a boundary, and
/// a path change is inferred from the time per unit of work
/// (kc/latency_jump.h). F is the factor, stated by the contract, that a
/// change of time per unit of work must reach to count against a declared
/// path (1: any change beyond the measured noise).
struct LatencyAcross {
  std::string size;       ///< a size of the op: K
  bool absolute = false;  ///< `=`: value is the outside size; `+`: added to the config's
  std::int64_t value = 0;
  double beyond = 1;
  std::string to_string() const;  ///< "K + 1 beyond 2"
};

struct Protocol {
  enum class Kind {
    kSample,     ///< sample N random inputs per config; compute AGG; pass if BOUND
    kSweep,      ///< sweep PARAM in {v...}; compute AGG; pass if BOUND
    kInject,     ///< inject ANOMALY[(args)] [at density d]; observe WHAT
    kEnumerate,  ///< enumerate SPACE [{v...}]; compute AGG; pass if BOUND
    kProse,
  };
  Kind kind = Kind::kProse;
  std::int64_t count = 0;              ///< kSample: N
  std::string per = "config";          ///< kSample: what N is per
  std::string param;                   ///< kSweep parameter / kEnumerate space name
  std::vector<std::string> values;     ///< kSweep / kEnumerate values (may be empty: "all")
  std::string anomaly;                 ///< kInject: nan | inf | neg_inf | subnormal | saturation |
                                       ///< mantissa | oob | ...
  std::vector<std::string> anomaly_args;
  std::optional<double> density;       ///< kInject: fraction of elements
  /// kInject `at varied positions`: the positions are drawn afresh for each
  /// sample (what every probe does; kept so fmt prints what was written).
  std::string positions;
  std::string observe;                 ///< kInject: what is observed (propagation, policy, ...)
  std::optional<Aggregate> aggregate;  ///< compute ...
  std::optional<PassIf> pass_if;       ///< pass if ...
  std::optional<LatencyAcross> latency;  ///< time latency across ...
};

/// One structured signature: NAME or NAME(arg, ...).
struct Signature {
  std::string name;
  std::vector<std::string> args;
  std::string to_string() const;  ///< "SATURATION(65504)"
};

/// `violation`
struct ViolationSpec {
  std::string text;                   ///< free text, if any (the paper's form)
  std::vector<Signature> signatures;  ///< `signature A(x), B` — machine-checkable
};

/// A clause's bookkeeping: where it is and, if it is not executable, why.
struct ClauseInfo {
  bool present = false;
  std::string text;  ///< the clause body as written (whitespace-normalised)
  SourceLoc loc;     ///< location of the clause keyword
  std::string gap;   ///< empty when executable; else what would make it so
  SourceLoc gap_loc; ///< where the gap is (line 0: at the clause keyword)
  std::string comment;  ///< `--` lines just above the clause (without the dashes)
};

struct Contract {
  std::string id;  ///< C-PRC-01
  SourceLoc loc;
  std::string comment;  ///< `--` lines just above the block (without the dashes)
  std::map<std::string, std::string> meta;  ///< optional `title`, `version`, `class` lines
  /// Optional `depends A, B`: contracts this one builds on (the contract DAG,
  /// `kc graph`); a change to A re-verifies this contract (`kc check --affected A`).
  std::vector<std::string> depends;
  std::vector<SourceLoc> depends_locs;  ///< parallel to depends (for diagnostics)

  std::vector<std::string> scope;  ///< op classes
  ClauseInfo scope_info;
  std::vector<Predicate> pre;
  ClauseInfo pre_info;
  Postcondition post;
  ClauseInfo post_info;
  Tolerance tolerance;
  ClauseInfo tolerance_info;
  Reference reference;
  ClauseInfo reference_info;
  Protocol measure;
  ClauseInfo measure_info;
  ViolationSpec violation;
  ClauseInfo violation_info;

  /// True when every clause is present and none has a gap.
  bool executable() const;
  /// Stable hash of the canonical form (hex); identifies the contract version in traces.
  std::string content_hash() const;
};

/// `calibration ID { baseline X  bad Y  good Z  visible ... }`
struct Calibration {
  std::string contract;  ///< contract id
  std::string baseline, bad, good;  ///< impl names
  std::string visible;   ///< visible-test spec; empty = the documented default
  SourceLoc loc;
  std::string comment;
};

/// `suite NAME { tier T  contracts a, b  impls x.*, y }`
struct Suite {
  std::string name;
  std::string tier = "ci";  ///< smoke | ci | full
  std::vector<std::string> contracts;  ///< ids or globs
  std::vector<std::string> impls;      ///< names or globs
  SourceLoc loc;
  std::string comment;
};

/// What one file holds. `impl` blocks become Declarations.
struct Document {
  std::string file;
  std::vector<Contract> contracts;
  std::vector<Declaration> impls;
  std::vector<SourceLoc> impl_locs;  ///< parallel to impls
  std::vector<std::string> impl_comments;  ///< parallel to impls
  std::string trailing_comment;  ///< comments after the last block
  std::vector<Calibration> calibrations;
  std::vector<Suite> suites;
};

}  // namespace kc
