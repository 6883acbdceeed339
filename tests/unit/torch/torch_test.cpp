// The torch backend (libkc_torch.so over libtorch's ATen): one smoke
// conformance case per op it exposes, run through the engine in worker
// processes, plus the verdicts PyTorch's documented (or, where the docs are
// silent, coded) semantics predict: out-of-range indices raise, and addmm with
// beta = 0 ignores C.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace kc::backend_test
