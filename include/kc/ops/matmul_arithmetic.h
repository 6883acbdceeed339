// kc — the matmul `arithmetic` probe: inputs that make a black-box GEMM's
// arithmetic visible feature by feature, and the reading of its output.
//
// Every row of op(A) is one measurement; op(B) is all ones except column 1,
// which is 1 + 2^-h (the product rows read it). Each row's terms sit at the
// first positions of k and the rest of the row is zero, so a sequential
// accumulator meets them in the order listed. A row is laid out only where
// every term is a value of the input format and its exact result one of the
// output format, so the storage formats lose nothing and what the output
// shows is the kernel's arithmetic:
//   input        S(1 + 2^-j), -S            -> S 2^-j while the inputs keep j + 1 bits
//   input_range  2^-40 S                    -> itself unless the inputs lose FP32's exponent range (fp16)
//   accumulator  S, S 2^-j, -S              -> S 2^-j while the running sum keeps j + 1 bits
//   product      -S, S(1 + 2^-j)  (col 1)   -> S 2^-j (1 + 2^-h) while the product keeps its j + h + 1 bits
//   rounding     S, S 2^-p (1 +- 2^-d), -S  -> the accumulator's rounding at width p, both signs and two ties
//   cancel       S, -S, S 2^-j              -> S 2^-j after a normalized add; lost where a block of terms
//                                              is aligned to its largest term, or where S and S 2^-j share
//                                              a partial sum (two partial sums over alternate k); product
//                                              and rounding rows come in both orders, read as the sum goes
//   subnormal    (1.5 m, -m) and (m, m/8)   -> a subnormal result from normal inputs; a subnormal input
//   drift        S, then K - 1 copies of y  -> no reading: y just under one ulp of S at 24 bits (FP32),
//                                              so a truncating accumulator drops nearly an ulp per term and
//                                              leaves an FP32 accumulator's round-to-nearest bound
// (S a power of two that keeps every term a normal number of the formats).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kc/op.h"

namespace kc::ops {

enum class ArithmeticRowKind {
  kInput,
  kInputRange,
  kAccumulator,
  kProduct,
  kRounding,
  kCancel,
  kSubnormalResult,
  kSubnormalInput,
  kDrift,
};

/// The six rounding rows of one width p, in layout order.
enum class RoundingCase {
  kAbovePos,  ///< S + S 2^-p (1 + 2^-d): above the midpoint, positive
  kBelowPos,  ///< S + S 2^-p (1 - 2^-d): below the midpoint, positive
  kAboveNeg,  ///< the same two, negated
  kBelowNeg,
  kTieEven,   ///< S + S 2^-p: a tie whose lower neighbour S is even
  kTieOdd,    ///< S + S 2^-(p-1) + S 2^-p: a tie whose lower neighbour is odd
};

struct ArithmeticRow {
  ArithmeticRowKind kind = ArithmeticRowKind::kInput;
  int j = 0;  ///< the row's parameter: 2^-j below S, the width p of a rounding row
  RoundingCase rounding = RoundingCase::kAbovePos;
  std::vector<std::pair<std::int64_t, double>> terms;  ///< (k, op(A)_rk), the other k are 0
  double exact = 0;  ///< the exact result in the columns read (column 1 for product rows, the others else)
  double up = 0;     ///< rounding rows: the result when the dropped part rounds away from zero
  double down = 0;   ///< rounding rows: the result when it rounds toward zero
  bool alternate = false;  ///< product and rounding rows: laid out over alternate k (0, 2, 4; the cancelling term at 1)
};

struct ArithmeticLayout {
  double scale = 1;     ///< S
  int product_h = 0;    ///< op(B)'s column 1 is 1 + 2^-h
  int reach_bits = 24;  ///< the widest running sum the rows measure, and the width of the drift rows: max(24, inputs')
  std::vector<ArithmeticRow> rows;  ///< row i of C is rows[i]; rows beyond M are not laid out
  std::size_t wanted = 0;           ///< how many rows the layout has at unlimited M
};

/// The layout for inputs of format `in`, output `out`, M rows, N columns and
/// K terms. Deterministic and independent of any declaration (the engine
/// draws a config's inputs once for every impl): the probe and its reader
/// both call it.
ArithmeticLayout arithmetic_layout(DType in, DType out, std::int64_t m, std::int64_t n, std::int64_t k);

/// Fills A, B and C of a matmul call with the layout (C zero; alpha, beta as
/// configured: the probe needs alpha = 1, beta = 0).
Status apply_arithmetic_probe(Call& call);

/// The rounding a group of rounding rows shows.
enum class RoundingReading { kNotRead, kNearestEven, kNearestAway, kNearest, kTowardZero, kDown, kUp, kExact, kOther };
std::string rounding_reading_name(RoundingReading r);

/// A width measurement: rows probed, the last j kept before the first lost
/// one, and that first lost j (0: none lost as far as the rows reach).
struct WidthReading {
  int probed = 0, last_kept = 0, lost_at = 0;
};

/// The order the accumulator and cancel rows show: (S, x, -S) lost and
/// (S, -S, x) kept: in k order, normalized; the reverse: two partial sums
/// over alternate k; both lost: aligned to a block's largest term; both kept:
/// wider than the probe reaches.
enum class SumOrder { kSequential, kAlternate, kAligned, kWide };

/// What the probe reads off a matmul's output.
struct ArithmeticReading {
  bool laid_out = false;
  int left_out = 0;          ///< rows the layout has beyond M (not laid out, not read)
  bool coherent = true;      ///< false: the output loses 1 + 2^-1 (a wrong kernel): nothing is read
  WidthReading input;        ///< 1 + 2^-j through the inputs
  int range_probed = 0;      ///< the 2^-40 row
  bool range_kept = true;
  WidthReading accumulator;  ///< 1 + 2^-j in the running sum
  SumOrder order = SumOrder::kWide;
  int width = 0;             ///< the running sum's significant bits in that order (0: beyond the probe)
  WidthReading product;      ///< j + h of (1 + 2^-j)(1 + 2^-h), from the rows in the order the sum follows
  int product_h = 0;
  int rounding_bits = 0;     ///< the width whose rounding rows were read (0: none)
  RoundingReading rounding = RoundingReading::kNotRead;
  std::string rounding_detail;  ///< the rows' outcomes ("+above up, +below down, ...")
  WidthReading cancel;          ///< S, -S, 2^-j S
  int subnormal_result_probed = 0, subnormal_result_kept = 0;
  int subnormal_input_probed = 0, subnormal_input_kept = 0;
};

/// Reads the output `got` (C, row-major M x N, as the kernel wrote it) of a
/// call the probe filled.
ArithmeticReading read_arithmetic(const Call& inputs, const std::vector<double>& got);

/// The significant bits of a format (mantissa bits + 1).
int significant_bits(DType t);

/// Whether the input rows lost a bit the running sum keeps (inputs rounded
/// before the products), and the format that loss names: q significant bits,
/// with the 2^-40 row telling tf32 (FP32's exponent range) from fp16.
bool inputs_rounded(const ArithmeticReading& reading);
std::string input_format(const ArithmeticReading& reading);
/// Whether the product rows tell anything (inputs unrounded, a running sum
/// that holds 1 + 2^-h), and the rounding rows (inputs that keep their terms).
bool products_read(const ArithmeticReading& reading);
bool rounding_read(const ArithmeticReading& reading);

/// A width in bits named by the format it matches ("bf16", "fp16|tf32", "24-bit").
std::string width_name(int bits);

/// The reading in words, one line per feature: "input rounding: none (FP32
/// kept)", "accumulator rounding: toward zero", ... The declared formats
/// come from the call (its dtype and declared accumulator).
std::vector<std::string> describe_arithmetic(const ArithmeticReading& reading, const Call& inputs);

}  // namespace kc::ops
