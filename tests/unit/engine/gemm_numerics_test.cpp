// The matmul arithmetic probe (ops/matmul/arithmetic.h): each reading on
// GEMMs whose arithmetic is known bit for bit (an emulator below, with the
// input format, product rounding, accumulator width and rounding, block
// alignment and flushing as parameters), the classifier's names against the
// declaration, and the KC-GEMM-NUMERICS trios.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/classify.h"
#include "kc/calibrate.h"
#include "kc/engine.h"
#include "kc/op.h"
#include "kc/ops/matmul_arithmetic.h"
#include "ops/matmul/classify.h"
#include "tests/unit/engine/trio.h"

namespace kc::engine {
namespace {

enum class Mode { kNearest, kTowardZero, kDown };

/// x rounded to p significant bits (p = 0: kept).
double round_bits(double x, int p, Mode mode) {
  if (p == 0 || x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);
  const double scaled = std::ldexp(x, p - e);  // in [2^(p-1), 2^p)
  const double r = mode == Mode::kNearest ? std::nearbyint(scaled) : mode == Mode::kTowardZero ? std::trunc(scaled)
                                                                                                 : std::floor(scaled);
  return std::ldexp(r, e - p);
}

/// A GEMM's arithmetic, bit for bit.
struct Arithmetic {
  std::optional<DType> inputs;  ///< A and B rounded to this format first
  int product_bits = 0;         ///< each product rounded to nearest at this width (0: exact)
  int acc_bits = 24;            ///< the running sum's significant bits
  Mode mode = Mode::kNearest;   ///< its rounding
  int block = 0;                ///< > 0: blocks of this many terms aligned to their largest (with the sum so far),
                                ///< truncated to acc_bits below it, summed exactly, rounded once
  bool split = false;           ///< two running sums over alternate k (k even, k odd), added at the end
  bool ftz = false;             ///< subnormal results flushed to zero
  bool daz = false;             ///< subnormal inputs read as zero
};

/// C = op(A) op(B) for the probe's untransposed call, in `arith`, stored to C's format.
std::vector<double> emulate(const Call& call, const Arithmetic& arith) {
  const std::int64_t m = call.get_int("M"), n = call.get_int("N"), k = call.get_int("K");
  const DType out = call.t("C").dtype();
  const double tiny = dtype_info(DType::kF32).min_normal;
  auto in = [&](double v) {
    if (arith.inputs) v = round_to(v, *arith.inputs);
    return arith.daz && std::fabs(v) < tiny ? 0.0 : v;
  };
  auto flush = [&](double v) { return arith.ftz && std::fabs(v) < tiny ? 0.0 : v; };
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::vector<double> products;
      for (std::int64_t p = 0; p < k; ++p)
        products.push_back(round_bits(in(call.t("A").at(i * k + p)) * in(call.t("B").at(p * n + j)),
                                      arith.product_bits, Mode::kNearest));
      double acc = 0;
      if (arith.split) {
        double part[2] = {0, 0};
        for (std::size_t p = 0; p < products.size(); ++p)
          part[p % 2] = flush(round_bits(part[p % 2] + products[p], arith.acc_bits, arith.mode));
        acc = flush(round_bits(part[0] + part[1], arith.acc_bits, arith.mode));
      } else if (arith.block == 0) {
        for (double t : products) acc = flush(round_bits(acc + t, arith.acc_bits, arith.mode));
      } else {
        for (std::size_t b0 = 0; b0 < products.size(); b0 += static_cast<std::size_t>(arith.block)) {
          std::vector<double> terms = {acc};
          for (std::size_t p = b0; p < std::min(products.size(), b0 + static_cast<std::size_t>(arith.block)); ++p)
            terms.push_back(products[p]);
          double largest = 0;
          for (double t : terms) largest = std::max(largest, std::fabs(t));
          if (largest == 0) continue;
          int e = 0;
          std::frexp(largest, &e);
          const double grid = std::ldexp(1.0, e - arith.acc_bits);  // the last bit kept below the largest term
          double sum = 0;
          for (double t : terms) sum += std::trunc(t / grid) * grid;
          acc = flush(round_bits(sum, arith.acc_bits, Mode::kTowardZero));
        }
      }
      c[static_cast<std::size_t>(i * n + j)] = round_to(acc, out);
    }
  return c;
}

Call probed(DType dtype, std::int64_t k = 4, std::int64_t m = 160, std::int64_t n = 2) {
  const Op* matmul = builtin_ops().find("matmul");
  Config config;
  config.dtype = dtype;
  config.accumulator = DType::kF32;
  config.params = {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}};
  auto call = matmul->make_call(config);
  EXPECT_TRUE(call.ok());
  Probe probe;
  probe.name = "arithmetic";
  Rng rng(1);
  EXPECT_TRUE(matmul->apply_probe(*call, probe, rng).ok());
  return std::move(*call);
}

ops::ArithmeticReading read(const Call& call, const Arithmetic& arith) {
  return ops::read_arithmetic(call, emulate(call, arith));
}

std::string lines(const Call& call, const Arithmetic& arith) {
  std::string all;
  for (const auto& l : ops::describe_arithmetic(read(call, arith), call)) all += l + "\n";
  return all;
}

/// The signatures the classifier names, in order, joined by spaces.
std::string named(const Call& call, const Arithmetic& arith) {
  const Op* matmul = builtin_ops().find("matmul");
  Observation obs;
  obs.output = "C";
  obs.dtype = call.t("C").dtype();
  obs.probe = "arithmetic";
  obs.got = emulate(call, arith);
  obs.ref = matmul->oracle(call, {})->outputs[0];
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  ops::classify_arithmetic(*matmul, call, obs, &sigs, &notes);
  std::string s;
  for (const auto& sg : sigs) s += (s.empty() ? "" : " ") + sg.to_string();
  return s;
}

TEST(ArithmeticProbe, EveryRowIsExactInTheDeclaredFormats) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    const Call call = probed(t, 64);
    const ops::ArithmeticLayout layout =
        ops::arithmetic_layout(t, t, call.get_int("M"), call.get_int("N"), call.get_int("K"));
    EXPECT_EQ(layout.rows.size(), layout.wanted) << dtype_name(t) << ": M = 160 holds every row";
    // Honest arithmetic: an exact sum rounded once to the output reproduces
    // every row's exact result (the FP64 oracle is exact on these values).
    const std::vector<double> ref = builtin_ops().find("matmul")->oracle(call, {})->outputs[0];
    for (std::size_t r = 0; r < layout.rows.size(); ++r) {
      const auto& row = layout.rows[r];
      if (row.kind == ops::ArithmeticRowKind::kDrift) continue;
      const std::size_t col = row.kind == ops::ArithmeticRowKind::kProduct ? 1 : 0;
      EXPECT_EQ(ref[r * 2 + col], row.exact) << dtype_name(t) << " row " << r;
      for (const auto& [kk, v] : row.terms) EXPECT_EQ(round_to(v, t), v) << dtype_name(t) << " row " << r;
    }
  }
}

// The engine draws a config's inputs once and judges every impl on them,
// each with its own declared accumulator: the rows must not depend on it.
TEST(ArithmeticProbe, TheRowsDoNotDependOnTheDeclaredAccumulator) {
  Call fp32acc = probed(DType::kBF16);
  Call bf16acc = fp32acc;
  bf16acc.config.accumulator = DType::kBF16;
  Arithmetic bf16_sum;
  bf16_sum.acc_bits = 8;
  const ops::ArithmeticReading a = read(fp32acc, bf16_sum), b = read(bf16acc, bf16_sum);
  EXPECT_EQ(a.width, 8);
  EXPECT_EQ(b.width, 8);
  EXPECT_EQ(a.order, ops::SumOrder::kSequential);
  EXPECT_EQ(b.order, ops::SumOrder::kSequential);
  EXPECT_EQ(named(fp32acc, bf16_sum), "ACCUMULATOR_PRECISION(bf16)");
  EXPECT_EQ(named(bf16acc, bf16_sum), "");  // declared bf16: the declaration holds
}

TEST(ArithmeticProbe, AnFp32FmaChainReadsAsDeclared) {
  const Call call = probed(DType::kF32);
  const ops::ArithmeticReading r = read(call, {});
  EXPECT_EQ(r.input.lost_at, 0);
  EXPECT_EQ(r.input.last_kept, 23);
  EXPECT_EQ(r.accumulator.lost_at, 24);
  EXPECT_EQ(r.product.lost_at, 0);
  EXPECT_EQ(r.rounding_bits, 24);
  EXPECT_EQ(r.rounding, ops::RoundingReading::kNearestEven) << r.rounding_detail;
  EXPECT_EQ(r.cancel.lost_at, 0);
  EXPECT_EQ(r.subnormal_result_kept, 1);
  EXPECT_EQ(r.subnormal_input_kept, 1);
  const std::string text = lines(call, {});
  EXPECT_NE(text.find("input rounding: none (FP32 kept"), std::string::npos) << text;
  EXPECT_NE(text.find("accumulator rounding: to nearest, ties to even"), std::string::npos) << text;
  EXPECT_NE(text.find("neighbouring terms meet first"), std::string::npos) << text;
  EXPECT_EQ(named(call, {}), "");
}

TEST(ArithmeticProbe, InputRoundingIsReadAndNamedByFormat) {
  const Call call = probed(DType::kF32);
  Arithmetic tf32;
  tf32.inputs = DType::kTF32;
  EXPECT_EQ(read(call, tf32).input.lost_at, 11);
  EXPECT_EQ(ops::input_format(read(call, tf32)), "tf32");
  EXPECT_EQ(named(call, tf32), "PRECISION_FINGERPRINT(tf32)");
  Arithmetic fp16 = tf32;
  fp16.inputs = DType::kF16;  // the 2^-40 row flushes
  EXPECT_EQ(named(call, fp16), "PRECISION_FINGERPRINT(fp16)");
  Arithmetic bf16 = tf32;
  bf16.inputs = DType::kBF16;
  EXPECT_EQ(named(call, bf16), "PRECISION_FINGERPRINT(bf16)");
  EXPECT_NE(lines(call, bf16).find("input rounding: to 8 significant bits (bf16)"), std::string::npos)
      << lines(call, bf16);
  // bf16 inputs declared: bf16 rounding is the declaration.
  EXPECT_EQ(named(probed(DType::kBF16), bf16), "");
}

TEST(ArithmeticProbe, ANarrowRunningSumIsNotMistakenForInputRounding) {
  const Call call = probed(DType::kF32);
  Arithmetic acc;
  acc.acc_bits = 8;  // a bf16 running sum
  const ops::ArithmeticReading r = read(call, acc);
  EXPECT_EQ(r.accumulator.lost_at, 8);
  EXPECT_FALSE(ops::inputs_rounded(r));
  EXPECT_EQ(r.rounding_bits, 8);
  EXPECT_EQ(r.rounding, ops::RoundingReading::kNearestEven) << r.rounding_detail;
  EXPECT_EQ(named(call, acc), "ACCUMULATOR_PRECISION(bf16)");
  EXPECT_NE(lines(call, acc).find("input rounding: not measured beyond the accumulator's width"), std::string::npos);
}

TEST(ArithmeticProbe, RoundingDirectionsAreToldApart) {
  const Call call = probed(DType::kF32);
  Arithmetic rz;
  rz.mode = Mode::kTowardZero;
  EXPECT_EQ(read(call, rz).rounding, ops::RoundingReading::kTowardZero) << read(call, rz).rounding_detail;
  EXPECT_EQ(named(call, rz), "ACCUMULATOR_ROUNDING(toward_zero)");
  Arithmetic rd;
  rd.mode = Mode::kDown;
  EXPECT_EQ(read(call, rd).rounding, ops::RoundingReading::kDown) << read(call, rd).rounding_detail;
  EXPECT_EQ(named(call, rd), "ACCUMULATOR_ROUNDING(toward_neg_inf)");
  // A truncating bf16 running sum: the width is what contradicts FP32; the
  // rounding is read at 8 bits, not at the declared 24.
  Arithmetic rz8 = rz;
  rz8.acc_bits = 8;
  EXPECT_EQ(read(call, rz8).rounding_bits, 8);
  EXPECT_EQ(named(call, rz8), "ACCUMULATOR_PRECISION(bf16)");
}

TEST(ArithmeticProbe, ProductRoundingIsNamedOnlyWhereTheAccumulatorHoldsTheProduct) {
  // FP32 x FP32 rounded to FP32 before the sum: the standard model of an FP32
  // accumulator, a note.
  const Call fp32 = probed(DType::kF32);
  Arithmetic rounded;
  rounded.product_bits = 24;
  EXPECT_EQ(read(fp32, rounded).product.lost_at, 24);
  EXPECT_EQ(named(fp32, rounded), "");
  EXPECT_NE(lines(fp32, rounded).find("products rounded to about 24 significant bits (fp32)"), std::string::npos)
      << lines(fp32, rounded);
  // bf16 x bf16 (16 bits, exact in FP32) rounded to bf16: named.
  const Call bf16 = probed(DType::kBF16);
  Arithmetic to_bf16;
  to_bf16.product_bits = 8;
  EXPECT_EQ(read(bf16, to_bf16).product.lost_at, 8);
  EXPECT_EQ(named(bf16, to_bf16), "PRODUCT_PRECISION(bf16)");
  EXPECT_EQ(read(bf16, {}).product.lost_at, 0);
  EXPECT_EQ(named(bf16, {}), "");
}

TEST(ArithmeticProbe, AnAlignedBlockAdderLosesTheTermAfterTheCancelledPair) {
  const Call call = probed(DType::kF32);
  Arithmetic block;
  block.block = 4;
  const ops::ArithmeticReading r = read(call, block);
  EXPECT_EQ(r.order, ops::SumOrder::kAligned);
  EXPECT_EQ(r.cancel.lost_at, 24);
  EXPECT_EQ(r.accumulator.lost_at, 24);
  EXPECT_NE(lines(call, block).find("aligned to the largest of a block"), std::string::npos) << lines(call, block);
  // The sequential sum keeps it: the reading tells the two apart.
  EXPECT_EQ(read(call, {}).cancel.lost_at, 0);
}

TEST(ArithmeticProbe, NeedsAlphaOneAndBetaZero) {
  const Op* matmul = builtin_ops().find("matmul");
  Config config;
  config.params = {{"M", "160"}, {"N", "2"}, {"K", "4"}, {"beta", "0.5"}};
  auto call = matmul->make_call(config);
  ASSERT_TRUE(call.ok());
  Probe probe;
  probe.name = "arithmetic";
  Rng rng(1);
  EXPECT_FALSE(matmul->apply_probe(*call, probe, rng).ok());
}

// A wrong kernel (here B read transposed, so every row is scaled) is not read
// as an arithmetic: no width, no name.
TEST(ArithmeticProbe, AnOutputThatDoesNotFollowTheRowsIsNotRead) {
  Call call = probed(DType::kF32);
  std::vector<double> got = emulate(call, {});
  for (double& v : got) v *= 1.25;
  const ops::ArithmeticReading r = ops::read_arithmetic(call, got);
  EXPECT_FALSE(r.coherent);
  const auto text = ops::describe_arithmetic(r, call);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_NE(text[0].find("no reading"), std::string::npos) << text[0];
}

// Two partial sums over alternate k (an unrolled SIMD loop): the in-order
// rows keep the small term at every j, the alternate-k rows read the width,
// the products and the rounding as they are.
TEST(ArithmeticProbe, TwoPartialSumsOverAlternateKAreReadInTheirOrder) {
  const Call call = probed(DType::kF32, 64);
  Arithmetic split;
  split.split = true;
  ops::ArithmeticReading r = read(call, split);
  EXPECT_EQ(r.order, ops::SumOrder::kAlternate);
  EXPECT_EQ(r.accumulator.lost_at, 0);
  EXPECT_EQ(r.width, 24);
  EXPECT_EQ(r.product.lost_at, 0);
  EXPECT_EQ(r.rounding, ops::RoundingReading::kNearestEven) << r.rounding_detail;
  EXPECT_EQ(named(call, split), "");
  split.mode = Mode::kTowardZero;
  EXPECT_EQ(named(call, split), "ACCUMULATOR_ROUNDING(toward_zero)");
  split.mode = Mode::kNearest;
  split.acc_bits = 8;
  EXPECT_EQ(named(call, split), "ACCUMULATOR_PRECISION(bf16)");
  // Products rounded to FP32 in their own partial sum: read as rounded.
  Arithmetic rounded = split;
  rounded.acc_bits = 24;
  rounded.product_bits = 24;
  EXPECT_EQ(read(call, rounded).product.lost_at, 24);
  EXPECT_EQ(read(call, {}).order, ops::SumOrder::kSequential);
}

TEST(ArithmeticProbe, FlushedSubnormalsAreReadAsSuch) {
  const Call call = probed(DType::kF32);
  Arithmetic ftz;
  ftz.ftz = true;
  EXPECT_EQ(read(call, ftz).subnormal_result_kept, 0);
  EXPECT_EQ(read(call, ftz).subnormal_input_kept, 1);
  Arithmetic daz;
  daz.daz = true;
  EXPECT_EQ(read(call, daz).subnormal_result_kept, 1);
  EXPECT_EQ(read(call, daz).subnormal_input_kept, 0);
  EXPECT_NE(lines(call, daz).find("subnormal inputs read as zero"), std::string::npos) << lines(call, daz);
}

void expect_states(const CalibrationResult& result, std::size_t rows) {
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  ASSERT_EQ(result.rows.size(), rows) << render_calibration(result, false);
  for (const auto& row : result.rows) EXPECT_TRUE(row.state_ok) << row.contract << " " << row.impl << ": " << row.problem;
}

std::string numerics_file() { return std::string(KC_SOURCE_DIR) + "/contracts/lowprec/KC-GEMM-NUMERICS-01.kc"; }

TEST(GemmNumerics, Trios) {
  CheckRequest request;
  request.paths = {numerics_file()};
  const CalibrationResult result = run_calibration(request);
  expect_states(result, 6);
  for (const auto& row : result.rows) {
    if (row.role != TrioRole::kBad) continue;
    const CaseResult& r = row.contract_result;
    ASSERT_FALSE(r.signatures.empty()) << r.reason;
    EXPECT_EQ(r.signatures.front().to_string(), row.contract == "KC-GEMM-NUMERICS-01"
                                                    ? "ACCUMULATOR_ROUNDING(toward_zero)"
                                                    : "PRODUCT_PRECISION(fp16|tf32)")
        << r.reason;
  }
}

// The tf32-input kernel is caught at every K, with the format named.
TEST(GemmNumerics, Tf32InputsDeclaredFp32) {
  const CaseResult r = trio::check_one_in(numerics_file(), "KC-GEMM-NUMERICS-01", "calib.matmul_tf32_inputs");
  EXPECT_EQ(r.verdict, Verdict::kViolation) << r.reason;
  ASSERT_FALSE(r.signatures.empty()) << r.reason;
  EXPECT_EQ(r.signatures.front().to_string(), "PRECISION_FINGERPRINT(tf32)") << r.reason;
}

// OpenBLAS's sgemm keeps what it declares: FP32 inputs, a 24-bit running sum
// rounding to nearest; the readings are notes on a conforming case.
TEST(GemmNumerics, OpenblasSgemmReadsAsItsDeclaration) {
  const CaseResult r = trio::check_one_in(numerics_file(), "KC-GEMM-NUMERICS-01", "openblas.sgemm");
  if (r.verdict == Verdict::kSkipped || r.verdict == Verdict::kNotApplicable) GTEST_SKIP() << r.reason;
  EXPECT_EQ(r.verdict, Verdict::kConforming) << r.reason;
  int inputs = 0, widths = 0, nearest = 0;
  for (const auto& n : r.evidence.notes) {
    inputs += n.find("input rounding: none (FP32 kept") != std::string::npos;
    widths += n.find("accumulator width: about 24 significant bits, fp32") != std::string::npos;
    nearest += n.find("accumulator rounding: to nearest") != std::string::npos;
  }
  EXPECT_EQ(inputs, 2);  // K = 4 and K = 64
  EXPECT_EQ(widths, 2);
  EXPECT_EQ(nearest, 2);
}

}  // namespace
}  // namespace kc::engine
