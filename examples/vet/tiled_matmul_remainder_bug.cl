// The same 16x16 tiled SGEMM as tiled_matmul.cl with the bug generated tiled
// kernels often have: the K loop runs over whole tiles only (K / TS), so the
// last K % TS products are dropped. On the usual benchmark shapes (multiples
// of 16) it is exact, and a quick allclose test on 64x64 inputs passes;
// `kc vet` finds it (TILE_REMAINDER) on held-out shapes.
//
// kc-declare kc_matmul: accumulator = FP32, determinism = BITWISE, nan = IEEE_PROPAGATE

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
  for (int t = 0; t < (K / TS) * TS; t += TS) {  // BUG: drops the K remainder
    As[tr][tc] = row < M ? A[row * lda + t + tc] : 0.0f;
    Bs[tr][tc] = col < N ? B[(t + tr) * ldb + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TS; ++k) acc = fma(As[tr][k], Bs[k][tc], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) {
    const float ab = alpha == 0.0f ? 0.0f : alpha * acc;
    C[row * ldc + col] = beta == 0.0f ? ab : ab + beta * C[row * ldc + col];
  }
}
