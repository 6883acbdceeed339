// kc — simulated collectives (see collective.h).
//
// Error model. Any schedule adds the K = ranks contributions of one element in
// some binary tree of K-1 FP32 additions, so |ŝ - s| <= gamma(K-1) Σ_r |x_r,i|
// (Higham 4.2); magnitude = Σ_r |x_r,i|, accumulation_length = ranks (a safe
// K, matching the contract's K·eps(P)). A compressing wire adds a rounding of
// u(wire) relative to each partial sum sent: bf16 (u = 2^-8) breaks a
// gamma(K, FP32) bound by orders of magnitude, which is what C-ORD-03 catches.
// all_gather copies: magnitude |x|, accumulation_length 1.
#include "ops/collective/collective.h"

#include <cmath>
#include <string>
#include <vector>

#include "ops/class_ops_util.h"

namespace kc::ops {
namespace {

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "all_gather";
  }
  return "?";
}

bool known_schedule(std::string_view s) { return s == "ring" || s == "tree" || s == "recursive_doubling"; }

class CollectiveOp final : public Op {
 public:
  explicit CollectiveOp(CollectiveKind kind) : kind_(kind), name_(collective_name(kind)) {
    switch (kind) {
      case CollectiveKind::kAllReduce:
        summary_ = "every rank ends with Σ_r x_r";
        break;
      case CollectiveKind::kReduceScatter:
        summary_ = "rank r ends with chunk r of Σ_r x_r";
        break;
      case CollectiveKind::kAllGather:
        summary_ = "every rank ends with the concatenation of all x_r";
        break;
    }
    const char* out_help = kind == CollectiveKind::kAllReduce       ? "per-rank results {ranks, n}"
                           : kind == CollectiveKind::kReduceScatter ? "per-rank chunks {ranks, n / ranks}"
                                                                    : "per-rank gathers {ranks, ranks * n}";
    signature_ = {{"x", Role::kIn, "per-rank buffers {ranks, n}: row r is rank r's"}, {"out", Role::kOut, out_help}};
    params_ = {
        {"ranks", "4", "number of simulated ranks K"},
        {"n", "1024", "elements per rank buffer"},
        {"schedule", "ring", "ring | tree | recursive_doubling (the oracle is the same for all)"},
    };
  }

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  const std::vector<TensorSpec>& signature() const override { return signature_; }
  const std::vector<Param>& params() const override { return params_; }

  Result<Call> make_call(const Config& config) const override {
    KC_ASSIGN_OR_RETURN(DType dt, detail::float_dtype(config));
    KC_ASSIGN_OR_RETURN(std::int64_t ranks, detail::positive(config, "ranks", 4));
    KC_ASSIGN_OR_RETURN(std::int64_t n, detail::positive(config, "n", 1024));
    const std::string schedule = config.get("schedule", "ring");
    if (!known_schedule(schedule))
      return invalid_argument("schedule must be ring | tree | recursive_doubling, got '" + schedule + "'");
    std::vector<std::int64_t> out_shape = {ranks, n};
    if (kind_ == CollectiveKind::kReduceScatter) {
      if (n % ranks != 0) return invalid_argument("reduce_scatter needs n divisible by ranks");
      out_shape = {ranks, n / ranks};
    } else if (kind_ == CollectiveKind::kAllGather) {
      out_shape = {ranks, ranks * n};
    }
    std::vector<detail::Slot> slots;
    slots.push_back({"x", Role::kIn, Tensor(dt, {ranks, n})});
    slots.push_back({"out", Role::kOut, Tensor(dt, out_shape)});
    return detail::make_call_from(name_, config, std::move(slots));
  }

  Result<OracleResult> oracle(const Call& call, const OracleOptions&) const override {
    const Tensor& x = call.t("x");
    const std::int64_t ranks = x.dim(0), n = x.dim(1);
    std::vector<double> out;
    if (kind_ == CollectiveKind::kAllGather) {
      out.reserve(static_cast<std::size_t>(ranks * ranks * n));
      for (std::int64_t r = 0; r < ranks; ++r)
        for (std::int64_t e = 0; e < ranks * n; ++e) out.push_back(x.at(e));
    } else {
      std::vector<double> sum(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) {
        long double s = 0;
        for (std::int64_t r = 0; r < ranks; ++r) s += x.at(r * n + i);
        sum[i] = static_cast<double>(s);
      }
      out = per_rank(sum, ranks, n);
    }
    OracleResult res;
    res.outputs.push_back(std::move(out));
    res.output_names.push_back("out");
    return res;
  }

  Result<std::vector<double>> magnitude(const Call& call, const std::string& output) const override {
    if (output != "out") return not_found("no output '" + output + "' in " + name_);
    const Tensor& x = call.t("x");
    const std::int64_t ranks = x.dim(0), n = x.dim(1);
    if (kind_ == CollectiveKind::kAllGather) {
      std::vector<double> m;
      m.reserve(static_cast<std::size_t>(ranks * ranks * n));
      for (std::int64_t r = 0; r < ranks; ++r)
        for (std::int64_t e = 0; e < ranks * n; ++e) m.push_back(std::fabs(x.at(e)));
      return m;
    }
    std::vector<double> abs_sum(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      long double s = 0;
      for (std::int64_t r = 0; r < ranks; ++r) s += std::fabs(x.at(r * n + i));
      abs_sum[i] = static_cast<double>(s);
    }
    return per_rank(abs_sum, ranks, n);
  }

  double accumulation_length(const Call& call) const override {
    return kind_ == CollectiveKind::kAllGather ? 1.0 : static_cast<double>(call.t("x").dim(0));
  }

  std::map<std::string, double> expr_vars(const Call& call) const override {
    const Tensor& x = call.t("x");
    const auto [mx, sum] = detail::abs_max_sum(x);
    const double ranks = static_cast<double>(x.dim(0));
    return detail::with_base_vars(Op::expr_vars(call), {{"K", ranks},
                                                        {"ranks", ranks},
                                                        {"N", static_cast<double>(x.dim(1))},
                                                        {"n", static_cast<double>(x.dim(1))},
                                                        {"L", accumulation_length(call)},
                                                        {"max|x|", mx},
                                                        {"sum|x|", sum}});
  }

 private:
  /// Lays a reduced vector of n out per rank: all_reduce repeats it, reduce_scatter splits it.
  std::vector<double> per_rank(const std::vector<double>& v, std::int64_t ranks, std::int64_t n) const {
    std::vector<double> out;
    if (kind_ == CollectiveKind::kAllReduce) {
      out.reserve(static_cast<std::size_t>(ranks * n));
      for (std::int64_t r = 0; r < ranks; ++r) out.insert(out.end(), v.begin(), v.end());
    } else {
      out = v;  // row r of {ranks, n / ranks} is chunk r: the same row-major order
    }
    return out;
  }

  // ---- what the rest of kc asks of a collective
  std::vector<std::string> scope_classes() const override { return {"collective"}; }
  std::vector<OpClassifier> classifiers() const override {
    return {{OpClassifier::Stage::kPrecision,
             [](const Op& op, const Call& in, const OracleOptions&, const Observation& o, std::vector<Signature>* s,
                std::vector<std::string>* n) { classify_wire_precision(op, in, o, s, n); }}};
  }

  CollectiveKind kind_;
  std::string name_;
  std::string summary_;
  std::vector<TensorSpec> signature_;
  std::vector<Param> params_;
};

/// A value sent over the wire: rounded to the wire format, back in FP32.
float send(float v, DType wire) {
  if (wire == DType::kF32) return v;
  return static_cast<float>(round_to(static_cast<double>(v), wire));
}

}  // namespace

std::unique_ptr<Op> make_collective_op(CollectiveKind kind) { return std::make_unique<CollectiveOp>(kind); }

void simulate_all_reduce(std::span<const float> in, int ranks, int n, std::string_view schedule, DType wire,
                         std::span<float> out) {
  KC_CHECK(ranks >= 1 && n >= 0);
  const std::size_t total = static_cast<std::size_t>(ranks) * static_cast<std::size_t>(n);
  KC_CHECK(in.size() >= total && out.size() >= total);
  // buf[r] is rank r's working buffer (FP32, as a device would hold it).
  std::vector<std::vector<float>> buf(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) buf[r].assign(in.begin() + std::size_t(r) * n, in.begin() + std::size_t(r + 1) * n);
  auto row = [&](int r) { return out.subspan(std::size_t(r) * n, std::size_t(n)); };

  if (schedule == "ring") {
    // Chunk c covers [c n / R, (c+1) n / R). At step s rank r sends chunk
    // (r - 1 - s) mod R to rank r + 1, which adds it to its own copy: chunk c
    // starts on rank c + 1 and is complete on rank c after R - 1 steps.
    auto lo = [&](int c) { return static_cast<int>(static_cast<long long>(c) * n / ranks); };
    auto mod = [&](int a) { return ((a % ranks) + ranks) % ranks; };
    for (int s = 0; s + 1 < ranks; ++s) {
      // All sends of a step happen before any receive is applied.
      std::vector<std::vector<float>> msg(static_cast<std::size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        const int c = mod(r - 1 - s);
        for (int i = lo(c); i < lo(c + 1); ++i) msg[r].push_back(send(buf[r][i], wire));
      }
      for (int r = 0; r < ranks; ++r) {
        const int dst = mod(r + 1), c = mod(r - 1 - s);
        for (int i = lo(c); i < lo(c + 1); ++i) buf[dst][i] = buf[dst][i] + msg[r][i - lo(c)];
      }
    }
    // All-gather: rank c owns the total of chunk c; the others receive it over the wire
    // (forwarding an already-rounded value rounds it again to itself).
    for (int r = 0; r < ranks; ++r)
      for (int c = 0; c < ranks; ++c)
        for (int i = lo(c); i < lo(c + 1); ++i) row(r)[i] = r == c ? buf[c][i] : send(buf[c][i], wire);
    return;
  }
  if (schedule == "tree") {
    for (int s = 1; s < ranks; s *= 2)
      for (int r = 0; r + s < ranks; r += 2 * s)
        for (int i = 0; i < n; ++i) buf[r][i] = buf[r][i] + send(buf[r + s][i], wire);
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < n; ++i) row(r)[i] = r == 0 ? buf[0][i] : send(buf[0][i], wire);
    return;
  }
  KC_CHECK_MSG(schedule == "recursive_doubling", "simulate_all_reduce: unknown schedule");
  int p2 = 1;
  while (p2 * 2 <= ranks) p2 *= 2;
  // Ranks beyond the largest power of two fold into r - p2 first.
  for (int r = p2; r < ranks; ++r)
    for (int i = 0; i < n; ++i) buf[r - p2][i] = buf[r - p2][i] + send(buf[r][i], wire);
  for (int s = 1; s < p2; s *= 2) {
    std::vector<std::vector<float>> next = buf;
    for (int r = 0; r < p2; ++r) {
      const int partner = r ^ s;
      for (int i = 0; i < n; ++i) {
        const float mine = buf[r][i], theirs = send(buf[partner][i], wire);
        // Lower rank's value first (FP addition is commutative, so this only fixes the spelling).
        next[r][i] = r < partner ? mine + theirs : theirs + mine;
      }
    }
    buf.swap(next);
  }
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) row(r)[i] = r < p2 ? buf[r][i] : send(buf[r - p2][i], wire);
}

}  // namespace kc::ops
