// An impl that exists but cannot run on this machine (Impl::can_implement
// returns kUnavailable, e.g. an AVX-512 build on a CPU without AVX-512) is
// graded `skipped` with its reason, not `not_applicable` or an error.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kc/backend.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

class CpuLacksImpl final : public Impl {
 public:
  CpuLacksImpl() {
    decl_.name = "fake.avx512.sum";
    decl_.op = "sum";
    decl_.backend = "fake";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status can_implement(const Call&) const override { return unavailable("this CPU lacks avx512f"); }
  Status run(Call&) const override {
    ADD_FAILURE() << "an unavailable impl must not be run";
    return unavailable("not loaded");
  }

 private:
  Declaration decl_;
};

/// Accepts every call in can_implement but turns each one down when run (as a
/// library does for a config it has no kernel for).
class TurnsDownImpl final : public Impl {
 public:
  TurnsDownImpl() {
    decl_.name = "fake.turns_down.sum";
    decl_.op = "sum";
    decl_.backend = "fake";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call&) const override { return unimplemented("no kernel for this config"); }

 private:
  Declaration decl_;
};

class FakeBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake"; }
  BackendInfo probe() override { return {"fake", true, "1", "test", "impls that cannot run"}; }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    return {std::make_shared<CpuLacksImpl>(), std::make_shared<TurnsDownImpl>()};
  }
};

TEST(UnavailableImpl, IsSkippedWithItsReason) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.add(std::make_unique<FakeBackend>()).ok());
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-RED-01.kc"};
  request.impls = {"fake.avx512.*"};
  const CheckResult r = run_check(request, registry);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].verdict, Verdict::kSkipped) << r.cases[0].reason;
  EXPECT_NE(r.cases[0].reason.find("lacks avx512f"), std::string::npos) << r.cases[0].reason;
  // Nothing was judged: not a green run, unless the caller accepts that.
  EXPECT_EQ(r.exit_code(), 4);
  EXPECT_NE(r.nothing_judged().find("1 skipped"), std::string::npos) << r.nothing_judged();
  request.allow_empty = true;
  EXPECT_EQ(run_check(request, registry).exit_code(), 0);
}

// Nothing compared is nothing proven: an impl that turns down every config at
// run time is not_applicable, never conforming.
TEST(UnavailableImpl, EveryConfigTurnedDownIsNotApplicable) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.add(std::make_unique<FakeBackend>()).ok());
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-RED-01.kc"};
  request.impls = {"fake.turns_down.*"};
  request.isolation = isolate::Mode::kNone;
  const CheckResult r = run_check(request, registry);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].verdict, Verdict::kNotApplicable) << r.cases[0].reason;
  EXPECT_NE(r.cases[0].reason.find("no kernel for this config"), std::string::npos) << r.cases[0].reason;
}

}  // namespace
}  // namespace kc::engine
