// The full small-shape product KC-GEMM-04/05/06 sample from, for one BLAS
// library, without kc: sgemm_ over m, n in 1..24, k in 1..8, 16, 33, the four
// transposes, beta = 0.5 and beta = 0 (C filled with NaN), 46080 calls. Each
// of A, B and C ends flush against a PROT_NONE page, so any read past an
// operand faults (caught, attributed, counted); every call that returns is
// checked against an FP64 loop with the bound the contracts use,
// |c - ref| <= gamma(k + 2) (|alpha| sum |a||b| + |beta| |c0|) + ulp(ref)/2,
// gamma(n) = n u / (1 - n u), u = 2^-24 (Higham 3.5), and at beta = 0 for NaN.
// kc's own sweeps cost a worker per shape, so the suite samples this
// product; this program covers it for the memory-safety and value checks.
//
// usage: blas_small_gemm_sweep LIBRARY EXPECT
//   EXPECT = clean:     no fault and no value outside the bound;
//   EXPECT = blis09_sup: the two over-reads of BLIS 0.9's haswell-family sup
//                       kernels (docs/findings.md), both seen and nothing else:
//                       C read past its end only at beta != 0 with column-major
//                       m in {2, 3, 10, 11, 14, 15, 18, 19}; B read past its
//                       end only for transa = T, transb = N, n = 4, m >= 16 and
//                       k > 1 not a multiple of 8; no value outside the bound.
// Environment (BLIS_ARCH_TYPE, OPENBLAS_CORETYPE) selects the kernels; for
// BLIS the arch is named through KC_BLIS_ARCH (a name, looked up by the
// program: ids differ between BLIS releases).
// Exit 0: as expected; 1: not; 2: cannot run here.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void (*sgemm_fn)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*, size_t, size_t);

static sigjmp_buf fault_jump;
static volatile uintptr_t fault_addr;

static void on_segv(int sig, siginfo_t* info, void* uctx) {
  (void)sig;
  (void)uctx;
  fault_addr = (uintptr_t)info->si_addr;
  siglongjmp(fault_jump, 1);
}

// A reusable region: up to `cap` floats placed to end where its guard page begins.
struct Region {
  char* map;
  size_t span;
  uintptr_t guard;
};

static struct Region region(size_t cap) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  struct Region r;
  r.span = (cap * sizeof(float) + page - 1) / page * page + page;
  r.map = mmap(NULL, r.span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r.map == MAP_FAILED) exit(2);
  r.guard = (uintptr_t)(r.map + r.span - page);
  if (mprotect((void*)r.guard, page, PROT_NONE) != 0) exit(2);
  return r;
}

static float* flush(const struct Region* r, size_t count) { return (float*)(r->guard - count * sizeof(float)); }

static int in_guard(const struct Region* r, uintptr_t a) {
  return a >= r->guard && a < r->guard + (uintptr_t)sysconf(_SC_PAGESIZE);
}

static uint64_t lcg = 0x9E3779B97F4A7C15ull;
static float next_value(void) {
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(lcg >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static int c_overread(int m, float beta) {
  return beta != 0.0f && (m == 2 || m == 3 || m == 10 || m == 11 || m == 14 || m == 15 || m == 18 || m == 19);
}

static int b_overread(int ta, int tb, int m, int n, int k) { return ta && !tb && n == 4 && m >= 16 && k > 1 && k % 8; }

static sgemm_fn sgemm;
static long faults_a, faults_b, faults_c, unexpected_faults, beyond, nans;

// One call on flush-placed operands; 1 when it faulted (counted here).
static int call_once(const char* tra, const char* trb, int m, int n, int k, float* a, int lda, float* b, int ldb,
                     float beta, float* c, int ldc, const struct Region* ra, const struct Region* rb,
                     const struct Region* rc, int expect_sup) {
  const float alpha = 1.0f;
  if (sigsetjmp(fault_jump, 1) != 0) {
    const uintptr_t at = fault_addr;
    const int on_a = in_guard(ra, at), on_b = in_guard(rb, at), on_c = in_guard(rc, at);
    faults_a += on_a;
    faults_b += on_b;
    faults_c += on_c;
    const int ta = tra[0] == 'T', tb = trb[0] == 'T';
    const int expected = expect_sup && ((on_c && c_overread(m, beta)) || (on_b && b_overread(ta, tb, m, n, k)));
    if (!expected) {
      if (unexpected_faults < 10)
        printf("fault %s%s m=%d n=%d k=%d beta=%g on %s\n", tra, trb, m, n, k, beta,
               on_c ? "C" : on_a ? "A" : on_b ? "B" : "?");
      ++unexpected_faults;
    }
    return 1;
  }
  sgemm(tra, trb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY clean|c_overread\n", argv[0]);
    return 2;
  }
  const int expect_sup = strcmp(argv[2], "blis09_sup") == 0;
  const char* arch = getenv("KC_BLIS_ARCH");
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("cannot run here: %s\n", dlerror());
    return 2;
  }
  if (arch && *arch) {
    const char* (*name)(int) = (const char* (*)(int))dlsym(lib, "bli_arch_string");
    void (*init)(void) = (void (*)(void))dlsym(lib, "bli_init");
    int (*query)(void) = (int (*)(void))dlsym(lib, "bli_arch_query_id");
    if (!name || !init || !query) {
      printf("cannot run here: %s is not BLIS\n", argv[1]);
      return 2;
    }
    int id = -1;
    for (int i = 0; i < 64 && name(i); ++i) {
      if (strcmp(name(i), arch) == 0) id = i;
      if (strcmp(name(i), "generic") == 0) break;
    }
    if (id < 0) {
      printf("cannot run here: no BLIS sub-configuration %s\n", arch);
      return 2;
    }
    if (strcmp(arch, "haswell") == 0 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
      printf("cannot run here: the haswell sub-configuration needs AVX2 and FMA3\n");
      return 2;
    }
    char text[16];
    snprintf(text, sizeof text, "%d", id);
    setenv("BLIS_ARCH_TYPE", text, 1);
    init();
    if (query() != id) {
      printf("cannot run here: BLIS_ARCH_TYPE=%d not honoured\n", id);
      return 2;
    }
    printf("BLIS sub-configuration %s (id %d)\n", arch, id);
  }
  sgemm = (sgemm_fn)dlsym(lib, "sgemm_");
  if (!sgemm) {
    printf("cannot run here: no sgemm_ in %s\n", argv[1]);
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);

  enum { kMax = 24 };
  static const int ks[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 33};
  static const char* trans[4][2] = {{"N", "N"}, {"N", "T"}, {"T", "N"}, {"T", "T"}};
  static const float betas[2] = {0.5f, 0.0f};
  const struct Region ra = region(kMax * 33), rb = region(kMax * 33), rc = region(kMax * kMax);
  float c0[kMax * kMax];
  const double u = ldexp(1.0, -24);
  long calls = 0;
  for (int t = 0; t < 4; ++t)
    for (int bi = 0; bi < 2; ++bi)
      for (int m = 1; m <= kMax; ++m)
        for (int n = 1; n <= kMax; ++n)
          for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ++ki) {
            const int k = ks[ki];
            const int ta = trans[t][0][0] == 'T', tb = trans[t][1][0] == 'T';
            const int lda = ta ? k : m, ldb = tb ? n : k, ldc = m;
            float* a = flush(&ra, (size_t)m * k);
            float* b = flush(&rb, (size_t)k * n);
            float* c = flush(&rc, (size_t)m * n);
            for (int i = 0; i < m * k; ++i) a[i] = next_value();
            for (int i = 0; i < k * n; ++i) b[i] = next_value();
            const float beta = betas[bi];
            for (int i = 0; i < m * n; ++i) c0[i] = c[i] = beta == 0.0f ? NAN : next_value();
            ++calls;
            if (call_once(trans[t][0], trans[t][1], m, n, k, a, lda, b, ldb, beta, c, ldc, &ra, &rb, &rc, expect_sup))
              continue;
            const double gamma = (k + 2) * u / (1 - (k + 2) * u);
            for (int j = 0; j < n; ++j)
              for (int i = 0; i < m; ++i) {
                double ref = 0, mag = 0;
                for (int p = 0; p < k; ++p) {
                  const double x = ta ? a[p + i * lda] : a[i + p * lda];
                  const double y = tb ? b[j + p * ldb] : b[p + j * ldb];
                  ref += x * y;
                  mag += fabs(x * y);
                }
                if (beta != 0.0f) {
                  ref += (double)beta * c0[i + j * m];
                  mag += fabs((double)beta * c0[i + j * m]);
                }
                const double got = c[i + j * ldc];
                if (isnan(got)) {
                  ++nans;
                } else if (fabs(got - ref) > gamma * mag + 0.5 * ldexp(1.0, ilogb(ref == 0 ? 1e-38 : ref) - 23)) {
                  if (beyond < 10)
                    printf("beyond the bound: %s%s m=%d n=%d k=%d beta=%g C(%d,%d) = %.9g, FP64 %.9g\n", trans[t][0],
                           trans[t][1], m, n, k, beta, i, j, got, ref);
                  ++beyond;
                }
              }
          }
  printf("%ld calls: %ld faults on A, %ld on B, %ld on C (%ld not expected); %ld outputs beyond the bound, %ld NaN\n",
         calls, faults_a, faults_b, faults_c, unexpected_faults, beyond, nans);
  const int ok =
      unexpected_faults == 0 && beyond == 0 && nans == 0 && (!expect_sup || (faults_c > 0 && faults_b > 0));
  printf(ok ? "as expected (%s)\n" : "NOT as expected (%s)\n", argv[2]);
  return ok ? 0 : 1;
}
