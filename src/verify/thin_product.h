// kc — the thin products of the fast GEMM check (src/verify, docs/verify.md):
// one streaming pass over a stored FP32 matrix computes its products with a
// few FP64 probe vectors and, in the same pass, an FP32 magnitude product.
#pragma once

#include <cstdint>

#include "kc/verify.h"

namespace kc::verify::detail {

/// One pass over the stored matrix M (rows x cols, row-major, leading dimension ld)
/// used as op(M) = M (transposed false) or M^T. With in_len = op(M)'s column count
/// and out_len its row count:
///   out[p * ldo + i] = sum_j op(M)_ij v[p * ldv + j]          in FP64, p < nv
///     (|op(M)| instead of op(M) when abs_rows: an FP64 magnitude product);
///   mag[i] = fl32(sum_j |op(M)_ij| wa[j])                     in FP32, when wa != nullptr.
/// The FP32 -> FP64 widening is exact. The FP64 sums are reordered (four lanes,
/// column blocks, FMAs); every output term passes through at most in_len + 8
/// roundings, FP32 magnitude terms through at most in_len + 16 (see docs/verify.md).
/// Work is split over `threads` threads when the matrix is large enough.
struct ThinPass {
  const MatrixRef* m = nullptr;
  bool transposed = false;
  const double* v = nullptr;
  int nv = 0;
  std::int64_t ldv = 0;
  bool abs_rows = false;
  const float* wa = nullptr;
  double* out = nullptr;
  std::int64_t ldo = 0;
  float* mag = nullptr;
  int threads = 1;
  /// The probe vectors again as FP32 (same layout as v), or nullptr. When set
  /// and fp32_blocks_available(), the dot form (transposed = false) sums the
  /// signed products in FP32 FMAs over blocks of columns (each lane of a
  /// block: at most kFp32Roundings roundings of u32), widening every block's
  /// sums into the FP64 accumulators; twice the lanes of FP64 (four times
  /// with AVX-512) and no widening per element. The caller accounts for the
  /// extra rounding (src/verify/freivalds.cpp). Ignored by the axpy form and
  /// abs_rows.
  const float* vf = nullptr;
  /// FMAs per FP32 lane before its block is widened: a block is 8 r columns on
  /// the 8-lane kernel, 16 r on the 16-lane one; r in {1, 2, 4, 8, 16}
  /// (others are taken as kFp32Roundings). The caller's bound counts r.
  int fp32_roundings = 16;
  /// Dot form only: also copy the stored elements M[r][gather_cols[t]],
  /// t < gather_count, into gather_out[r * gather_count + t] (widened), read
  /// while row r is still in cache. The sampled check's columns of B come from
  /// here: gathered on their own they are one cache line per element, a row
  /// every few KiB (~0.55 ms at n = 4096, measured, of what was then a ~14 ms
  /// check).
  const std::int64_t* gather_cols = nullptr;
  std::int64_t gather_count = 0;
  double* gather_out = nullptr;
};

/// Columns per FP32 block of the 8-lane dot form (the 16-lane one takes twice
/// as many): 16 FMAs per lane, so a term's FP32 error is at most
/// gamma_16(u32) of |row||v| (plus v's own rounding to FP32).
constexpr std::int64_t kFp32Block = 128;
constexpr int kFp32Roundings = static_cast<int>(kFp32Block / 8);

/// The FP32 block kernels of the dot form, narrowest first: 8-lane (AVX2 and
/// FMA) and 16-lane (AVX-512F) FMAs. Both round every multiply-add once, which
/// the error count above assumes, and both give each lane kFp32Roundings.
enum class Fp32Kernel { kNone, kAvx2, kAvx512 };

/// The kernel thin_pass uses: the widest this CPU runs, within the cap.
Fp32Kernel fp32_kernel();

/// Caps the kernel, process-wide, and returns the previous cap (tests and
/// kc_bench_freivalds run the narrower kernel on a CPU that has both).
Fp32Kernel cap_fp32_kernel(Fp32Kernel cap);

/// Whether thin_pass can take the FP32 block path: fp32_kernel() is not kNone.
bool fp32_blocks_available();

/// The most probe vectors one pass takes.
constexpr int kMaxPassVectors = 64;

/// Returns whether the FP32 block path was taken.
bool thin_pass(const ThinPass& pass);

/// A stride for vectors of length len that keeps p-major vectors off the same
/// L1 sets (power-of-two lengths would put every vector's chunk in one set).
inline std::int64_t padded_stride(std::int64_t len) { return ((len + 7) / 8) * 8 + 8; }

}  // namespace kc::verify::detail
