// kc — matmul's own signature classifiers (Op::classifiers, stage
// kProbeReading): the readings of its two probes, accumulator_bits and
// arithmetic (ops/matmul/arithmetic.h), named where they contradict the
// impl's declaration.
#pragma once

#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::ops {

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
void classify_arithmetic(const Op& op, const Call& inputs, const Observation& obs, std::vector<Signature>* signatures,
                         std::vector<std::string>* notes);

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

}  // namespace kc::ops
