/* OpenBLAS 0.3.21 (x86_64): sscal with alpha = NaN stores zeros
 * (KC-SCAL-02 x openblas.sscal, NAN_SWALLOWED at alpha = nan).
 *
 * The BLAS interface computes x := alpha * x: reference sscal.f (3.11) does
 * SX(I) = SA*SX(I), and NaN * 1 = NaN; OpenBLAS declares that rule
 * (scal_alpha_zero = MULTIPLY, its upstream's since 0.3.28), and even a
 * zero-fill at alpha = 0 would not cover NaN: NaN is not zero. The x86_64
 * sscal kernels nevertheless treat a NaN alpha as zero; dscal on the same
 * build propagates the NaN. The alpha = 0 zero-fill itself:
 * openblas_scal_alpha_zero.c.
 *
 * Calls the Fortran interface sscal_/dscal_ as kc does, n = 5 and 1000,
 * x_i = i + 1, alpha = NaN. Prints what came back; exits 0 when sscal
 * returns a number for every element (the behaviour reproduces), 1 when it
 * returns NaN.
 */
#include <math.h>
#include <stdio.h>

void sscal_(const int* n, const float* alpha, float* x, const int* incx);
void dscal_(const int* n, const double* alpha, double* x, const int* incx);
char* openblas_get_corename(void);
char* openblas_get_config(void);

int main(void) {
  static float xs[1000];
  static double xd[1000];
  const int sizes[] = {5, 1000}, one = 1;
  int numbers_total = 0, checked = 0;
  printf("%s, core %s\n", openblas_get_config(), openblas_get_corename());
  for (int k = 0; k < 2; ++k) {
    const int n = sizes[k];
    for (int i = 0; i < n; ++i) xs[i] = (float)(i + 1), xd[i] = i + 1;
    const float as = NAN;
    const double ad = NAN;
    sscal_(&n, &as, xs, &one);
    dscal_(&n, &ad, xd, &one);
    int s_numbers = 0, d_numbers = 0;
    for (int i = 0; i < n; ++i) s_numbers += !isnan(xs[i]), d_numbers += !isnan(xd[i]);
    printf("n = %d, alpha = NaN: sscal x[0] = %g (%d of %d not NaN); dscal x[0] = %g (%d of %d not NaN)\n", n,
           xs[0], s_numbers, n, xd[0], d_numbers, n);
    numbers_total += s_numbers;
    checked += n;
  }
  return numbers_total == checked ? 0 : 1;
}
