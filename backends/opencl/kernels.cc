#include "kernels.h"

namespace kc::backends::opencl {

const std::string& matmul_source() {
  static const std::string s = R"CLC(
#ifndef TS
#define TS 16
#endif
#ifndef WPT
#define WPT 1
#endif
#define RTS (TS / WPT)

// Row-major C = alpha op(A) op(B) + beta C with the reference-BLAS rules:
// alpha == 0 reads neither A nor B, beta == 0 never reads C. The tile loop
// pads the K remainder (and rows/columns past M, N) with zeros, so every
// shape is handled; each output is one FP32 accumulator updated with fma()
// in increasing k order (a fixed order: bitwise reproducible).
__kernel __attribute__((reqd_work_group_size(TS, RTS, 1)))
void kc_matmul_tiled(int M, int N, int K, int trans_a, int trans_b, float alpha,
                     __global const float* A, int lda, __global const float* B, int ldb,
                     float beta, __global float* C, int ldc) {
  const int tc = get_local_id(0);
  const int tr = get_local_id(1);
  const int col = get_group_id(0) * TS + tc;
  const int row_base = get_group_id(1) * TS;
  __local float As[TS][TS];
  __local float Bs[TS][TS];
  float acc[WPT];
  for (int w = 0; w < WPT; ++w) acc[w] = 0.0f;
  if (alpha != 0.0f) {
    for (int t = 0; t < K; t += TS) {
      for (int w = 0; w < WPT; ++w) {
        const int r = tr + w * RTS;
        const int gi = row_base + r, gk = t + tc;
        As[r][tc] = (gi < M && gk < K) ? (trans_a ? A[gk * lda + gi] : A[gi * lda + gk]) : 0.0f;
        const int bk = t + r;
        Bs[r][tc] = (bk < K && col < N) ? (trans_b ? B[col * ldb + bk] : B[bk * ldb + col]) : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int kk = 0; kk < TS; ++kk)
        for (int w = 0; w < WPT; ++w) acc[w] = fma(As[tr + w * RTS][kk], Bs[kk][tc], acc[w]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (int w = 0; w < WPT; ++w) {
    const int row = row_base + tr + w * RTS;
    if (row < M && col < N) {
      const float ab = alpha * acc[w];
      C[row * ldc + col] = beta == 0.0f ? ab : ab + beta * C[row * ldc + col];
    }
  }
}
)CLC";
  return s;
}

const std::string& common_source() {
  static const std::string s = R"CLC(
#define SUM_LS 256
#define SUM_GROUPS 64
#define SM_LS 64

// Tree reduction of one value per work-item in local memory; returns the
// group's sum in every work-item. The pairing is fixed by the local id.
inline float group_tree_sum(float v, __local float* s) {
  const int lid = get_local_id(0);
  s[lid] = v;
  for (int stride = SUM_LS / 2; stride > 0; stride >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < stride) s[lid] += s[lid + stride];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Fixed grid: SUM_GROUPS groups of SUM_LS work-items, item g sums x[g], x[g + G],
// ... in order, then a tree per group; kc_sum_final adds the partials with one
// more tree. The order depends on n only: bitwise reproducible.
__kernel __attribute__((reqd_work_group_size(SUM_LS, 1, 1)))
void kc_sum_partials(int n, __global const float* x, int incx, __global float* partials) {
  __local float s[SUM_LS];
  float acc = 0.0f;
  for (int i = get_global_id(0); i < n; i += SUM_GROUPS * SUM_LS) acc += x[(long)i * incx];
  const float g = group_tree_sum(acc, s);
  if (get_local_id(0) == 0) partials[get_group_id(0)] = g;
}

__kernel __attribute__((reqd_work_group_size(SUM_LS, 1, 1)))
void kc_sum_final(int count, __global const float* partials, __global float* out) {
  __local float s[SUM_LS];
  float acc = 0.0f;
  for (int i = get_local_id(0); i < count; i += SUM_LS) acc += partials[i];
  const float g = group_tree_sum(acc, s);
  if (get_local_id(0) == 0) out[0] = g;
}

// Float atomic add via 32-bit compare-exchange (OpenCL 1.2 has no float
// atomics: §6.12.11 atomic_cmpxchg on int/uint).
inline void atomic_add_float(volatile __global float* addr, float v) {
  union { unsigned int u; float f; } old_v, new_v;
  do {
    old_v.f = *addr;
    new_v.f = old_v.f + v;
  } while (atomic_cmpxchg((volatile __global unsigned int*)addr, old_v.u, new_v.u) != old_v.u);
}

// One SUM_LS-item group per SUM_LS elements: a tree per group, then every
// group adds its sum into out with atomic_add_float. The order in which groups
// reach the atomic depends on scheduling, and FP32 addition is not
// associative, so the rounding of the result can change from run to run.
__kernel __attribute__((reqd_work_group_size(SUM_LS, 1, 1)))
void kc_sum_atomic(int n, __global const float* x, int incx, __global float* out) {
  __local float s[SUM_LS];
  const int i = get_global_id(0);
  const float g = group_tree_sum(i < n ? x[(long)i * incx] : 0.0f, s);
  if (get_local_id(0) == 0) atomic_add_float(out, g);
}

// One work-group per row: max, then sum of exp(x - max) (both trees in local
// memory), then y = exp(x - max) / sum, or x - max - log(sum) for log_softmax.
__kernel __attribute__((reqd_work_group_size(SM_LS, 1, 1)))
void kc_softmax_rows(int rows, int cols, __global const float* x, int ldx,
                     __global float* y, int ldy, int log_out) {
  __local float s[SM_LS];
  const int row = get_group_id(0);
  const int lid = get_local_id(0);
  __global const float* xr = x + (long)row * ldx;
  __global float* yr = y + (long)row * ldy;
  float m = -INFINITY;
  for (int c = lid; c < cols; c += SM_LS) m = fmax(m, xr[c]);
  // fmax drops NaN: carry NaN explicitly so a NaN row stays NaN.
  for (int c = lid; c < cols; c += SM_LS) if (isnan(xr[c])) m = xr[c];
  s[lid] = m;
  for (int stride = SM_LS / 2; stride > 0; stride >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < stride) {
      const float a = s[lid], b = s[lid + stride];
      s[lid] = (isnan(a) || isnan(b)) ? a + b : fmax(a, b);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float mx = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float acc = 0.0f;
  for (int c = lid; c < cols; c += SM_LS) acc += exp(xr[c] - mx);
  s[lid] = acc;
  for (int stride = SM_LS / 2; stride > 0; stride >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < stride) s[lid] += s[lid + stride];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float sum = s[0];
  for (int c = lid; c < cols; c += SM_LS) {
    const float d = xr[c] - mx;
    yr[c] = log_out ? d - log(sum) : exp(d) / sum;
  }
}

// Row gather with a device-side range check: an out-of-range index writes
// nothing and records the smallest offending position in *bad (atomic_min),
// which the host turns into an error (OOB policy RAISE).
__kernel void kc_gather(int n, int dim, long rows, __global const float* table, int ldt,
                        __global const long* index, int inc, __global float* out, int ldo,
                        volatile __global int* bad) {
  const int d = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= n || d >= dim) return;
  const long r = index[(long)i * inc];
  if (r < 0 || r >= rows) {
    atomic_min(bad, i);
    return;
  }
  out[(long)i * ldo + d] = table[r * ldt + d];
}

__kernel void kc_relu(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = (x[i] > 0.0f || isnan(x[i])) ? x[i] : 0.0f;
}
__kernel void kc_exp(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = exp(x[i]);
}
__kernel void kc_log(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = log(x[i]);
}
__kernel void kc_tanh(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = tanh(x[i]);
}
__kernel void kc_erf(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = erf(x[i]);
}
// gelu(-inf) = -inf * 0 would be NaN; the limit is 0 (kc's C-EXC-01 caught
// the first version of this kernel returning NaN there).
__kernel void kc_gelu_erf(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const float v = x[i];
  y[i] = isinf(v) ? (v > 0.0f ? v : -0.0f) : 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}
)CLC";
  return s;
}

const std::string& overflow_source() {
  static const std::string s = R"CLC(
__kernel void kc_overflowing_fill(int n_total, __global float* y) {
  const int i = get_global_id(0);
  if (i < n_total) y[i] = 1.0f;
}
)CLC";
  return s;
}

}  // namespace kc::backends::opencl
