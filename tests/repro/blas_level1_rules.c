/* The level-1 rules the three BLAS libraries differ on, which kc takes as
 * declared policies (backends/blas/blas_backend.cpp, declare_level1_rules):
 * what each returns, observed, so a declaration that stops matching its
 * library fails here.
 *
 *   scal, alpha = 0, NaN and Inf in x: netlib 3.11 multiplies (NaN, NaN);
 *     BLIS 0.9.0 stores zeros (scal_alpha_zero = ZERO_FILL). OpenBLAS 0.3.21
 *     stores zeros too, against the MULTIPLY it declares (its upstream's rule
 *     since 0.3.28): a defect, KC-SCAL-02, openblas_scal_alpha_zero.c.
 *   asum and scal at INCX <= 0 (nonpositive_inc): netlib and OpenBLAS return
 *     0 and leave x unchanged (QUICK_RETURN); BLIS sums and scales the walked
 *     elements (WALK): asum{1, 2, 3} at INCX = -1 is 6, at INCX = 0 (n = 3)
 *     3; scal(2) at INCX = 0 leaves x(1) = 8. All three i?amax return 0.
 *   i?amax on {0, NaN, 2} and {NaN, 0, 2} (1-based): netlib's > scan gives 3
 *     and 1; BLIS returns the first NaN, 2 and 1 (iamax_nan FIRST_NAN);
 *     OpenBLAS's answer is printed, not asserted (UNSPECIFIED).
 *
 * Usage: blas_level1_rules NETLIB_LIB OPENBLAS_LIB BLIS_LIB (each dlopen'ed
 * RTLD_LOCAL, as kc loads them). Exits 0 when every asserted value is seen,
 * 1 otherwise, 2 when a library does not load.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

typedef void (*sscal_fn)(const int*, const float*, float*, const int*);
typedef void (*dscal_fn)(const int*, const double*, double*, const int*);
typedef int (*isamax_fn)(const int*, const float*, const int*);
typedef int (*idamax_fn)(const int*, const double*, const int*);

int main(int argc, char** argv) {
  const char* names[3] = {"netlib", "openblas", "blis"};
  if (argc != 4) {
    fprintf(stderr, "usage: %s NETLIB_LIB OPENBLAS_LIB BLIS_LIB\n", argv[0]);
    return 2;
  }
  int wrong = 0;
  for (int l = 0; l < 3; ++l) {
    void* h = dlopen(argv[l + 1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      printf("%s: %s\n", names[l], dlerror());
      return 2;
    }
    sscal_fn sscal = (sscal_fn)dlsym(h, "sscal_");
    dscal_fn dscal = (dscal_fn)dlsym(h, "dscal_");
    isamax_fn isamax = (isamax_fn)dlsym(h, "isamax_");
    idamax_fn idamax = (idamax_fn)dlsym(h, "idamax_");
    typedef double (*dasum_fn)(const int*, const double*, const int*);
    dasum_fn dasum = (dasum_fn)dlsym(h, "dasum_");
    if (!sscal || !dscal || !isamax || !idamax || !dasum) return 2;
    const int n3 = 3, one = 1;
    float xs[3] = {NAN, INFINITY, -2};
    double xd[3] = {NAN, INFINITY, -2};
    const float zs = 0;
    const double zd = 0;
    sscal(&n3, &zs, xs, &one);
    dscal(&n3, &zd, xd, &one);
    const int multiplies = isnan(xs[0]) && isnan(xs[1]) && isnan(xd[0]) && isnan(xd[1]);
    const int zero_fills = xs[0] == 0 && xs[1] == 0 && xd[0] == 0 && xd[1] == 0;
    const float a[3] = {0, NAN, 2}, b[3] = {NAN, 0, 2};
    const double ad[3] = {0, NAN, 2}, bd[3] = {NAN, 0, 2};
    const int ia = isamax(&n3, a, &one), ib = isamax(&n3, b, &one);
    const int da = idamax(&n3, ad, &one), db = idamax(&n3, bd, &one);
    printf("%-8s scal(alpha=0) on {NaN, Inf}: s {%g, %g} d {%g, %g} -> %s; i?amax{0,NaN,2} = %d/%d, "
           "i?amax{NaN,0,2} = %d/%d\n",
           names[l], xs[0], xs[1], xd[0], xd[1], multiplies ? "MULTIPLY" : zero_fills ? "ZERO_FILL" : "neither", ia,
           da, ib, db);
    const int neg = -1, zero = 0;
    const double v[3] = {1, 2, 3};
    const double asum_neg = dasum(&n3, v, &neg), asum_zero = dasum(&n3, v, &zero);
    double s0[3] = {1, 2, 3};
    const double two = 2;
    dscal(&n3, &two, s0, &zero);
    const int im_neg = idamax(&n3, v, &neg), im_zero = idamax(&n3, v, &zero);
    const int walks = asum_neg == 6 && asum_zero == 3 && s0[0] == 8 && s0[1] == 2;
    const int quick = asum_neg == 0 && asum_zero == 0 && s0[0] == 1 && s0[1] == 2;
    printf("%-8s INCX <= 0: dasum{1,2,3} at -1 = %g, at 0 = %g; dscal(2) at 0 -> x(1) = %g; idamax at -1, 0 = %d, %d "
           "-> %s\n",
           names[l], asum_neg, asum_zero, s0[0], im_neg, im_zero, walks ? "WALK" : quick ? "QUICK_RETURN" : "neither");
    wrong += im_neg != 0 || im_zero != 0 || !(l == 2 ? walks : quick);
    if (l == 0) wrong += !multiplies || ia != 3 || da != 3 || ib != 1 || db != 1;
    if (l == 1) wrong += !zero_fills;  /* the defect: OpenBLAS declares MULTIPLY */
    if (l == 2) wrong += !zero_fills || ia != 2 || da != 2 || ib != 1 || db != 1;
  }
  return wrong == 0 ? 0 : 1;
}
