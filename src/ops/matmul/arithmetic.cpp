// kc — the matmul `arithmetic` probe and its reading (see arithmetic.h).
//
// The features and the inputs that tell them apart follow the published
// studies of matrix-unit arithmetic (Fasi, Higham, Mikaitis and Pranesh,
// "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021; Hickmann and
// Bradford on the same question for other units): values chosen so that each
// candidate behaviour leaves a different, exactly predictable result.
#include <algorithm>
#include <cmath>
#include <set>

#include "kc/ops/matmul_arithmetic.h"

namespace kc::ops {
namespace {

bool holds(double v, DType t) { return std::isfinite(v) && round_to(v, t) == v; }

/// A normal (or zero) value of t: the width rows must not meet gradual underflow.
bool holds_normal(double v, DType t) { return holds(v, t) && (v == 0 || std::fabs(v) >= dtype_info(t).min_normal); }

class Builder {
 public:
  Builder(DType in, DType out, std::int64_t m, std::int64_t k, ArithmeticLayout* layout)
      : in_(in), out_(out), m_(m), k_(k), layout_(layout) {}

  /// Adds a row whose terms are all normal input values and whose results
  /// (`exact`, and `extra` where given) are normal output values; false where it cannot.
  bool add(ArithmeticRow row, std::initializer_list<double> extra = {}, bool subnormal_ok = false) {
    for (const auto& [kk, v] : row.terms)
      if (kk >= k_) return false;
    for (const auto& [kk, v] : row.terms)
      if (subnormal_ok ? !holds(v, in_) : !holds_normal(v, in_)) return false;
    auto fits = [&](double v) { return subnormal_ok ? holds(v, out_) : holds_normal(v, out_); };
    if (row.kind != ArithmeticRowKind::kDrift) {
      if (!fits(row.exact)) return false;
      for (double v : extra)
        if (!fits(v)) return false;
    }
    ++layout_->wanted;
    if (static_cast<std::int64_t>(layout_->rows.size()) < m_) layout_->rows.push_back(std::move(row));
    return true;
  }

 private:
  DType in_, out_;
  std::int64_t m_, k_;
  ArithmeticLayout* layout_;
};

ArithmeticRow row_of(ArithmeticRowKind kind, int j, std::vector<std::pair<std::int64_t, double>> terms, double exact) {
  ArithmeticRow r;
  r.kind = kind;
  r.j = j;
  r.terms = std::move(terms);
  r.exact = exact;
  return r;
}

double p2(int e) { return std::ldexp(1.0, e); }

}  // namespace

int significant_bits(DType t) { return dtype_info(t).mantissa_bits + 1; }

std::string width_name(int bits) {
  // One bit of slack for the order of a sum, as the accumulator_bits reading.
  for (DType t : {DType::kFP8E5M2, DType::kFP8E4M3, DType::kBF16, DType::kF16, DType::kF32, DType::kF64}) {
    const int p = significant_bits(t);
    if (bits == p) return std::string(dtype_info(t).short_name) + (t == DType::kF16 ? "|tf32" : "");
  }
  return std::to_string(bits) + "-bit";
}

ArithmeticLayout arithmetic_layout(DType in, DType out, std::int64_t m, std::int64_t n, std::int64_t k) {
  ArithmeticLayout L;
  const int p_in = significant_bits(in);
  // The widest accumulator the rows reach: FP32's (or the inputs' own, when
  // wider). Not the declared accumulator: inputs are drawn once and judged
  // against several impls, each with its own declaration.
  const int p_reach = std::max(24, p_in);
  L.reach_bits = p_reach;
  // S: the smallest power of two that keeps S 2^-(p + 2) a normal number of
  // both formats (1 for FP32 and bf16; 2^12 for fp16), while 4 S stays finite.
  const double floor_normal = std::max(dtype_info(in).min_normal, dtype_info(out).min_normal);
  int e = 0;
  while (e < 60 && p2(e - (p_reach + 2)) < floor_normal && 4 * p2(e + 1) <= dtype_info(in).max_finite) ++e;
  const double s = p2(e);
  L.scale = s;
  L.product_h = std::max(1, p_in / 2);
  const int h = L.product_h;
  Builder b(in, out, m, k, &L);
  using K = ArithmeticRowKind;

  // Inputs: S(1 + 2^-j) - S keeps 2^-j S while the inputs (and the sum) keep j + 1 bits.
  for (int j = 1; j < p_in; ++j) b.add(row_of(K::kInput, j, {{0, s * (1 + p2(-j))}, {1, -s}}, s * p2(-j)));
  // Exponent range: fp16 flushes 2^-40 S to zero, tf32 and bf16 keep it.
  b.add(row_of(K::kInputRange, 40, {{0, s * p2(-40)}}, s * p2(-40)));
  // Accumulator width, as accumulator_bits with one small term.
  for (int j = 1; j <= p_reach + 4; ++j)
    b.add(row_of(K::kAccumulator, j, {{0, s}, {1, s * p2(-j)}, {2, -s}}, s * p2(-j)));
  // Products (column 1 = 1 + 2^-h): -S(1 + 2^-h) + S(1 + 2^-j)(1 + 2^-h) =
  // S 2^-j (1 + 2^-h) exactly when the product keeps its low bit 2^-(j+h).
  // Each in two orders (k = 0, 1 and k = 0, 2, a zero between): a kernel
  // keeping two partial sums over alternate k meets the pair only in the second.
  for (bool alternate : {false, true})
    if (n >= 2)
      for (int j = 1; j < p_in && j + h <= std::min(2 * p_in, p_reach) + 1; ++j) {
        ArithmeticRow r =
            row_of(K::kProduct, j, {{0, -s}, {alternate ? 2 : 1, s * (1 + p2(-j))}}, s * p2(-j) * (1 + p2(-h)));
        r.alternate = alternate;
        b.add(std::move(r));
      }
  // Rounding at the widths of the common accumulators (bf16, fp16 and tf32, FP32) and the widest reached.
  std::set<int> widths = {8, 11, 24, p_reach};
  const int d = 2;
  // In order (S, x, -S) and over alternate k (S, -S, x: S and x share a
  // partial sum of a two-way split).
  for (bool alt : {false, true})
  for (int p : widths) {
    const double above = s * p2(-p) * (1 + p2(-d)), below = s * p2(-p) * (1 - p2(-d)), ulp = s * p2(-(p - 1));
    auto rounding = [&](RoundingCase c, std::vector<std::pair<std::int64_t, double>> terms, double exact, double up,
                        double down) {
      if (alt) {  // the last term (-S, or +S) moves to k = 1, the others to even k
        std::vector<std::pair<std::int64_t, double>> moved = {terms.front(), {1, terms.back().second}};
        for (std::size_t t = 1; t + 1 < terms.size(); ++t) moved.emplace_back(2 * static_cast<std::int64_t>(t), terms[t].second);
        terms = std::move(moved);
      }
      ArithmeticRow r = row_of(K::kRounding, p, std::move(terms), exact);
      r.alternate = alt;
      r.rounding = c;
      r.up = up;
      r.down = down;
      b.add(std::move(r), {up, down});
    };
    rounding(RoundingCase::kAbovePos, {{0, s}, {1, above}, {2, -s}}, above, ulp, 0);
    rounding(RoundingCase::kBelowPos, {{0, s}, {1, below}, {2, -s}}, below, ulp, 0);
    rounding(RoundingCase::kAboveNeg, {{0, -s}, {1, -above}, {2, s}}, -above, -ulp, 0);
    rounding(RoundingCase::kBelowNeg, {{0, -s}, {1, -below}, {2, s}}, -below, -ulp, 0);
    rounding(RoundingCase::kTieEven, {{0, s}, {1, s * p2(-p)}, {2, -s}}, s * p2(-p), ulp, 0);
    rounding(RoundingCase::kTieOdd, {{0, s}, {1, ulp}, {2, s * p2(-p)}, {3, -s}}, ulp + s * p2(-p), 2 * ulp, ulp);
  }
  // Normalization: S - S first, then a small term, which a normalized add keeps at any j.
  // Read with the accumulator rows, they also tell the order: a sequential
  // sum keeps these and loses those; two partial sums over alternate k the
  // reverse; a block aligned to its largest term loses both.
  for (int j = 2; j <= p_reach + 16; ++j)
    b.add(row_of(K::kCancel, j, {{0, s}, {1, -s}, {2, s * p2(-j)}}, s * p2(-j)));
  // Subnormals: 1.5 m - m = m / 2 (a subnormal result of normal inputs) and
  // m + m / 8 (a subnormal input, a normal result), m the larger min normal.
  b.add(row_of(K::kSubnormalResult, 0, {{0, 1.5 * floor_normal}, {1, -floor_normal}}, 0.5 * floor_normal), {}, true);
  b.add(row_of(K::kSubnormalInput, 0, {{0, floor_normal}, {1, floor_normal / 8}}, 1.125 * floor_normal), {}, true);
  // Drift: y = S 2^-(p-1) (1 - 2^-dd), just under one ulp of S at the reached
  // width. Round to nearest adds an ulp each time (error 2^-dd ulp per term);
  // truncation drops y each time (error (K - 1) y, about 2 (K - 1) u S, which
  // exceeds gamma(K + 2) S from K ~ 8 on).
  if (k >= 3) {
    const int dd = std::min(p_in - 1, 8);
    const double y = s * p2(-(p_reach - 1)) * (1 - p2(-dd));
    for (double sign : {1.0, -1.0}) {
      std::vector<std::pair<std::int64_t, double>> terms = {{0, sign * s}};
      for (std::int64_t kk = 1; kk < k; ++kk) terms.emplace_back(kk, sign * y);
      b.add(row_of(K::kDrift, p_reach, std::move(terms), sign * (s + static_cast<double>(k - 1) * y)));
    }
  }
  return L;
}

Status apply_arithmetic_probe(Call& call) {
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  if (k < 2) return invalid_argument("probe arithmetic needs K >= 2");
  if (call.get_double("alpha", 1) != 1 || call.get_double("beta", 0) != 0)
    return invalid_argument("probe arithmetic reads exact sums of op(A) op(B): it needs alpha = 1 and beta = 0");
  const bool ta = call.get("trans_a", "N") == "T" || call.get("trans_a", "N") == "t";
  const bool tb = call.get("trans_b", "N") == "T" || call.get("trans_b", "N") == "t";
  Tensor& a = call.t("A");
  Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  a.fill_storage(0.0);
  c.fill_storage(0.0);
  const ArithmeticLayout L = arithmetic_layout(a.dtype(), c.dtype(), m, n, k);
  const double col1 = 1 + std::ldexp(1.0, -L.product_h);
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (std::int64_t j = 0; j < n; ++j) b.set(tb ? j * k + kk : kk * n + j, j == 1 ? col1 : 1.0);
  for (std::size_t r = 0; r < L.rows.size(); ++r)
    for (const auto& [kk, v] : L.rows[r].terms) {
      const auto ri = static_cast<std::int64_t>(r);
      a.set(ta ? kk * m + ri : ri * k + kk, v);
    }
  return ok_status();
}

std::string rounding_reading_name(RoundingReading r) {
  switch (r) {
    case RoundingReading::kNotRead: return "not read";
    case RoundingReading::kNearestEven: return "to nearest, ties to even";
    case RoundingReading::kNearestAway: return "to nearest, ties away from zero";
    case RoundingReading::kNearest: return "to nearest";
    case RoundingReading::kTowardZero: return "toward zero";
    case RoundingReading::kDown: return "toward -inf";
    case RoundingReading::kUp: return "toward +inf";
    case RoundingReading::kExact: return "none (the sum kept every bit)";
    case RoundingReading::kOther: return "none of the IEEE directions";
  }
  return "";
}

ArithmeticReading read_arithmetic(const Call& inputs, const std::vector<double>& got) {
  ArithmeticReading R;
  const std::int64_t m = inputs.get_int("M", 64), n = inputs.get_int("N", 64), k = inputs.get_int("K", 64);
  if (!inputs.has("A") || !inputs.has("C") || m < 1 || n < 1 || static_cast<std::int64_t>(got.size()) < m * n)
    return R;
  const ArithmeticLayout L =
      arithmetic_layout(inputs.t("A").dtype(), inputs.t("C").dtype(), m, n, k);
  R.laid_out = !L.rows.empty();
  R.left_out = static_cast<int>(L.wanted - L.rows.size());
  R.product_h = L.product_h;
  // The value of row r in the columns it is read in, or NaN where they disagree.
  auto value = [&](std::size_t r) {
    const bool product = L.rows[r].kind == ArithmeticRowKind::kProduct;
    double v = std::nan("");
    bool first = true;
    for (std::int64_t c = 0; c < n; ++c) {
      if ((c == 1) != product) continue;
      const double g = got[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(c)];
      if (first) v = g;
      else if (!(g == v)) return std::nan("");
      first = false;
    }
    return v;
  };
  auto width = [](WidthReading* w, int j, bool kept) {
    if (w->lost_at != 0) return;
    ++w->probed;
    if (kept) w->last_kept = j;
    else w->lost_at = j;
  };
  for (std::size_t r = 0; r < L.rows.size(); ++r) {
    const ArithmeticRow& row = L.rows[r];
    const bool kept = value(r) == row.exact;
    switch (row.kind) {
      case ArithmeticRowKind::kInput: width(&R.input, row.j, kept); break;
      case ArithmeticRowKind::kInputRange:
        ++R.range_probed;
        R.range_kept = R.range_kept && kept;
        break;
      case ArithmeticRowKind::kAccumulator: width(&R.accumulator, row.j, kept); break;
      case ArithmeticRowKind::kProduct: break;  // read below, in the order the sum follows
      case ArithmeticRowKind::kCancel: width(&R.cancel, row.j, kept); break;
      case ArithmeticRowKind::kSubnormalResult:
        ++R.subnormal_result_probed;
        R.subnormal_result_kept += kept;
        break;
      case ArithmeticRowKind::kSubnormalInput:
        ++R.subnormal_input_probed;
        R.subnormal_input_kept += kept;
        break;
      case ArithmeticRowKind::kRounding:
      case ArithmeticRowKind::kDrift: break;
    }
  }
  // Any arithmetic of two bits or more keeps 1 + 2^-1: an output that loses
  // it on the first input or accumulator row does not follow the probe (a
  // wrong kernel), and none of its readings means anything.
  auto first_lost = [](const WidthReading& w) { return w.probed > 0 && w.last_kept == 0 && w.lost_at > 0; };
  R.coherent = !first_lost(R.input) && !first_lost(R.accumulator);
  if (!R.coherent) return R;
  // The order of the sum, and the width it measures.
  const int acc = R.accumulator.lost_at, cancel = R.cancel.lost_at;
  R.order = acc > 0 && cancel == 0   ? SumOrder::kSequential
            : acc == 0 && cancel > 0 ? SumOrder::kAlternate
            : acc > 0 && cancel > 0  ? SumOrder::kAligned
                                     : SumOrder::kWide;
  R.width = R.order == SumOrder::kAlternate ? cancel : acc;
  const bool alternate = R.order == SumOrder::kAlternate;
  for (std::size_t r = 0; r < L.rows.size(); ++r)
    if (L.rows[r].kind == ArithmeticRowKind::kProduct && L.rows[r].alternate == alternate)
      width(&R.product, L.rows[r].j + L.product_h, value(r) == L.rows[r].exact);
  // Rounding: the rows at the measured width, in that order.
  const int w = R.width;
  enum Outcome { kMissing, kExactO, kUpO, kDownO, kOtherO };
  Outcome outcome[6] = {kMissing, kMissing, kMissing, kMissing, kMissing, kMissing};
  for (std::size_t r = 0; r < L.rows.size() && w > 0; ++r) {
    const ArithmeticRow& row = L.rows[r];
    if (row.kind != ArithmeticRowKind::kRounding || row.j != w || row.alternate != alternate) continue;
    const double v = value(r);
    outcome[static_cast<int>(row.rounding)] = v == row.exact ? kExactO : v == row.up ? kUpO : v == row.down ? kDownO : kOtherO;
    R.rounding_bits = w;
  }
  if (R.rounding_bits == 0) return R;
  const Outcome ap = outcome[0], bp = outcome[1], an = outcome[2], bn = outcome[3], te = outcome[4], to = outcome[5];
  static const char* kCase[6] = {"+above", "+below", "-above", "-below", "tie(even)", "tie(odd)"};
  static const char* kOutcome[5] = {"", "exact", "up", "down", "other"};
  for (int i = 0; i < 6; ++i)
    if (outcome[i] != kMissing)
      R.rounding_detail += (R.rounding_detail.empty() ? "" : ", ") + std::string(kCase[i]) + " " + kOutcome[outcome[i]];
  auto all = [&](Outcome o) {
    for (Outcome x : outcome)
      if (x != kMissing && x != o) return false;
    return true;
  };
  // "up" and "down" are magnitudes: away from zero and toward zero.
  if (ap == kMissing || bp == kMissing || an == kMissing || bn == kMissing) R.rounding = RoundingReading::kNotRead;
  else if (all(kExactO)) R.rounding = RoundingReading::kExact;
  else if (ap == kUpO && bp == kDownO && an == kUpO && bn == kDownO)
    R.rounding = te == kDownO && to == kUpO   ? RoundingReading::kNearestEven
                 : te == kUpO && to == kUpO   ? RoundingReading::kNearestAway
                                              : RoundingReading::kNearest;
  else if (ap == kDownO && bp == kDownO && an == kDownO && bn == kDownO) R.rounding = RoundingReading::kTowardZero;
  else if (ap == kDownO && bp == kDownO && an == kUpO && bn == kUpO) R.rounding = RoundingReading::kDown;
  else if (ap == kUpO && bp == kUpO && an == kDownO && bn == kDownO) R.rounding = RoundingReading::kUp;
  else R.rounding = RoundingReading::kOther;
  return R;
}

bool inputs_rounded(const ArithmeticReading& R) {
  return R.input.lost_at > 0 && (R.width == 0 || R.width > R.input.lost_at);
}

bool products_read(const ArithmeticReading& R) {
  // -S(1 + 2^-h) must be a value of the running sum, and the inputs unrounded.
  return R.product.probed > 0 && !inputs_rounded(R) &&
         (R.width == 0 || R.width > R.product_h + 1);
}

bool rounding_read(const ArithmeticReading& R) {
  // The rounding rows' terms have 3 significant bits: any input rounding keeps
  // them but one that loses FP32's exponent range (fp16).
  return R.rounding_bits > 0 && R.rounding != RoundingReading::kNotRead &&
         !(inputs_rounded(R) && R.range_probed > 0 && !R.range_kept);
}

std::string input_format(const ArithmeticReading& R) {
  const int q = R.input.lost_at;
  if (q == significant_bits(DType::kF16)) {
    if (R.range_probed == 0) return "fp16|tf32";
    return R.range_kept ? "tf32" : "fp16";
  }
  return width_name(q);
}

std::vector<std::string> describe_arithmetic(const ArithmeticReading& R, const Call& inputs) {
  std::vector<std::string> lines;
  if (!R.laid_out) return lines;
  const std::string head = "arithmetic probe at K = " + std::to_string(inputs.get_int("K", 64)) + ": ";
  if (R.left_out > 0)
    lines.push_back(head + std::to_string(R.left_out) + " of the probe's " +
                    std::to_string(R.left_out + static_cast<int>(inputs.get_int("M", 64))) +
                    " rows left out (M = " + std::to_string(inputs.get_int("M", 64)) +
                    "): the readings of those rows are missing");
  if (!R.coherent) {
    lines.push_back(head + "no reading: the output loses even 1 + 2^-1 - 1 (it does not follow the probe's rows)");
    return lines;
  }
  const DType in = inputs.config.dtype;
  const int p_in = significant_bits(in);
  const std::string in_name(dtype_name(in));
  const int acc_lost = R.width;
  // Inputs.
  if (R.input.probed > 0) {
    if (R.input.lost_at == 0)
      lines.push_back(head + "input rounding: none (" + in_name + " kept: (1 + 2^-j) - 1 exact up to j = " +
                      std::to_string(R.input.last_kept) + ")");
    else if (!inputs_rounded(R))
      lines.push_back(head + "input rounding: not measured beyond the accumulator's width ((1 + 2^-j) - 1 lost at j = " +
                      std::to_string(R.input.lost_at) + ", the running sum loses 2^-" + std::to_string(acc_lost) + ")");
    else
      lines.push_back(head + "input rounding: to " + std::to_string(R.input.lost_at) + " significant bits (" +
                      input_format(R) + "): (1 + 2^-j) - 1 exact up to j = " + std::to_string(R.input.last_kept) +
                      ", lost at j = " + std::to_string(R.input.lost_at) + ", where the declared " + in_name +
                      " keeps " + std::to_string(p_in) + " bits");
  }
  // Accumulator width.
  const std::string declared =
      inputs.config.accumulator
          ? "declared " + std::string(dtype_name(*inputs.config.accumulator)) + ", " +
                std::to_string(significant_bits(*inputs.config.accumulator)) + " bits"
          : "no accumulator declared";
  const WidthReading& wr = R.order == SumOrder::kAlternate ? R.cancel : R.accumulator;
  if (R.accumulator.probed > 0)
    lines.push_back(head + "accumulator width: " +
                    (acc_lost == 0 ? "at least " + std::to_string(std::max(R.accumulator.last_kept, R.cancel.last_kept) + 1) +
                                         " significant bits (1 + 2^-j kept up to j = " +
                                         std::to_string(std::max(R.accumulator.last_kept, R.cancel.last_kept)) +
                                         " in both orders)"
                                   : "about " + std::to_string(acc_lost) + " significant bits, " + width_name(acc_lost) +
                                         " (1 + 2^-j kept up to j = " + std::to_string(wr.last_kept) +
                                         ", lost at j = " + std::to_string(acc_lost) + ")") +
                    " (" + declared + ")");
  // Products.
  if (R.product.probed > 0) {
    const std::string h = std::to_string(R.product_h);
    if (inputs_rounded(R))
      lines.push_back(head + "product exactness: not measured (the inputs are rounded first)");
    else if (!products_read(R))
      lines.push_back(head + "product exactness: not measured (the running sum does not hold 1 + 2^-" + h + ")");
    else if (R.product.lost_at == 0)
      lines.push_back(head + "product exactness: exact as far as the probe reaches ((1 + 2^-j)(1 + 2^-" + h +
                      ") kept its last bit up to j + " + h + " = " + std::to_string(R.product.last_kept) + ")");
    else
      lines.push_back(head + "product exactness: products rounded to about " + std::to_string(R.product.lost_at) +
                      " significant bits (" + width_name(R.product.lost_at) +
                      ") before they meet the running sum (no multiply-add fused into it; or fused into a partial sum of "
                      "its own) ((1 + 2^-j)(1 + 2^-" +
                      h + ") kept its last bit up to j + " + h + " = " + std::to_string(R.product.last_kept) +
                      ", lost it at " + std::to_string(R.product.lost_at) + ")");
  }
  // Rounding.
  if (R.rounding_bits > 0 && !rounding_read(R))
    lines.push_back(head + "accumulator rounding: not measured (the inputs lose the rounding rows' terms)");
  else if (R.rounding_bits > 0)
    lines.push_back(head + "accumulator rounding: " + rounding_reading_name(R.rounding) + " (at 2^-" +
                    std::to_string(R.rounding_bits) + " below the largest term: " + R.rounding_detail + ")");
  else if (R.accumulator.probed > 0)
    lines.push_back(head + "accumulator rounding: not read (no rounding rows at the measured width)");
  // Order and normalization.
  switch (R.order) {
    case SumOrder::kSequential:
      lines.push_back(head + "order and normalization: neighbouring terms meet first (in k order, or a tree over "
                      "neighbours), each addition normalized (after S - S a small S 2^-j survives, down to j = " +
                      std::to_string(R.cancel.last_kept) + ")");
      break;
    case SumOrder::kAlternate:
      lines.push_back(head + "order and normalization: two partial sums over alternate k (S, x, -S keeps x at every j, "
                      "S, -S, x loses it from j = " + std::to_string(R.cancel.lost_at) +
                      "); width, products and rounding are read from rows laid out over alternate k");
      break;
    case SumOrder::kAligned:
      lines.push_back(head + "order and normalization: S 2^-j is lost from j = " + std::to_string(R.cancel.lost_at) +
                      " even after S - S cancelled: the terms are aligned to the largest of a block before they are "
                      "added (about " + std::to_string(R.cancel.lost_at) + " bits below its leading one), or summed "
                      "in an order the probe does not lay out");
      break;
    case SumOrder::kWide:
      lines.push_back(head + "order and normalization: every row kept in both orders (a sum wider than the probe "
                      "reaches)");
      break;
  }
  // Subnormals.
  if (R.subnormal_result_probed + R.subnormal_input_probed > 0) {
    const bool results = R.subnormal_result_kept == R.subnormal_result_probed;
    const bool ins = R.subnormal_input_kept == R.subnormal_input_probed;
    lines.push_back(head + "subnormals: " +
                    (results && ins ? std::string("kept (a subnormal result of normal inputs, and a subnormal input)")
                                    : std::string(results ? "" : "subnormal results flushed to zero") +
                                          (results || ins ? "" : "; ") +
                                          (ins ? "" : "subnormal inputs read as zero")));
  }
  return lines;
}

}  // namespace kc::ops
