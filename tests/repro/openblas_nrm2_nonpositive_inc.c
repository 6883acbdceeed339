/* OpenBLAS 0.3.21: snrm2/dnrm2 with INCX < 0 or INCX = 0 return 0.
 *
 * Reference snrm2.f90/dnrm2.f90 (3.10+, the netlib 3.11 installed here) walk
 * a negative increment from the far end, as the other level-1 routines do, and
 * with INCX = 0 take x(1) n times: ||(1, 2, 3)|| with INCX = -1 is sqrt(14),
 * with INCX = 0 (n = 3) sqrt(3) |x(1)|. OpenBLAS 0.3.21's interface returns 0
 * for INCX <= 0, the pre-3.10 reference rule. It contradicts what dnrm2.f90
 * 3.10+ documents under argument INCX (X(1-(n-i)*INCX) = x(i) for INCX < 0;
 * INCX = 0 "will count x(1) in the vector norm N times"). Upstream: OpenMathLib/OpenBLAS
 * #4186 (negative INCX; PR #4189, #4190, 0.3.24) and #5110 (INCX = 0; PR
 * #5116). kc reports it: KC-INC-01 x openblas.snrm2/dnrm2,
 * CONFIG_DEPENDENT(incx=-1,-3,0) (docs/findings.md).
 *
 * Exits 0 when both calls return 0 (the behaviour reproduces), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>

float snrm2_(const int* n, const float* x, const int* incx);
double dnrm2_(const int* n, const double* x, const int* incx);
char* openblas_get_config(void);

int main(void) {
  const float xs[3] = {1, 2, 3};
  const double xd[3] = {1, 2, 3};
  const int n = 3, neg = -1, zero = 0;
  const float sn = snrm2_(&n, xs, &neg), sz = snrm2_(&n, xs, &zero);
  const double dn = dnrm2_(&n, xd, &neg), dz = dnrm2_(&n, xd, &zero);
  printf("%s\n", openblas_get_config());
  printf("x = {1, 2, 3}, n = 3: INCX = -1: snrm2 %g, dnrm2 %g (reference 3.10+: %g); INCX = 0: snrm2 %g, dnrm2 %g "
         "(reference 3.10+: %g)\n",
         sn, dn, sqrt(14.0), sz, dz, sqrt(3.0));
  return sn == 0 && dn == 0 && sz == 0 && dz == 0 ? 0 : 1;
}
