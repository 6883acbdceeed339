/* BLIS 0.9.0: csscal/zdscal (a complex x scaled by a real alpha) multiply by
 * the complex (alpha, 0), so a NaN or Inf in one part of x_i spreads into the
 * other (KC-CSSCAL-03 x blis.csscal/zdscal, NAN_INTRODUCED).
 *
 * netlib csscal.f/zdscal.f 3.11 scale each part by the real SA on its own:
 * CX(I) = CMPLX(SA*REAL(CX(I)), SA*AIMAG(CX(I))). So alpha = -1 on
 * x = (Inf, 2) gives (-Inf, -2), and on (1, NaN) gives (-1, NaN); the netlib
 * and OpenBLAS libraries of this image return exactly that. BLIS 0.9.0's
 * compatibility layer returns (-Inf, NaN) and (NaN, NaN) for every alpha
 * other than 0 (zeros, its declared rule) and 1 (x untouched): the cross
 * terms 0 * Inf and 0 * NaN of a complex product.
 *
 * Usage: blis_csscal_cross_terms BLIS_LIB NETLIB_LIB (dlopen'ed RTLD_LOCAL).
 * Exits 0 when BLIS spreads the non-finite part and netlib does not (the
 * behaviour reproduces), 1 otherwise, 2 when a library does not load.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

typedef void (*csscal_fn)(const int*, const float*, float*, const int*);
typedef void (*zdscal_fn)(const int*, const double*, double*, const int*);

/* 1 when the library keeps the parts apart for alpha = -1, 3, 0.5. */
static int parts_apart(const char* path, const char* label) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  csscal_fn cs = (csscal_fn)dlsym(h, "csscal_");
  zdscal_fn zd = (zdscal_fn)dlsym(h, "zdscal_");
  if (!cs || !zd) return -1;
  const float alphas[3] = {-1, 3, 0.5f};
  const int n = 2, one = 1;
  int apart = 1;
  for (int a = 0; a < 3; ++a) {
    float x[4] = {INFINITY, 2, 1, NAN};
    double xd[4] = {INFINITY, 2, 1, NAN};
    const double ad = alphas[a];
    cs(&n, &alphas[a], x, &one);
    zd(&n, &ad, xd, &one);
    printf("%-6s alpha = %g on (Inf, 2), (1, NaN): csscal (%g, %g), (%g, %g); zdscal (%g, %g), (%g, %g)\n", label,
           alphas[a], x[0], x[1], x[2], x[3], xd[0], xd[1], xd[2], xd[3]);
    apart = apart && !isnan(x[1]) && !isnan(x[2]) && !isnan(xd[1]) && !isnan(xd[2]);
  }
  return apart;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s BLIS_LIB NETLIB_LIB\n", argv[0]);
    return 2;
  }
  const int blis = parts_apart(argv[1], "blis"), netlib = parts_apart(argv[2], "netlib");
  if (blis < 0 || netlib < 0) return 2;
  return blis == 0 && netlib == 1 ? 0 : 1;
}
