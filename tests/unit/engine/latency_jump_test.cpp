// A path change inferred from latency across a capability boundary
// (kc/latency_jump.h): the decision on given samples, and the probe on
// kernels whose path at the boundary is known (a fallback that does four
// times the work; one and the same call on both sides).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kc/latency_jump.h"
#include "kc/backend.h"
#include "kc/capability.h"

namespace kc::engine {
namespace {

LatencyJump samples(std::vector<double> inside, std::vector<double> outside, std::vector<double> control) {
  LatencyJump j;
  j.inside.per_work = std::move(inside);
  j.outside.per_work = std::move(outside);
  j.control.per_work = std::move(control);
  j.inside.config = "K=256";
  j.outside.config = "K=257";
  return j;
}

TEST(LatencyJump, TwiceTheTimeBeyondTheSpreadIsAJump) {
  LatencyJump j = samples({10, 10.2, 9.9, 10.1, 10.3}, {20, 20.4, 19.8, 20.1, 20.2}, {10.1, 10, 10.2, 9.8, 10});
  ASSERT_TRUE(judge_latency(&j).ok());
  EXPECT_TRUE(j.jump) << j.note;
  EXPECT_NEAR(j.ratio, 20.1 / 10.1, 1e-12);
  EXPECT_NE(j.note.find("outside / inside = 1.99"), std::string::npos) << j.note;
  EXPECT_NE(j.note.find("beyond twice the measured noise"), std::string::npos) << j.note;
  // A faster outside path is a jump too.
  LatencyJump fast = samples({20, 20.4, 19.8, 20.1, 20.2}, {10, 10.2, 9.9, 10.1, 10.3}, {20, 20.1, 20.2, 20, 19.9});
  ASSERT_TRUE(judge_latency(&fast).ok());
  EXPECT_TRUE(fast.jump) << fast.note;
}

TEST(LatencyJump, ADifferenceWithinTheMeasuredNoiseIsNot) {
  // Medians 10 and 11, but the runs spread by 30%: no jump.
  LatencyJump wide = samples({7, 10, 13, 8, 12}, {8, 11, 14, 9, 13}, {7, 10, 13, 9, 12});
  ASSERT_TRUE(judge_latency(&wide).ok());
  EXPECT_FALSE(wide.jump) << wide.note;
  EXPECT_NE(wide.note.find("not beyond twice the measured noise"), std::string::npos) << wide.note;
  // Tight runs, but the same call timed in another worker is 15% off: the
  // method's own error is that large, so a 20% step is not beyond twice it.
  LatencyJump drift = samples({10, 10, 10, 10.01, 9.99}, {12, 12, 12, 12.01, 11.99}, {11.5, 11.5, 11.5, 11.5, 11.5});
  ASSERT_TRUE(judge_latency(&drift).ok());
  EXPECT_NEAR(drift.noise, 0.15, 1e-12);
  EXPECT_FALSE(drift.jump) << drift.note;
  // Too few calls to have a spread at all.
  LatencyJump few = samples({1, 1, 1}, {2, 2, 2}, {1, 1, 1});
  EXPECT_FALSE(judge_latency(&few).ok());
}

/// A GEMM whose fallback (K not a multiple of 16) computes every product four
/// times: the same answer, four times the work.
class SlowFallbackImpl : public Impl {
 public:
  explicit SlowFallbackImpl(int repeats_outside) : repeats_(repeats_outside) {
    decl_.name = "test.slow_fallback";
    decl_.op = "matmul";
    decl_.backend = "test";
    decl_.dtypes = {DType::kF32};
    decl_.shape_class = "multiple_of(16, K)";
    decl_.extra["unsupported"] = "FALLBACK";
    decl_.extra["path"] = "tile16";
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& a = call.t("A");
    const Tensor& b = call.t("B");
    Tensor& c = call.t("C");
    const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
    const int times = k % 16 == 0 ? 1 : repeats_;
    float* out = c.data<float>();
    for (int t = 0; t < times; ++t) {
      for (std::int64_t i = 0; i < m * n; ++i) out[i] = 0;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t p = 0; p < k; ++p) {
          const float aip = a.data<float>()[i * k + p];
          for (std::int64_t j = 0; j < n; ++j) out[i * n + j] += aip * b.data<float>()[p * n + j];
        }
    }
    return ok_status();
  }

 private:
  Declaration decl_;
  int repeats_;
};

Config gemm_config(std::int64_t k) {
  Config c;
  c.params = {{"M", "256"}, {"N", "256"}, {"K", std::to_string(k)}};
  return c;
}

TEST(LatencyJump, AFallbackWithFourTimesTheWorkShowsAcrossTheBoundary) {
  SlowFallbackImpl impl(4);
  LatencyProbe probe;
  auto r = latency_jump(impl, gemm_config(256), gemm_config(257), probe);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("%s\n", r->note.c_str());
  EXPECT_TRUE(r->jump) << r->note;
  EXPECT_EQ(r->block_ratios.size(), 3u);
  EXPECT_NE(r->note.find("a latency jump in each of 3 blocks"), std::string::npos) << r->note;
  EXPECT_GT(r->ratio, 2.0) << r->note;  // four times the work; a loaded machine still shows more than twice
  EXPECT_FALSE(r->contradicts) << "K = 257 is outside the shape class: a fallback there is declared";
  EXPECT_NE(r->note.find("inside dtype=FP32 K=256"), std::string::npos) << r->note;
  // Declared one path on both sides, the jump puts the declaration in doubt.
  SlowFallbackImpl one_class(4);
  const_cast<Declaration&>(one_class.declaration()).shape_class = "any";
  auto both = latency_jump(one_class, gemm_config(256), gemm_config(257), probe);
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  EXPECT_TRUE(both->contradicts) << both->note;
}

TEST(LatencyJump, OneAndTheSameCallOnBothSidesIsNoJump) {
  SlowFallbackImpl impl(1);
  LatencyProbe probe;
  auto r = latency_jump(impl, gemm_config(256), gemm_config(256), probe);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("%s\n", r->note.c_str());
  EXPECT_FALSE(r->jump) << r->note;
}

// OpenBLAS reports its core name, not which kernel (or edge code) served a
// call: the probe reads its time per unit of work across a K tile edge and
// across an operand one element off a 64-byte line, and prints what it finds.
// The figures are the library's; the test asserts they were measured.
TEST(LatencyJump, OpenblasAcrossASizeAndAnAlignmentEdge) {
  BackendRegistry registry;
  ASSERT_TRUE(register_builtin_backends(registry).ok());
  const std::shared_ptr<const Impl> impl = registry.find_impl("openblas.sgemm");
  if (!impl) GTEST_SKIP() << "no OpenBLAS here";
  LatencyProbe probe;
  Config aligned = gemm_config(256), off = gemm_config(256);
  for (const char* t : {"A", "B", "C"}) aligned.params[std::string("misalign_") + t] = "0";
  off.params = aligned.params;
  off.params["misalign_A"] = "4";
  for (const auto& [in, out] : {std::pair{gemm_config(256), gemm_config(257)}, std::pair{aligned, off}}) {
    auto r = latency_jump(*impl, in, out, probe);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    std::printf("openblas.sgemm: %s\n", r->note.c_str());
    EXPECT_GT(r->inside.median, 0);
    EXPECT_GT(r->outside.median, 0);
    EXPECT_FALSE(r->contradicts) << "openblas.sgemm declares no single path";
  }
}

TEST(LatencyJump, CallsTooSmallForTheFloorOrRaisingAreNotTimed) {
  SlowFallbackImpl impl(1);
  Config tiny;
  tiny.params = {{"M", "2"}, {"N", "2"}, {"K", "2"}};
  auto r = latency_jump(impl, tiny, tiny, LatencyProbe{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("too small"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kc::engine
