// The torch backend (libkc_torch.so over libtorch's ATen): one smoke
// conformance case per op it exposes, run through the engine in worker
// processes, plus the verdicts PyTorch's documented (or, where the docs are
// silent, coded) semantics predict: out-of-range indices raise, and addmm with
// beta = 0 ignores C.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "../backends/backend_test_util.h"

namespace kc::backend_test {
namespace {

using engine::Verdict;

class Torch : public BackendTest {
 protected:
  Torch() : BackendTest("torch") {}
};

TEST_F(Torch, ReportsVersionAndDeclarations) {
  const BackendInfo info = backend_info("torch");
  EXPECT_NE(info.version.find("libtorch 1."), std::string::npos) << info.version;
  EXPECT_NE(info.reason.find("libkc_torch"), std::string::npos) << info.reason;
  auto sel = registry().find_impl("torch.index_select");
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ(sel->declaration().backend, "torch");
  EXPECT_EQ(sel->declaration().oob, OobPolicy::kRaise);
  EXPECT_NE(sel->declaration().source.find("PyTorch 1.13"), std::string::npos) << sel->declaration().source;
  EXPECT_EQ(registry().find_impl("torch.var")->declaration().accumulator, DType::kF64);
  EXPECT_EQ(registry().find_impl("torch.sum_t2")->declaration().get("threads"), "2");
}

const char* kMatmul = R"(
contract T-TORCH-MATMUL {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B, C) normal(0, 1)
             and M in {17} and N in {33} and K in {64}
             and trans_a in {N, T} and trans_b in {N, T} and lda_pad in {3}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "GEMM error beyond FP32 rounding" signature PRECISION_FINGERPRINT
}
)";

TEST_F(Torch, MatmulConforms) { expect_conforming(check_text(kMatmul, "torch.matmul")); }

TEST_F(Torch, AddmmConformsWithAlphaAndBeta) {
  std::string text = kMatmul;
  text.replace(text.find("lda_pad in {3}"), 14, "lda_pad in {3} and alpha in {0.5} and beta in {0, 2}");
  expect_conforming(check_text(text, "torch.addmm"));
}

TEST_F(Torch, SoftmaxAndLogSoftmaxConform) {
  expect_conforming(check_file("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01", "torch.softmax"));
  expect_conforming(check_file("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01", "torch.log_softmax"));
}

// gelu: the same allowance as the onednn elementwise smoke test (a few FP32
// steps of a couple of roundings each: rtol 8 eps; cancellation of 1 + erf /
// 1 + tanh for x << 0: atol 4 eps max|x|).
std::string gelu_contract(const std::string& op) {
  return "contract T-TORCH-GELU {\n  scope " + op +
         "\n  pre precision(x, y) in {FP32} and value_range(x) in [-6, 6] and n in {1000}\n"
         "  post output y satisfies elementwise_close(y, ref(y))\n"
         "  tolerance elementwise absolute 4 * eps(P) * max|x| and relative 8 * eps(P)\n"
         "  reference higher_precision FP64\n"
         "  measure sample 2 random inputs per config; compute max ratio; pass if <= 1\n"
         "  violation \"elementwise error beyond a few FP32 roundings\" signature PRECISION_FINGERPRINT\n}\n";
}
TEST_F(Torch, GeluConforms) {
  expect_conforming(check_text(gelu_contract("gelu_erf"), "torch.gelu_erf"));
  expect_conforming(check_text(gelu_contract("gelu_tanh"), "torch.gelu_tanh"));
}

// In-range lookups copy values: exact (absolute 0).
const char* kIndexing = R"(
contract T-TORCH-INDEX {
  scope      gather, index_select, embedding
  pre        precision(table, out) in {FP32} and value_range(table) normal(0, 1)
             and rows in {1, 50} and dim in {1, 16} and n in {7, 64}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  absolute 0
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max abs_error; pass if <= 0
  violation  "a looked-up value differs from the table" signature PRECISION_FINGERPRINT
}
)";
class TorchIndexing : public Torch, public ::testing::WithParamInterface<const char*> {};
TEST_P(TorchIndexing, CopiesInRangeRowsExactly) {
  expect_conforming(check_text(kIndexing, std::string("torch.") + GetParam()));
}
TEST_P(TorchIndexing, RaisesOnOutOfRangeIndicesAsDeclared) {
  // Declared RAISE (ATen's bounds checks): C-EXC-02 injects -1, -bound, bound,
  // bound + 10 and must see every call raise, which is conforming.
  const std::string impl = std::string("torch.") + GetParam();
  const auto r = check_file("contracts/classes/C-EXC-02.kc", "C-EXC-02", impl);
  EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
}
INSTANTIATE_TEST_SUITE_P(Ops, TorchIndexing, ::testing::Values("gather", "index_select", "embedding"));

TEST_F(Torch, OutOfRangeIndexIsKernelRaisedNotACrash) {
  // In kc's own process: the c10::Error ATen throws crosses the module as
  // KC_RAISED and arrives as kKernelRaised with ATen's message.
  auto impl = registry().find_impl("torch.index_select");
  ASSERT_NE(impl, nullptr);
  const Op* op = builtin_ops().find("index_select");
  Config config;
  config.params = {{"rows", "4"}, {"dim", "3"}, {"n", "2"}};
  Call call = op->make_call(config).value();
  call.t("index").set(0, 1);
  call.t("index").set(1, 4);  // == rows: out of range
  const Status s = impl->run(call);
  EXPECT_EQ(s.code(), StatusCode::kKernelRaised) << s.message();
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  call.t("index").set(1, -1);  // negative indices are not wrapped
  EXPECT_EQ(impl->run(call).code(), StatusCode::kKernelRaised);
}

TEST_F(Torch, AddmmBetaZeroIgnoresC) {
  // torch.addmm: "If beta is 0, then input will be ignored, and nan and inf in
  // it will not be propagated" (KC-GEMM-02 puts NaN in C).
  const auto r = check_file("contracts/blas/KC-GEMM-02.kc", "KC-GEMM-02", "torch.addmm");
  EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
  EXPECT_GT(r.evidence.elements, 0);
}

TEST_F(Torch, SumThreadVariantsConform) {
  for (const char* impl : {"torch.sum", "torch.sum_t1", "torch.sum_t2"})
    expect_conforming(check_file("contracts/blas/KC-RED-01.kc", "KC-RED-01", impl));
}

TEST_F(Torch, SumAtFixedThreadsIsBitwiseDeterministic) {
  const auto r = check_file("contracts/classes/C-ORD-02.kc", "C-ORD-02", "torch.sum_t2");
  EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
}

TEST_F(Torch, LayernormConforms) {
  // at::layer_norm's Welford + cascade moments (native/cpu/moments_utils.h) on
  // unit-scale and on large-mean rows, under the layernorm op's derived bound.
  expect_conforming(check_file("contracts/transformer/KC-NORM-01.kc", "KC-NORM-01", "torch.layernorm"));
  expect_conforming(check_file("contracts/transformer/KC-NORM-01.kc", "KC-NORM-02", "torch.layernorm"));
}

// Population variance under the stats op's error model (two-pass / Welford
// allowance, src/ops/stats), at a large offset where the one-pass formula fails.
const char* kVariance = R"(
contract T-TORCH-VAR {
  scope      variance
  pre        precision(x, out) in {FP32} and value_range(x) normal(1000, 1)
             and rows in {3} and cols in {7, 1024}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(cols + 3, P) * |x|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "variance error beyond a stable algorithm's" signature PRECISION_FINGERPRINT
}
)";
TEST_F(Torch, VarianceThreadVariantsConform) {
  for (const char* impl : {"torch.var", "torch.var_t1", "torch.var_t2"}) expect_conforming(check_text(kVariance, impl));
}

// ---- FP16 and more bf16 (docs/backends/torch.md, "Below FP32").

// The reduced-precision impls and what they declare: sum and mean reduce in
// float (ATen's OpMathType.h), layer_norm on bf16 keeps its moments in bf16
// (moments_utils.h computes in the tensor's type), and the functions whose
// docs give only a formula declare accuracy = UNDOCUMENTED.
TEST_F(Torch, ReducedPrecisionImplsDeclareWhatATenDoes) {
  struct Row {
    const char* impl;
    DType dtype;
    std::optional<DType> accumulator;
    const char* cites;
  };
  const Row rows[] = {
      {"torch.sum_fp16", DType::kF16, DType::kF32, "OpMathType.h"},
      {"torch.mean_fp16", DType::kF16, DType::kF32, "OpMathType.h"},
      {"torch.index_select_fp16", DType::kF16, std::nullopt, "index_select_out_cpu_"},
      {"torch.embedding_fp16", DType::kF16, std::nullopt, "Embedding.cpp"},
      {"torch.gather_fp16", DType::kF16, std::nullopt, "ScatterGatherKernel.cpp"},
      {"torch.sum_bf16", DType::kBF16, DType::kF32, "OpMathType.h"},
      {"torch.mean_bf16", DType::kBF16, DType::kF32, "OpMathType.h"},
      {"torch.log_softmax_bf16", DType::kBF16, DType::kF32, "SoftMaxKernel.cpp"},
      {"torch.layernorm_bf16", DType::kBF16, DType::kBF16, "moments_utils.h"},
      {"torch.exp_bf16", DType::kBF16, std::nullopt, "vec256_bfloat16.h"},
      {"torch.tanh_bf16", DType::kBF16, std::nullopt, "vec256_bfloat16.h"},
      {"torch.erf_bf16", DType::kBF16, std::nullopt, "vec256_bfloat16.h"},
      {"torch.gelu_erf_bf16", DType::kBF16, std::nullopt, "gelu"},
      {"torch.gelu_tanh_bf16", DType::kBF16, std::nullopt, "gelu"},
      {"torch.silu_bf16", DType::kBF16, std::nullopt, "silu"},
  };
  for (const Row& row : rows) {
    auto impl = registry().find_impl(row.impl);
    ASSERT_NE(impl, nullptr) << row.impl;
    const Declaration& d = impl->declaration();
    EXPECT_EQ(d.dtypes, std::vector<DType>{row.dtype}) << row.impl;
    EXPECT_EQ(d.accumulator, row.accumulator) << row.impl;
    EXPECT_NE(d.source.find(row.cites), std::string::npos) << row.impl << ": " << d.source;
  }
  for (const char* fn : {"torch.gelu_tanh_bf16", "torch.silu_bf16", "torch.mean_fp16"})
    EXPECT_EQ(registry().find_impl(fn)->declaration().get("accuracy"), "UNDOCUMENTED") << fn;
}

// layer_norm on bf16 rows far from zero (mean 30, spread 0.5): held to the
// bound of FP32 statistics it is off by hundreds of bounds (932 measured:
// -0.216 for 0.0023), held to its declared bf16 statistics it conforms.
// oneDNN's bf16 layer normalization (f32 statistics) meets the FP32 bound on
// the same rows (docs/backends/torch.md). A libtorch whose bf16 layer_norm
// computed its moments in float fails the first expectation, on purpose.
std::string layernorm_bf16(const std::string& acc, const std::string& cols) {
  return "contract T-TORCH-LN-BF16 {\n  scope layernorm\n"
         "  pre precision(x, y) in {BF16} and value_range(x) normal(30, 0.5) and rows in {8} and cols in {" +
         cols + "}\n"
         "  post output y satisfies elementwise_close(y, ref(y))\n"
         "  tolerance bound gamma(L + 12, " + acc + ") * |y|\n"
         "  reference higher_precision FP64\n"
         "  measure sample 2 random inputs per config; compute max bound_ratio; pass if <= 1\n"
         "  violation \"layernorm beyond the accumulator's bound\" signature ERROR_BOUND_EXCEEDED\n}\n";
}
TEST_F(Torch, LayernormBf16KeepsItsMomentsInBf16) {
  const engine::CaseResult fp32 = check_text(layernorm_bf16("FP32", "64, 768"), "torch.layernorm_bf16");
  EXPECT_EQ(fp32.verdict, Verdict::kViolation) << describe(fp32);
  EXPECT_GT(fp32.evidence.max, 100) << describe(fp32);
  // The bf16 bound is finite only while (L + 12) 2^-8 < 1: cols 7 and 64.
  expect_conforming(check_text(layernorm_bf16("ACC", "7, 64"), "torch.layernorm_bf16"));
}

// sum over Half and bf16 in float, within gamma(n + 1, FP32) |x| and one
// rounding. log_softmax on bf16 sums its exps in float too, but rounds the sum
// to bf16 before the log: at 7 columns, where -log S is small, that rounding
// is tens of bounds (34 measured); the docs state no accuracy, so the engine
// reports it measured, not judged.
TEST_F(Torch, HalfAndBf16ReductionsConform) {
  const char* sum = R"(
contract T-TORCH-SUM16 {
  scope      sum
  pre        precision(x, out) in {FP16, BF16} and value_range(x) normal(0, 1) and n in {3, 130, 4096}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(n + 1, ACC) * |x|
  reference  higher_precision FP64
  measure    sample 4 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "sum beyond an FP32 accumulation and one rounding" signature ERROR_BOUND_EXCEEDED
}
)";
  expect_conforming(check_text(sum, "torch.sum_fp16"));
  expect_conforming(check_text(sum, "torch.sum_bf16"));
  const char* log_softmax = R"(
contract T-TORCH-LOGSOFTMAX-BF16 {
  scope      log_softmax
  pre        precision(x, y) in {BF16} and value_range(x) normal(0, 3) and rows in {4} and cols in {7, 128, 1000}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(cols + 2 * max|x| + 4, ACC) * |y|
  reference  higher_precision FP64 with softmax_stabilization = max_subtraction
  measure    sample 4 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "log_softmax beyond FP32 intermediates and one bf16 rounding" signature PRECISION_FINGERPRINT
}
)";
  const engine::CaseResult ls = check_text(log_softmax, "torch.log_softmax_bf16");
  EXPECT_EQ(ls.verdict, Verdict::kUnderSpecified) << describe(ls);
  EXPECT_GT(ls.evidence.max, 10) << describe(ls);
  ASSERT_TRUE(ls.evidence.worst.has_value()) << describe(ls);
  EXPECT_NE(ls.evidence.worst->config.find("cols=7"), std::string::npos) << describe(ls);
}

// FP16 tables: the lookups copy exactly and raise on out-of-range indices.
TEST_P(TorchIndexing, Fp16TablesCopyExactlyAndRaise) {
  std::string text = kIndexing;
  text.replace(text.find("{FP32}"), 6, "{FP16}");
  expect_conforming(check_text(text, std::string("torch.") + GetParam() + "_fp16"));
}

// The bf16 functions: exp, tanh and erf are one float evaluation rounded once
// (within KC-UNARY-01's 1 ulp); gelu_tanh on bf16 computes in bf16 steps and
// 1 + tanh cancels (-0 at x = -4, where gelu is -7.0e-5): thousands of ulps,
// reported as measured, not judged (accuracy = UNDOCUMENTED).
TEST_F(Torch, Bf16FunctionsOneRoundingExceptGeluTanh) {
  for (const char* impl : {"torch.exp_bf16", "torch.tanh_bf16", "torch.erf_bf16"}) {
    const auto r = check_file("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01", impl);
    EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
  }
  const auto gelu = check_file("contracts/elementwise/KC-UNARY-01.kc", "KC-UNARY-01", "torch.gelu_tanh_bf16");
  EXPECT_EQ(gelu.verdict, Verdict::kUnderSpecified) << describe(gelu);
  EXPECT_GT(gelu.evidence.max, 100) << describe(gelu);
}

}  // namespace
}  // namespace kc::backend_test
