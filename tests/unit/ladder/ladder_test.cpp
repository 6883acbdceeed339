// The verification ladder: each rung on conforming ref kernels and on seeded
// bugs it must catch (calibration/ladder.cpp), the shrunk counterexamples
// asserted to be minimal, the evidence store and `kc status`.
#include "kc/ladder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include "engine/select.h"
#include "kc/plan.h"
#include "ladder/domain.h"

namespace kc::ladder {
namespace {

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

/// One contract file and the built-in backends, in kc's process.
struct Fixture {
  Contract contract;
  std::string file;
  BackendRegistry registry;
  LadderRequest request;

  explicit Fixture(const std::string& rel, const std::string& id) : file(src(rel)) {
    auto loaded = engine::load_contracts({file});
    for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.render();
    for (const auto& c : loaded.contracts)
      if (c.id == id) contract = c;
    EXPECT_EQ(contract.id, id);
    EXPECT_TRUE(register_builtin_backends(registry).ok());
    request.check.paths = {file};
    request.check.isolation = isolate::Mode::kNone;
  }
  std::shared_ptr<const Impl> impl(const std::string& name) {
    auto i = registry.find_impl(name);
    EXPECT_TRUE(i) << name;
    return i;
  }
  BackendInfo info(const Impl& impl) {
    for (const auto& b : registry.infos())
      if (b.name == impl.declaration().backend) return b;
    return {};
  }
  RungResult rung(Level level, const std::string& impl_name) {
    auto i = impl(impl_name);
    const BackendInfo b = info(*i);
    switch (level) {
      case Level::kType: return run_type_rung(contract, file, *i, b, request);
      case Level::kFalsification: return run_falsification_rung(contract, file, *i, b, request);
      case Level::kProperty: return run_property_rung(contract, file, *i, b, request);
      default: return run_exhaustive_rung(contract, file, *i, b, request);
    }
  }
  bool fails(const std::string& impl_name, const Counterexample& cx) {
    auto i = impl(impl_name);
    const auto r = judge_counterexample(contract, file, *i, info(*i), cx, request.check);
    return r.verdict == engine::Verdict::kViolation || r.verdict == engine::Verdict::kError;
  }
};

TEST(LadderType, RefKernelPassesBoundaryChecks) {
  Fixture f("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01");
  const RungResult r = f.rung(Level::kType, "ref.exp");
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.summary;
  bool rejects_zero = false;
  for (const auto& c : r.cases) rejects_zero = rejects_zero || c.rfind("op rejects n=0: passed", 0) == 0;
  EXPECT_TRUE(rejects_zero);
}

TEST(LadderFalsification, BoundaryShapeCatchesTheTileBugAndRefPasses) {
  Fixture f("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01");
  const RungResult bad = f.rung(Level::kFalsification, "calib.softmax_tile7");
  EXPECT_EQ(bad.outcome, Outcome::kFailed);
  bool named = false;
  for (const auto& c : bad.cases) named = named || (c.rfind("shape cols=17: FAILED", 0) == 0);
  EXPECT_TRUE(named) << "the failing edge case is named";
  const RungResult good = f.rung(Level::kFalsification, "ref.softmax");
  EXPECT_EQ(good.outcome, Outcome::kPassed) << good.summary;
  EXPECT_GE(good.runs, 10);
}

TEST(LadderProperty, GeluCutoffShrinksToTheBoundary) {
  Fixture f("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01");
  const RungResult r = f.rung(Level::kProperty, "calib.gelu_erf_cutoff5");
  ASSERT_EQ(r.outcome, Outcome::kFailed) << r.summary;
  ASSERT_TRUE(r.found && r.shrunk);
  const Counterexample& cx = *r.shrunk;
  auto cfg = engine::parse_config(cx.config);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->get_int("n"), 1) << cx.text();
  ASSERT_EQ(cx.inputs.at("x").size(), 1u);
  // The first representable value below -5 in the counterexample's format.
  const double boundary = detail::from_ordered(*detail::to_ordered(-5.0, cfg->dtype) - 1, cfg->dtype);
  EXPECT_EQ(cx.inputs.at("x")[0], boundary) << cx.text();
  // Minimal: the next value toward 0 (-5 itself) conforms.
  Counterexample at5 = cx;
  at5.inputs["x"][0] = -5.0;
  EXPECT_FALSE(f.fails("calib.gelu_erf_cutoff5", at5));
  EXPECT_TRUE(f.fails("calib.gelu_erf_cutoff5", cx));
}

TEST(LadderProperty, TileBugShrinksToExactlySevenColumnsOfZeros) {
  Fixture f("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01");
  const RungResult r = f.rung(Level::kProperty, "calib.softmax_tile7");
  ASSERT_EQ(r.outcome, Outcome::kFailed) << r.summary;
  ASSERT_TRUE(r.shrunk);
  const Counterexample& cx = *r.shrunk;
  auto cfg = engine::parse_config(cx.config);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->get_int("cols"), 7) << cx.text();
  EXPECT_EQ(cfg->get_int("rows"), 1) << cx.text();
  for (double v : cx.inputs.at("x")) EXPECT_EQ(v, 0.0) << cx.text();
  // Minimal in shape: six columns of zeros conform.
  Counterexample six = cx;
  cfg->params["cols"] = "6";
  six.config = cfg->to_string();
  six.shapes["x"] = {1, 6};
  six.inputs["x"].assign(6, 0.0);
  EXPECT_FALSE(f.fails("calib.softmax_tile7", six));
}

// A shrunk counterexample pinned into a regression contract: it parses,
// fixes the config and the inputs, catches the kernel it came from, and
// passes an honest kernel in scope.
TEST(LadderPin, TheShrunkCounterexampleBecomesARegressionContract) {
  for (const auto& [file, id, bad, good] :
       {std::tuple<std::string, std::string, std::string, std::string>{
            "contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01", "calib.softmax_tile7", "ref.softmax"},
        {"contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01", "calib.gelu_erf_cutoff5", "ref.tanh"}}) {
    Fixture f(file, id);
    const RungResult r = f.rung(Level::kProperty, bad);
    ASSERT_TRUE(r.shrunk) << r.summary;
    auto pinned = pin_counterexample(f.contract, *r.shrunk, bad);
    ASSERT_TRUE(pinned.ok()) << pinned.status().message();
    EXPECT_EQ(pinned->id.rfind(id + "-PIN-", 0), 0u) << pinned->id;
    EXPECT_NE(pinned->text.find("inject values(x, "), std::string::npos) << pinned->text;
    // The same counterexample pins to the same id.
    EXPECT_EQ(pin_counterexample(f.contract, *r.shrunk, bad)->id, pinned->id);

    const std::string path = (std::filesystem::temp_directory_path() /
                              ("kc_pin_" + std::to_string(getpid()) + "_" + id + ".kc")).string();
    std::ofstream(path) << pinned->text;
    engine::CheckRequest req;
    req.paths = {path};
    req.isolation = isolate::Mode::kNone;
    req.impls = {bad, good};
    const auto result = engine::run_check(req, f.registry);
    ASSERT_FALSE(engine::any_error(result.diagnostics)) << pinned->text;
    int judged = 0;
    for (const auto& c : result.cases) {
      if (c.impl == bad) {
        EXPECT_EQ(c.verdict, engine::Verdict::kViolation) << c.reason << "\n" << pinned->text;
        EXPECT_NE(c.repro.find(r.shrunk->config.substr(r.shrunk->config.find(' ') + 1)), std::string::npos)
            << c.repro;
        ++judged;
      }
      if (c.impl == good) {
        EXPECT_EQ(c.verdict, engine::Verdict::kConforming) << c.reason << "\n" << pinned->text;
        ++judged;
      }
    }
    EXPECT_EQ(judged, 2);
    std::filesystem::remove(path);
  }
}

TEST(LadderProperty, RefKernelConformsOnRandomInputs) {
  Fixture f("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01");
  f.request.property_inputs = 1000;  // the ladder's default is 10,000; kept short for the unit test
  const RungResult r = f.rung(Level::kProperty, "ref.erf");
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.summary;
  EXPECT_EQ(r.runs, 1000);
  EXPECT_FALSE(r.shrunk);
}

/// A one-row counterexample for a norm contract: x, gamma (and beta = 0 for layernorm).
Counterexample norm_row(const std::string& op, std::vector<double> x, std::vector<double> gamma) {
  Counterexample cx;
  const auto cols = static_cast<std::int64_t>(x.size());
  cx.config = "dtype=FP32 cols=" + std::to_string(cols) + " eps=1e-5 rows=1";
  cx.shapes = {{"x", {1, cols}}, {"gamma", {cols}}};
  cx.inputs = {{"x", std::move(x)}, {"gamma", std::move(gamma)}};
  if (op == "layernorm") {
    cx.shapes["beta"] = {cols};
    cx.inputs["beta"].assign(static_cast<std::size_t>(cols), 0.0);
  }
  return cx;
}

// L3 found these on the honest ref kernels before the norm error model had a
// gradual-underflow term: a subnormal entry, rounded to the subnormal grid and
// then scaled by 1/sqrt(eps) or a large gamma, broke every derived bound.
TEST(LadderProperty, NormBoundsAllowGradualUnderflowOnRef) {
  const double tiny = 1.401298464324817e-45;  // the smallest FP32 subnormal
  struct Row { const char* contract; const char* impl; std::vector<double> x, gamma; };
  const std::vector<Row> rows = {
      {"KC-NORM-SCALE", "ref.layernorm", {0, tiny}, {tiny, 0}},
      {"KC-NORM-STANDARDIZED", "ref.layernorm", {-4.0980973589179275e-41, 0}, {0, 0}},
      {"KC-NORM-IDEMPOTENT", "ref.layernorm", {-4.0980973589179275e-41, 0}, {0, 0}},
      {"KC-NORM-LARGE", "ref.rmsnorm", {-8.339799784459862e-40, 2.87961745262146}, {19009925120, 0}},
      {"KC-NORM-LARGE", "ref.rmsnorm", {-1457472455835648, -1.0484794825789325e-31}, {0, 123.96505737304688}},
  };
  for (const Row& r : rows) {
    Fixture f("contracts/transformer/KC-NORM-PROPS.kc", r.contract);
    const std::string op = std::string(r.impl).substr(4);
    EXPECT_FALSE(f.fails(r.impl, norm_row(op, r.x, r.gamma))) << r.contract << " on " << r.impl;
  }
  // The bound still sees the seeded bug: unbiased variance on a 2-element row.
  Fixture f("contracts/transformer/KC-NORM-PROPS.kc", "KC-NORM-STANDARDIZED");
  EXPECT_TRUE(f.fails("calib.layernorm_unbiased", norm_row("layernorm", {0.5, -0.25}, {1, 1})));
}

/// One input of a counterexample: name, shape, values.
struct CxInput {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<double> values;
};
Counterexample make_cx(std::string config, const std::vector<CxInput>& inputs) {
  Counterexample cx;
  cx.config = std::move(config);
  for (const CxInput& in : inputs) {
    cx.shapes[in.name] = in.shape;
    cx.inputs[in.name] = in.values;
  }
  return cx;
}

// The shrunk counterexamples L3 (and L2) found on the honest ref kernels
// before the properties and error models had a gradual-underflow term
// (Higham (2.8), Op::underflow_allowance), and the two the properties got
// wrong (pruning's existing zeros; slerp's FP32 norm underflowing to 0). Each
// must conform now.
TEST(LadderProperty, TransformerBoundsAllowGradualUnderflowOnRef) {
  const double tiny = 1.401298464324817e-45;  // the smallest FP32 subnormal
  struct Row {
    const char* file;
    const char* contract;
    const char* impl;
    Counterexample cx;
  };
  const std::string adamw = "dtype=FP32 beta1=0.9 beta2=";
  const std::vector<Row> rows = {
      {"KC-ACCUM-01.kc", "KC-ACCUM-02", "ref.grad_accum",
       make_cx("dtype=FP32 batch=2 features=1 micro_batches=2 outputs=6",
               {{"W", {1, 6}, {-0.3886835277080536, 1.1534481048583984, -0.0, -2.265183925628662, 0.4960502088069916,
                               -0.8506011962890625}},
                {"X", {2, 1}, {-1.2060481309890747, 0.9537153244018555}},
                {"Y", {2, 6}, {-8, 0.5210807919502258, -6.04670797094641e-39, -0.09925232082605362, -2,
                               1.0556111335754395, -0.4505780041217804, 0.8880372047424316, 0, -0.5981637239456177,
                               1.4241900444030762, -0.054641444236040115}}})},
      {"KC-ACT.kc", "KC-ACT-ODD", "ref.gelu_erf", make_cx("dtype=FP32 n=1", {{"x", {1}, {5.2506653458250896e-42}}})},
      {"KC-ACT.kc", "KC-ACT-ODD", "ref.gelu_tanh", make_cx("dtype=FP32 n=1", {{"x", {1}, {5.2506653458250896e-42}}})},
      {"KC-ACT.kc", "KC-ACT-ODD", "ref.silu", make_cx("dtype=FP32 n=1", {{"x", {1}, {5.2506653458250896e-42}}})},
      {"KC-ACT.kc", "KC-SWIGLU-LINEAR", "ref.swiglu",
       make_cx("dtype=FP32 n=1", {{"gate", {1}, {-5.101542797092407e-07}}, {"up", {1}, {-3.4335175492272398e-40}}})},
      // -1/2 times a subnormal up with its last bit set rounds: up' is not a up.
      {"KC-ACT.kc", "KC-SWIGLU-LINEAR", "ref.swiglu",
       make_cx("dtype=FP32 n=1", {{"gate", {1}, {4.6647515296936035}}, {"up", {1}, {-4.344025239406933e-44}}})},
      {"KC-ACT.kc", "KC-SWIGLU-ODD", "ref.swiglu", make_cx("dtype=FP32 n=1", {{"gate", {1}, {-tiny}}, {"up", {1}, {tiny}}})},
      {"KC-ACT.kc", "KC-SWIGLU-01", "ref.swiglu",
       make_cx("dtype=FP32 n=1", {{"gate", {1}, {5.2506653458250896e-42}}, {"up", {1}, {-3.2217183113098145}}})},
      {"KC-ADAMW-02.kc", "KC-ADAMW-02", "ref.adamw_step",
       make_cx(adamw + "0.999 eps=1e-8 lr=0.001 n=1 step=1 weight_decay=0.1",
               {{"grad", {1}, {0}}, {"m", {1}, {0}}, {"param", {1}, {tiny}}, {"v", {1}, {0}}})},
      {"KC-ADAMW-02.kc", "KC-ADAMW-03", "ref.adamw_step",
       make_cx(adamw + "0.95 eps=1e-8 lr=0.001 n=1 step=1 weight_decay=0.01",
               {{"grad", {1}, {tiny}}, {"m", {1}, {0}}, {"param", {1}, {0}}, {"v", {1}, {0}}})},
      {"KC-ADAMW-02.kc", "KC-ADAMW-04", "ref.adamw_step",
       make_cx(adamw + "0.999 eps=1e-8 lr=0.001 n=1 step=1 weight_decay=0.01",
               {{"grad", {1}, {-2.29869000087843e-41}}, {"m", {1}, {-0.0}}, {"param", {1}, {0}}, {"v", {1}, {0}}})},
      {"KC-MATMUL-PROPS.kc", "KC-MATMUL-LINEAR", "ref.matmul",
       make_cx("dtype=FP32 K=1 M=1 N=1 alpha=1 beta=0 lda_pad=0 ldb_pad=0 ldc_pad=0 trans_a=N trans_b=N",
               {{"A", {1, 1}, {-6.427561275371395e-39}}, {"B", {1, 1}, {-9.265596077057126e-07}}, {"C", {1, 1}, {0}}})},
      {"KC-PRUNE-01.kc", "KC-PRUNE-02", "ref.prune_magnitude",
       make_cx("dtype=FP32 cols=2 rows=1 sparsity=0.5", {{"W", {1, 2}, {tiny, 0}}})},
      {"KC-PRUNE-01.kc", "KC-PRUNE-02", "ref.prune_wanda",
       make_cx("dtype=FP32 cols=2 rows=1 sparsity=0.5",
               {{"W", {1, 2}, {tiny, 0}}, {"act_sq", {2}, {0.2500000596046448, 0}}})},
      // L2's "one element at domain max, rest 0": the row's zeros are pruned first.
      {"KC-PRUNE-01.kc", "KC-PRUNE-02", "ref.prune_magnitude",
       make_cx("dtype=FP32 cols=4 rows=1 sparsity=0.5", {{"W", {1, 4}, {0, 0, 8, 0}}})},
      {"KC-ROPE.kc", "KC-ROPE-NORM", "ref.rope",
       make_cx("dtype=FP32 base=3 dim=8 offset=0 pairing=interleaved seq=2",
               {{"x", {2, 8}, {-1.1176049709320068, -0.26077699661254883, -0.6655791401863098, 1.8700501918792725,
                               -0.7702227234840393, -1.5066777467727661, 0.06588492542505264, -0.6666073799133301,
                               -0.6229059100151062, -0.052411966025829315, 0.37873172760009766, -1.0413492918014526, 0,
                               -2.284116496849452e-43, 1, 1.513226866722107}}})},
      {"KC-ROPE.kc", "KC-ROPE-RELATIVE", "ref.rope",
       make_cx("dtype=FP32 base=6 dim=2 offset=0 pairing=half seq=1", {{"x", {1, 2}, {-1.0089348943138683e-43, 0}}})},
      {"KC-SLERP-01.kc", "KC-SLERP-01", "ref.slerp",
       make_cx("dtype=FP32 n=2 t=0.5", {{"a", {2}, {-0.017240474000573158, 0}}, {"b", {2}, {-0.0, -tiny}}})},
      {"KC-SLERP-01.kc", "KC-SLERP-02", "ref.slerp",
       make_cx("dtype=FP32 n=2 t=0.25", {{"a", {2}, {0.03571554273366928, 0}}, {"b", {2}, {-0.0, -tiny}}})},
  };
  for (const Row& r : rows) {
    Fixture f(std::string("contracts/transformer/") + r.file, r.contract);
    EXPECT_FALSE(f.fails(r.impl, r.cx)) << r.contract << " on " << r.impl << ": " << r.cx.config;
  }
}

// Not underflow in a bound: at the ladder's default seed, L3's 2,472nd input
// (x = -32) had STALE_OUTPUT re-fill x with a value whose FP32 gelu_tanh is -0
// as well, within the bound of a reference that rounds to a few subnormals:
// the same bits are the right answer there, not a cached one.
TEST(LadderProperty, SameBitsWithinTheNewBoundAreNotStale) {
  Fixture f("contracts/transformer/KC-ACT.kc", "KC-ACT-MONO");
  f.request.property_inputs = 3000;
  const RungResult r = f.rung(Level::kProperty, "ref.gelu_tanh");
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.summary;
}

// L1/L2/L4 build their configs from the contract's pre: KC-ATTN-CAUSAL
// states causal in {1}, and attention's default (causal = 0) made every edge
// case under_specified, so the pair stopped at L1.
TEST(LadderFalsification, EdgeCasesKeepTheContractsParameterAxes) {
  Fixture f("contracts/transformer/KC-ATTN.kc", "KC-ATTN-CAUSAL");
  const RungResult r = f.rung(Level::kFalsification, "ref.attention");
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.summary;
  for (const auto& c : r.cases) EXPECT_EQ(c.find("under_specified"), std::string::npos) << c;
}

// The fixes leave the seeded bug visible on a plain input: linear
// interpolation between orthogonal unit vectors leaves the sphere.
TEST(LadderProperty, SlerpLerpStillCaughtAfterTheUnderflowTerms) {
  Fixture f("contracts/transformer/KC-SLERP-01.kc", "KC-SLERP-01");
  EXPECT_TRUE(f.fails("calib.slerp_lerp", make_cx("dtype=FP32 n=2 t=0.5", {{"a", {2}, {1, 0}}, {"b", {2}, {0, 1}}})));
  EXPECT_FALSE(f.fails("ref.slerp", make_cx("dtype=FP32 n=2 t=0.5", {{"a", {2}, {1, 0}}, {"b", {2}, {0, 1}}})));
}

TEST(LadderExhaustive, RefTanhConformsOnEvery16BitInput) {
  Fixture f("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01");
  const RungResult r = f.rung(Level::kExhaustive, "ref.tanh");
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.summary;
  EXPECT_EQ(r.runs, 63488 + 65280);  // every finite FP16 and BF16 pattern
  EXPECT_NE(r.coverage.find("all 63488 FP16"), std::string::npos) << r.coverage;
  EXPECT_NE(r.coverage.find("all 65280 BF16"), std::string::npos) << r.coverage;
}

TEST(LadderExhaustive, PadeTanhIsCaughtWithItsWorstInput) {
  Fixture f("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01");
  const RungResult r = f.rung(Level::kExhaustive, "calib.tanh_pade");
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  // The exhaustive worst: FP16 x = 1.5185546875 (0x3e13), tanh = 0.9084, Pade gives 0.9321.
  EXPECT_NE(r.worst.find("x=1.5185546875 (0x3e13)"), std::string::npos) << r.worst;
  EXPECT_NE(r.worst.find("ulp/tolerance 49"), std::string::npos) << r.worst;
}

TEST(LadderExhaustive, SoftmaxPairsSliceConformsOnRef) {
  Fixture f("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01");
  f.request.exhaustive_fraction = 0.05;  // one 65,536-row chunk of the 1,052,676 pairs
  const RungResult r = f.rung(Level::kExhaustive, "ref.softmax");
  // Conforming on the slice, but a slice is not L4.
  EXPECT_EQ(r.outcome, Outcome::kNotApplicable) << r.summary;
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.runs, 52633);
  EXPECT_NE(r.coverage.find("of 1052676 pairs"), std::string::npos) << r.coverage;
}

TEST(LadderEvidence, StatusReportsLevelAndEvidenceAndRejectsATamperedChain) {
  const auto dir = std::filesystem::temp_directory_path() / ("kc_ladder_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  LadderRequest req;
  req.check.paths = {src("contracts/elementwise/KC-UNARY-01.kc")};
  req.check.impls = {"ref.relu", "calib.gelu_erf_cutoff5"};
  req.check.isolation = isolate::Mode::kNone;
  req.up_to = Level::kProperty;
  req.property_inputs = 200;
  req.evidence_path = evidence_file(dir.string());
  const LadderResult lr = run_ladder(req);
  ASSERT_EQ(lr.kernels.size(), 2u) << render_ladder(lr);
  EXPECT_EQ(lr.exit_code(), 1);  // the seeded bug fails L3

  auto rep = read_status(dir.string());
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->records, 7u);  // the plan record and three rungs per kernel
  ASSERT_EQ(rep->kernels.size(), 2u);
  const KernelStatus& bad = rep->kernels[0];  // sorted: calib.* before ref.*
  const KernelStatus& good = rep->kernels[1];
  EXPECT_EQ(bad.impl, "calib.gelu_erf_cutoff5");
  EXPECT_EQ(bad.reached, Level::kFalsification);
  ASSERT_TRUE(bad.latest.at(3).shrunk);
  EXPECT_EQ(bad.latest.at(3).shrunk->inputs.at("x").size(), 1u);
  EXPECT_EQ(good.reached, Level::kProperty);
  EXPECT_EQ(good.latest.at(3).runs, 200);
  const std::string text = render_status(*rep);
  EXPECT_NE(text.find("counterexample: dtype="), std::string::npos) << text;

  // Editing a record breaks the chain: status refuses to report.
  std::string body;
  {
    std::ifstream in(req.evidence_path);
    body.assign(std::istreambuf_iterator<char>(in), {});
  }
  body.replace(body.find("\"runs\":200"), 10, "\"runs\":900");
  {
    std::ofstream out(req.evidence_path);
    out << body;
  }
  EXPECT_FALSE(read_status(dir.string()).ok());
  std::filesystem::remove_all(dir);
}

TEST(LadderLevels, ReachedIsTheHighestUnbrokenRun) {
  EXPECT_EQ(level_reached({{1, Outcome::kPassed}, {2, Outcome::kPassed}, {3, Outcome::kFailed}}),
            Level::kFalsification);
  EXPECT_EQ(level_reached({{1, Outcome::kPassed}, {2, Outcome::kFailed}, {3, Outcome::kPassed}}), Level::kType);
  EXPECT_EQ(level_reached({{1, Outcome::kPassed}, {2, Outcome::kPassed}, {3, Outcome::kPassed},
                           {4, Outcome::kNotApplicable}}),
            Level::kProperty);
}

}  // namespace
}  // namespace kc::ladder
