// kc — obligations: named algebraic properties an op's outputs must satisfy,
// the executable form of `reference algebraic PROPERTY` (docs/obligations.md).
//
// A property is a function of one call of the impl under test (its inputs and
// the outputs the impl wrote) that may run the impl again on inputs it
// transforms (x + c, a perturbed future, a permuted pairing). It judges every
// check it makes as a ratio residual / allowed, where `allowed` comes from the
// contract's tolerance (the rounding factor, evaluated for the call) times a
// magnitude the property derives, plus any exact, non-rounding slack the
// property computes itself (e.g. the effect of eps on layernorm's scale
// invariance). The property holds iff every ratio is <= 1.
//
// Names are `family.property` (softmax.sums_to_one, attention.causal); the
// family is the op or op group it is about. Each lives in its op's folder
// (src/ops/<op>/properties.cpp) and reaches the table through Op::properties;
// adding one is a function and a line in that file's list.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/op.h"
#include "kc/rng.h"
#include "kc/status.h"

namespace kc::obligation {

/// Runs the impl under test on a call the property made, in the same worker
/// (isolation, limits) as the first call; its outputs are poisoned first. A
/// crash is recorded by the engine and becomes the case's error verdict.
using Invoke = std::function<Status(Call& call)>;

/// What a property gets for one sample.
struct Context {
  const Op& op;
  const Call& call;      ///< the inputs and the outputs the impl wrote
  const Invoke& invoke;  ///< the impl under test, for transformed inputs
  Rng& rng;              ///< for the property's own random choices (seeded per sample)
  double factor = 0;     ///< the contract's `bound E` evaluated for this call; 0 under `tolerance none`
  /// Under a `bound` tolerance, the unit roundoff of the output format: the
  /// rounding of a correctly computed result into it (as the engine adds
  /// u|ref| to an oracle comparison's bound); 0 otherwise.
  double rounding = 0;
  double absolute = 0;   ///< the contract's `absolute E` evaluated for this call
  /// Under a `bound` tolerance, whether the engine adds gradual underflow's
  /// absolute term (Op::underflow_allowance) as it does to an oracle
  /// comparison; false otherwise (`absolute E` states its own floor).
  bool underflow = false;

  /// What a check may deviate by: (factor + rounding) * magnitude + absolute +
  /// exact, with `magnitude` the property's derived rounding term and `exact`
  /// a derived deviation the property allows for reasons other than rounding.
  double allowed(double magnitude, double exact = 0) const {
    return (factor + rounding) * magnitude + absolute + exact;
  }
  /// What gradual underflow may add to each output element of call `c` (one
  /// run of the impl, the original or a transformed one): Op::underflow_allowance
  /// under a `bound` tolerance, 0 otherwise. A property adds it once per run
  /// whose outputs a check combines, times that output's coefficient.
  double underflow_of(const Call& c) const { return underflow ? op.underflow_allowance(c) : 0; }
  /// The call as it was before the impl ran, when the engine has it: an
  /// in/out tensor (AdamW's param, m, v) holds the impl's result in `call`
  /// and its input only here.
  const Call* inputs = nullptr;
  /// A fresh copy of the call's inputs (outputs zero; in/out tensors as they
  /// were given, from `inputs` when set) for a re-invocation.
  Call fresh_inputs() const;
};

/// Where a check was made: row/col of an output, or a free label.
struct Where {
  std::int64_t row = -1, col = -1;
  std::string label;  ///< overrides row/col when set ("x -> -x at n = 17")
  std::string to_string() const;
};

/// The result of a property on one sample.
struct Outcome {
  std::vector<double> ratios;  ///< one per check (inf for a structural failure)
  double max_ratio = 0;
  std::int64_t failures = 0;   ///< ratios > 1
  std::string evidence;        ///< the worst check in words, with residual and allowed
  Where worst;
  double worst_residual = 0, worst_allowed = 0;  ///< of the worst check (NaN/inf as found)
};

/// Accumulates checks for one sample and remembers the worst.
class Judge {
 public:
  /// `quantity` names what each residual is, e.g. "|sum_j y_j - 1|".
  explicit Judge(std::string quantity) : quantity_(std::move(quantity)) {}
  /// One check: |residual| <= allowed. A NaN or infinite residual fails (ratio
  /// inf); a zero residual passes even when nothing is allowed.
  void check(double residual, double allowed, Where where);
  /// A structural failure (the wrong kind of value: a number where NaN is
  /// stated, a NaN where a number is): ratio inf, explained by `what`.
  void fail(Where where, std::string what);
  /// A structural check that passed (counts towards the evidence's size).
  void pass() { out_.ratios.push_back(0); }
  Outcome outcome() const;

 private:
  std::string quantity_;
  Outcome out_;
  double worst_residual_ = 0, worst_allowed_ = 0;
  std::string worst_what_;
};

struct Property {
  std::string name;              ///< "softmax.sums_to_one"
  std::vector<std::string> ops;  ///< the ops it applies to
  std::string statement;         ///< what must hold, one line (kc explain, docs)
  std::function<Result<Outcome>(const Context&)> check;

  bool applies_to(std::string_view op) const;
};

/// The properties `add` appends that apply to `op`: what an op class that
/// stands for several ops (one class per elementwise function, say) returns
/// from Op::properties for the op it is.
std::vector<Property> properties_for(std::string_view op, void (*add)(std::vector<Property>&));

/// The one table of properties, in `kc list properties` order: every
/// registered op's Op::properties, in registry order, a property several ops
/// share listed once. An op registered later (register_op) joins it.
const std::vector<Property>& properties();
const Property* find_property(std::string_view name);
/// Whether `reference algebraic NAME` names a property (family.property)
/// rather than a descriptive label such as `determinism`.
bool is_property_name(std::string_view name);
/// The nearest property name, for "did you mean" (empty if none is close).
std::string nearest_property(std::string_view name);

}  // namespace kc::obligation
