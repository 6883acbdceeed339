// TILE_REMAINDER needs evidence beyond "the failing sizes are not multiples of
// a tile": when size alone separates failing from passing configs, a uniform
// error that the size-dependent bound absorbs only at large sizes fails the
// same configs, and naming a tile would send the user after the wrong bug
// (oneDNN's log_softmax on KC-SOFTMAX-01 was called TILE_REMAINDER(8)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/classify.h"
#include "kc/backend.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

std::vector<Config> cols_configs(const std::vector<int>& cols) {
  std::vector<Config> configs;
  for (int c : cols) {
    Config config;
    config.params = {{"rows", "8"}, {"cols", std::to_string(c)}};
    configs.push_back(config);
  }
  return configs;
}

bool names_tile(const std::vector<Signature>& sigs) {
  for (const auto& s : sigs)
    if (s.name == "TILE_REMAINDER") return true;
  return false;
}

TEST(TileRemainderEvidence, FailuresSeparatedBySizeNameNoTile) {
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  classify_axes(cols_configs({1, 17, 128, 1000}), {true, true, false, false}, {true, true, true, true}, &sigs,
                &notes);
  EXPECT_FALSE(names_tile(sigs));
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("smaller than every passing cols"), std::string::npos) << notes.front();
}

TEST(TileRemainderEvidence, InterleavedRemaindersStillNameTheTile) {
  std::vector<Signature> sigs;
  std::vector<std::string> notes;
  // 17 and 97 fail between and beyond the passing 8, 64 and 128: size does not explain it.
  classify_axes(cols_configs({8, 17, 64, 97, 128}), {false, true, false, true, false},
                {true, true, true, true, true}, &sigs, &notes);
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].to_string(), "TILE_REMAINDER(8)");
}

// log_softmax computed in FP64, then every output moved by the same 4e-6 (as
// an eltwise log a few ulps off near 1 would): the error does not depend on
// the shape at all.
class UniformErrorLogSoftmax final : public Impl {
 public:
  UniformErrorLogSoftmax() {
    decl_.name = "fake.uniform_error.log_softmax";
    decl_.op = "log_softmax";
    decl_.backend = "fake";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    if (x.rank() != 2) return unimplemented("rank-2 x only");
    const std::int64_t rows = x.dim(0), cols = x.dim(1);
    for (std::int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY;
      for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, x.at(r * cols + c));
      double s = 0;
      for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x.at(r * cols + c) - m);
      for (std::int64_t c = 0; c < cols; ++c)
        y.set(r * cols + c, static_cast<float>(x.at(r * cols + c) - m - std::log(s) + 4e-6));
    }
    return ok_status();
  }

 private:
  Declaration decl_;
};

class FakeBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake"; }
  BackendInfo probe() override { return {"fake", true, "1", "test", "a uniformly wrong log_softmax"}; }
  std::vector<std::shared_ptr<const Impl>> impls() override { return {std::make_shared<UniformErrorLogSoftmax>()}; }
};

TEST(TileRemainderEvidence, UniformErrorAcrossShapesIsNotATileRemainder) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.add(std::make_unique<FakeBackend>()).ok());
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-SOFTMAX-01.kc"};
  request.contracts = {"KC-SOFTMAX-01"};
  request.impls = {"fake.uniform_error.*"};
  request.isolation = isolate::Mode::kNone;
  const CheckResult r = run_check(request, registry);
  ASSERT_EQ(r.cases.size(), 1u);
  const CaseResult& c = r.cases[0];
  std::string sigs;
  for (const auto& s : c.signatures) sigs += s.to_string() + " ";
  std::string per_config;
  for (const auto& pc : c.evidence.per_config) per_config += pc.config + " failures=" + std::to_string(pc.failures) + "\n";
  EXPECT_EQ(c.verdict, Verdict::kViolation) << c.reason << "\n" << per_config;
  EXPECT_FALSE(names_tile(c.signatures)) << sigs << "\n" << per_config;
}

}  // namespace
}  // namespace kc::engine
