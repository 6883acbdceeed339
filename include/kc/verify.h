// kc — fast verification of a GEMM result without an O(n^3) oracle
// (docs/verify.md).
//
// Two checks, combined:
//   * Freivalds: k random probe vectors x_p, batched as thin products, compare
//     C x_p with alpha A (B x_p) + beta C0 x_p row by row against a tolerance
//     derived from the same componentwise error model the full check uses,
//     whose |A|(|B||x|) terms are computed in the same pass over A and B.
//     Cost O((MK + KN + MN) k) against the kernel's O(MNK).
//   * Sampled: a random sample of output elements, each recomputed as an FP64
//     dot product and judged against its own componentwise bound.
// The problem is row-major C = alpha op(A) op(B) + beta C0, the matmul op's
// call layout (src/ops/matmul). Attention, whose P V product cannot be probed
// (P is not an output), has the sampled check alone, by query rows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/dtype.h"
#include "kc/enum_table.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc::verify {

/// How each probe vector's entries are drawn.
enum class ProbeKind {
  kRademacher,  ///< +-1 with equal probability (|x| = 1: the bound terms need one product, not k)
  kGaussian,    ///< standard normal
};
std::span<const EnumEntry<ProbeKind>> probe_kind_table();

/// The per-element error model of the kernel under test.
enum class ErrorModel {
  /// Higham's deterministic bound: |C_hat - C| <= gamma_(K+2)(u) (|alpha||A||B| + |beta||C0|)
  /// + u |C|. Sound for any summation order; weak for large K.
  kWorstCase,
  /// Higham & Mary (2019) probabilistic bound: gamma~_(K+2)(lambda, u) = exp(lambda sqrt(K+2) u
  /// + (K+2) u^2 / (1 - u)) - 1 in place of gamma_(K+2), valid with probability
  /// >= 1 - 2 (K+2) exp(-lambda^2 (1-u)^2 / 2) when rounding errors are independent and mean zero.
  kProbabilistic,
};
std::span<const EnumEntry<ErrorModel>> error_model_table();

/// Which check decided a verdict.
enum class Method {
  kFreivalds,           ///< probe residual beyond its bound
  kSampled,             ///< a sampled element beyond its componentwise bound
  kFreivaldsAndSampled, ///< both ran and passed (or both failed)
  kFullOracle,          ///< the O(n^3) FP64 oracle (not this module; named for reports)
};
std::span<const EnumEntry<Method>> method_table();
inline std::string_view method_name(Method m) { return enum_name(method_table(), m); }

/// A stored row-major float matrix: rows x cols with leading dimension ld >= cols,
/// or ld = 0: every row is the same stored row (a broadcast, e.g. a bias as C0).
struct MatrixRef {
  const float* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;
};

/// C = alpha op(A) op(B) + beta C0 in the matmul op's layout: A stored M x K
/// (trans_a false) or K x M (true); B stored K x N or N x K; C and C0 M x N.
/// C0 may be null when beta == 0 (it is then not read).
struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 0;
  MatrixRef a, b, c0, c;
};

struct Options {
  int probes = 10;                        ///< k: probe vectors for Freivalds (0: skip it)
  ProbeKind probe = ProbeKind::kRademacher;
  std::int64_t samples = 64;              ///< output elements for the sampled check (0: skip it)
  ErrorModel model = ErrorModel::kWorstCase;
  double lambda = 6;                      ///< confidence parameter of kProbabilistic
  /// The kernel's declared precision: the format A, B and C0 are stored in
  /// (their values as given are the exact inputs), and, unless set below, the
  /// accumulator and the output format too.
  DType precision = DType::kF32;
  /// The declared accumulator (FP32, FP16, BF16, ...): every rounding before
  /// the store of C has at most its unit roundoff u_acc, so the model's
  /// coefficient is g = gamma_(K+2)(u_acc) (docs/verify.md, "Low-precision
  /// inputs"). Unset: `precision`.
  std::optional<DType> accumulator;
  /// The format C is stored in: one rounding of its unit roundoff u_out. Unset: `precision`.
  std::optional<DType> output;
  double gamma = 0;                       ///< > 0: per-element coefficient used instead of the model's
  double bound_scale = 1;                 ///< multiplies every bound (a contract's `c` in c * gamma)
  std::uint64_t seed = 0x6b63;
  int threads = 0;                        ///< 0: one per hardware thread
  std::int64_t max_rows_reported = 16;
  bool keep_row_bounds = false;           ///< fill Result::row_bounds (benchmarks, tests)
};

/// The outcome: data, not an error.
struct Result {
  bool pass = true;
  Method method = Method::kFreivaldsAndSampled;  ///< the check that decided the verdict
  double worst_ratio = 0;   ///< max over both checks of residual / bound (pass iff <= 1)
  std::string detail;       ///< one line: which check, where, by how much

  // Freivalds.
  int probes = 0;
  double freivalds_ratio = 0;             ///< max over rows and probes of |r_i| / T_i
  std::int64_t freivalds_worst_row = -1;
  int freivalds_worst_probe = -1;
  std::int64_t failing_rows = 0;          ///< rows with some probe beyond its bound
  std::vector<std::int64_t> rows;         ///< the first max_rows_reported failing rows
  double freivalds_residual = 0;          ///< |r_i| at the worst row and probe
  double freivalds_bound = 0;             ///< T_i at the worst row and probe

  // Sampled elements.
  std::int64_t samples = 0;
  double sample_ratio = 0;
  std::int64_t sample_worst_row = -1, sample_worst_col = -1;
  std::int64_t failing_samples = 0;

  std::vector<double> row_bounds;  ///< T_i of probe 0 per row, when keep_row_bounds
  bool fp32_blocks = false;        ///< the signed sums took the FP32 block path (docs/verify.md)

  double gamma = 0;         ///< the per-element coefficient the bounds used
  double u_out = 0;         ///< unit roundoff of the store of C the bounds used
  double underflow = 0;     ///< the absolute underflow term per element the bounds used
  double seconds = 0;       ///< wall time of the verification
};

/// Verifies a computed C. kInvalidArgument when the problem's shapes and
/// leading dimensions disagree; otherwise the outcome is in the Result.
kc::Result<Result> verify_gemm(const GemmProblem& problem, const Options& options);

/// The same for a matmul op call: `inputs` is the call as handed to the impl
/// (its C is C0), `outputs` the call after the impl ran. FP32, TF32, FP16 and
/// BF16 (and FP8) tensors are read as floats; FP64 is kUnimplemented (the checks
/// compute in FP64 and need headroom above the kernel's precision). The
/// precision is the call's dtype unless options say otherwise; an accumulator
/// the impl declares wider than that dtype becomes options.accumulator when
/// unset (as matmul's underflow allowance counts it).
kc::Result<Result> verify_matmul(const Call& inputs, const Call& outputs, Options options);

/// The matmul inside a fused op: fused_matmul's C = act(A B + bias) checked as
/// the GEMM C = A B + 1 bias^T (bias as a broadcast C0, leading dimension 0).
/// kUnimplemented for a nonlinear activation, which hides the product (the
/// full oracle judges those).
kc::Result<Result> verify_fused_matmul(const Call& inputs, const Call& outputs, Options options);

/// Attention (src/ops/attention), by sampled query rows: `options.samples`
/// distinct rows (b, h, t) (every row when samples >= batch * heads * seq),
/// drawn with `options.seed`, each recomputed by the oracle's own row
/// evaluation (ops::attention_row, bit-identical to the oracle) with its
/// magnitudes, and every element judged |got - ref| <= allowed with the
/// contract's `bound` allowance (kc/bound.h: options.gamma, or
/// gamma(L, P) when 0, times the magnitude, + u |ref| + underflow), times
/// options.bound_scale. Cost O(samples seq head_dim), against the kernel's
/// O(batch heads seq^2 head_dim). Freivalds does not apply: the product P V
/// cannot be probed without P, which is not an output (docs/verify.md).
/// Result::method is kSampled; samples counts judged elements;
/// sample_worst_row / sample_worst_col are the worst element's flat query row
/// ((b heads + h) seq + t) and column j; rows lists the first failing rows
/// (failing_rows in all). NaN where the reference is finite fails.
/// kUnimplemented when a sampled row's reference or magnitude is not finite
/// (non-finite inputs: the full oracle judges those).
kc::Result<Result> verify_attention(const Call& inputs, const Call& outputs, Options options);

/// The per-element coefficient of an error model for accumulation length n in precision p.
double model_gamma(ErrorModel model, double n, DType p, double lambda);

/// The roundings of one term of an output element on its way into the sum, for
/// the model's gamma_n: K + 2 (K products and additions, the alpha and beta
/// scalings), one more when a product of two `inputs` values is not exact in
/// FP32 and is rounded again into an accumulator narrower than FP32. Products
/// of formats with at most 12 significant bits (bf16, fp16, tf32, fp8) are
/// exact in FP32 but for underflow, which gemm_bound_underflow counts.
double gemm_rounding_count(double k, DType inputs, DType accumulator);

/// The absolute underflow allowance per element of the low-precision model:
/// (max(1, |alpha|) K + 4) lambda_acc as the full check allows it, plus
/// lambda_out for the store when the output format differs from the
/// accumulator, plus max(1, |alpha|) K lambda_32 when the accumulator is
/// narrower than FP32 (a product formed in FP32 may underflow there before it
/// is rounded into the accumulator). lambda: half a format's smallest subnormal.
double gemm_bound_underflow(double k, double alpha, DType accumulator, DType output);

}  // namespace kc::verify
