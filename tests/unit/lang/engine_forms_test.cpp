// The forms the parser accepts change what the engine does (no silent
// clauses): a shape's `with D in {...}` restricts configs and, when D is an op
// parameter, becomes a config axis; `ref(inputs)` must name the op's inputs;
// a per-precision tolerance list gives each precision its own tolerance.
#include <gtest/gtest.h>

#include "engine/case_run.h"
#include "kc/lang.h"
#include "kc/plan.h"

namespace kc::engine {
namespace {

Contract parse_one(const std::string& text) {
  auto r = lang::parse_kc(text, "e.kc");
  EXPECT_FALSE(r.has_errors()) << (r.diagnostics.empty() ? "" : r.diagnostics[0].render());
  EXPECT_EQ(r.document.contracts.size(), 1u);
  return r.document.contracts.at(0);
}

std::string attention_contract(const std::string& pre, const std::string& post) {
  return "contract E-1 {\n  scope      fused_attention\n  pre        precision(q, k, v, out) in {FP32}\n"
         "             and " + pre + "\n  post       " + post +
         "\n  tolerance  relative 1e-4 (FP32), relative 1e-2 (FP16)\n  reference  higher_precision FP64\n"
         "  measure    sample 1 random inputs per config\n  violation  \"x\"\n}\n";
}

Declaration attention_impl() {
  Declaration d;
  d.name = "test.attention";
  d.op = "attention";
  d.dtypes = {DType::kF32};
  return d;
}

TEST(EngineForms, ShapeSetOnAnOpParameterIsAConfigAxis) {
  const Contract c = parse_one(attention_contract(
      "shape(q) = shape(out) = (batch, heads, seq, head_dim) with head_dim in {32, 128}",
      "output out satisfies elementwise_close(out, ref(q, k, v))"));
  ASSERT_TRUE(c.executable());
  std::string na;
  auto plan = make_plan(c, attention_impl(), CheckRequest{}, &na);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(na.empty()) << na;
  ASSERT_EQ(plan->configs.size(), 2u);
  EXPECT_EQ(plan->configs[0].get("head_dim"), "32");
  EXPECT_EQ(plan->configs[1].get("head_dim"), "128");
  // Each config's call meets the shape precondition; head_dim = 96 does not.
  const Op* op = plan->op;
  for (const Config& cfg : plan->configs) {
    auto call = op->make_call(cfg);
    ASSERT_TRUE(call.ok());
    EXPECT_TRUE(check_shape_predicates(c, *call).ok());
  }
  Config off = plan->configs[0];
  off.params["head_dim"] = "96";
  auto call = op->make_call(off);
  ASSERT_TRUE(call.ok());
  const Status s = check_shape_predicates(c, *call);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim = 96 is outside {32, 128}"), std::string::npos) << s.message();
}

TEST(EngineForms, ShapeSetOnANamedDimensionIsCheckedPerCall) {
  const Contract c = parse_one(attention_contract("shape(q) = (B, H, S, D) with D in {128}",
                                                  "output out satisfies elementwise_close(out, ref(out))"));
  std::string na;
  auto plan = make_plan(c, attention_impl(), CheckRequest{}, &na);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->configs.size(), 1u);  // D is no parameter: no axis, the default head_dim 64 ...
  auto call = plan->op->make_call(plan->configs[0]);
  ASSERT_TRUE(call.ok());
  EXPECT_FALSE(check_shape_predicates(c, *call).ok());  // ... does not meet D in {128}
}

TEST(EngineForms, ReferenceArgumentsMustBeTheOpsInputs) {
  std::string na;
  const Contract ok = parse_one(attention_contract("value_range(q, k, v) finite",
                                                   "elementwise_close(out, ref(q, k, v))"));
  EXPECT_TRUE(make_plan(ok, attention_impl(), CheckRequest{}, &na).ok());
  const Contract bad = parse_one(attention_contract("value_range(q, k, v) finite",
                                                    "elementwise_close(out, ref(Q, K, V))"));
  auto plan = make_plan(bad, attention_impl(), CheckRequest{}, &na);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("'Q' is not an input tensor of op attention"), std::string::npos);
  const Contract out_as_input = parse_one(attention_contract("value_range(q, k, v) finite",
                                                             "elementwise_close(out, ref(q, out))"));
  EXPECT_FALSE(make_plan(out_as_input, attention_impl(), CheckRequest{}, &na).ok());
}

TEST(EngineForms, PerPrecisionListGivesEachPrecisionItsTolerance) {
  const Contract c = parse_one(attention_contract("value_range(q, k, v) finite",
                                                  "output out satisfies elementwise_close(out, ref(out))"));
  auto f32 = tolerance_at(c.tolerance, DType::kF32);
  auto f16 = tolerance_at(c.tolerance, DType::kF16);
  ASSERT_TRUE(f32.ok());
  ASSERT_TRUE(f16.ok());
  EXPECT_DOUBLE_EQ((*f32)->value.number, 1e-4);
  EXPECT_DOUBLE_EQ((*f16)->value.number, 1e-2);
  EXPECT_FALSE(tolerance_at(c.tolerance, DType::kBF16).ok());
}

}  // namespace
}  // namespace kc::engine
