// kc — thin products for the fast GEMM check (src/verify/thin_product.h).
//
// The check's cost is k + 1 multiply-adds per stored matrix element, so the
// loops below are built around the FMA units and around reading each matrix
// once, in full cache lines:
//   * op(M) = M ("dot form"): out_i = row_i . v_p. Panels of kPanel rows are
//     walked in column blocks of kColBlock; a block of the probe vectors
//     (nv x kColBlock doubles, L1-resident) is reused by every row of the
//     panel, and 2 rows x 5 probes accumulate in registers (10 FMAs per
//     widened 4-float load, probe chunks shared by the two rows). Above
//     five probes the FP32 block path takes 2 rows x 4 probes, its last
//     group with the magnitude. On a CPU with AVX-512 the FP32 block path
//     is a 16-lane kernel instead (2 rows x 10 probes and the magnitude,
//     probes packed per block: "16 lanes" below).
//   * op(M) = M^T ("axpy form"): out_c += row_r[c] v_p[r]. Four stored rows are
//     streamed together over a strip of kStrip columns whose FP64 outputs
//     (nv x kStrip doubles) stay in L1; each output chunk is loaded and
//     stored once per four rows.
// The FP32 magnitude product |op(M)| wa is accumulated in FP32 from the same
// loaded row chunks, while they are in L1 (on the FP32 block path above five
// probes, in the same registers).
#include "verify/thin_product.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>  // Pool::busy_
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>  // getpid: the worker pool is rebuilt in a forked child

#include <immintrin.h>  // the 16-lane path's masked loads

// The vector helpers below are always inlined, so no V4 crosses a call
// boundary: GCC's note that such a return "changes the ABI" does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"  // GCC and clang both

namespace kc::verify::detail {

namespace {

// GCC vector types: the default clone lowers them to SSE2 pairs, the AVX2
// clone to single registers; the module builds with -ffp-contract=fast, so
// a * b + c becomes an FMA there (the FP64 bound covers fused and unfused).
typedef double V4 __attribute__((vector_size(32)));
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
typedef std::int64_t L4 __attribute__((vector_size(32)));
typedef std::int32_t I8 __attribute__((vector_size(32)));

#define KC_INLINE [[gnu::always_inline]] inline
// The register tiles' loops over rows and probes run to compile-time counts and
// must be unrolled for their accumulators to live in registers: GCC unrolls them
// at -O3 but not at -O2 (RelWithDebInfo), where the tiles kept their sums in
// memory, a load and a store around every FMA.
#define KC_UNROLL _Pragma("GCC unroll 16")

constexpr std::int64_t kPanel = 16;     // rows per panel (dot form)
constexpr std::int64_t kColBlock = 256; // columns per block (dot form): 10 probes = 20 KiB of L1
constexpr std::int64_t kStrip = 256;    // output columns per strip (axpy form)
/// Rows ahead whose chunks an FP32 tile prefetches (into L1) as it goes, at the
/// columns it reads: two row pairs on in the walk, or for a panel's last two
/// pairs the next panel's first rows. Without it the pass's FMA work added to
/// its reads from memory rather than hiding under them: kc_bench_freivalds at
/// n = 4096, k = 10, 7.5-7.9 ms against 9.6-9.8 on the 16-lane kernel
/// (docs/verify.md, "Cost").
constexpr std::int64_t kAhead = 4;

// Element by element, not __builtin_convertvector: GCC lowers the builtin in
// the baseline context before inlining (two 128-bit converts and an insert per
// chunk), while this form becomes one vcvtps2pd ymm in the AVX2 clone (2.5x the
// throughput of the whole kernel, measured).
KC_INLINE V4 widen(const float* p) {
  F4 f;
  std::memcpy(&f, p, sizeof f);
  return V4{static_cast<double>(f[0]), static_cast<double>(f[1]), static_cast<double>(f[2]),
            static_cast<double>(f[3])};
}
KC_INLINE V4 abs4(V4 x) { return reinterpret_cast<V4>(reinterpret_cast<L4>(x) & 0x7fffffffffffffffLL); }
KC_INLINE F8 load8(const float* p) {
  F8 f;
  std::memcpy(&f, p, sizeof f);
  return f;
}
KC_INLINE F8 abs8(F8 x) { return reinterpret_cast<F8>(reinterpret_cast<I8>(x) & 0x7fffffff); }
KC_INLINE double hsum(V4 a) { return (a[0] + a[1]) + (a[2] + a[3]); }
KC_INLINE float hsum8(F8 a) {
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/// ThinPass::fp32_roundings, or kFp32Roundings where it is not one of the allowed counts.
inline int fp32_roundings(const ThinPass& ps) {
  const int r = ps.fp32_roundings;
  return r >= 1 && r <= kFp32Roundings && (r & (r - 1)) == 0 ? r : kFp32Roundings;
}

/// The columns before the first `bytes`-aligned one when every row starts at
/// the same alignment (none otherwise): the vector paths start their blocks
/// there so that no full-vector load splits a cache line.
inline std::int64_t unaligned_head(const MatrixRef& m, std::int64_t bytes) {
  const std::int64_t per_vector = bytes / static_cast<std::int64_t>(sizeof(float));
  const auto addr = reinterpret_cast<std::uintptr_t>(m.data);
  if (m.ld % per_vector != 0 || addr % sizeof(float) != 0) return 0;
  const auto b = static_cast<std::uintptr_t>(bytes);
  return std::min(m.cols, static_cast<std::int64_t>((b - addr % b) % b / sizeof(float)));
}

/// Columns [jb, je) of a stored row (row: its column 0), one at a time:
/// sums[p] += row_j v_pj in FP64 (|row_j| when kAbs).
template <bool kAbs>
KC_INLINE void scalar_sums(const ThinPass& ps, const float* row, std::int64_t jb, std::int64_t je, double* sums) {
  for (std::int64_t j = jb; j < je; ++j) {
    const double x = kAbs ? std::fabs(static_cast<double>(row[j])) : static_cast<double>(row[j]);
    for (int p = 0; p < ps.nv; ++p) sums[p] += x * ps.v[p * ps.ldv + j];
  }
}

/// The magnitude product over columns [jb, je) of a stored row, one at a time, in FP32.
KC_INLINE float scalar_mag(const ThinPass& ps, const float* row, std::int64_t jb, std::int64_t je) {
  float s = 0;
  if (ps.wa != nullptr)
    for (std::int64_t j = jb; j < je; ++j) s += std::fabs(row[j]) * ps.wa[j];
  return s;
}

/// Stores row i's nv sums (none when sums is null: the caller stored them) and
/// its magnitude product, and copies its gathered columns.
KC_INLINE void finish_row(const ThinPass& ps, std::int64_t i, const double* sums, float mag) {
  if (sums != nullptr)
    for (int p = 0; p < ps.nv; ++p) ps.out[p * ps.ldo + i] = sums[p];
  if (ps.wa != nullptr) ps.mag[i] = mag;
  const float* row = ps.m->data + i * ps.m->ld;
  for (std::int64_t t = 0; t < ps.gather_count; ++t)
    ps.gather_out[i * ps.gather_count + t] = static_cast<double>(row[ps.gather_cols[t]]);
}

// ---- dot form -------------------------------------------------------------

/// acc[r * lda + p] += sum_j rows[r][j] vs[p][j], j < len4 (a multiple of 4):
/// an R x P register tile.
template <int R, int P, bool kAbs>
KC_INLINE void dot_tile(const float* const* rows, const double* const* vs, std::int64_t len4, V4* acc,
                        int lda) {
  V4 a[R][P];
  KC_UNROLL for (int r = 0; r < R; ++r)
    KC_UNROLL for (int p = 0; p < P; ++p) a[r][p] = acc[r * lda + p];
  for (std::int64_t j = 0; j < len4; j += 4) {
    V4 x[R];
    KC_UNROLL for (int r = 0; r < R; ++r) {
      x[r] = widen(rows[r] + j);
      if constexpr (kAbs) x[r] = abs4(x[r]);
    }
    KC_UNROLL for (int p = 0; p < P; ++p) {
      V4 y;
      std::memcpy(&y, vs[p] + j, sizeof y);
      KC_UNROLL for (int r = 0; r < R; ++r) a[r][p] += x[r] * y;
    }
  }
  KC_UNROLL for (int r = 0; r < R; ++r)
    KC_UNROLL for (int p = 0; p < P; ++p) acc[r * lda + p] = a[r][p];
}

/// The FP32 block form of dot_tile: acc[r * lda + p] += sum_j rows[r][j] vs[p][j]
/// over j < len8 (a multiple of 8, at most kFp32Block), summed per lane in FP32
/// and widened once at the end; with kMag also mag[r] += |rows[r][j]| wa[j],
/// an FP32 accumulator per row carried from block to block. With `ahead`, also
/// prefetches the same columns of the rows ahead[r] (kAhead).
template <int R, int P, bool kMag>
KC_INLINE void dot_tile32(const float* const* rows, const float* const* ahead, const float* const* vs, const float* wa,
                          std::int64_t len8, V4* acc, int lda, F8* mag) {
  F8 a[R][P], mg[R];
  KC_UNROLL for (int r = 0; r < R; ++r) {
    KC_UNROLL for (int p = 0; p < P; ++p) a[r][p] = F8{0, 0, 0, 0, 0, 0, 0, 0};
    if constexpr (kMag) mg[r] = mag[r];
  }
  for (std::int64_t j = 0; j < len8; j += 8) {
    if (ahead != nullptr && j % 16 == 0)  // one prefetch per cache line
      KC_UNROLL for (int r = 0; r < R; ++r) __builtin_prefetch(ahead[r] + j, 0, 3);
    F8 x[R];
    KC_UNROLL for (int r = 0; r < R; ++r) x[r] = load8(rows[r] + j);
    KC_UNROLL for (int p = 0; p < P; ++p) {
      F8 y = load8(vs[p] + j);
#if defined(__x86_64__)
      // Keep y in a register: GCC otherwise folds the load into every row's
      // FMA, one load per FMA instead of one per probe chunk (the k = 10 pass
      // is bound by this loop's issue rate: ~10% of it, measured).
      asm("" : "+x"(y));
#endif
      KC_UNROLL for (int r = 0; r < R; ++r) a[r][p] += x[r] * y;
    }
    if constexpr (kMag) {
      const F8 w = load8(wa + j);
      KC_UNROLL for (int r = 0; r < R; ++r) mg[r] += abs8(x[r]) * w;
    }
  }
  KC_UNROLL for (int r = 0; r < R; ++r) {
    KC_UNROLL for (int p = 0; p < P; ++p) {
      float lanes[8];
      std::memcpy(lanes, &a[r][p], sizeof lanes);
      acc[r * lda + p] += widen(lanes) + widen(lanes + 4);
    }
    if constexpr (kMag) mag[r] = mg[r];
  }
}

/// The probes left after the full groups (none to four), with or without the
/// magnitude product.
template <int R, bool kMag>
KC_INLINE void last_group32(const float* const* rows, const float* const* ahead, const float* const* vs, int left,
                            const float* wa, std::int64_t len8, V4* acc, int lda, F8* mag) {
  switch (left) {
    case 4: dot_tile32<R, 4, kMag>(rows, ahead, vs, wa, len8, acc, lda, mag); break;
    case 3: dot_tile32<R, 3, kMag>(rows, ahead, vs, wa, len8, acc, lda, mag); break;
    case 2: dot_tile32<R, 2, kMag>(rows, ahead, vs, wa, len8, acc, lda, mag); break;
    case 1: dot_tile32<R, 1, kMag>(rows, ahead, vs, wa, len8, acc, lda, mag); break;
    default:
      if constexpr (kMag) dot_tile32<R, 0, true>(rows, ahead, vs, wa, len8, acc, lda, mag);
      break;
  }
}

/// Probe counts above this take the magnitude product inside the probe tiles
/// (dot_tiles32 with wa set); up to it, in a loop of its own over each row
/// chunk (dot_rows). Per pass over a 4096^2 matrix from memory, medians of
/// 12-16 interleaved runs: k = 10 4.50-4.74 ms folded against 4.70-4.89 ms
/// separate, k = 5 3.64-3.68 against 3.57-3.66, k = 1 3.12-3.29 against 2.92-2.98.
constexpr int kFoldAbove = 5;

/// All nv probes of an R-row tile. With wa (the magnitude folded in): groups
/// of four, the last (one to four probes, or none) also taking |rows| wa on
/// the chunks it has loaded anyway; four probes and the magnitude keep two rows
/// within the 16 vector registers. Without: groups of five.
template <int R>
KC_INLINE void dot_tiles32(const float* const* rows, const float* const* ahead, const float* const* vs, int nv,
                           const float* wa, std::int64_t len8, V4* acc, int lda, F8* mag) {
  int p = 0;  // the first group prefetches
  if (wa == nullptr) {
    for (; p + 5 <= nv; p += 5, ahead = nullptr)
      dot_tile32<R, 5, false>(rows, ahead, vs + p, nullptr, len8, acc + p, lda, mag);
    last_group32<R, false>(rows, ahead, vs + p, nv - p, nullptr, len8, acc + p, lda, mag);
    return;
  }
  for (; nv - p > 4; p += 4, ahead = nullptr)
    dot_tile32<R, 4, false>(rows, ahead, vs + p, nullptr, len8, acc + p, lda, mag);
  last_group32<R, true>(rows, ahead, vs + p, nv - p, wa, len8, acc + p, lda, mag);
}

template <int R, bool kAbs>
KC_INLINE void dot_tiles(const float* const* rows, const double* const* vs, int nv, std::int64_t len4, V4* acc,
                         int lda) {
  int p = 0;
  for (; p + 5 <= nv; p += 5) dot_tile<R, 5, kAbs>(rows, vs + p, len4, acc + p, lda);
  switch (nv - p) {
    case 4: dot_tile<R, 4, kAbs>(rows, vs + p, len4, acc + p, lda); break;
    case 3: dot_tile<R, 3, kAbs>(rows, vs + p, len4, acc + p, lda); break;
    case 2: dot_tile<R, 2, kAbs>(rows, vs + p, len4, acc + p, lda); break;
    case 1: dot_tile<R, 1, kAbs>(rows, vs + p, len4, acc + p, lda); break;
    default: break;
  }
}

/// Rows [rb, re) of the dot form. acc: kPanel * nv scratch.
template <bool kAbs, bool kF32>
KC_INLINE void dot_rows(const ThinPass& ps, std::int64_t rb, std::int64_t re, V4* acc) {
  const MatrixRef& m = *ps.m;
  const int nv = ps.nv;
  const std::int64_t n = m.cols;
  const double* vp[kMaxPassVectors];
  const float* vq[kMaxPassVectors];
  double tail[kPanel][kMaxPassVectors];
  // The FP32 path starts its blocks at a 32-byte-aligned column; the columns
  // before it go through the scalar FP64 path, like a block's tail.
  const std::int64_t head = kF32 ? unaligned_head(m, 32) : 0;
  for (std::int64_t i0 = rb; i0 < re; i0 += kPanel) {
    const std::int64_t i1 = std::min(re, i0 + kPanel);
    for (std::int64_t t = 0; t < (i1 - i0) * nv; ++t) acc[t] = V4{0, 0, 0, 0};
    for (auto& row : tail) std::fill(row, row + nv, 0.0);
    F8 macc[kPanel];
    float mtail[kPanel];
    for (std::int64_t t = 0; t < kPanel; ++t) {
      macc[t] = F8{0, 0, 0, 0, 0, 0, 0, 0};
      mtail[t] = 0;
    }
    for (std::int64_t i = i0; i < i1; ++i) {
      scalar_sums<false>(ps, m.data + i * m.ld, 0, head, tail[i - i0]);
      mtail[i - i0] = scalar_mag(ps, m.data + i * m.ld, 0, head);
    }
    for (std::int64_t j0 = head; j0 < n; j0 += kColBlock) {
      const std::int64_t len = std::min(kColBlock, n - j0);
      // The columns the vector tiles cover; the scalar tail below does the rest.
      const std::int64_t len4 = kF32 ? (len & ~std::int64_t{7}) : (len & ~std::int64_t{3});
      for (int p = 0; p < nv; ++p) vp[p] = ps.v + p * ps.ldv + j0;
      std::int64_t i = i0;
      if constexpr (kF32) {
        static_assert(kColBlock % kFp32Block == 0);
        const std::int64_t block = 8 * fp32_roundings(ps);  // divides kFp32Block
        for (std::int64_t b0 = 0; b0 < len4; b0 += block) {
          const std::int64_t blen = std::min(block, len4 - b0);
          for (int p = 0; p < nv; ++p) vq[p] = ps.vf + p * ps.ldv + j0 + b0;
          const float* wq = ps.wa != nullptr && nv > kFoldAbove ? ps.wa + j0 + b0 : nullptr;
          for (i = i0; i + 2 <= i1; i += 2) {
            const float* rows[2] = {m.data + i * m.ld + j0 + b0, m.data + (i + 1) * m.ld + j0 + b0};
            const float* ahead[2] = {rows[0] + kAhead * m.ld, rows[1] + kAhead * m.ld};
            dot_tiles32<2>(rows, i + 1 + kAhead < re ? ahead : nullptr, vq, nv, wq, blen, acc + (i - i0) * nv, nv,
                           macc + (i - i0));
          }
          if (i < i1) {
            const float* rows[1] = {m.data + i * m.ld + j0 + b0};
            dot_tiles32<1>(rows, nullptr, vq, nv, wq, blen, acc + (i - i0) * nv, nv, macc + (i - i0));
          }
        }
      } else {
        for (; i + 2 <= i1; i += 2) {
          const float* rows[2] = {m.data + i * m.ld + j0, m.data + (i + 1) * m.ld + j0};
          dot_tiles<2, kAbs>(rows, vp, nv, len4, acc + (i - i0) * nv, nv);
        }
        if (i < i1) {
          const float* rows[1] = {m.data + i * m.ld + j0};
          dot_tiles<1, kAbs>(rows, vp, nv, len4, acc + (i - i0) * nv, nv);
        }
      }
      for (i = i0; i < i1; ++i) {
        const float* row = m.data + i * m.ld;
        scalar_sums<kAbs>(ps, row, j0 + len4, j0 + len, tail[i - i0]);
        if (ps.wa != nullptr) {
          const std::int64_t len8 = len & ~std::int64_t{7};
          if (!kF32 || nv <= kFoldAbove) {  // else the FP32 tiles took it with the probes
            F8 s = macc[i - i0];
            for (std::int64_t j = 0; j < len8; j += 8) s += abs8(load8(row + j0 + j)) * load8(ps.wa + j0 + j);
            macc[i - i0] = s;
          }
          mtail[i - i0] += scalar_mag(ps, row, j0 + len8, j0 + len);
        }
      }
    }
    for (std::int64_t i = i0; i < i1; ++i) {
      double sums[kMaxPassVectors];
      for (int p = 0; p < nv; ++p) sums[p] = hsum(acc[(i - i0) * nv + p]) + tail[i - i0][p];
      finish_row(ps, i, sums, hsum8(macc[i - i0]) + mtail[i - i0]);
    }
  }
}

// ---- dot form, 16 lanes (AVX-512) -----------------------------------------
//
// The FP32 block path again with 16-lane FMAs: half the FMA instructions of
// the 8-lane tiles for the same sums. A 2-row x 10-probe tile and the two
// rows' magnitude products hold 26 of the 32 vector registers, and each row
// chunk is loaded once for all ten probes. The probes are regrouped per block
// (pack_probes) so that one base register and constant offsets reach every
// probe chunk: with a pointer per probe the tile runs out of general
// registers and reloads them from the stack. Blocks start at column 0 of
// every row, aligned or not; a block's last columns short of 16 take one
// masked step (through the scalar FP64 path, head and tail columns made the
// whole check ~10% slower on rows 16 bytes past a 64-byte boundary). Rows
// that are not 64-byte aligned are read with unaligned loads: starting the
// blocks at the first aligned column instead (a masked head step, an extra
// block per row, its widening included) was slower at every n measured,
// single-threaded on rows 16 bytes past a boundary, best of 6 alternating
// runs: n = 256 0.109 against 0.098 ms, 512 0.339 against 0.320, 1024 1.65
// against 1.24, 2048 5.69 against 5.53 (docs/verify.md, "Cost").

typedef float F16 __attribute__((vector_size(64)));
typedef double V8 __attribute__((vector_size(64)));
typedef std::int32_t I16 __attribute__((vector_size(64)));

#define KC_WIDE [[gnu::always_inline]] inline __attribute__((target("avx512f,avx2,fma")))

/// Columns per 16-lane block: each lane rounds kFp32Roundings times, as on the 8-lane path.
constexpr std::int64_t kWideBlock = 16 * kFp32Roundings;
/// Probes per 16-lane register tile.
constexpr int kWideProbes = 10;

/// The end of the 16-lane block that starts at column j0: 16 r columns on (at most kWideBlock).
inline std::int64_t wide_block_end(const ThinPass& ps, std::int64_t j0, std::int64_t n) {
  return std::min(n, j0 + 16 * fp32_roundings(ps));
}

KC_WIDE F16 load16(const float* p) {
  F16 f;
  std::memcpy(&f, p, sizeof f);
  return f;
}
/// The first `count` floats at p (count < 16), zeros after them; nothing past them is read.
KC_WIDE F16 load16_first(const float* p, std::int64_t count) {
  return reinterpret_cast<F16>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1), p));
}
KC_WIDE F16 abs16(F16 x) { return reinterpret_cast<F16>(reinterpret_cast<I16>(x) & 0x7fffffff); }
KC_WIDE V8 widen8(const float* p) {
  const F8 f = load8(p);
  return V8{static_cast<double>(f[0]), static_cast<double>(f[1]), static_cast<double>(f[2]),
            static_cast<double>(f[3]), static_cast<double>(f[4]), static_cast<double>(f[5]),
            static_cast<double>(f[6]), static_cast<double>(f[7])};
}
KC_WIDE double hsum8d(V8 a) { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); }
KC_WIDE float hsum16(F16 a) {
  F8 lo, hi;
  std::memcpy(&lo, &a, sizeof lo);
  std::memcpy(&hi, reinterpret_cast<const char*>(&a) + sizeof lo, sizeof hi);
  return hsum8(lo) + hsum8(hi);
}

/// One 16-column step of wide_tile: the rows' chunks x against the probe chunks at column j.
/// kUnit: the magnitude weights are all ones, so |x| is added instead of
/// multiplied by 1 and added (the same single rounding, the same result; an
/// add instead of an FMA, no weight load).
template <int R, int P, bool kUnit>
KC_WIDE void wide_step(const F16* x, const float* pk, std::int64_t j, F16 (*a)[P > 0 ? P : 1], F16* mg, bool with_mag) {
  KC_UNROLL for (int p = 0; p < P; ++p) {
    F16 y = load16(pk + p * kWideBlock + j);
#if defined(__x86_64__)
    asm("" : "+v"(y));  // one load per probe chunk, not one per row's FMA (dot_tile32)
#endif
    KC_UNROLL for (int r = 0; r < R; ++r) a[r][p] += x[r] * y;
  }
  if (with_mag) {
    if constexpr (kUnit) {
      KC_UNROLL for (int r = 0; r < R; ++r) mg[r] += abs16(x[r]);
    } else {
      const F16 w = load16(pk + P * kWideBlock + j);
      KC_UNROLL for (int r = 0; r < R; ++r) mg[r] += abs16(x[r]) * w;
    }
  }
}

/// acc[r * lda + p] += sum_j rows[r][j] pk[p * kWideBlock + j] over j < len (at
/// most kWideBlock), summed per lane in FP32 and widened once; with with_mag
/// also mag[r] += |rows[r][j]| pk[P * kWideBlock + j] in FP32, carried from
/// block to block (the magnitude weights follow the tile's last probe). With
/// `ahead`, each step also prefetches the same columns of the rows ahead[r].
template <int R, int P, bool kUnit>
KC_WIDE void wide_tile(const float* const* rows, const float* const* ahead, const float* pk, std::int64_t len, V8* acc,
                       int lda, F16* mag, bool with_mag) {
  F16 a[R][P > 0 ? P : 1], mg[R], x[R];
  KC_UNROLL for (int r = 0; r < R; ++r) {
    KC_UNROLL for (int p = 0; p < P; ++p) a[r][p] = F16{};
    mg[r] = mag[r];
  }
  const std::int64_t full = len & ~std::int64_t{15};
  for (std::int64_t j = 0; j < full; j += 16) {
    if (ahead != nullptr)
      KC_UNROLL for (int r = 0; r < R; ++r) __builtin_prefetch(ahead[r] + j, 0, 3);
    KC_UNROLL for (int r = 0; r < R; ++r) x[r] = load16(rows[r] + j);
    wide_step<R, P, kUnit>(x, pk, j, a, mg, with_mag);
  }
  if (full < len) {  // the packed probes are zero past len, the rows are masked
    KC_UNROLL for (int r = 0; r < R; ++r) x[r] = load16_first(rows[r] + full, len - full);
    wide_step<R, P, kUnit>(x, pk, full, a, mg, with_mag);
  }
  KC_UNROLL for (int r = 0; r < R; ++r) {
    KC_UNROLL for (int p = 0; p < P; ++p) {
      float lanes[16];
      std::memcpy(lanes, &a[r][p], sizeof lanes);
      acc[r * lda + p] += widen8(lanes) + widen8(lanes + 8);
    }
    mag[r] = mg[r];
  }
}

/// All nv probes of an R-row tile: groups of kWideProbes, the last one (none to
/// kWideProbes probes) with the magnitude product.
template <int R, bool kUnit>
KC_WIDE void wide_tiles(const float* const* rows, const float* const* ahead, const float* pk, int nv, std::int64_t len,
                        V8* acc, int lda, F16* mag) {
  int p = 0;
  for (; nv - p > kWideProbes; p += kWideProbes, ahead = nullptr)  // the first group prefetches
    wide_tile<R, kWideProbes, kUnit>(rows, ahead, pk + p * kWideBlock, len, acc + p, lda, mag, false);
  const float* q = pk + p * kWideBlock;
  V8* a = acc + p;
  switch (nv - p) {
    case 10: wide_tile<R, 10, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 9: wide_tile<R, 9, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 8: wide_tile<R, 8, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 7: wide_tile<R, 7, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 6: wide_tile<R, 6, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 5: wide_tile<R, 5, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 4: wide_tile<R, 4, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 3: wide_tile<R, 3, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 2: wide_tile<R, 2, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    case 1: wide_tile<R, 1, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
    default: wide_tile<R, 0, kUnit>(rows, ahead, q, len, a, lda, mag, true); break;
  }
}
static_assert(kWideProbes == 10, "wide_tiles' cases");

/// The FP32 probes regrouped for wide_rows, block after block (wide_block_end):
/// nv + 1 rows of kWideBlock floats each (a block of at most 16 r columns), the probes and then the magnitude
/// weights (zeros without wa), zero from the block's end to the next multiple of 16. Kept per calling thread.
/// *unit: whether every magnitude weight is 1 (checked while they are copied).
const float* pack_probes(const ThinPass& ps, bool* unit) {
  thread_local std::vector<float> packed;
  const std::int64_t n = ps.m->cols, stride = (ps.nv + 1) * kWideBlock;
  const std::int64_t width = 16 * fp32_roundings(ps);  // columns per block, at most kWideBlock
  const std::int64_t blocks = (n + width - 1) / width;
  packed.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, blocks * stride)));
  float* pk = packed.data();
  bool ones = ps.wa != nullptr;
  for (std::int64_t j0 = 0; j0 < n; pk += stride) {
    const std::int64_t j1 = wide_block_end(ps, j0, n);
    for (int p = 0; p <= ps.nv; ++p) {
      float* row = pk + p * kWideBlock;
      const float* from = p < ps.nv ? ps.vf + p * ps.ldv : ps.wa;
      if (from != nullptr) std::copy(from + j0, from + j1, row);
      else std::fill(row, row + (j1 - j0), 0.0f);
      // Zeros up to the next 16 columns, what the masked last step reads (the
      // rest of the kWideBlock row is never read: filling it all was ~3% of
      // the check at n = 512, where a block is half of it).
      std::fill(row + (j1 - j0), row + ((j1 - j0 + 15) & ~std::int64_t{15}), 0.0f);
    }
    if (ones)
      for (std::int64_t j = j0; j < j1; ++j) ones = ones && ps.wa[j] == 1.0f;
    j0 = j1;
  }
  *unit = ones;
  return packed.data();
}

/// out[p * ldo + i] for the eight rows i0 + t, t < 8, of probe p: the sums of
/// each row's eight FP64 lanes (acc[t * nv + p]), reduced together in the
/// order of hsum8d (the same sums, bit for bit) and stored as one vector.
KC_WIDE void store_sums8(const V8* acc, int nv, int p, double* out) {
  typedef std::int64_t L8 __attribute__((vector_size(64)));
  constexpr L8 kEven{0, 8, 2, 10, 4, 12, 6, 14}, kOdd{1, 9, 3, 11, 5, 13, 7, 15};
  constexpr L8 kLo{0, 1, 4, 5, 8, 9, 12, 13}, kHi{2, 3, 6, 7, 10, 11, 14, 15};
  V8 t[4];
  for (int q = 0; q < 4; ++q) {
    const V8 a = acc[(2 * q) * nv + p], b = acc[(2 * q + 1) * nv + p];
    // (a0 + a1, b0 + b1, a2 + a3, b2 + b3, ...)
    t[q] = __builtin_shuffle(a, b, kEven) + __builtin_shuffle(a, b, kOdd);
  }
  // t[q]'s pairs of lanes: (a01, b01), (a23, b23), (a45, b45), (a67, b67) for rows a = 2q, b = 2q + 1.
  // Pairs 0 and 2 against 1 and 3 of two such: (r0 0-3, r1 0-3), (r0 4-7, r1 4-7), (r2 0-3, r3 0-3),
  // (r2 4-7, r3 4-7) for four rows; the same again gives (r0, r1), ..., (r6, r7), each
  // (0-3) + (4-7), as hsum8d.
  const V8 u0 = __builtin_shuffle(t[0], t[1], kLo) + __builtin_shuffle(t[0], t[1], kHi);
  const V8 u1 = __builtin_shuffle(t[2], t[3], kLo) + __builtin_shuffle(t[2], t[3], kHi);
  const V8 sums = __builtin_shuffle(u0, u1, kLo) + __builtin_shuffle(u0, u1, kHi);
  std::memcpy(out, &sums, sizeof sums);
}

/// Rows [rb, re) of the dot form on the 16-lane FP32 path: panels of kPanel
/// rows walked block by block (wide_block_end; probes packed by pack_probes).
template <bool kUnit>
__attribute__((target("avx512f,avx2,fma"))) void wide_rows(const ThinPass& ps, std::int64_t rb, std::int64_t re,
                                                           const float* packed) {
  const MatrixRef& m = *ps.m;
  const int nv = ps.nv;
  const std::int64_t n = m.cols, stride = (nv + 1) * kWideBlock;
  V8 acc[kPanel * kMaxPassVectors];
  F16 mag[kPanel];
  for (std::int64_t i0 = rb; i0 < re; i0 += kPanel) {
    const std::int64_t i1 = std::min(re, i0 + kPanel);
    for (std::int64_t t = 0; t < (i1 - i0) * nv; ++t) acc[t] = V8{};
    for (auto& g : mag) g = F16{};
    const float* pk = packed;
    for (std::int64_t j0 = 0; j0 < n; pk += stride) {
      const std::int64_t j1 = wide_block_end(ps, j0, n);
      std::int64_t i = i0;
      for (; i + 2 <= i1; i += 2) {
        const float* rows[2] = {m.data + i * m.ld + j0, m.data + (i + 1) * m.ld + j0};
        const float* ahead[2] = {rows[0] + kAhead * m.ld, rows[1] + kAhead * m.ld};
        wide_tiles<2, kUnit>(rows, i + 1 + kAhead < re ? ahead : nullptr, pk, nv, j1 - j0, acc + (i - i0) * nv, nv,
                             mag + (i - i0));
      }
      if (i < i1) {
        const float* rows[1] = {m.data + i * m.ld + j0};
        wide_tiles<1, kUnit>(rows, nullptr, pk, nv, j1 - j0, acc + (i - i0) * nv, nv, mag + (i - i0));
      }
      j0 = j1;
    }
    // The row sums: eight rows of a probe at a time where the panel has them
    // (one reduction for eight, one store), one row at a time otherwise.
    std::int64_t i = i0;
    for (; i + 8 <= i1; i += 8)
      for (int p = 0; p < nv; ++p) store_sums8(acc + (i - i0) * nv, nv, p, ps.out + p * ps.ldo + i);
    for (; i < i1; ++i)
      for (int p = 0; p < nv; ++p) ps.out[p * ps.ldo + i] = hsum8d(acc[(i - i0) * nv + p]);
    for (i = i0; i < i1; ++i) finish_row(ps, i, nullptr, hsum16(mag[i - i0]));
  }
}

#undef KC_WIDE

// ---- axpy form ------------------------------------------------------------

/// out[p * ldo + c] += sum_r rows[r][c] bt[r * nv + p] for c in [c0, c0 + len4).
template <int R, bool kAbs>
KC_INLINE void axpy_tile(const float* const* rows, std::int64_t c0, std::int64_t len4, const V4* bt, int nv,
                         double* out, std::int64_t ldo) {
  for (std::int64_t c = c0; c < c0 + len4; c += 4) {
    V4 x[R];
    KC_UNROLL for (int r = 0; r < R; ++r) {
      x[r] = widen(rows[r] + c);
      if constexpr (kAbs) x[r] = abs4(x[r]);
    }
    for (int p = 0; p < nv; ++p) {
      double* o = out + p * ldo + c;
      V4 s;
      std::memcpy(&s, o, sizeof s);
      KC_UNROLL for (int r = 0; r < R; ++r) s += x[r] * bt[r * nv + p];
      std::memcpy(o, &s, sizeof s);
    }
  }
}

/// Output columns [cb, ce) of the axpy form.
template <bool kAbs>
KC_INLINE void axpy_cols(const ThinPass& ps, std::int64_t cb, std::int64_t ce) {
  const MatrixRef& m = *ps.m;
  const int nv = ps.nv;
  for (int p = 0; p < nv; ++p) std::fill(ps.out + p * ps.ldo + cb, ps.out + p * ps.ldo + ce, 0.0);
  if (ps.wa != nullptr) std::fill(ps.mag + cb, ps.mag + ce, 0.0f);
  V4 bt[4 * kMaxPassVectors];
  for (std::int64_t s0 = cb; s0 < ce; s0 += kStrip) {
    const std::int64_t s1 = std::min(ce, s0 + kStrip), len = s1 - s0;
    const std::int64_t len4 = len & ~std::int64_t{3}, len8 = len & ~std::int64_t{7};
    for (std::int64_t r0 = 0; r0 < m.rows; r0 += 4) {
      const int nr = static_cast<int>(std::min<std::int64_t>(4, m.rows - r0));
      const float* rows[4];
      for (int r = 0; r < nr; ++r) {
        rows[r] = m.data + (r0 + r) * m.ld;
        for (int p = 0; p < nv; ++p) {
          const double w = ps.v[p * ps.ldv + r0 + r];
          bt[r * nv + p] = V4{w, w, w, w};
        }
      }
      // The strip of the rows two steps ahead: a walk down a column strip
      // touches a new page every row, which the hardware prefetchers miss.
      for (std::int64_t r = r0 + 8; r < std::min(m.rows, r0 + 12); ++r)
        for (std::int64_t c = s0; c < s1; c += 16) __builtin_prefetch(m.data + r * m.ld + c);
      switch (nr) {
        case 4: axpy_tile<4, kAbs>(rows, s0, len4, bt, nv, ps.out, ps.ldo); break;
        case 3: axpy_tile<3, kAbs>(rows, s0, len4, bt, nv, ps.out, ps.ldo); break;
        case 2: axpy_tile<2, kAbs>(rows, s0, len4, bt, nv, ps.out, ps.ldo); break;
        default: axpy_tile<1, kAbs>(rows, s0, len4, bt, nv, ps.out, ps.ldo); break;
      }
      for (int r = 0; r < nr; ++r) {
        for (std::int64_t c = s0 + len4; c < s1; ++c) {
          const double x = kAbs ? std::fabs(static_cast<double>(rows[r][c])) : static_cast<double>(rows[r][c]);
          for (int p = 0; p < nv; ++p) ps.out[p * ps.ldo + c] += x * ps.v[p * ps.ldv + r0 + r];
        }
      }
      if (ps.wa != nullptr) {
        for (std::int64_t c = s0; c < s0 + len8; c += 8) {
          F8 s = load8(ps.mag + c);
          for (int r = 0; r < nr; ++r) s += abs8(load8(rows[r] + c)) * ps.wa[r0 + r];
          std::memcpy(ps.mag + c, &s, sizeof s);
        }
        for (std::int64_t c = s0 + len8; c < s1; ++c)
          for (int r = 0; r < nr; ++r) ps.mag[c] += std::fabs(rows[r][c]) * ps.wa[r0 + r];
      }
    }
  }
}

// ---- clones and dispatch --------------------------------------------------

using DotFn = void (*)(const ThinPass&, std::int64_t, std::int64_t, V4*);
using AxpyFn = void (*)(const ThinPass&, std::int64_t, std::int64_t);

#define KC_THIN_CLONES(attr, suffix)                                                                   \
  attr void dot_##suffix(const ThinPass& ps, std::int64_t rb, std::int64_t re, V4* acc) {              \
    if (ps.abs_rows) dot_rows<true, false>(ps, rb, re, acc);                                           \
    else dot_rows<false, false>(ps, rb, re, acc);                                                      \
  }                                                                                                    \
  attr void axpy_##suffix(const ThinPass& ps, std::int64_t cb, std::int64_t ce) {                      \
    if (ps.abs_rows) axpy_cols<true>(ps, cb, ce);                                                      \
    else axpy_cols<false>(ps, cb, ce);                                                                 \
  }
KC_THIN_CLONES(__attribute__((target("avx2,fma"))), avx2)
KC_THIN_CLONES(, base)
#undef KC_THIN_CLONES

// The FP32 block path exists only as an FMA build: one rounding per multiply-add.
__attribute__((target("avx2,fma"))) void dot32_avx2(const ThinPass& ps, std::int64_t rb, std::int64_t re, V4* acc) {
  dot_rows<false, true>(ps, rb, re, acc);
}

// Picked at run time from the CPU's feature bits (arch= clones would key on
// the CPU model name, which misses AMD parts with the same instructions).
Fp32Kernel widest_fp32_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return Fp32Kernel::kNone;
  return __builtin_cpu_supports("avx512f") ? Fp32Kernel::kAvx512 : Fp32Kernel::kAvx2;
#else
  return Fp32Kernel::kNone;
#endif
}
const Fp32Kernel kWidest = widest_fp32_kernel();
const bool kAvx2 = kWidest != Fp32Kernel::kNone;
std::atomic<Fp32Kernel> g_fp32_cap{Fp32Kernel::kAvx512};

// ---- worker threads ---------------------------------------------------------
//
// A check makes three passes (over C, B and A) in a row, each split over the
// cores. Starting and joining a std::thread per piece cost tens of
// microseconds per pass, which at n = 256-512 was as much as the pass itself.
// The pieces now go to workers kept for the life of the process: a worker
// that has finished a piece polls for the next job for a short while (the
// next pass follows within microseconds) and then sleeps on a futex. The
// pieces are claimed from a shared counter, the caller included, so a worker
// that is not scheduled (other processes on the cores) never holds up a pass:
// the caller takes its piece. One job at a time: a second caller running at
// the same time (kc's parallel cases) does its pass in its own thread.
// A forked child has none of its parent's threads: the pool is keyed by the
// process id and rebuilt in a child that uses it.

/// One parallel job: body(piece) for piece in [0, pieces).
struct Job {
  void (*run)(const void* ctx, int piece) = nullptr;
  const void* ctx = nullptr;
  int pieces = 0;
};

class Pool {
 public:
  explicit Pool(int workers) {
    for (int t = 0; t < workers; ++t) {
      try {
        std::thread(&Pool::work, this).detach();
      } catch (const std::system_error&) {
        break;  // fewer workers: the caller claims the pieces nobody else does
      }
    }
  }

  /// Runs the job's pieces on the workers and the calling thread; false (and
  /// nothing run) when another thread's job is in progress.
  bool run(const Job& job) {
    std::unique_lock lock(busy_, std::try_to_lock);
    if (!lock.owns_lock() || job.pieces >= (1 << kIndexBits)) return false;
    job_ = job;
    left_.store(job.pieces, std::memory_order_relaxed);
    const std::uint32_t gen = (generation_.load(std::memory_order_relaxed) + 1) & kGenMask;
    pieces_.store(pack(gen, job.pieces, 0), std::memory_order_release);
    generation_.store(gen, std::memory_order_release);
    generation_.notify_all();
    claim(gen);
    // Wait for pieces claimed by workers: spin first (they are short), then sleep.
    for (int spin = 0;; ++spin) {
      const int left = left_.load(std::memory_order_acquire);
      if (left == 0) break;
      if (spin < kSpins) pause();
      else left_.wait(left, std::memory_order_acquire);
    }
    return true;
  }

 private:
  // Polling for ~10-40 microseconds (a pause is 10-140 cycles, by CPU) before
  // sleeping: the next pass of a check starts within a few microseconds, and a
  // futex wake costs more than that; longer would take the core from whatever
  // runs after the check (the next GEMM).
  static constexpr int kSpins = 500;
  // pieces_ holds a job's generation, its piece count and the next piece to
  // claim in one word, so that a worker can only claim a piece of the job it
  // woke for, and learns the count without reading job_ (which the next job
  // may be writing once every piece of this one is done).
  static constexpr int kIndexBits = 20;
  static constexpr std::uint32_t kGenMask = (1u << 24) - 1;
  static std::uint64_t pack(std::uint32_t gen, std::uint64_t pieces, std::uint64_t next) {
    return std::uint64_t{gen} << (2 * kIndexBits) | pieces << kIndexBits | next;
  }

  static void pause() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }

  /// Claims and runs pieces of generation gen's job until none is left.
  void claim(std::uint32_t gen) {
    constexpr std::uint64_t mask = (std::uint64_t{1} << kIndexBits) - 1;
    std::uint64_t v = pieces_.load(std::memory_order_acquire);
    for (;;) {
      const std::uint64_t next = v & mask, pieces = v >> kIndexBits & mask;
      if ((v >> (2 * kIndexBits)) != gen || next >= pieces) return;
      if (!pieces_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      job_.run(job_.ctx, static_cast<int>(next));  // job_ stays put until this piece is counted below
      if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) left_.notify_all();
      v = pieces_.load(std::memory_order_acquire);
    }
  }

  [[noreturn]] void work() {
    std::uint32_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      std::uint32_t now = generation_.load(std::memory_order_acquire);
      for (int spin = 0; now == seen; ++spin) {
        if (spin < kSpins) pause();
        else generation_.wait(seen, std::memory_order_acquire);
        now = generation_.load(std::memory_order_acquire);
      }
      seen = now;
      claim(now);
    }
  }

  std::mutex busy_;
  Job job_;  // written before pieces_ publishes its generation; read by whoever claims a piece of it
  std::atomic<std::uint64_t> pieces_{0};
  std::atomic<int> left_{0};
  std::atomic<std::uint32_t> generation_{0};
};

/// The process's pool (hardware threads - 1 workers), built at first use and
/// again in a forked child; never destroyed (its workers may be waiting at
/// exit). No lock: a fork while another thread holds one would leave it held
/// in the child. Two threads that build a pool at once each get one (one is
/// then never used again); a parent's pool seen in a child has no workers, so
/// its caller runs every piece itself.
Pool* pool() {
  static std::atomic<Pool*> current{nullptr};
  static std::atomic<pid_t> owner{0};
  const pid_t pid = getpid();
  Pool* p = current.load(std::memory_order_acquire);
  if (p != nullptr && owner.load(std::memory_order_acquire) == pid) return p;
  p = new Pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) - 1);
  current.store(p, std::memory_order_release);
  owner.store(pid, std::memory_order_release);
  return p;
}

/// Pieces per thread of a pass. The pieces are claimed one at a time, so with
/// several per thread a worker that starts late (asleep, or its core taken by
/// another process) takes fewer of them, and the caller the rest, instead of
/// the caller waiting for the late worker's whole half (docs/verify.md, "Cost").
constexpr int kPiecesPerThread = 4;

/// Runs body(begin, end) over [0, n) in contiguous pieces (kPiecesPerThread per
/// thread, each a multiple of `align`), on `threads` threads.
template <typename F>
void parallel_for(std::int64_t n, int threads, std::int64_t align, F body) {
  const std::int64_t parts = static_cast<std::int64_t>(threads) * kPiecesPerThread;
  const std::int64_t step = ((n + parts - 1) / parts + align - 1) / align * align;
  if (threads <= 1 || step >= n) {
    body(std::int64_t{0}, n);
    return;
  }
  struct Ctx {
    F* body;
    std::int64_t n, step;
  } ctx{&body, n, step};
  Job job;
  job.ctx = &ctx;
  job.pieces = static_cast<int>((n + step - 1) / step);
  job.run = [](const void* c, int piece) {
    const Ctx& x = *static_cast<const Ctx*>(c);
    const std::int64_t b = piece * x.step;
    (*x.body)(b, std::min(x.n, b + x.step));
  };
  if (pool()->run(job)) return;
  for (int piece = 0; piece < job.pieces; ++piece) job.run(job.ctx, piece);  // the pool is busy
}

}  // namespace

Fp32Kernel fp32_kernel() { return std::min(kWidest, g_fp32_cap.load(std::memory_order_relaxed)); }

Fp32Kernel cap_fp32_kernel(Fp32Kernel cap) { return g_fp32_cap.exchange(cap); }

bool fp32_blocks_available() { return fp32_kernel() != Fp32Kernel::kNone; }

bool thin_pass(const ThinPass& ps) {
  const MatrixRef& m = *ps.m;
  // Below ~64K elements a pass is a few tens of microseconds on one thread, the
  // order of a sleeping worker's wake-up: one thread does it.
  const int threads = m.rows * m.cols >= (std::int64_t{1} << 16) ? std::max(1, ps.threads) : 1;
  if (!ps.transposed) {
    const Fp32Kernel kernel = ps.vf != nullptr && !ps.abs_rows ? fp32_kernel() : Fp32Kernel::kNone;
    if (kernel == Fp32Kernel::kAvx512) {
      bool unit = false;
      const float* packed = pack_probes(ps, &unit);
      parallel_for(m.rows, threads, kPanel, [&](std::int64_t b, std::int64_t e) {
        if (unit) wide_rows<true>(ps, b, e, packed);
        else wide_rows<false>(ps, b, e, packed);
      });
      return true;
    }
    const bool f32 = kernel == Fp32Kernel::kAvx2;
    const DotFn dot = f32 ? dot32_avx2 : kAvx2 ? dot_avx2 : dot_base;
    parallel_for(m.rows, threads, kPanel, [&](std::int64_t b, std::int64_t e) {
      V4 acc[kPanel * kMaxPassVectors];  // on the stack: no allocation per piece
      dot(ps, b, e, acc);
    });
    return f32;
  }
  const AxpyFn axpy = kAvx2 ? axpy_avx2 : axpy_base;
  parallel_for(m.cols, threads, 8, [&](std::int64_t b, std::int64_t e) { axpy(ps, b, e); });
  return false;
}

}  // namespace kc::verify::detail
