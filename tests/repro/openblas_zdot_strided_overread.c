/* OpenBLAS 0.3.21 (x86_64): the complex dot products read past the end of x
 * when an increment is not 1 (KC-CDOT-01 x openblas.cdotu/cdotc/zdotu/zdotc,
 * GUARD_READ).
 *
 * cblas_zdotc_sub(n, x, incx, y, incy, &r) may read the n complex elements
 * x[0], x[incx], ..., x[(n-1) incx] of each vector and nothing else (netlib
 * zdotc.f loops I = 1..N; the CBLAS interface passes through). Each vector
 * here ends exactly at a PROT_NONE page; a read of anything past its last
 * element faults. The kernels of the Sandybridge, Haswell, Zen, SkylakeX and
 * Cooperlake core types (zdot?_k_<CORE>, kernel/x86_64/zdot.c as Debian's
 * build compiles it: the fault is a vinsertf128 load) read x and y one
 * increment past their last elements (x + n incx, y + n incy) whenever an
 * increment is not 1, for every n >= 1; unit strides do not, nor do the
 * Prescott and Nehalem kernels (OPENBLAS_CORETYPE=PRESCOTT: no fault).
 *
 * Calls all four routines for n = 1..40 and increments 1..3 (the faulting
 * address is caught with a SIGSEGV handler). Exits 0 when some strided call
 * reads past the end and no unit-stride call does (the behaviour
 * reproduces), 1 otherwise, 2 when the forced core type is not available.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void cblas_cdotu_sub(int n, const void* x, int incx, const void* y, int incy, void* r);
void cblas_cdotc_sub(int n, const void* x, int incx, const void* y, int incy, void* r);
void cblas_zdotu_sub(int n, const void* x, int incx, const void* y, int incy, void* r);
void cblas_zdotc_sub(int n, const void* x, int incx, const void* y, int incy, void* r);
char* openblas_get_corename(void);
char* openblas_get_config(void);

typedef void (*dot_fn)(int, const void*, int, const void*, int, void*);

static sigjmp_buf jb;
static char* fault_at;
static void on_segv(int s, siginfo_t* si, void* u) {
  (void)s;
  (void)u;
  fault_at = (char*)si->si_addr;
  siglongjmp(jb, 1);
}

/* `bytes` of zeroed storage that end exactly where a PROT_NONE page begins. */
static char* guarded(size_t bytes, char** base, size_t* len) {
  const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  const size_t span = (bytes + pg - 1) / pg * pg;
  *len = span + pg;
  *base = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (*base == MAP_FAILED || mprotect(*base + span, pg, PROT_NONE) != 0) exit(2);
  return *base + span - bytes;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  printf("%s, core %s\n", openblas_get_config(), openblas_get_corename());
  const char* names[4] = {"cdotu", "cdotc", "zdotu", "zdotc"};
  const dot_fn fns[4] = {cblas_cdotu_sub, cblas_cdotc_sub, cblas_zdotu_sub, cblas_zdotc_sub};
  int strided_faults = 0, unit_faults = 0;
  for (int f = 0; f < 4; ++f) {
    const size_t es = f < 2 ? 8 : 16; /* bytes per complex element */
    int faults = 0, calls = 0, shown = 0;
    for (int n = 1; n <= 40; ++n)
      for (int incx = 1; incx <= 3; ++incx)
        for (int incy = 1; incy <= 3; ++incy)
          for (int guard_x = 0; guard_x < 2; ++guard_x) {
            const size_t bx = ((size_t)(n - 1) * incx + 1) * es, by = ((size_t)(n - 1) * incy + 1) * es;
            char *base_x, *base_y;
            size_t len_x, len_y;
            /* The vector under test ends at the guard page; the other one has room. */
            char* x = guarded(guard_x ? bx : bx + 4096, &base_x, &len_x);
            char* y = guarded(guard_x ? by + 4096 : by, &base_y, &len_y);
            double r[2];
            ++calls;
            if (sigsetjmp(jb, 1) == 0) {
              fns[f](n, x, incx, y, incy, r);
            } else {
              ++faults;
              if (incx == 1 && incy == 1)
                ++unit_faults;
              else
                ++strided_faults;
              const char* v = guard_x ? x : y;
              const size_t bytes = guard_x ? bx : by;
              if (shown++ < 2)
                printf("  %s n=%d incx=%d incy=%d: read at %s + %ld bytes (%s holds %zu)\n", names[f], n, incx, incy,
                       guard_x ? "x" : "y", (long)(fault_at - v), guard_x ? "x" : "y", bytes);
            }
            munmap(base_x, len_x);
            munmap(base_y, len_y);
          }
    printf("%s: %d of %d calls read past the end of x or y\n", names[f], faults, calls);
  }
  return strided_faults > 0 && unit_faults == 0 ? 0 : 1;
}
