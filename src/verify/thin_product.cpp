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
//     group with the magnitude.
//   * op(M) = M^T ("axpy form"): out_c += row_r[c] v_p[r]. Four stored rows are
//     streamed together over a strip of kStrip columns whose FP64 outputs
//     (nv x kStrip doubles) stay in L1; each output chunk is loaded and
//     stored once per four rows.
// The FP32 magnitude product |op(M)| wa is accumulated in FP32 from the same
// loaded row chunks, while they are in L1 (on the FP32 block path above five
// probes, in the same registers).
#include "verify/thin_product.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

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

constexpr std::int64_t kPanel = 16;     // rows per panel (dot form)
constexpr std::int64_t kColBlock = 256; // columns per block (dot form): 10 probes = 20 KiB of L1
constexpr std::int64_t kStrip = 256;    // output columns per strip (axpy form)

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

// ---- dot form -------------------------------------------------------------

/// acc[r * lda + p] += sum_j rows[r][j] vs[p][j], j < len4 (a multiple of 4):
/// an R x P register tile.
template <int R, int P, bool kAbs>
KC_INLINE void dot_tile(const float* const* rows, const double* const* vs, std::int64_t len4, V4* acc,
                        int lda) {
  V4 a[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) a[r][p] = acc[r * lda + p];
  for (std::int64_t j = 0; j < len4; j += 4) {
    V4 x[R];
    for (int r = 0; r < R; ++r) {
      x[r] = widen(rows[r] + j);
      if constexpr (kAbs) x[r] = abs4(x[r]);
    }
    for (int p = 0; p < P; ++p) {
      V4 y;
      std::memcpy(&y, vs[p] + j, sizeof y);
      for (int r = 0; r < R; ++r) a[r][p] += x[r] * y;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r * lda + p] = a[r][p];
}

/// The FP32 block form of dot_tile: acc[r * lda + p] += sum_j rows[r][j] vs[p][j]
/// over j < len8 (a multiple of 8, at most kFp32Block), summed per lane in FP32
/// and widened once at the end; with kMag also mag[r] += |rows[r][j]| wa[j],
/// an FP32 accumulator per row carried from block to block.
template <int R, int P, bool kMag>
KC_INLINE void dot_tile32(const float* const* rows, const float* const* vs, const float* wa, std::int64_t len8,
                          V4* acc, int lda, F8* mag) {
  F8 a[R][P], mg[R];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) a[r][p] = F8{0, 0, 0, 0, 0, 0, 0, 0};
    if constexpr (kMag) mg[r] = mag[r];
  }
  for (std::int64_t j = 0; j < len8; j += 8) {
    F8 x[R];
    for (int r = 0; r < R; ++r) x[r] = load8(rows[r] + j);
    for (int p = 0; p < P; ++p) {
      F8 y = load8(vs[p] + j);
#if defined(__x86_64__)
      // Keep y in a register: GCC otherwise folds the load into every row's
      // FMA, one load per FMA instead of one per probe chunk (the k = 10 pass
      // is bound by this loop's issue rate: ~10% of it, measured).
      asm("" : "+x"(y));
#endif
      for (int r = 0; r < R; ++r) a[r][p] += x[r] * y;
    }
    if constexpr (kMag) {
      const F8 w = load8(wa + j);
      for (int r = 0; r < R; ++r) mg[r] += abs8(x[r]) * w;
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) {
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
KC_INLINE void last_group32(const float* const* rows, const float* const* vs, int left, const float* wa,
                            std::int64_t len8, V4* acc, int lda, F8* mag) {
  switch (left) {
    case 4: dot_tile32<R, 4, kMag>(rows, vs, wa, len8, acc, lda, mag); break;
    case 3: dot_tile32<R, 3, kMag>(rows, vs, wa, len8, acc, lda, mag); break;
    case 2: dot_tile32<R, 2, kMag>(rows, vs, wa, len8, acc, lda, mag); break;
    case 1: dot_tile32<R, 1, kMag>(rows, vs, wa, len8, acc, lda, mag); break;
    default:
      if constexpr (kMag) dot_tile32<R, 0, true>(rows, vs, wa, len8, acc, lda, mag);
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
KC_INLINE void dot_tiles32(const float* const* rows, const float* const* vs, int nv, const float* wa,
                           std::int64_t len8, V4* acc, int lda, F8* mag) {
  int p = 0;
  if (wa == nullptr) {
    for (; p + 5 <= nv; p += 5) dot_tile32<R, 5, false>(rows, vs + p, nullptr, len8, acc + p, lda, mag);
    last_group32<R, false>(rows, vs + p, nv - p, nullptr, len8, acc + p, lda, mag);
    return;
  }
  for (; nv - p > 4; p += 4) dot_tile32<R, 4, false>(rows, vs + p, nullptr, len8, acc + p, lda, mag);
  last_group32<R, true>(rows, vs + p, nv - p, wa, len8, acc + p, lda, mag);
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
  // The FP32 path starts its blocks at the first 32-byte-aligned column when
  // every row starts at the same alignment, so that no 8-float load splits a
  // cache line; the columns before it go through the scalar FP64 path, like a
  // block's tail.
  std::int64_t head = 0;
  if (kF32 && m.ld % 8 == 0) {
    const auto addr = reinterpret_cast<std::uintptr_t>(m.data);
    if (addr % sizeof(float) == 0) head = std::min(n, static_cast<std::int64_t>((32 - addr % 32) % 32 / 4));
  }
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
      const float* row = m.data + i * m.ld;
      for (std::int64_t j = 0; j < head; ++j) {
        for (int p = 0; p < nv; ++p) tail[i - i0][p] += static_cast<double>(row[j]) * ps.v[p * ps.ldv + j];
        if (ps.wa != nullptr) mtail[i - i0] += std::fabs(row[j]) * ps.wa[j];
      }
    }
    for (std::int64_t j0 = head; j0 < n; j0 += kColBlock) {
      const std::int64_t len = std::min(kColBlock, n - j0);
      // The columns the vector tiles cover; the scalar tail below does the rest.
      const std::int64_t len4 = kF32 ? (len & ~std::int64_t{7}) : (len & ~std::int64_t{3});
      for (int p = 0; p < nv; ++p) vp[p] = ps.v + p * ps.ldv + j0;
      std::int64_t i = i0;
      if constexpr (kF32) {
        static_assert(kColBlock % kFp32Block == 0);
        for (std::int64_t b0 = 0; b0 < len4; b0 += kFp32Block) {
          const std::int64_t blen = std::min(kFp32Block, len4 - b0);
          for (int p = 0; p < nv; ++p) vq[p] = ps.vf + p * ps.ldv + j0 + b0;
          const float* wq = ps.wa != nullptr && nv > kFoldAbove ? ps.wa + j0 + b0 : nullptr;
          for (i = i0; i + 2 <= i1; i += 2) {
            const float* rows[2] = {m.data + i * m.ld + j0 + b0, m.data + (i + 1) * m.ld + j0 + b0};
            dot_tiles32<2>(rows, vq, nv, wq, blen, acc + (i - i0) * nv, nv, macc + (i - i0));
          }
          if (i < i1) {
            const float* rows[1] = {m.data + i * m.ld + j0 + b0};
            dot_tiles32<1>(rows, vq, nv, wq, blen, acc + (i - i0) * nv, nv, macc + (i - i0));
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
        const float* row = m.data + i * m.ld + j0;
        for (std::int64_t j = len4; j < len; ++j) {
          const double x = kAbs ? std::fabs(static_cast<double>(row[j])) : static_cast<double>(row[j]);
          for (int p = 0; p < nv; ++p) tail[i - i0][p] += x * vp[p][j];
        }
        if (ps.wa != nullptr) {
          const std::int64_t len8 = len & ~std::int64_t{7};
          if (!kF32 || nv <= kFoldAbove) {  // else the FP32 tiles took it with the probes
            F8 s = macc[i - i0];
            for (std::int64_t j = 0; j < len8; j += 8) s += abs8(load8(row + j)) * load8(ps.wa + j0 + j);
            macc[i - i0] = s;
          }
          for (std::int64_t j = len8; j < len; ++j) mtail[i - i0] += std::fabs(row[j]) * ps.wa[j0 + j];
        }
      }
    }
    for (std::int64_t i = i0; i < i1; ++i) {
      for (int p = 0; p < nv; ++p) ps.out[p * ps.ldo + i] = hsum(acc[(i - i0) * nv + p]) + tail[i - i0][p];
      if (ps.wa != nullptr) ps.mag[i] = hsum8(macc[i - i0]) + mtail[i - i0];
      for (std::int64_t t = 0; t < ps.gather_count; ++t)
        ps.gather_out[i * ps.gather_count + t] = static_cast<double>(m.data[i * m.ld + ps.gather_cols[t]]);
    }
  }
}

// ---- axpy form ------------------------------------------------------------

/// out[p * ldo + c] += sum_r rows[r][c] bt[r * nv + p] for c in [c0, c0 + len4).
template <int R, bool kAbs>
KC_INLINE void axpy_tile(const float* const* rows, std::int64_t c0, std::int64_t len4, const V4* bt, int nv,
                         double* out, std::int64_t ldo) {
  for (std::int64_t c = c0; c < c0 + len4; c += 4) {
    V4 x[R];
    for (int r = 0; r < R; ++r) {
      x[r] = widen(rows[r] + c);
      if constexpr (kAbs) x[r] = abs4(x[r]);
    }
    for (int p = 0; p < nv; ++p) {
      double* o = out + p * ldo + c;
      V4 s;
      std::memcpy(&s, o, sizeof s);
      for (int r = 0; r < R; ++r) s += x[r] * bt[r * nv + p];
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
bool has_avx2_fma() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
const bool kAvx2 = has_avx2_fma();

/// Runs body(begin, end) over [0, n) in `threads` contiguous pieces, each a multiple of `align`.
template <typename F>
void parallel_for(std::int64_t n, int threads, std::int64_t align, F body) {
  const std::int64_t step = ((n + threads - 1) / threads + align - 1) / align * align;
  if (threads <= 1 || step >= n) {
    body(std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t b = step; b < n; b += step) {
    const std::int64_t e = std::min(n, b + step);
    pool.emplace_back([&body, b, e] { body(b, e); });
  }
  body(std::int64_t{0}, step);
  for (auto& th : pool) th.join();
}

}  // namespace

bool fp32_blocks_available() { return kAvx2; }

bool thin_pass(const ThinPass& ps) {
  const MatrixRef& m = *ps.m;
  // A thread costs tens of microseconds to start: below ~64K elements one is faster.
  const int threads = m.rows * m.cols >= (std::int64_t{1} << 16) ? std::max(1, ps.threads) : 1;
  if (!ps.transposed) {
    const bool f32 = kAvx2 && ps.vf != nullptr && !ps.abs_rows;
    const DotFn dot = f32 ? dot32_avx2 : kAvx2 ? dot_avx2 : dot_base;
    parallel_for(m.rows, threads, kPanel, [&](std::int64_t b, std::int64_t e) {
      // Aligned by hand: std::allocator does not honour the vector type's 32-byte alignment.
      std::vector<double> store(static_cast<std::size_t>(4 * kPanel * std::max(1, ps.nv) + 4));
      auto addr = reinterpret_cast<std::uintptr_t>(store.data());
      dot(ps, b, e, reinterpret_cast<V4*>((addr + 31) & ~std::uintptr_t{31}));
    });
    return f32;
  }
  const AxpyFn axpy = kAvx2 ? axpy_avx2 : axpy_base;
  parallel_for(m.cols, threads, 8, [&](std::int64_t b, std::int64_t e) { axpy(ps, b, e); });
  return false;
}

}  // namespace kc::verify::detail
