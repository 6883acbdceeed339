// BLIS 0.9's haswell-family small-matrix ("sup") sgemm kernels read past the
// end of C when beta != 0 and the column length m is 2 or 3 (also 10, 11,
// 14, 15, 18, 19): the load of the last column's C runs over its end. Seen by
// kc as GUARD_READ(C, after) on KC-GEMM-04 (docs/findings.md).
//
// Without kc: C (m x n, column-major, ldc = m) is placed so that it ends where
// a PROT_NONE page begins; sgemm_ with beta = 0.5 faults on that page, with
// beta = 0 it does not, and with readable memory after C the result is exact
// (integer entries): the kernel reads beyond C but does not use what it reads.
// The program forces the haswell sub-configuration (BLIS_ARCH_TYPE, its id
// looked up by name), which zen, zen2 and zen3 share these kernels with.
//
// Exit 0: the over-read reproduces; 1: it does not; 2: cannot run here (no
// AVX2/FMA, or this BLIS has no haswell sub-configuration).
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// The Fortran BLAS interface (gfortran convention, LP64) and BLIS's own info calls.
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc, size_t ta_len, size_t tb_len);
void bli_init(void);
int bli_arch_query_id(void);
const char* bli_arch_string(int id);

static sigjmp_buf fault_jump;
static volatile uintptr_t fault_addr;

static void on_segv(int sig, siginfo_t* info, void* uctx) {
  (void)sig;
  (void)uctx;
  fault_addr = (uintptr_t)info->si_addr;
  siglongjmp(fault_jump, 1);
}

// `count` floats ending exactly where a PROT_NONE page starts (guard = 1), or
// followed by a readable page (guard = 0).
static float* place(size_t count, int guard, uintptr_t* end) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t bytes = count * sizeof(float);
  const size_t span = (bytes + page - 1) / page * page + page;
  char* map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  char* tail = map + span - page;
  if (guard && mprotect(tail, page, PROT_NONE) != 0) {
    perror("mprotect");
    exit(2);
  }
  *end = (uintptr_t)tail;
  return (float*)(tail - bytes);
}

// One sgemm_ C = A B + beta C (m x n, k = 3): returns the byte offset past
// the end of C of a faulting read (>= 0), -1 when the call returned, and
// checks the result against an exact integer loop when it returned.
static long run(int m, int n, float beta, int guard, int* wrong) {
  const int k = 3;
  uintptr_t a_end, b_end, c_end;
  float* a = place((size_t)m * k, 0, &a_end);
  float* b = place((size_t)k * n, 0, &b_end);
  float* c = place((size_t)m * n, guard, &c_end);
  for (int i = 0; i < m * k; ++i) a[i] = (float)(i % 5 - 2);
  for (int i = 0; i < k * n; ++i) b[i] = (float)(i % 3 - 1);
  for (int i = 0; i < m * n; ++i) c[i] = (float)(i % 4);
  float c0[1024];
  memcpy(c0, c, sizeof(float) * (size_t)m * n);
  const float alpha = 1.0f;
  if (sigsetjmp(fault_jump, 1) != 0) return (long)(fault_addr - c_end);
  sgemm_("N", "N", &m, &n, &k, &alpha, a, &m, b, &k, &beta, c, &m, 1, 1);
  *wrong = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double want = beta == 0.0f ? 0.0 : (double)beta * c0[i + j * m];
      for (int p = 0; p < k; ++p) want += (double)a[i + p * m] * b[p + j * k];
      if ((double)c[i + j * m] != want) ++*wrong;
    }
  return -1;
}

int main(void) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    printf("cannot run here: the haswell sub-configuration needs AVX2 and FMA3\n");
    return 2;
  }
  int haswell = -1;
  for (int id = 0; id < 64; ++id) {
    const char* name = bli_arch_string(id);
    if (!name) break;
    if (strcmp(name, "haswell") == 0) haswell = id;
    if (strcmp(name, "generic") == 0) break;
  }
  if (haswell < 0) {
    printf("cannot run here: this BLIS has no haswell sub-configuration\n");
    return 2;
  }
  char id_text[16];
  snprintf(id_text, sizeof id_text, "%d", haswell);
  setenv("BLIS_ARCH_TYPE", id_text, 1);
  bli_init();  // reads BLIS_ARCH_TYPE; before any arch query (docs/backends/blas.md)
  printf("BLIS arch %d (%s)\n", bli_arch_query_id(), bli_arch_string(bli_arch_query_id()));
  if (bli_arch_query_id() != haswell) {
    printf("cannot run here: BLIS_ARCH_TYPE=%d was not honoured\n", haswell);
    return 2;
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);

  int reproduced = 1;
  const int shapes[][2] = {{2, 2}, {3, 5}, {10, 4}, {19, 7}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const int m = shapes[s][0], n = shapes[s][1];
    int wrong = 0;
    const long past = run(m, n, 0.5f, 1, &wrong);
    const long past0 = run(m, n, 0.0f, 1, &wrong);
    const int wrong0 = wrong;
    run(m, n, 0.5f, 0, &wrong);
    printf("m=%2d n=%d k=3: beta=0.5 %s", m, n, past >= 0 ? "read past the end of C" : "stayed inside C");
    if (past >= 0) printf(" (at +%ld bytes)", past);
    printf("; beta=0 %s; results with readable memory after C: %d wrong (beta 0.5), %d wrong (beta 0)\n",
           past0 >= 0 ? "read past the end of C" : "stayed inside C", wrong, wrong0);
    // The behaviour: beta != 0 reads past C, beta = 0 does not, and the values are right.
    if (!(past >= 0 && past < 16 && past0 < 0 && wrong == 0 && wrong0 == 0)) reproduced = 0;
  }
  printf(reproduced ? "reproduced: sgemm_ reads past the end of C when beta != 0\n"
                    : "not reproduced\n");
  return reproduced ? 0 : 1;
}
