// Tests for the contract-class ops: oracles on hand cases, OOB policies,
// simulated collectives and the training helper.
#include "ops/class_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kc/op.h"
#include "kc/ops/elementwise.h"
#include "ops/collective/collective.h"
#include "ops/fused/fused.h"
#include "ops/indexing/indexing.h"
#include "ops/stats/stats.h"
#include "ops/train/train.h"

namespace kc::ops {
namespace {

Config config_of(std::map<std::string, std::string> params, DType dt = DType::kF32) {
  Config c;
  c.params = std::move(params);
  c.dtype = dt;
  return c;
}

Call make(const Op& op, std::map<std::string, std::string> params) {
  auto call = op.make_call(config_of(std::move(params)));
  EXPECT_TRUE(call.ok()) << call.status().to_string();
  return std::move(call).value();
}

void set_all(Tensor& t, const std::vector<double>& v) {
  ASSERT_EQ(static_cast<std::size_t>(t.numel()), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) t.set(static_cast<std::int64_t>(i), v[i]);
}

std::vector<double> oracle_out(const Op& op, const Call& call, OracleOptions opt = {}) {
  auto r = op.oracle(call, opt);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r->outputs.at(0);
}

TEST(ClassOps, RegistersEveryOpOnceAndRejectsDuplicates) {
  OpRegistry reg;
  ASSERT_TRUE(register_class_ops(reg).ok());
  for (const char* name : {"mean", "variance", "norm2", "log_sum_exp", "fused_matmul", "sequential_matmul", "relu",
                           "gelu_erf", "gelu_tanh", "silu", "exp", "log", "tanh", "erf", "gather", "index_select",
                           "embedding", "scatter_add", "all_reduce", "reduce_scatter", "all_gather",
                           "mlp_train_step"}) {
    const Op* op = reg.find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->name(), name);
    for (const auto& p : op->params()) EXPECT_FALSE(p.help.empty()) << name << "." << p.name;
    auto call = op->make_call(config_of({}));
    EXPECT_TRUE(call.ok()) << name << ": " << call.status().to_string();
  }
  EXPECT_FALSE(register_class_ops(reg).ok());
}

TEST(ClassOps, EveryOpFillsRunsItsOracleAndSizesItsErrorModel) {
  OpRegistry reg;
  ASSERT_TRUE(register_class_ops(reg).ok());
  for (const Op* op : reg.all()) {
    SCOPED_TRACE(std::string(op->name()));
    auto call_or = op->make_call(config_of({}));
    ASSERT_TRUE(call_or.ok());
    Call call = std::move(call_or).value();
    Rng rng(17);
    op->fill(call, FillSpec{}, rng);
    auto ref = op->oracle(call, {});
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    ASSERT_EQ(ref->outputs.size(), ref->output_names.size());
    EXPECT_FALSE(ref->raises.has_value());
    for (std::size_t k = 0; k < ref->outputs.size(); ++k) {
      const std::string& out = ref->output_names[k];
      EXPECT_EQ(static_cast<std::int64_t>(ref->outputs[k].size()), call.t(out).numel()) << out;
      // log of the negative half of a normal(0, 1) fill is NaN (IEEE), as it should be.
      if (op->name() != "log") {
        for (double v : ref->outputs[k]) {
          ASSERT_FALSE(std::isnan(v)) << out;
        }
      }
      auto mag = op->magnitude(call, out);
      ASSERT_TRUE(mag.ok()) << mag.status().to_string();
      EXPECT_EQ(mag->size(), ref->outputs[k].size()) << out;
    }
    EXPECT_GE(op->accumulation_length(call), 1.0);
    const auto vars = op->expr_vars(call);
    EXPECT_EQ(vars.at("L"), op->accumulation_length(call));
    EXPECT_TRUE(vars.count("max|x|"));
  }
}

TEST(StatsOp, VarianceOfLargeMeanSmallSpreadIsExact) {
  auto op = make_stats_op(StatKind::kVariance);
  Call call = make(*op, {{"rows", "1"}, {"cols", "3"}});
  set_all(call.t("x"), {1e4 + 1, 1e4 + 2, 1e4 + 3});
  EXPECT_DOUBLE_EQ(oracle_out(*op, call)[0], 2.0 / 3.0);
}

TEST(StatsOp, MeanNorm2AndLogSumExpHandCases) {
  auto mean = make_stats_op(StatKind::kMean);
  auto norm = make_stats_op(StatKind::kNorm2);
  auto lse = make_stats_op(StatKind::kLogSumExp);
  Call c1 = make(*mean, {{"rows", "2"}, {"cols", "2"}});
  set_all(c1.t("x"), {1, 2, -3, 5});
  EXPECT_EQ(oracle_out(*mean, c1), (std::vector<double>{1.5, 1.0}));
  Call c2 = make(*norm, {{"rows", "1"}, {"cols", "2"}});
  set_all(c2.t("x"), {3, 4});
  EXPECT_DOUBLE_EQ(oracle_out(*norm, c2)[0], 5.0);
  Call c3 = make(*lse, {{"rows", "1"}, {"cols", "2"}});
  set_all(c3.t("x"), {1000, 1000});
  EXPECT_DOUBLE_EQ(oracle_out(*lse, c3)[0], 1000.0 + std::log(2.0));
  // log_sum_exp error model: 1 + |out|.
  auto mag = lse->magnitude(c3, "out");
  ASSERT_TRUE(mag.ok());
  EXPECT_DOUBLE_EQ((*mag)[0], 1.0 + 1000.0 + std::log(2.0));
}

TEST(StatsOp, OffsetProbeShiftsEveryElementAndOnePassFailsTheBound) {
  auto op = make_stats_op(StatKind::kVariance);
  Call call = make(*op, {{"rows", "4"}, {"cols", "1024"}});
  Rng rng(7);
  Tensor& x = call.t("x");
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, rng.uniform(-50, 50));
  const std::vector<double> before = x.to_doubles();
  Probe p;
  p.name = "offset";
  p.args = {1e4};
  ASSERT_TRUE(op->apply_probe(call, p, rng).ok());
  for (std::int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(x.at(i), static_cast<float>(before[i] + 1e4));

  const auto ref = oracle_out(*op, call);
  auto mag = op->magnitude(call, "out");
  ASSERT_TRUE(mag.ok());
  const double g = gamma(op->accumulation_length(call), DType::kF32);
  for (std::int64_t r = 0; r < 4; ++r) {
    // Two-pass in FP32 stays inside the bound; one-pass E[x²] - E[x]² in FP32 does not.
    float s = 0, ss = 0;
    for (std::int64_t j = 0; j < 1024; ++j) s += static_cast<float>(x.at(r * 1024 + j));
    const float m = s / 1024.0f;
    for (std::int64_t j = 0; j < 1024; ++j) {
      const float d = static_cast<float>(x.at(r * 1024 + j)) - m;
      ss += d * d;
    }
    const double two_pass = ss / 1024.0f;
    float sq = 0;
    for (std::int64_t j = 0; j < 1024; ++j) sq += static_cast<float>(x.at(r * 1024 + j)) * static_cast<float>(x.at(r * 1024 + j));
    const double one_pass = sq / 1024.0f - m * m;
    const double allowed = g * (*mag)[r] + unit_roundoff(DType::kF32) * std::fabs(ref[r]);
    EXPECT_LE(std::fabs(two_pass - ref[r]), allowed) << "row " << r;
    EXPECT_GT(std::fabs(one_pass - ref[r]), allowed) << "row " << r;
  }
}

TEST(ElementwiseOp, HandValuesAndNanPropagation) {
  EXPECT_NEAR(static_cast<double>(eval_unary(UnaryFn::kGeluErf, 1.0L)), 0.8413447460685429, 1e-16);
  EXPECT_NEAR(static_cast<double>(eval_unary(UnaryFn::kGeluTanh, 1.0L)), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(static_cast<double>(eval_unary(UnaryFn::kSilu, 1.0L)), 0.7310585786300049, 1e-16);
  EXPECT_EQ(static_cast<double>(eval_unary(UnaryFn::kGeluErf, -std::numeric_limits<long double>::infinity())), 0.0);
  const long double nan = std::numeric_limits<long double>::quiet_NaN();
  for (UnaryFn fn : elementwise_fns()) EXPECT_TRUE(std::isnan(eval_unary(fn, nan))) << unary_fn_name(fn);
  // relu(-0) is +0 in the oracle.
  EXPECT_FALSE(std::signbit(eval_unary(UnaryFn::kRelu, -0.0L)));
  EXPECT_EQ(eval_unary(UnaryFn::kRelu, -2.0L), 0.0L);

  auto op = make_elementwise_op(UnaryFn::kRelu);
  Call call = make(*op, {{"n", "3"}});
  set_all(call.t("x"), {-1, std::numeric_limits<double>::quiet_NaN(), 2});
  const auto y = oracle_out(*op, call);
  EXPECT_EQ(y[0], 0.0);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], 2.0);
  EXPECT_EQ(op->accumulation_length(call), 1.0);
}

TEST(ElementwiseOp, DerivativesMatchFiniteDifferences) {
  for (UnaryFn fn : {UnaryFn::kGeluErf, UnaryFn::kGeluTanh, UnaryFn::kSilu, UnaryFn::kTanh, UnaryFn::kErf}) {
    for (long double x : {-3.0L, -0.5L, 0.25L, 2.0L}) {
      const long double h = 1e-6L;
      const long double fd = (eval_unary(fn, x + h) - eval_unary(fn, x - h)) / (2 * h);
      EXPECT_NEAR(static_cast<double>(eval_unary_derivative(fn, x)), static_cast<double>(fd), 1e-8)
          << unary_fn_name(fn) << " at " << static_cast<double>(x);
    }
  }
}

TEST(FusedMatmulOp, FusedAndSequentialOracles) {
  auto fused = make_fused_matmul_op(false);
  auto seq = make_fused_matmul_op(true);
  std::map<std::string, std::string> p = {{"M", "1"}, {"N", "1"}, {"K", "2"}, {"activation", "relu"}};
  Call call = make(*fused, p);
  set_all(call.t("A"), {1, 2});
  set_all(call.t("B"), {3, -4});
  set_all(call.t("bias"), {1});
  EXPECT_EQ(oracle_out(*fused, call)[0], 0.0);  // relu(3 - 8 + 1)
  call.t("bias").set(0, 10);
  EXPECT_EQ(oracle_out(*fused, call)[0], 5.0);
  EXPECT_EQ(fused->accumulation_length(call), 3.0);

  // The sequential oracle rounds the matmul result to FP32 before the bias add:
  // 1 + 2^-30 is not an FP32 value, so T = 1 and T + bias = 1 - 2^-30 -> rounds to 1.
  p["activation"] = "identity";
  Call c2 = make(*seq, p);
  set_all(c2.t("A"), {1, std::ldexp(1.0, -15)});
  set_all(c2.t("B"), {1, std::ldexp(1.0, -15)});
  set_all(c2.t("bias"), {0});
  EXPECT_EQ(oracle_out(*seq, c2)[0], 1.0);
  EXPECT_EQ(oracle_out(*fused, c2)[0], 1.0 + std::ldexp(1.0, -30));

  // gelu_erf default; the tanh approximation differs by more than the error model allows.
  Call c3 = make(*fused, {{"M", "1"}, {"N", "1"}, {"K", "1"}});
  set_all(c3.t("A"), {1.5});
  set_all(c3.t("B"), {1});
  set_all(c3.t("bias"), {0.5});
  const double ref = oracle_out(*fused, c3)[0];
  EXPECT_NEAR(ref, 2.0 * 0.9772498680518208, 1e-15);
  auto mag = fused->magnitude(c3, "C");
  ASSERT_TRUE(mag.ok());
  const double allowed = gamma(2, DType::kF32) * (*mag)[0];
  EXPECT_GT(std::fabs(static_cast<double>(eval_unary(UnaryFn::kGeluTanh, 2.0L)) - ref), 10 * allowed);
}

TEST(IndexingOp, GatherHonoursOobPolicies) {
  auto op = make_indexing_op(IndexKind::kGather);
  Call call = make(*op, {{"rows", "3"}, {"dim", "2"}, {"n", "3"}});
  set_all(call.t("table"), {1, 2, 3, 4, 5, 6});
  set_all(call.t("index"), {2, -1, 3});
  OracleOptions opt;
  opt.oob = OobPolicy::kRaise;
  auto raise = op->oracle(call, opt);
  ASSERT_TRUE(raise.ok());
  EXPECT_TRUE(raise->raises.has_value());
  opt.oob = OobPolicy::kClamp;
  EXPECT_EQ(oracle_out(*op, call, opt), (std::vector<double>{5, 6, 1, 2, 5, 6}));
  opt.oob = OobPolicy::kZero;
  EXPECT_EQ(oracle_out(*op, call, opt), (std::vector<double>{5, 6, 0, 0, 0, 0}));
  opt.oob = OobPolicy::kUndefined;
  auto undef = op->oracle(call, opt);
  ASSERT_TRUE(undef.ok());
  EXPECT_FALSE(undef->raises.has_value());
  EXPECT_EQ(undef->outputs[0][0], 5.0);
  EXPECT_EQ(oob_rows(call), (std::vector<bool>{false, true, true}));
  // All in range: no policy raises.
  set_all(call.t("index"), {0, 1, 2});
  opt.oob = OobPolicy::kRaise;
  auto fine = op->oracle(call, opt);
  ASSERT_TRUE(fine.ok());
  EXPECT_FALSE(fine->raises.has_value());
  EXPECT_EQ(fine->outputs[0], (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(IndexingOp, OobProbeWritesTheFourStandardValues) {
  auto op = make_indexing_op(IndexKind::kEmbedding);
  Call call = make(*op, {{"rows", "100"}, {"n", "64"}});
  Rng rng(3);
  op->fill(call, FillSpec{}, rng);
  const Tensor& index = call.t("index");
  for (std::int64_t i = 0; i < index.numel(); ++i) {
    EXPECT_GE(index.at(i), 0);
    EXPECT_LT(index.at(i), 100);
  }
  Probe p;
  p.name = "oob";
  p.density = 0.01;
  ASSERT_TRUE(op->apply_probe(call, p, rng).ok());
  int neg1 = 0, negb = 0, b = 0, b10 = 0, in = 0;
  for (std::int64_t i = 0; i < index.numel(); ++i) {
    const double v = index.at(i);
    neg1 += v == -1;
    negb += v == -100;
    b += v == 100;
    b10 += v == 110;
    in += v >= 0 && v < 100;
  }
  EXPECT_EQ(neg1, 1);
  EXPECT_EQ(negb, 1);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(b10, 1);
  EXPECT_EQ(in, 60);
}

TEST(IndexingOp, ScatterAddSumsAndDropsOrClamps) {
  auto op = make_indexing_op(IndexKind::kScatterAdd);
  Call call = make(*op, {{"rows", "2"}, {"dim", "1"}, {"n", "3"}});
  set_all(call.t("out"), {10, 20});
  set_all(call.t("index"), {1, 1, 5});
  set_all(call.t("src"), {1, 2, 4});
  OracleOptions opt;
  opt.oob = OobPolicy::kZero;
  EXPECT_EQ(oracle_out(*op, call, opt), (std::vector<double>{10, 23}));
  opt.oob = OobPolicy::kClamp;
  EXPECT_EQ(oracle_out(*op, call, opt), (std::vector<double>{10, 27}));
  EXPECT_EQ(op->accumulation_length(call), 3.0);
  EXPECT_EQ(oob_rows(call), (std::vector<bool>{true, true}));
}

std::vector<float> random_buffers(int ranks, int n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(ranks) * n);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

TEST(Collective, SchedulesAgreeWithinRanksEps) {
  for (int ranks : {2, 3, 4, 5, 8, 16}) {
    const int n = 257;
    const auto in = random_buffers(ranks, n, 11 + ranks);
    std::vector<double> exact(n), abs_sum(n);
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < ranks; ++r) {
        exact[i] += in[r * n + i];
        abs_sum[i] += std::fabs(in[r * n + i]);
      }
    std::vector<float> ring(in.size());
    simulate_all_reduce(in, ranks, n, "ring", DType::kF32, ring);
    for (const char* sched : {"ring", "tree", "recursive_doubling"}) {
      std::vector<float> out(in.size());
      simulate_all_reduce(in, ranks, n, sched, DType::kF32, out);
      for (int i = 0; i < n; ++i)
        EXPECT_LE(std::fabs(out[i] - ring[i]), ranks * eps(DType::kF32) * abs_sum[i]) << sched << " vs ring";
      for (int r = 0; r < ranks; ++r)
        for (int i = 0; i < n; ++i) {
          // FP32 wire: every rank holds the same bits, within gamma(K) Σ|x| of the exact sum.
          EXPECT_EQ(out[r * n + i], out[i]) << sched << " rank " << r;
          EXPECT_LE(std::fabs(out[r * n + i] - exact[i]), ranks * eps(DType::kF32) * abs_sum[i]) << sched;
        }
    }
  }
}

TEST(Collective, Bf16WireCompressionIsVisible) {
  const int ranks = 8, n = 512;
  const auto in = random_buffers(ranks, n, 5);
  std::vector<float> fp32(in.size()), bf16(in.size());
  simulate_all_reduce(in, ranks, n, "ring", DType::kF32, fp32);
  simulate_all_reduce(in, ranks, n, "ring", DType::kBF16, bf16);
  double worst = 0, mean_rel = 0;
  int count = 0;
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < n; ++i) {
      const double a = fp32[r * n + i], b = bf16[r * n + i];
      if (std::fabs(a) < 1e-2) continue;
      const double rel = std::fabs(a - b) / std::fabs(a);
      worst = std::max(worst, rel);
      mean_rel += rel;
      ++count;
    }
  mean_rel /= count;
  // Each hop rounds to 8 significant bits (u = 2^-9 relative); errors of a few 2^-9 show up.
  EXPECT_GT(worst, std::ldexp(1.0, -10));
  EXPECT_GT(mean_rel, std::ldexp(1.0, -14));
  EXPECT_LT(mean_rel, std::ldexp(1.0, -5));
}

TEST(CollectiveOp, OracleIgnoresScheduleAndShapesOutputs) {
  auto ar = make_collective_op(CollectiveKind::kAllReduce);
  auto rs = make_collective_op(CollectiveKind::kReduceScatter);
  auto ag = make_collective_op(CollectiveKind::kAllGather);
  std::map<std::string, std::string> p = {{"ranks", "2"}, {"n", "2"}, {"schedule", "tree"}};
  Call c1 = make(*ar, p), c2 = make(*rs, p), c3 = make(*ag, p);
  for (Call* c : {&c1, &c2, &c3}) set_all(c->t("x"), {1, 2, 10, 20});
  EXPECT_EQ(oracle_out(*ar, c1), (std::vector<double>{11, 22, 11, 22}));
  EXPECT_EQ(oracle_out(*rs, c2), (std::vector<double>{11, 22}));
  EXPECT_EQ(oracle_out(*ag, c3), (std::vector<double>{1, 2, 10, 20, 1, 2, 10, 20}));
  EXPECT_EQ(ar->accumulation_length(c1), 2.0);
  EXPECT_FALSE(rs->make_call(config_of({{"ranks", "3"}, {"n", "4"}})).ok());
  EXPECT_FALSE(ar->make_call(config_of({{"schedule", "butterfly"}})).ok());
}

Call train_call(std::uint64_t seed, std::map<std::string, std::string> params = {}) {
  auto op = make_mlp_train_op();
  Call call = make(*op, std::move(params));
  Rng rng(seed);
  op->fill(call, FillSpec{}, rng);
  return call;
}

TEST(TrainOp, Fp64RunIsDeterministicAndMoves) {
  auto op = make_mlp_train_op();
  Call call = train_call(1);
  auto a = op->oracle(call, {});
  auto b = op->oracle(call, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->outputs, b->outputs);
  ASSERT_EQ(a->output_names, (std::vector<std::string>{"W1_out", "W2_out"}));
  const auto w2_in = call.t("W2").to_doubles();
  double moved = 0;
  for (std::size_t i = 0; i < w2_in.size(); ++i) moved = std::max(moved, std::fabs(a->outputs[1][i] - w2_in[i]));
  EXPECT_GT(moved, 1e-3);
  // loss_scale and quant_scale do not change the oracle.
  Call scaled = call;
  scaled.config.params["loss_scale"] = "32768";
  scaled.config.params["quant_scale"] = "16";
  auto c = op->oracle(scaled, {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(a->outputs, c->outputs);
}

TEST(TrainOp, Fp32WithPowerOfTwoLossScaleIsExactAndWithinTheBound) {
  auto op = make_mlp_train_op();
  double worst_ratio = 0, worst_abs = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Call call = train_call(seed);
    auto ref = op->oracle(call, {});
    ASSERT_TRUE(ref.ok());
    TrainPrecision p;  // FP32 compute, FP32 gradients
    const TrainResult base = train_mlp(call, p);
    for (double s : {256.0, 32768.0}) {
      p.loss_scale = s;
      const TrainResult scaled = train_mlp(call, p);
      EXPECT_EQ(scaled.w1, base.w1) << "s = " << s;
      EXPECT_EQ(scaled.w2, base.w2) << "s = " << s;
    }
    const double g = gamma(op->accumulation_length(call), DType::kF32);
    for (int k = 0; k < 2; ++k) {
      const auto& got = k == 0 ? base.w1 : base.w2;
      auto mag = op->magnitude(call, k == 0 ? "W1_out" : "W2_out");
      ASSERT_TRUE(mag.ok());
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(got[i] - ref->outputs[k][i]);
        worst_abs = std::max(worst_abs, err);
        worst_ratio = std::max(worst_ratio, err / (g * (*mag)[i]));
      }
    }
  }
  EXPECT_LT(worst_ratio, 1.0);
  RecordProperty("fp32_worst_abs", std::to_string(worst_abs));
  RecordProperty("fp32_worst_ratio", std::to_string(worst_ratio));
  std::printf("fp32 vs fp64: worst |dW| %.3g, worst ratio to bound %.3g\n", worst_abs, worst_ratio);
}

TEST(TrainOp, Fp16GradientsNeedUnscaling) {
  auto op = make_mlp_train_op();
  Call call = train_call(2);
  auto ref = op->oracle(call, {});
  ASSERT_TRUE(ref.ok());
  auto vars = op->expr_vars(call);
  TrainPrecision good;
  good.grad = DType::kF16;
  good.loss_scale = 32768;
  good.skip_nonfinite = true;
  const TrainResult ok = train_mlp(call, good);
  double dev = 0;
  for (std::size_t i = 0; i < ok.w1.size(); ++i) dev = std::max(dev, std::fabs(ok.w1[i] - ref->outputs[0][i]));
  for (std::size_t i = 0; i < ok.w2.size(); ++i) dev = std::max(dev, std::fabs(ok.w2[i] - ref->outputs[1][i]));
  std::printf("fp16 grads, s=2^15, unscaled: overflowed %d, max dev %.3g, update_sum %.3g\n", ok.overflowed, dev,
              vars["update_sum"]);
  EXPECT_LE(dev, 2 * unit_roundoff(DType::kF16) * vars["update_sum"] + 1e-6);

  TrainPrecision bad = good;
  bad.unscale = false;
  bad.skip_nonfinite = false;
  const TrainResult broken = train_mlp(call, bad);
  EXPECT_TRUE(broken.overflowed);
  bool nonfinite = false;
  for (double v : broken.w1) nonfinite = nonfinite || !std::isfinite(v);
  for (double v : broken.w2) nonfinite = nonfinite || !std::isfinite(v);
  EXPECT_TRUE(nonfinite);
}

TEST(TrainOp, QuantizationWithCalibratedScaleStaysClose) {
  Call call = train_call(4);
  TrainPrecision p;
  p.quant = DType::kBF16;
  p.quant_scale = 1;
  const TrainResult q1 = train_mlp(call, p);
  p.quant_scale = 64;  // a power of two: bf16 rounding of W q is the rounding of W, scaled
  const TrainResult q64 = train_mlp(call, p);
  EXPECT_EQ(q1.w1, q64.w1);
  EXPECT_EQ(q1.w2, q64.w2);
}

}  // namespace
}  // namespace kc::ops
