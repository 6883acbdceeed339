// kc — the signature classifier: names the pattern behind a failed comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/op.h"

namespace kc::engine {

/// One output of one failing invocation, as the classifier sees it.
struct Observation {
  std::string output;        ///< tensor name
  DType dtype = DType::kF32; ///< output storage format
  std::vector<double> got;   ///< impl's logical elements
  std::vector<double> ref;   ///< oracle's elements
  std::vector<double> allowed;  ///< per-element allowed error (same tolerance the verdict used)
  /// Per element, 1 where the output still holds the poison kc wrote before
  /// the call (engine/poison.h): never written. Empty when the output was not poisoned.
  std::vector<std::uint8_t> unwritten;
  bool signed_zeros = false;  ///< the tolerance (`ulp E signed`) tells +0 from -0
  bool inputs_finite = true;       ///< no NaN/Inf among the inputs
  /// |mean| / stddev of the floating inputs, or of the most offset matrix row
  /// if larger (large = cancellation-prone).
  double input_offset_ratio = 0;
  /// Largest |x| over the finite floating inputs, and the largest finite value
  /// of their format (to tell whether exp or a square of an input can overflow).
  double input_max_abs = 0;
  double input_format_max = 0;
  /// The smallest, over the floating input tensors that are not all zero, of
  /// a tensor's largest finite |x|: below sqrt(min_normal) every square of
  /// that tensor underflows (a row of tiny values beside a scale of order 1,
  /// as in rmsnorm).
  double least_input_max_abs = 0;
  /// The probe the sample's inputs carry (`inject NAME`), empty for random inputs.
  std::string probe;
};

/// Pure-pattern detectors over one observation (no re-execution). Each
/// appends a signature and a human-readable note when its pattern is present.
void classify_values(const Observation& obs, std::vector<Signature>* signatures,
                     std::vector<std::string>* notes);

/// Input-precision fingerprint: re-runs the oracle on the call's inputs
/// rounded to tf32, bf16 and fp16 and names the narrowest format that
/// explains the observation within the same tolerance.
void classify_fingerprint(const Op& op, const Call& inputs, const OracleOptions& options,
                          const Observation& obs, std::vector<Signature>* signatures,
                          std::vector<std::string>* notes);

/// Wire precision of a collective (all_reduce, reduce_scatter, all_gather):
/// names the widest format t (FP16, then BF16) whose rounding of every message
/// explains the error, |got - ref| <= gamma(K + 1, t) * sum_r |x_r| + u(t) |ref|
/// for every element (K - 1 reduce messages plus one forwarding message on an
/// element's path, each rounded once; the FP32 additions, (K - 1) u(FP32),
/// fit inside one u(t)). Other ops are left alone.
void classify_wire_precision(const Op& op, const Call& inputs, const Observation& obs,
                             std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Accumulator precision of a sum (ops with accumulation length >= 2, e.g.
/// matmul): names the coarsest format t (BF16, then FP16) such that every
/// output value is a t value, while most reference values are not, and every
/// element is within what a t accumulation allows, gamma(L, t) * magnitude +
/// u(t) |ref| + (L + 2) lambda(t). Both are needed: the grid alone could be
/// integer data, the bound alone a dropped term of a short sum.
void classify_accumulator_precision(const Op& op, const Call& inputs, const Observation& obs,
                                    std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Under the accumulator_bits probe (matmul): the first row whose small terms
/// were lost gives the significant bits the accumulator keeps; named
/// ACCUMULATOR_PRECISION(format) when that is fewer than the declared
/// accumulator's (the config's). Works for any output format, bf16 included.
void classify_accumulator_bits(const Op& op, const Call& inputs, const Observation& obs,
                               std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Under the arithmetic probe (matmul, ops/matmul/arithmetic.h): names each
/// reading that contradicts the declaration. Inputs rounded below the declared
/// format: PRECISION_FINGERPRINT(format); a running sum narrower than the
/// declared accumulator: ACCUMULATOR_PRECISION(format); products rounded below
/// what the declared accumulator holds of them: PRODUCT_PRECISION(format); a
/// directed rounding at the declared accumulator's width:
/// ACCUMULATOR_ROUNDING(toward_zero | toward_neg_inf | toward_pos_inf).
void classify_arithmetic(const Op& op, const Call& inputs, const Observation& obs,
                         std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// What the accumulator_bits probe reads off a matmul's output: the rows that
/// hold an exact probe sum, the last row (j of 2^-j) whose small terms were
/// kept before the first lost one, and that first lost row (0: none lost).
struct AccumulatorReading {
  int probed = 0, last_kept = 0, lost_at = 0;
};
AccumulatorReading read_accumulator_bits(const Call& inputs, const std::vector<double>& got,
                                         const std::vector<double>& ref);
/// The reading in words, with K and the declared accumulator (a note on every
/// case the probe runs in, conforming or not).
std::string describe_accumulator_reading(const AccumulatorReading& reading, const Call& inputs);

/// Alternative semantics: re-runs the oracle with another value of a
/// semantic parameter (e.g. activation gelu_tanh where gelu_erf is
/// configured) and names the one that explains the output.
void classify_alternatives(const Op& op, const Call& inputs, const OracleOptions& options,
                           const Observation& obs, std::vector<Signature>* signatures,
                           std::vector<std::string>* notes);

/// The training ops (cross_entropy, kd_loss, adamw_step, grad_accum, slerp,
/// prune_*, bpe_roundtrip; engine/classify_train.cpp): names the documented
/// alternative semantics, or the hyper-parameter left at its default, that
/// explains the output; for bpe_roundtrip, bytes dropped or changed.
void classify_training(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                       std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Names the pattern behind a case's first failure: the classifiers above,
/// tried in the order of one table (value patterns first, then the re-running
/// classifiers from the cheapest); the first that names a pattern wins.
void classify_failure(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                      std::vector<Signature>* signatures, std::vector<std::string>* notes);

/// Attributes failures to one config axis: failing configs share values of
/// a parameter that passing configs never have (schedule, ranks, loss scale,
/// shape sizes).
void classify_axes(const std::vector<Config>& configs, const std::vector<bool>& failed,
                   const std::vector<bool>& ran, std::vector<Signature>* signatures,
                   std::vector<std::string>* notes);

/// Checks whether max-ratio of got vs ref under allowed is within 1.
double max_ratio(const std::vector<double>& got, const std::vector<double>& ref,
                 const std::vector<double>& allowed);

/// Element ratio |got-ref| / allowed with kc's NaN/inf conventions:
/// both NaN -> 0, one NaN -> inf, same-signed infs -> 0.
double element_ratio(double got, double ref, double allowed);

}  // namespace kc::engine
