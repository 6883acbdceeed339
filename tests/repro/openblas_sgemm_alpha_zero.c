/* OpenBLAS 0.3.21, SkylakeX kernels: sgemm with alpha = 0 lets a NaN in A
 * reach C (KC-GEMM-03 x openblas.sgemm_core_skylakex).
 *
 * The BLAS interface's rule: with alpha = 0, reference sgemm.f returns
 * C := beta*C without referencing A or B ("And if alpha.eq.zero." quick
 * return), and its documentation says "If ALPHA is zero the values in A and B
 * do not affect the result" (argument ALPHA, Reference-LAPACK PR #1098).
 *
 * Run with OPENBLAS_CORETYPE=SKYLAKEX (a DYNAMIC_ARCH build; the CPU needs
 * AVX-512). Calls the Fortran interface sgemm_ as kc does, M = N = K = 64,
 * A all 1 except A(1,1) = NaN, B = 1, C = 2, alpha = 0, beta = 0.5: every
 * element of C must be 1. Prints the core and what came back; exits 0 when
 * a NaN reaches C (the behaviour reproduces), 1 when C = beta*C, 2 when the
 * SkylakeX kernels are not the ones running.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc, size_t, size_t);
char* openblas_get_corename(void);

int main(void) {
  enum { kN = 64 };
  static float a[kN * kN], b[kN * kN], c[kN * kN];
  for (int i = 0; i < kN * kN; ++i) a[i] = b[i] = 1.0f, c[i] = 2.0f;
  a[0] = NAN;
  const int n = kN;
  const float alpha = 0.0f, beta = 0.5f;
  const char* core = openblas_get_corename();
  /* OpenBLAS loads a forced core type without checking the CPU: on one
   * without AVX-512 the SkylakeX sgemm would die of SIGILL. */
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl")) {
    printf("core %s: this CPU lacks AVX-512 (F/BW/DQ/VL), which the SkylakeX kernels need\n", core);
    return 2;
  }
  sgemm_("N", "N", &n, &n, &n, &alpha, a, &n, b, &n, &beta, c, &n, 1, 1);
  int nans = 0, ones = 0;
  for (int i = 0; i < kN * kN; ++i) nans += isnan(c[i]), ones += c[i] == 1.0f;
  printf("core %s: alpha = 0, beta = 0.5, NaN at A(1,1): C(1,1) = %g, %d NaN and %d exact beta*C of %d outputs\n",
         core, c[0], nans, ones, kN * kN);
  if (strcasecmp(core, "skylakex") != 0 && strcasecmp(core, "cooperlake") != 0) {
    printf("not the SkylakeX kernels (set OPENBLAS_CORETYPE=SKYLAKEX on an AVX-512 CPU)\n");
    return 2;
  }
  return nans > 0 ? 0 : 1;
}
