// kc — ops: what a mathematical operation is to kc (docs/ops.md).
//
// An op owns its tensor signature, its config parameters, its input
// generators and probes, its oracle, and its error model. The engine only
// talks to ops through this interface; backends only through Call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kc/declaration.h"
#include "kc/rng.h"
#include "kc/status.h"
#include "kc/tensor.h"

namespace kc {

enum class Role { kIn, kOut, kInOut };

struct TensorSpec {
  std::string name;  ///< "A", "B", "C", "x", "y", "index", ...
  Role role = Role::kIn;
  std::string help;
};

/// One config parameter of an op (a shape size, a transpose flag, alpha, ...).
struct Param {
  std::string name;
  std::string default_value;
  std::string help;
};

/// A concrete configuration: parameter -> value text, plus the precision.
struct Config {
  std::map<std::string, std::string> params;
  DType dtype = DType::kF32;
  /// The impl's declared accumulator, what ACC means in a tolerance
  /// expression (not a parameter: never in to_string or a repro line).
  std::optional<DType> accumulator = std::nullopt;

  std::string get(const std::string& key, const std::string& fallback = {}) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback = 0) const;
  double get_double(const std::string& key, double fallback = 0) const;
  /// "dtype=FP32 K=127 M=64 N=64" — stable order, used in reports and repro lines.
  std::string to_string() const;
};

/// A prepared invocation: tensors in signature order plus attributes.
/// Backends read attributes through the typed getters.
struct Call {
  std::string op;
  Config config;
  std::vector<std::string> names;  ///< parallel to tensors
  std::vector<Role> roles;         ///< parallel to tensors
  std::vector<Tensor> tensors;

  Tensor& t(std::string_view name);
  const Tensor& t(std::string_view name) const;
  bool has(std::string_view name) const;
  std::int64_t get_int(const std::string& key, std::int64_t fallback = 0) const {
    return config.get_int(key, fallback);
  }
  double get_double(const std::string& key, double fallback = 0) const {
    return config.get_double(key, fallback);
  }
  std::string get(const std::string& key, const std::string& fallback = {}) const {
    return config.get(key, fallback);
  }
};

/// How random input values are drawn (from the contract's value_range).
struct FillSpec {
  enum class Kind { kNormal, kUniform, kInteger };
  Kind kind = Kind::kNormal;
  double a = 0, b = 1;  ///< normal: mean, stddev; uniform/integer: [a, b]
};

/// A purpose-built input that makes one failure visible.
struct Probe {
  std::string name;           ///< nan | inf | neg_inf | subnormal | saturation | mantissa | offset | oob | zero
  std::vector<double> args;   ///< e.g. saturation(65504), subnormal(2^-140), mantissa(13), offset(0, 1e4)
  double density = 0.01;      ///< fraction of elements touched, where that applies
  std::vector<std::string> tensors;  ///< restrict to these input tensors (empty = the op's choice);
                                     ///< the engine injects nan/inf itself when this is set
};

/// What the oracle says the outputs should be.
struct OracleResult {
  std::vector<std::vector<double>> outputs;  ///< one per kOut/kInOut tensor, signature order
  std::vector<std::string> output_names;
  std::optional<std::string> raises;  ///< the op's semantics require an error (e.g. OOB under RAISE)
  /// Per output, parallel to outputs (empty: none): 1 where the reference's
  /// spec fixes the value exactly (IEEE 754's special values, kc/oracles.h);
  /// the judge admits no error there, whatever the tolerance.
  std::vector<std::vector<std::uint8_t>> exact;
};

/// Options the oracle honours: from the contract's `reference ... with k = v`
/// and from the impl's declaration (e.g. OOB policy to emulate).
struct OracleOptions {
  std::map<std::string, std::string> with;
  std::optional<OobPolicy> oob;
};

/// One `reference higher_precision P with key = value` option an op's oracle
/// honours: the key, every value it accepts (the first is what the oracle does
/// when the key is absent), and what the option means. A key or value an op
/// does not list is never passed to its oracle: `kc lint` calls the clause
/// descriptive and the engine judges the contract under_specified.
struct OracleOption {
  std::string key;
  std::vector<std::string> values;
  std::string meaning;
};

namespace obligation {
struct Property;
}
struct Observation;  // kc/observation.h
struct Signature;    // kc/model.h
class Op;

/// A signature classifier an op brings (kc/observation.h): on a case's first
/// failure it names the pattern behind `obs` by appending signatures and notes.
/// `stage` places it in the engine's one order of classifiers (classify_failure):
///   kProbeReading  before the value patterns: a probe's own reading of the output
///   kPrecision     after the input-precision fingerprint, before the generic
///                  accumulator-precision test (a narrower cause of the same grid)
///   kSemantics     last: an alternative semantics or an ignored parameter
struct OpClassifier {
  enum class Stage { kProbeReading, kPrecision, kSemantics };
  Stage stage = Stage::kSemantics;
  void (*classify)(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                   std::vector<Signature>* signatures, std::vector<std::string>* notes) = nullptr;
};

/// A fast check an op offers (`kc check --fast`, docs/verify.md): which of the
/// verifiers of src/verify judges its output, which output, and how. The
/// verifiers are their own module (kc_verify, built with its own flags); the
/// op names the one whose call layout it shares.
struct OpFastCheck {
  enum class Verifier {
    kMatmul,       ///< C = alpha op(A) op(B) + beta C: Freivalds + sampled elements
    kFusedMatmul,  ///< act(A B + bias) * scale + residual: Freivalds on the GEMM part + sampled elements
    kAttention,    ///< softmax(q k^T * scale) v: sampled query rows, every element judged
  };
  Verifier verifier = Verifier::kMatmul;
  std::string output;      ///< the output tensor it judges
  bool freivalds = false;  ///< probes and sampled elements, or sampled rows only
};

class Op {
 public:
  virtual ~Op() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  virtual const std::vector<TensorSpec>& signature() const = 0;
  virtual const std::vector<Param>& params() const = 0;

  /// Allocates the tensors for a config (inputs zero, outputs zero).
  virtual Result<Call> make_call(const Config& config) const = 0;
  /// Fills the input tensors with random values.
  virtual void fill(Call& call, const FillSpec& fill, Rng& rng) const;
  /// Applies a probe to the inputs; unknown probes are kInvalidArgument.
  virtual Status apply_probe(Call& call, const Probe& probe, Rng& rng) const;
  /// FP64 (or better) reference outputs.
  virtual Result<OracleResult> oracle(const Call& call, const OracleOptions& options) const = 0;
  /// The `with` options oracle() honours (the one table per op; empty: none).
  virtual const std::vector<OracleOption>& oracle_options() const;
  /// Error model: per-output-element magnitude for the `bound` tolerance
  /// (e.g. (|A||B|)_ij for matmul, sum|x| for a reduction), for output `output`.
  virtual Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const;
  /// The accumulation length n for gamma(n, P) (K for matmul, length for a sum).
  virtual double accumulation_length(const Call& call) const;
  /// The absolute error gradual underflow may add to each output element
  /// beyond a `bound` tolerance's relative term (Higham, Accuracy and
  /// Stability, 2nd ed., §2.1, (2.8)): fl(x op y) = (x op y)(1 + d) + e with
  /// |e| <= lambda = underflow_unit(P) for op in {*, /}; sums of subnormals are
  /// exact. Each of the L = accumulation_length products, plus two scalings,
  /// may underflow: (L + 2) lambda. The oracle comparison and the algebraic
  /// properties both add it per call. (An op whose error model amplifies an
  /// intermediate's underflow, e.g. swiglu's silu(g) times up, puts that
  /// amplified term in its magnitude instead.) Matmul scales its K products
  /// by alpha: gemm_underflow_allowance (kc/bound.h).
  virtual double underflow_allowance(const Call& call) const;
  /// Variables for tolerance expressions: N, K, M, max|x|, sum|x|, ...
  virtual std::map<std::string, double> expr_vars(const Call& call) const;
  /// Whether the kInOut tensor `name` is write-only in this call (its incoming
  /// values are not read, e.g. C of a GEMM with beta = 0), so the engine may
  /// poison it before the call like a pure output.
  virtual bool overwrites(const Call& call, const std::string& name) const { return false; }

  // ---- What the rest of kc asks of an op besides its numerics: each has a
  // default of "nothing", so a new op needs none of them to be checked.

  /// The op classes of the language's scope (`scope reduction`) this op is
  /// one of, besides its own name (docs/language.md): reduction, elementwise,
  /// collective, indexing, fused_attention.
  virtual std::vector<std::string> scope_classes() const { return {}; }
  /// The algebraic properties (`reference algebraic FAMILY.PROPERTY`,
  /// kc/obligation.h) that apply to this op. A property several ops share is
  /// returned by each of them, identically; the table keeps the first.
  virtual std::vector<obligation::Property> properties() const;
  /// The signature classifiers particular to this op (the engine runs the
  /// generic ones for every op).
  virtual std::vector<OpClassifier> classifiers() const { return {}; }
  /// The work model behind the timing floor (kc/peak.h): the multiply-adds an
  /// honest kernel cannot skip on dense random inputs for this call; 0 where
  /// no such count is a true lower bound (the floor then rests on the bytes
  /// written alone).
  virtual double multiply_adds(const Call& call) const { return 0; }
  /// What a measuring probe (one that reads a property of the kernel off its
  /// output, as matmul's accumulator_bits) reads from output `output` of one
  /// call, in words: evidence the report shows whatever the verdict. Empty
  /// for a probe that only makes a failure visible.
  virtual std::vector<std::string> probe_readings(const Probe& probe, const Call& inputs, const std::string& output,
                                                  const std::vector<double>& got,
                                                  const std::vector<double>& ref) const {
    return {};
  }
  /// The fast check (`--fast`) that judges this op without the full oracle, if any.
  virtual std::optional<OpFastCheck> fast_check() const { return std::nullopt; }
};

/// The entry of op.oracle_options() for `key`, or nullptr.
const OracleOption* find_oracle_option(const Op& op, std::string_view key);

/// The op registry: one explicit table (no static self-registration). It is
/// kc's only list of op names: the language's scope and `op` words, the
/// scope classes, the property table, the classifiers, the timing floor and
/// the fast checks all read it. Safe to read from several threads while an op
/// is added (an added op is never removed; its address is stable).
class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  Status add(std::unique_ptr<Op> op);  ///< duplicate names rejected
  const Op* find(std::string_view name) const;
  std::vector<const Op*> all() const;
  std::vector<std::string> names() const;
  /// How many ops have been added: a cache of something derived from the
  /// registry (the property table) is current while this is unchanged.
  std::size_t size() const;

 private:
  mutable std::shared_mutex mutex_;
  std::vector<std::unique_ptr<Op>> ops_;
};

/// Registers every built-in op.
Status register_builtin_ops(OpRegistry& registry);
/// The process-wide registry with built-ins registered.
const OpRegistry& builtin_ops();
/// Adds an op to the process-wide registry (after the built-ins): the one call
/// an op outside kc's table (a test's, an embedding program's) needs before a
/// contract may name it. Register before checking; duplicate names are refused.
Status register_op(std::unique_ptr<Op> op);

/// Default value-range shorthands on tensors of an op: fills every kIn/kInOut
/// floating tensor of `call` from `fill`. Ops call this from fill().
void fill_float_inputs(Call& call, const FillSpec& fill, Rng& rng);

}  // namespace kc
