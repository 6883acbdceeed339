// A 16x16 tiled SGEMM for `kc vet` (docs/backends/opencl.md, "Vetting a .cl
// file"): kernel kc_matmul, row-major C = alpha A B + beta C. The last tile in
// each dimension is clipped: loads past M, N or K read zeros, stores past M or
// N are skipped. Accumulates each output in one float, in k order.
//
// The declaration comments below state what each kernel promises; kc holds it to them.
// kc-declare kc_matmul: accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE
// kc-declare kc_relu: nan = IEEE_PROPAGATE

#define TS 16

__kernel __attribute__((reqd_work_group_size(TS, TS, 1)))
void kc_matmul(int M, int N, int K, float alpha,
               __global const float* A, int lda, __global const float* B, int ldb,
               float beta, __global float* C, int ldc) {
  const int tc = get_local_id(0), tr = get_local_id(1);
  const int col = get_group_id(0) * TS + tc;
  const int row = get_group_id(1) * TS + tr;
  __local float As[TS][TS], Bs[TS][TS];
  float acc = 0.0f;
  for (int t = 0; t < K; t += TS) {
    As[tr][tc] = (row < M && t + tc < K) ? A[row * lda + t + tc] : 0.0f;
    Bs[tr][tc] = (t + tr < K && col < N) ? B[(t + tr) * ldb + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; ++k) acc = fma(As[tr][k], Bs[k][tc], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) {
    const float ab = alpha == 0.0f ? 0.0f : alpha * acc;
    C[row * ldc + col] = beta == 0.0f ? ab : ab + beta * C[row * ldc + col];
  }
}

// ReLU that keeps NaN (x > 0 is false for NaN, so test it explicitly).
__kernel void kc_relu(int n, __global const float* x, __global float* y) {
  const int i = get_global_id(0);
  if (i < n) y[i] = (x[i] > 0.0f || isnan(x[i])) ? x[i] : 0.0f;
}
