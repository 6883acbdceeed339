// kc — the classifier of the matmul accumulator_bits probe (ops/matmul/classify.h).
#include "ops/matmul/classify.h"

#include <cmath>
#include <string>

#include "kc/dtype.h"
#include "kc/signature.h"

namespace kc::ops {

/// Under the accumulator_bits probe (a matmul whose row r sums 1, K - 2 copies
/// of 2^-(r+1) and -1): the rows whose small terms survived give the bits the
/// accumulator keeps. Named when that is fewer than the declared accumulator's.
AccumulatorReading read_accumulator_bits(const Call& inputs, const std::vector<double>& got,
                                         const std::vector<double>& ref) {
  AccumulatorReading a;
  const std::int64_t m = inputs.get_int("M", 64), n = inputs.get_int("N", 64), k = inputs.get_int("K", 64);
  if (m < 1 || n < 1 || k < 3 || got.size() != ref.size() || static_cast<std::int64_t>(got.size()) < m * n) return a;
  // Row r's exact result is (K - 2) 2^-(r+1) (0: a row the formats cannot hold);
  // the first row, in order, whose small terms were lost is at 2^-p.
  for (std::int64_t r = 0; r < m && a.lost_at == 0; ++r) {
    const double exact = ref[static_cast<std::size_t>(r * n)];
    if (exact == 0) continue;
    ++a.probed;
    bool kept = true;
    for (std::int64_t j = 0; j < n && kept; ++j) {
      const double g = got[static_cast<std::size_t>(r * n + j)];
      kept = std::isfinite(g) && std::fabs(g - exact) <= 0.5 * exact;
    }
    if (kept)
      a.last_kept = static_cast<int>(r + 1);
    else
      a.lost_at = static_cast<int>(r + 1);
  }
  return a;
}

std::string describe_accumulator_reading(const AccumulatorReading& a, const Call& inputs) {
  const std::string head = "accumulator_bits probe at K = " + std::to_string(inputs.get_int("K", 64)) + ": ";
  const std::string declared = inputs.config.accumulator
                                   ? " (declared " + std::string(dtype_name(*inputs.config.accumulator)) + ", " +
                                         std::to_string(dtype_info(*inputs.config.accumulator).mantissa_bits + 1) +
                                         " bits)"
                                   : " (no accumulator declared)";
  if (a.probed == 0) return head + "no row the formats can hold exactly";
  if (a.lost_at == 0)
    return head + "every probed row kept its small terms, up to 1 + 2^-" + std::to_string(a.last_kept) +
           ": the accumulator keeps at least " + std::to_string(a.last_kept + 1) +
           " significant bits as far as the probe reaches" + declared;
  return head + "1 + 2^-j kept its small terms up to j = " + std::to_string(a.last_kept) +
         " and lost them at j = " + std::to_string(a.lost_at) + ": the accumulator keeps about " +
         std::to_string(a.lost_at) + " significant bits" + declared;
}

void classify_accumulator_bits(const Op& op, const Call& inputs, const Observation& obs, std::vector<Signature>* sigs,
                               std::vector<std::string>* notes) {
  if (obs.probe != "accumulator_bits") return;
  const AccumulatorReading a = read_accumulator_bits(inputs, obs.got, obs.ref);
  if (a.probed == 0 || a.lost_at == 0) return;  // nothing lost: as wide as the probe reaches
  const int bits = a.lost_at;                   // 1 + 2^-bits rounds to 1: bits significant bits
  const DType declared = inputs.config.accumulator ? *inputs.config.accumulator : DType::kF32;
  const int declared_bits = dtype_info(declared).mantissa_bits + 1;
  if (bits >= declared_bits) return;
  // The format whose significand the measurement matches (one bit of slack
  // for the order of the sum); a count between formats is named in bits (a
  // blocked sum keeps a few more bits than its partials' format).
  std::string name = std::to_string(bits) + "-bit";
  for (DType t : {DType::kFP8E5M2, DType::kFP8E4M3, DType::kBF16, DType::kF16}) {
    const int p = dtype_info(t).mantissa_bits + 1;
    if (bits == p || bits == p + 1) {
      name = std::string(dtype_info(t).short_name) + (t == DType::kF16 ? "|tf32" : "");
      break;
    }
  }
  sigs->push_back({sig::kAccumulatorPrecision, {name}});
  notes->push_back("accumulator_bits probe: 1 + 2^-j kept its small terms up to j = " + std::to_string(a.last_kept) +
                   " and lost them at j = " + std::to_string(a.lost_at) + ": the accumulator keeps about " +
                   std::to_string(bits) + " significant bits (" + name + "), where the declared " +
                   std::string(dtype_name(declared)) + " keeps " + std::to_string(declared_bits));
}

}  // namespace kc::ops
