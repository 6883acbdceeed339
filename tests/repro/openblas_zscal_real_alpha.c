/* OpenBLAS 0.3.21 (x86_64): cscal/zscal with an alpha whose real or
 * imaginary part is zero skip that part's products, so 0 * Inf and 0 * NaN
 * never happen (KC-CSCAL-03 x openblas.cscal/zscal, NAN_SWALLOWED).
 *
 * The BLAS interface stores CX(I) = CA*CX(I) (netlib cscal.f/zscal.f 3.11,
 * the textbook complex product; CA = (1, 0) alone returns early). For
 * alpha = (0, 1) and x = (NaN, 1) that is (0*NaN - 1*1, 0*1 + 1*NaN) =
 * (NaN, NaN); for alpha = (-1, 0) and x = (Inf, 2) it is (-Inf, -2 + 0*Inf) =
 * (-Inf, NaN). The netlib library in this image returns exactly that.
 * OpenBLAS's x86_64 zscal kernels branch on alpha_r == 0 and alpha_i == 0
 * and scale by the non-zero part alone: (-1, NaN) and (-Inf, -2). The
 * OpenBLAS maintainers took the reference product as the rule
 * (OpenMathLib/OpenBLAS#4413, #4726; PR #4419 and later changed zscal).
 * alpha = (0, 0) stores zeros, OpenBLAS's declared zero-fill rule, and is
 * not what this program checks.
 *
 * Exits 0 when OpenBLAS returns the skipped-part results for cscal and zscal
 * (the behaviour reproduces), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>

void cscal_(const int* n, const float* alpha, float* x, const int* incx);
void zscal_(const int* n, const double* alpha, double* x, const int* incx);
char* openblas_get_corename(void);
char* openblas_get_config(void);

int main(void) {
  printf("%s, core %s\n", openblas_get_config(), openblas_get_corename());
  const int one = 1;
  int reproduced = 0;
  /* alpha = i on x = NaN + 1i: the reference product is (NaN, NaN). */
  {
    const float a[2] = {0, 1};
    float x[2] = {NAN, 1};
    cscal_(&one, a, x, &one);
    const double ad[2] = {0, 1};
    double xd[2] = {NAN, 1};
    zscal_(&one, ad, xd, &one);
    printf("alpha = (0, 1), x = (NaN, 1): cscal (%g, %g), zscal (%g, %g); reference (nan, nan)\n", x[0], x[1], xd[0],
           xd[1]);
    reproduced += !isnan(x[0]) && !isnan(xd[0]);
  }
  /* alpha = -1 on x = Inf + 2i: the reference product is (-Inf, NaN). */
  {
    const float a[2] = {-1, 0};
    float x[2] = {INFINITY, 2};
    cscal_(&one, a, x, &one);
    const double ad[2] = {-1, 0};
    double xd[2] = {INFINITY, 2};
    zscal_(&one, ad, xd, &one);
    printf("alpha = (-1, 0), x = (Inf, 2): cscal (%g, %g), zscal (%g, %g); reference (-inf, nan)\n", x[0], x[1], xd[0],
           xd[1]);
    reproduced += !isnan(x[1]) && !isnan(xd[1]);
  }
  return reproduced == 2 ? 0 : 1;
}
