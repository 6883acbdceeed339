/* The complex-routine rules the three BLAS libraries differ on, which kc
 * takes as declared policies, not defects (backends/blas/blas_complex.cpp,
 * declare_rules), and the ones they share: what each returns, observed, so a
 * declaration that stops matching its library fails here.
 *
 *   cscal/zscal, alpha = 0, NaN and Inf in x: netlib 3.11 multiplies (NaN);
 *     OpenBLAS 0.3.21 and BLIS 0.9.0 store zeros (scal_alpha_zero).
 *   cscal/zscal, alpha = 1: every library leaves x as it is (cscal.f's
 *     CA = ONE quick return), Inf and NaN included.
 *   icamax/izamax on {0, NaN, 2} and {NaN, 0, 2} (1-based): netlib's > scan
 *     gives 3 and 1; BLIS returns the first NaN, 2 and 1 (FIRST_NAN);
 *     OpenBLAS's answer is printed, not asserted (UNSPECIFIED).
 *   cgemv/cgemm at beta = 0 over a NaN-filled y/C: no library reads it
 *     (beta_zero = C_NOT_READ, netlib cgemv.f/cgemm.f argument BETA).
 *
 * Usage: blas_complex_rules NETLIB_LIB OPENBLAS_LIB BLIS_LIB (each dlopen'ed
 * RTLD_LOCAL, as kc loads them). Exits 0 when every asserted value is seen,
 * 1 otherwise, 2 when a library does not load.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

typedef void (*cscal_fn)(const int*, const float*, float*, const int*);
typedef void (*zscal_fn)(const int*, const double*, double*, const int*);
typedef int (*icamax_fn)(const int*, const float*, const int*);
typedef int (*izamax_fn)(const int*, const double*, const int*);
typedef void (*cgemv_fn)(int, int, int, int, const void*, const void*, int, const void*, int, const void*, void*, int);
typedef void (*cgemm_fn)(int, int, int, int, int, int, const void*, const void*, int, const void*, int, const void*,
                         void*, int);

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
    cscal_fn cscal = (cscal_fn)dlsym(h, "cscal_");
    zscal_fn zscal = (zscal_fn)dlsym(h, "zscal_");
    icamax_fn icamax = (icamax_fn)dlsym(h, "icamax_");
    izamax_fn izamax = (izamax_fn)dlsym(h, "izamax_");
    cgemv_fn cgemv = (cgemv_fn)dlsym(h, "cblas_cgemv");
    cgemm_fn zgemm = (cgemm_fn)dlsym(h, "cblas_zgemm");
    if (!cscal || !zscal || !icamax || !izamax || !cgemv || !zgemm) return 2;
    const int n2 = 2, n3 = 3, one = 1;
    /* scal at alpha = 0 and at alpha = 1 over {NaN + 1i, Inf + 2i}. */
    const float zero_s[2] = {0, 0}, one_s[2] = {1, 0};
    const double zero_d[2] = {0, 0};
    float xs[4] = {NAN, 1, INFINITY, 2}, ys[4] = {NAN, 1, INFINITY, 2};
    double xd[4] = {NAN, 1, INFINITY, 2};
    cscal(&n2, zero_s, xs, &one);
    zscal(&n2, zero_d, xd, &one);
    cscal(&n2, one_s, ys, &one);
    const int multiplies = isnan(xs[0]) && isnan(xs[2]) && isnan(xd[0]) && isnan(xd[2]);
    const int zero_fills = xs[0] == 0 && xs[1] == 0 && xs[2] == 0 && xs[3] == 0 && xd[0] == 0 && xd[2] == 0;
    const int one_keeps = isnan(ys[0]) && ys[1] == 1 && isinf(ys[2]) && ys[3] == 2;
    /* icamax on {0, NaN, 2} and {NaN, 0, 2} (NaN in the real part). */
    const float a[6] = {0, 0, NAN, 0, 2, 0}, b[6] = {NAN, 0, 0, 0, 2, 0};
    const double ad[6] = {0, 0, NAN, 0, 2, 0}, bd[6] = {NAN, 0, 0, 0, 2, 0};
    const int ia = icamax(&n3, a, &one), ib = icamax(&n3, b, &one);
    const int da = izamax(&n3, ad, &one), db = izamax(&n3, bd, &one);
    /* beta = 0 over NaN: cgemv 3 x 2 (row-major, N) and zgemm 2 x 2 x 2. */
    float A[12], x[4], y[6];
    for (int i = 0; i < 12; ++i) A[i] = 1;
    for (int i = 0; i < 4; ++i) x[i] = 1;
    for (int i = 0; i < 6; ++i) y[i] = NAN;
    const float alpha_c[2] = {1, 0}, beta_c[2] = {0, 0};
    cgemv(101, 111, 3, 2, alpha_c, A, 2, x, 1, beta_c, y, 1);
    double Ad[8], C[8];
    for (int i = 0; i < 8; ++i) Ad[i] = 1, C[i] = NAN;
    const double alpha_z[2] = {1, 0}, beta_z[2] = {0, 0};
    zgemm(101, 111, 111, 2, 2, 2, alpha_z, Ad, 2, Ad, 2, beta_z, C, 2);
    int y_read = 0, c_read = 0;
    for (int i = 0; i < 6; ++i) y_read += isnan(y[i]);
    for (int i = 0; i < 8; ++i) c_read += isnan(C[i]);
    printf("%-8s scal(alpha=0) on {NaN+1i, Inf+2i} -> %s; scal(alpha=1) %s; i?amax{0,NaN,2} = %d/%d, "
           "i?amax{NaN,0,2} = %d/%d; beta = 0 over NaN: cgemv y %s, zgemm C %s\n",
           names[l], multiplies ? "MULTIPLY" : zero_fills ? "ZERO_FILL" : "neither",
           one_keeps ? "keeps x" : "changes x", ia, da, ib, db, y_read ? "read" : "not read",
           c_read ? "read" : "not read");
    wrong += !one_keeps || y_read || c_read;
    if (l == 0) wrong += !multiplies || ia != 3 || da != 3 || ib != 1 || db != 1;
    if (l == 1) wrong += !zero_fills;
    if (l == 2) wrong += !zero_fills || ia != 2 || da != 2 || ib != 1 || db != 1;
  }
  return wrong == 0 ? 0 : 1;
}
