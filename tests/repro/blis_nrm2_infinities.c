/* BLIS 0.9.0: nrm2 of a vector holding two or more infinities (and no NaN) is
 * NaN (KC-NRM2-03 x blis.snrm2, blis.dnrm2: NAN_INTRODUCED).
 *
 * ||x|| of a vector with an infinite entry is +Inf: reference snrm2.f90 and
 * dnrm2.f90 (3.10+) add an infinite |x_i| to their big-value sum, which stays
 * +Inf. BLIS's BLAS layer computes the norm with a scale/sum-of-squares
 * update (bli_?normfv via sumsqv) that divides the second infinity by the
 * first: Inf / Inf = NaN. Upstream changed sumsqv's NaN/Inf handling after
 * 0.9.0 (flame/blis PR #668, merged 2022-09-23).
 *
 * Calls snrm2_/dnrm2_ on {Inf, 1, 1} (one infinity) and {Inf, Inf, 1, 1, 1},
 * {1, Inf, 1, Inf, 1} (two). Exits 0 when a vector with two infinities gives
 * NaN (the behaviour reproduces), 1 when every result is +Inf.
 */
#include <math.h>
#include <stdio.h>

float snrm2_(const int* n, const float* x, const int* incx);
double dnrm2_(const int* n, const double* x, const int* incx);
const char* bli_info_get_version_str(void);

int main(void) {
  const float cases[3][5] = {{INFINITY, 1, 1, 0, 0}, {INFINITY, INFINITY, 1, 1, 1}, {1, INFINITY, 1, INFINITY, 1}};
  const int sizes[3] = {3, 5, 5}, one = 1;
  int nan_with_two = 0;
  printf("BLIS %s\n", bli_info_get_version_str());
  for (int k = 0; k < 3; ++k) {
    double d[5];
    for (int i = 0; i < 5; ++i) d[i] = cases[k][i];
    const float s = snrm2_(&sizes[k], cases[k], &one);
    const double dd = dnrm2_(&sizes[k], d, &one);
    printf("x = {%g, %g, %g%s}: snrm2 = %g, dnrm2 = %g (reference: inf)\n", cases[k][0], cases[k][1], cases[k][2],
           sizes[k] == 5 ? ", ..." : "", s, dd);
    if (k > 0) nan_with_two += isnan(s) + isnan(dd);
  }
  return nan_with_two > 0 ? 0 : 1;
}
