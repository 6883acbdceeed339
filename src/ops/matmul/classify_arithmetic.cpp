// kc — the classifier of the matmul `arithmetic` probe (ops/matmul/arithmetic.h):
// on a failing case, names each reading that contradicts what the impl
// declared. A reading the declaration does not speak to (FP32 products
// rounded to FP32, an aligned block adder, flushed subnormals: kc's config
// carries no denormal policy) stays a note.
#include <string>
#include <vector>

#include "kc/ops/matmul_arithmetic.h"
#include "kc/signature.h"
#include "ops/matmul/classify.h"

namespace kc::ops {

void classify_arithmetic(const Op& op, const Call& inputs, const Observation& obs, std::vector<Signature>* sigs,
                         std::vector<std::string>* notes) {
  if (obs.probe != "arithmetic") return;
  const ArithmeticReading r = read_arithmetic(inputs, obs.got);
  if (!r.laid_out || !r.coherent) return;
  const DType in = inputs.config.dtype;
  const int in_bits = significant_bits(in);
  // No accumulator declared: the storage format's arithmetic is the promise.
  const DType acc = inputs.config.accumulator ? *inputs.config.accumulator : in;
  const int acc_bits = significant_bits(acc);
  const std::string in_name(dtype_name(in)), acc_name(dtype_name(acc));
  // Inputs rounded below the declared input format (the input rows lose a bit
  // the running sum keeps).
  const bool rounded = inputs_rounded(r);
  if (rounded && r.input.lost_at < in_bits) {
    const std::string f = input_format(r);
    sigs->push_back({sig::kPrecisionFingerprint, {f}});
    notes->push_back("arithmetic probe: the inputs are rounded to " + std::to_string(r.input.lost_at) +
                     " significant bits (" + f + ") before the products, where the declared " + in_name + " keeps " +
                     std::to_string(in_bits));
  }
  // A running sum narrower than the declared accumulator.
  if (r.width > 0 && r.width < acc_bits) {
    const std::string f = width_name(r.width);
    sigs->push_back({sig::kAccumulatorPrecision, {f}});
    notes->push_back("arithmetic probe: the running sum keeps about " + std::to_string(r.width) +
                     " significant bits (" + f + "), where the declared " + acc_name + " keeps " +
                     std::to_string(acc_bits));
  }
  // Products rounded below what the declared accumulator holds of them: a
  // product of two p-bit inputs has at most 2p bits, exact in an accumulator
  // of 2p bits or more (bf16 x bf16 in FP32); FP32 x FP32 rounded to FP32 is
  // the declared arithmetic.
  const int product_bits = std::min(2 * in_bits, acc_bits);
  if (products_read(r) && r.product.lost_at > 0 && r.product.lost_at < product_bits) {
    const std::string f = width_name(r.product.lost_at);
    sigs->push_back({sig::kProductPrecision, {f}});
    notes->push_back("arithmetic probe: products are rounded to about " + std::to_string(r.product.lost_at) +
                     " significant bits (" + f + ") before they are summed, where the declared " + acc_name +
                     " accumulator holds the " + std::to_string(product_bits) + " bits of a product of two " +
                     in_name + " values");
  }
  // A directed rounding at the declared width, where the declared format's
  // arithmetic (IEEE 754, kc's bounds' u = 2^-p) rounds to nearest.
  const bool directed = r.rounding == RoundingReading::kTowardZero || r.rounding == RoundingReading::kDown ||
                        r.rounding == RoundingReading::kUp;
  if (directed && rounding_read(r) && r.rounding_bits == acc_bits) {
    const std::string mode = r.rounding == RoundingReading::kTowardZero ? "toward_zero"
                             : r.rounding == RoundingReading::kDown     ? "toward_neg_inf"
                                                                        : "toward_pos_inf";
    sigs->push_back({sig::kAccumulatorRounding, {mode}});
    notes->push_back("arithmetic probe: the accumulator rounds " + rounding_reading_name(r.rounding) + " at its " +
                     std::to_string(acc_bits) + " bits (" + r.rounding_detail + "), where the declared " + acc_name +
                     " rounds to nearest: a truncating sum loses up to an ulp per term, twice the unit "
                     "roundoff its bound assumes");
  }
}

}  // namespace kc::ops
