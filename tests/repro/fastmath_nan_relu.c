/* -Ofast (-ffast-math, hence -ffinite-math-only) breaks the NaN promise of
 * kc's reference kernels (C-EXC-01 x compilers.gcc_Ofast.relu / gelu_erf,
 * compilers.clang_Ofast.*, compilers.gcc_O2_fastmath_v3.gelu_erf:
 * NAN_SWALLOWED).
 *
 * The source declares nan = IEEE_PROPAGATE: `x < 0 ? 0 : x` passes a NaN
 * through (NaN < 0 is false) and 0.5 x (1 + erf(x / sqrt 2)) of a NaN is
 * NaN. The GCC manual (Optimize Options, -ffinite-math-only: "Allow
 * optimizations for floating-point arithmetic that assume that arguments and
 * results are not NaNs or +-Infs"; Clang's users manual says the same of
 * -ffinite-math-only) allows the compiler to drop that: relu becomes maxps,
 * which returns its second operand (0) for a NaN.
 *
 * fastmath_kernel.c is compiled with -Ofast (tests/repro/CMakeLists.txt),
 * this driver without. Prints relu(NaN) and gelu_erf(NaN); exits 0 when
 * either is not NaN (the behaviour reproduces), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>

void relu_loop(const float* x, float* y, int n);
void gelu_erf_loop(const float* x, float* y, int n);

int main(void) {
  enum { kN = 64 };
  float x[kN], r[kN], g[kN];
  for (int i = 0; i < kN; ++i) x[i] = (float)i - 32.0f;
  for (int i = 0; i < kN; i += 7) x[i] = NAN;
  relu_loop(x, r, kN);
  gelu_erf_loop(x, g, kN);
  int relu_lost = 0, gelu_lost = 0, nans = 0;
  for (int i = 0; i < kN; ++i)
    if (isnan(x[i])) ++nans, relu_lost += !isnan(r[i]), gelu_lost += !isnan(g[i]);
  printf("-Ofast kernels: relu(NaN) = %g, gelu_erf(NaN) = %g; NaN inputs %d, finite outputs for them: relu %d, gelu_erf %d\n",
         r[0], g[0], nans, relu_lost, gelu_lost);
  return relu_lost + gelu_lost > 0 ? 0 : 1;
}
