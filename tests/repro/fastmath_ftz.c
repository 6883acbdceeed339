/* Linking with -Ofast (-ffast-math) sets FTZ and DAZ in MXCSR for the whole
 * process (C-PRC-03 x compilers.gcc_Ofast.*, gcc_O2_fastmath_v3.*,
 * clang_Ofast.*: FTZ_OBSERVED).
 *
 * The source declares denormal = IEEE. The GCC manual (Optimize Options,
 * -ffast-math: "... when used at link time, it may include libraries or
 * startup files that change the default FPU control word or other similar
 * optimizations") documents the mechanism: crtfastmath.o, whose constructor
 * sets FTZ|DAZ. Clang links the same file for -ffast-math/-Ofast.
 *
 * This program is linked with -Ofast (tests/repro/CMakeLists.txt). Prints the
 * MXCSR FTZ and DAZ bits and 2^-140 * 1; exits 0 when the subnormal is
 * flushed (the behaviour reproduces), 1 otherwise.
 */
#include <stdio.h>
#include <xmmintrin.h>

int main(void) {
  const unsigned csr = _mm_getcsr();
  volatile float tiny = 0x1p-140f, one = 1.0f;
  const float product = tiny * one;
  printf("MXCSR FTZ=%u DAZ=%u; 2^-140 * 1 = %g (IEEE: %g)\n", (csr >> 15) & 1u, (csr >> 6) & 1u, (double)product,
         (double)0x1p-140f);
  return product == 0.0f ? 0 : 1;
}
