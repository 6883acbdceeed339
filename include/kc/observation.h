// kc — what a signature classifier sees of one failing output, and the
// element ratio every classifier and judge shares. The engine's generic
// classifiers (src/engine/classify*.cpp) and an op's own (Op::classifiers, in
// src/ops/<op>/) read the same observation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kc/dtype.h"

namespace kc {

/// One output of one failing invocation, as the classifier sees it.
struct Observation {
  std::string output;           ///< tensor name
  DType dtype = DType::kF32;    ///< output storage format
  std::vector<double> got;      ///< impl's logical elements
  std::vector<double> ref;      ///< oracle's elements
  std::vector<double> allowed;  ///< per-element allowed error (same tolerance the verdict used)
  /// Per element, 1 where the output still holds the poison kc wrote before
  /// the call (engine/poison.h): never written. Empty when the output was not poisoned.
  std::vector<std::uint8_t> unwritten;
  bool signed_zeros = false;  ///< the tolerance (`ulp E signed`) tells +0 from -0
  bool inputs_finite = true;  ///< no NaN/Inf among the inputs
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

/// The largest element_ratio of got against ref under allowed (0 when empty).
double max_ratio(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& allowed);

/// Element ratio |got-ref| / allowed with kc's NaN/inf conventions:
/// both NaN -> 0, one NaN -> inf, same-signed infs -> 0.
double element_ratio(double got, double ref, double allowed);

/// A number as classifier notes print it: six significant digits ("%.6g").
std::string format_number(double v);

}  // namespace kc
