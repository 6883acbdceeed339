// The onednn backend: one smoke conformance case per op it exposes, run through
// the engine in worker processes, plus the verdicts oneDNN's documentation
// predicts (beta = 0 leaves C unread; fixed-environment determinism; the
// fpmath_mode bf16 allowance; the once-per-process max-ISA setting).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../backends/backend_test_util.h"

namespace kc::backend_test {
namespace {

using engine::Verdict;

class Onednn : public BackendTest {
 protected:
  Onednn() : BackendTest("onednn") {}
};

// Matmul with transposes, padded leading dimensions, alpha and beta: the
// matmul op's error model (Higham: gamma(K + 2) |alpha||A||B| + |beta||C|).
const char* kMatmul = R"(
contract T-ONEDNN-MATMUL {
  scope      matmul
  pre        precision(A, B, C) in {FP32} and value_range(A, B, C) normal(0, 1)
             and M in {17} and N in {33} and K in {64}
             and trans_a in {N, T} and trans_b in {N, T}
             and alpha in {0.5} and beta in {0, 2} and lda_pad in {3}
  post       output C satisfies elementwise_close(C, ref(C))
  tolerance  bound gamma(K + 2, P) * |A||B|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "GEMM error beyond FP32 rounding" signature PRECISION_FINGERPRINT
}
)";

TEST_F(Onednn, ReportsVersionAndIsaCaps) {
  const BackendInfo info = backend_info("onednn");
  EXPECT_EQ(info.version.rfind("2.", 0), 0u) << info.version;
  EXPECT_NE(info.reason.find("max-ISA variants"), std::string::npos) << info.reason;
  auto impl = registry().find_impl("onednn.matmul");
  ASSERT_NE(impl, nullptr);
  const Declaration& d = impl->declaration();
  EXPECT_EQ(d.accumulator, DType::kF32);
  EXPECT_EQ(d.determinism, Determinism::kBitwise);
  EXPECT_NE(d.source.find("oneDNN"), std::string::npos);
  EXPECT_EQ(registry().find_impl("onednn.matmul_fpmath_bf16")->declaration().get("fpmath"), "BF16");
}

TEST_F(Onednn, MatmulConforms) { expect_conforming(check_text(kMatmul, "onednn.matmul")); }
TEST_F(Onednn, InnerProductConforms) {
  // oneDNN 2.6 has no f32 inner product with output scales (alpha != 1 is not
  // applicable to it); transposes, padding and beta (sum post-op) all run.
  std::string text = kMatmul;
  text.replace(text.find("alpha in {0.5}"), 14, "alpha in {1}");
  expect_conforming(check_text(text, "onednn.inner_product"));
  const auto scaled = check_text(kMatmul, "onednn.inner_product");
  EXPECT_EQ(scaled.evidence.elements, 0) << describe(scaled);
}
TEST_F(Onednn, MatmulThreadVariantsConform) {
  expect_conforming(check_text(kMatmul, "onednn.matmul_t1"));
  expect_conforming(check_text(kMatmul, "onednn.matmul_t2"));
}
TEST_F(Onednn, MatmulIsaVariantConformsInAWorker) {
  // sse41 is the lowest cap and every x86-64 CPU kc runs on has it: the worker
  // sets it before its first primitive, so the variant runs (no case skipped).
  expect_conforming(check_text(kMatmul, "onednn.matmul_isa_sse41"));
}

TEST_F(Onednn, FusedMatmulConforms) {
  expect_conforming(check_file("contracts/classes/C-CMP-01.kc", "C-CMP-01", "onednn.fused_matmul"));
}

// softmax / log_softmax under the ops' own error model (gamma(cols + c) times
// |y| resp. 1 + |y|). Short rows are left out here: where one term dominates
// the row sum, log_softmax carries the error of oneDNN's log near 1 (see
// LogIsAccurateOnlyInAbsoluteTerms), which the finding tests below pin.
const char* kSoftmax = R"(
contract T-ONEDNN-SOFTMAX {
  scope      softmax, log_softmax
  pre        precision(x, y) in {FP32} and value_range(x) normal(0, 3)
             and rows in {4} and cols in {128, 1000}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(cols + 2 * max|x| + 4, P) * |y|
  reference  higher_precision FP64 with softmax_stabilization = max_subtraction
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "softmax error beyond FP32 rounding" signature PRECISION_FINGERPRINT
}
)";
TEST_F(Onednn, SoftmaxConforms) {
  expect_conforming(check_text(kSoftmax, "onednn.softmax"));
  expect_conforming(check_text(kSoftmax, "onednn.softmax_isa_sse41"));
}
TEST_F(Onednn, LogSoftmaxConforms) { expect_conforming(check_text(kSoftmax, "onednn.log_softmax")); }

// Elementwise functions. Tolerance (err <= atol + rtol |ref|): each function
// is a handful (<= 4) of FP32 steps (scale, exp/erf/tanh approximation, add,
// multiply), each within a couple of units of roundoff: rtol 8 eps(P). The
// 1 + erf / 1 + tanh / x * sigmoid forms cancel for x << 0, leaving an absolute
// error of about eps * |x| / 2 per step: atol 4 eps(P) max|x|. log on [0.25, 4]
// has condition 1/|log x| (unbounded at 1): its absolute error u stays within atol.
std::string eltwise_contract(const std::string& op, const std::string& range) {
  return "contract T-ONEDNN-ELT {\n  scope " + op +
         "\n  pre precision(x, y) in {FP32} and value_range(x) in " + range +
         " and n in {1000}\n"
         "  post output y satisfies elementwise_close(y, ref(y))\n"
         "  tolerance elementwise absolute 4 * eps(P) * max|x| and relative 8 * eps(P)\n"
         "  reference higher_precision FP64\n"
         "  measure sample 2 random inputs per config; compute max ratio; pass if <= 1\n"
         "  violation \"elementwise error beyond a few FP32 roundings\" signature PRECISION_FINGERPRINT\n}\n";
}

class OnednnEltwise : public Onednn, public ::testing::WithParamInterface<const char*> {};
TEST_P(OnednnEltwise, Conforms) {
  const std::string op = GetParam();
  const std::string range = op == "exp" ? "[-10, 10]" : "[-6, 6]";
  expect_conforming(check_text(eltwise_contract(op, range), "onednn." + op));
}
INSTANTIATE_TEST_SUITE_P(Ops, OnednnEltwise,
                         ::testing::Values("relu", "exp", "tanh", "gelu_erf", "gelu_tanh", "silu"));

// ---- Findings on oneDNN 2.6.3 (AVX2) that kc must keep catching. Measured,
// not documented: if a later oneDNN fixes them these tests fail, and
// docs/backends/onednn.md is updated with them.

TEST_F(Onednn, LogIsAccurateOnlyInAbsoluteTerms) {
  // eltwise_log is measured (all 2000 elements): near x = 1 its error is
  // ~3.4e-6 absolute (log(1.03126): 0.0307872 vs 0.0307838, ~1e-4 relative),
  // beyond 8 eps relative + 4 eps max|x| absolute. dev_guide_eltwise states no
  // accuracy (declared accuracy = UNDOCUMENTED): reported, not a violation.
  const auto r = check_text(eltwise_contract("log", "[0.25, 4]"), "onednn.log");
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << describe(r);
  EXPECT_NE(r.reason.find("measured, not judged"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.signatures.empty());
  EXPECT_GT(r.evidence.elements, 0);
  ASSERT_TRUE(r.evidence.worst.has_value());
  EXPECT_LT(std::abs(r.evidence.worst->reference), 0.1) << "the worst element is near log(1) = 0";
}

TEST_F(Onednn, LogSoftmaxOfOneElementIsNotZero) {
  // log_softmax of a single column is exactly 0 (x - x - log 1); oneDNN returns
  // its log(1), 1.4e-6, and KC-SOFTMAX-01 reports the measurement: oneDNN
  // documents no accuracy for logsoftmax, so it is not a violation.
  const auto r = check_file("contracts/blas/KC-SOFTMAX-01.kc", "KC-SOFTMAX-01", "onednn.log_softmax");
  EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << describe(r);
  EXPECT_NE(r.reason.find("accuracy = UNDOCUMENTED"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.evidence.worst.has_value());
  EXPECT_EQ(r.evidence.worst->reference, 0.0);
  EXPECT_NE(r.evidence.worst->value, 0.0);
}

TEST_F(Onednn, SumConforms) {
  // KC-RED-01's n = 1 is outside oneDNN's reduction (nothing to reduce): that
  // config is not applicable, the others are judged.
  expect_conforming(check_file("contracts/blas/KC-RED-01.kc", "KC-RED-01", "onednn.sum"));
  expect_conforming(check_file("contracts/blas/KC-RED-01.kc", "KC-RED-01", "onednn.sum_t2"));
}

// Row statistics under the stats ops' error model (src/ops/stats): mean
// gamma(n) mean|x|, norm2 gamma(n + 1) ||x||.
const char* kStats = R"(
contract T-ONEDNN-STATS {
  scope      mean, norm2
  pre        precision(x, out) in {FP32} and value_range(x) normal(1, 1)
             and rows in {3} and cols in {7, 1024}
  post       output out satisfies elementwise_close(out, ref(out))
  tolerance  bound gamma(cols + 1, P) * |x|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "reduction error beyond FP32 summation" signature PRECISION_FINGERPRINT
}
)";
TEST_F(Onednn, MeanAndNorm2Conform) {
  expect_conforming(check_text(kStats, "onednn.mean"));
  expect_conforming(check_text(kStats, "onednn.norm2"));
}

TEST_F(Onednn, LayernormConforms) {
  // The layernorm op's derived bound (src/ops/norm), on unit-scale and on
  // large-mean rows (oneDNN's documented two-pass statistics do not cancel).
  expect_conforming(check_file("contracts/transformer/KC-NORM-01.kc", "KC-NORM-01", "onednn.layernorm"));
  expect_conforming(check_file("contracts/transformer/KC-NORM-01.kc", "KC-NORM-02", "onednn.layernorm"));
}

// bf16 data with f32 accumulation (dev_guide_data_types): held to the bound
// of the declared FP32 accumulator plus one rounding of the result to bf16.
TEST_F(Onednn, Bf16ImplsDeclareFp32AccumulationAndKeepIt) {
  const auto impl = registry().find_impl("onednn.matmul_bf16");
  if (!impl) GTEST_SKIP() << "no onednn bf16 impls: oneDNN 2.x builds its bf16 kernels for avx512_core and up";
  const Declaration& d = impl->declaration();
  EXPECT_EQ(d.dtypes, std::vector<DType>{DType::kBF16});
  EXPECT_EQ(d.accumulator, DType::kF32);
  EXPECT_NE(d.source.find("dev_guide_data_types"), std::string::npos);
  expect_conforming(check_file("contracts/lowprec/KC-GEMM-BF16-01.kc", "KC-GEMM-BF16-01", "onednn.matmul_bf16"));
  const char* softmax = R"(
contract T-ONEDNN-SOFTMAX-BF16 {
  scope      softmax
  pre        precision(x, y) in {BF16} and value_range(x) normal(0, 3)
             and rows in {4} and cols in {128, 1000}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  bound gamma(cols + 2 * max|x| + 4, ACC) * |y|
  reference  higher_precision FP64
  measure    sample 1 random inputs per config; compute max bound_ratio; pass if <= 1
  violation  "softmax error beyond f32 intermediates and one bf16 rounding" signature PRECISION_FINGERPRINT
}
)";
  // oneDNN states no accuracy for softmax (accuracy = UNDOCUMENTED): a result
  // beyond the bound is a measurement, not a violation, and says so.
  const engine::CaseResult r = check_text(softmax, "onednn.softmax_bf16");
  if (r.verdict != Verdict::kConforming) {
    EXPECT_EQ(r.verdict, Verdict::kUnderSpecified) << r.reason;
    EXPECT_NE(r.reason.find("accuracy = UNDOCUMENTED"), std::string::npos) << r.reason;
  }
}

// ---- Verdicts the documentation predicts.

TEST_F(Onednn, BetaZeroLeavesCUnread) {
  // Post-ops docs: without a sum post-op dst is written, never read, so NaN in
  // C cannot reach the output (KC-GEMM-02).
  const auto r = check_file("contracts/blas/KC-GEMM-02.kc", "KC-GEMM-02", "onednn.matmul");
  EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
}

TEST_F(Onednn, FixedThreadsIsBitwiseDeterministic) {
  // "Primitive Attributes: deterministic": run-to-run identical bits in a fixed
  // environment (threads and ISA fixed by the impl).
  const auto r = check_file("contracts/classes/C-ORD-02.kc", "C-ORD-02", "onednn.matmul_t2");
  EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
}

TEST_F(Onednn, Bf16FpmathIsEitherStrictOrCaughtAsBf16) {
  // fpmath_mode = bf16 *allows* bf16-rounded inputs ("Primitive Attributes:
  // floating-point math mode"); it does not require them. Where oneDNN takes
  // the allowance INC-COERCE-02 must name it; where it runs the strict kernels
  // (seen on AVX2 and on avx512_bf16 Zen 4 with 2.6.3) the impl conforms.
  const auto r = check_file("contracts/incidents/INC-PRECISION-COERCION.kc", "INC-COERCE-02",
                            "onednn.matmul_fpmath_bf16");
  if (r.verdict == Verdict::kViolation) {
    ASSERT_FALSE(r.signatures.empty()) << describe(r);
    EXPECT_EQ(r.signatures.front().to_string(), "PRECISION_FINGERPRINT(bf16)") << describe(r);
  } else {
    EXPECT_EQ(r.verdict, Verdict::kConforming) << describe(r);
    EXPECT_GT(r.evidence.elements, 0);
  }
}

/// Runs `fn` in a forked child (oneDNN's ISA setting is per process, and this
/// test process must keep its own unset for the worker-based tests); returns
/// the child's exit status.
template <typename F>
int in_child(F&& fn) {
  const pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

TEST_F(Onednn, IsaCapIsOncePerProcessAndSaysSoInProcess) {
  // CPU Dispatcher Control: the max ISA can only be set before the first
  // primitive is created. In one process, after the default-ISA impl ran,
  // the sse41 variant must refuse (kUnimplemented) rather than silently run
  // the avx2 kernels; and with fpmath bf16 on a CPU without bf16 kernels the
  // result must equal strict mode's bit for bit.
  auto strict = registry().find_impl("onednn.matmul");
  auto bf16 = registry().find_impl("onednn.matmul_fpmath_bf16");
  auto sse41 = registry().find_impl("onednn.matmul_isa_sse41");
  ASSERT_TRUE(strict && bf16 && sse41);
  const bool has_avx = __builtin_cpu_supports("avx");
  const int rc = in_child([&] {
    Call a = make_call("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
    Call b = a;
    Call c = a;
    if (!strict->run(a).ok() || !bf16->run(b).ok()) return 1;
    const Status s = sse41->run(c);
    if (has_avx && s.code() != StatusCode::kUnimplemented) return 2;
    if (!__builtin_cpu_supports("avx512bf16") &&
        std::memcmp(a.t("C").raw(), b.t("C").raw(), a.t("C").nbytes()) != 0)
      return 3;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "1: a run failed; 2: the ISA variant ran after the ISA was fixed; 3: bf16 fpmath changed bits";
}

}  // namespace
}  // namespace kc::backend_test
