/* OpenBLAS 0.3.21 (x86_64): sscal/dscal with alpha = 0 store zeros over NaN
 * and Inf (KC-SCAL-02 x openblas.sscal, openblas.dscal and the sscal core
 * types, NAN_SWALLOWED at alpha = 0).
 *
 * The BLAS interface computes x := alpha * x: reference sscal.f/dscal.f
 * (3.11) have no alpha = 0 branch (SX(I) = SA*SX(I)), so 0 * NaN = NaN and
 * 0 * Inf = NaN. OpenBLAS's upstream took the zero stores for a bug:
 * OpenMathLib/OpenBLAS#4728 ("dscal: 0 * nan != nan * 0"), fixed by PR #4729
 * in 0.3.28; PR #4807 keeps zero-filling only for LAPACK's internal calls,
 * behind a flag, so the public ?SCAL follows the reference.
 *
 * Calls the Fortran interface sscal_/dscal_ as kc does, alpha = 0, x = {NaN,
 * +Inf, -Inf, 2}. Prints what came back; exits 0 when both routines return 0
 * for the NaN and both infinities (the behaviour reproduces), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>

void sscal_(const int* n, const float* alpha, float* x, const int* incx);
void dscal_(const int* n, const double* alpha, double* x, const int* incx);
char* openblas_get_corename(void);
char* openblas_get_config(void);

int main(void) {
  float xs[4] = {NAN, INFINITY, -INFINITY, 2};
  double xd[4] = {NAN, INFINITY, -INFINITY, 2};
  const int n = 4, one = 1;
  const float as = 0;
  const double ad = 0;
  printf("%s, core %s\n", openblas_get_config(), openblas_get_corename());
  sscal_(&n, &as, xs, &one);
  dscal_(&n, &ad, xd, &one);
  printf("alpha = 0, x = {NaN, Inf, -Inf, 2}: sscal {%g, %g, %g, %g}, dscal {%g, %g, %g, %g}; reference 3.11: "
         "{nan, nan, nan, 0}\n",
         xs[0], xs[1], xs[2], xs[3], xd[0], xd[1], xd[2], xd[3]);
  int zeros = 0;
  for (int i = 0; i < 3; ++i) zeros += xs[i] == 0 && xd[i] == 0;
  return zeros == 3 ? 0 : 1;
}
