/* CLBlast 1.5.3 (OpenCL, here PoCL): the level-1 behaviours the clblast.*
 * impls declare (docs/backends/opencl.md, docs/findings.md), measured on the
 * device, plus element offsets with a canary around the vector.
 *
 * - sscal at alpha = 0 with x = {NaN, +Inf, -Inf, 2}: {NaN, NaN, NaN, 0}, the
 *   reference sscal.f rule (xscal.opencl multiplies every element; declared
 *   scal_alpha_zero = MULTIPLY).
 * - isamax with a NaN: xamax.opencl takes x_i only when |x_i| > max from
 *   max = 0, so a NaN is never returned, not even at x_0 (the reference
 *   isamax.f returns a NaN at x_1); an all-NaN vector gives 0. doc/api.md
 *   states no NaN rule: declared iamax_nan = UNSPECIFIED, not a defect.
 * - snrm2 of {1e20, 1e20, 1e20, 1e20}: +Inf (the squares overflow FP32; no
 *   scaling in xnrm2.opencl), where ||x|| = 2e20 is representable.
 * - offsets: sdot with x at element 17, y at 5 and the result at 3 of larger
 *   buffers and sscal with x at 17: right values, no element around the
 *   vectors changed.
 * - THE DEFECT (docs/findings.md): iSAMAX returns the buffer position of the
 *   maximum, id * x_inc + x_offset, not its index id in the vector. doc/api.md
 *   xAMAX: "Finds the index of a maximum ... of the absolute values in the x
 *   vector" (0-based in the C API). In 1.5.3's xamax.opencl the per-thread
 *   scan stores imax = id*x_inc + x_offset; upstream's current kernel stores
 *   imax = id. x at offset 17 with the maximum at element 61 returns 78;
 *   x_inc = 3 with the maximum at element 10 returns 30.
 *
 * Prints what it saw; exits 0 when every behaviour above reproduces (the
 * defect included), 1 when one does not, 2 when no OpenCL device is found.
 */
#include <clblast_c.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static cl_context ctx;
static cl_command_queue queue;

static cl_mem upload(const void* host, size_t bytes) {
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, (void*)host, &err);
  return err == CL_SUCCESS ? m : NULL;
}

static void download(cl_mem m, void* host, size_t bytes) {
  clEnqueueReadBuffer(queue, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
}

#define PAD 17.25f /* the canary value around placed vectors */

int main(void) {
  cl_platform_id platform;
  cl_device_id device;
  cl_uint count = 0;
  if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0) {
    printf("no OpenCL platform\n");
    return 2;
  }
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &count) != CL_SUCCESS || count == 0) {
    printf("no OpenCL device\n");
    return 2;
  }
  char name[256] = "", version[256] = "";
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, NULL);
  clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof version, version, NULL);
  printf("device %s (%s), CLBlast 1.5 C API\n", name, version);
  cl_int err = CL_SUCCESS;
  ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  if (err != CL_SUCCESS) return 2;
  queue = clCreateCommandQueue(ctx, device, 0, &err);
  if (err != CL_SUCCESS) return 2;
  int reproduced = 1;

  /* sscal, alpha = 0 */
  float xs[4] = {NAN, INFINITY, -INFINITY, 2};
  cl_mem mx = upload(xs, sizeof xs);
  CLBlastStatusCode st = CLBlastSscal(4, 0.0f, mx, 0, 1, &queue, NULL);
  clFinish(queue);
  download(mx, xs, sizeof xs);
  printf("sscal alpha = 0, x = {NaN, Inf, -Inf, 2}: status %d, {%g, %g, %g, %g}; reference sscal.f: {nan, nan, nan, 0}\n",
         (int)st, xs[0], xs[1], xs[2], xs[3]);
  reproduced &= st == CLBlastSuccess && isnan(xs[0]) && isnan(xs[1]) && isnan(xs[2]) && xs[3] == 0;
  clReleaseMemObject(mx);

  /* isamax with NaN */
  const float cases[3][4] = {{NAN, 1, 3, 2}, {1, NAN, 3, 2}, {NAN, NAN, NAN, NAN}};
  const unsigned expect[3] = {2, 2, 0};
  const unsigned reference[3] = {0, 2, 0}; /* isamax.f (0-based here) */
  for (int c = 0; c < 3; ++c) {
    cl_mem x = upload(cases[c], sizeof cases[c]);
    unsigned idx = 0xFFFFFFFFu;
    cl_mem mi = upload(&idx, sizeof idx);
    st = CLBlastiSamax(4, mi, 0, x, 0, 1, &queue, NULL);
    clFinish(queue);
    download(mi, &idx, sizeof idx);
    printf("isamax {%g, %g, %g, %g}: status %d, index %u (0-based); reference isamax.f: %u\n", cases[c][0],
           cases[c][1], cases[c][2], cases[c][3], (int)st, idx, reference[c]);
    reproduced &= st == CLBlastSuccess && idx == expect[c];
    clReleaseMemObject(x);
    clReleaseMemObject(mi);
  }

  /* snrm2 of large entries */
  const float big[4] = {1e20f, 1e20f, 1e20f, 1e20f};
  float nrm = -1;
  cl_mem mb = upload(big, sizeof big), mn = upload(&nrm, sizeof nrm);
  st = CLBlastSnrm2(4, mn, 0, mb, 0, 1, &queue, NULL);
  clFinish(queue);
  download(mn, &nrm, sizeof nrm);
  printf("snrm2 {1e20 x 4}: status %d, %g; ||x|| = 2e20 (reference snrm2.f90 scales)\n", (int)st, nrm);
  reproduced &= st == CLBlastSuccess && isinf(nrm);
  clReleaseMemObject(mb);
  clReleaseMemObject(mn);

  /* offsets: x at 17, y at 5, result at 3, canary PAD around each */
  enum { N = 100, OX = 17, OY = 5, OR = 3 };
  float bx[N + 2 * OX], by[N + 2 * OY], br[1 + 2 * OR];
  for (size_t i = 0; i < sizeof bx / sizeof *bx; ++i) bx[i] = PAD;
  for (size_t i = 0; i < sizeof by / sizeof *by; ++i) by[i] = PAD;
  for (size_t i = 0; i < sizeof br / sizeof *br; ++i) br[i] = PAD;
  double want = 0;
  for (int i = 0; i < N; ++i) {
    bx[OX + i] = (float)(i % 7) - 3;
    by[OY + i] = (float)(i % 5) * 0.5f;
    want += (double)bx[OX + i] * by[OY + i];
  }
  bx[OX + 61] = -40; /* the largest |x_i|, element 61 of the vector */
  want += -40.0 * by[OY + 61] - (double)((61 % 7) - 3) * by[OY + 61];
  cl_mem ox = upload(bx, sizeof bx), oy = upload(by, sizeof by), orr = upload(br, sizeof br);
  st = CLBlastSdot(N, orr, OR, ox, OX, 1, oy, OY, 1, &queue, NULL);
  clFinish(queue);
  float got[1 + 2 * OR];
  download(orr, got, sizeof got);
  int intact = 1;
  for (int i = 0; i < 1 + 2 * OR; ++i)
    if (i != OR && got[i] != PAD) intact = 0;
  printf("sdot at offsets x 17, y 5, result 3: status %d, %g (exact %g), elements around the result %s\n", (int)st,
         got[OR], want, intact ? "intact" : "CHANGED");
  reproduced &= st == CLBlastSuccess && fabs(got[OR] - want) <= 1e-3 * fabs(want) && intact;

  unsigned bi[1 + 2 * OR];
  for (int i = 0; i < 1 + 2 * OR; ++i) bi[i] = 0xA5A5A5A5u;
  cl_mem oi = upload(bi, sizeof bi);
  st = CLBlastiSamax(N, oi, OR, ox, OX, 1, &queue, NULL);
  clFinish(queue);
  download(oi, bi, sizeof bi);
  intact = 1;
  for (int i = 0; i < 1 + 2 * OR; ++i)
    if (i != OR && bi[i] != 0xA5A5A5A5u) intact = 0;
  printf("isamax at offsets x 17, imax 3: status %u, returned %u; the element's index is 61 (doc/api.md, 0-based), "
         "its buffer position 61 + 17 = 78; elements around imax %s\n",
         (unsigned)st, bi[OR], intact ? "intact" : "CHANGED");
  reproduced &= st == CLBlastSuccess && bi[OR] == 61 + OX && intact;

  /* isamax at x_inc = 3, offset 0: element 10 (buffer position 30) largest */
  float bs[3 * 20];
  for (int i = 0; i < 3 * 20; ++i) bs[i] = (float)(i % 3);
  bs[30] = 50;
  cl_mem os = upload(bs, sizeof bs);
  unsigned is = 0xFFFFFFFFu;
  cl_mem ois = upload(&is, sizeof is);
  st = CLBlastiSamax(20, ois, 0, os, 0, 3, &queue, NULL);
  clFinish(queue);
  download(ois, &is, sizeof is);
  printf("isamax n = 20, x_inc = 3: status %u, returned %u; the element's index is 10, its buffer position 30\n",
         (unsigned)st, is);
  reproduced &= st == CLBlastSuccess && is == 30;
  clReleaseMemObject(os);
  clReleaseMemObject(ois);

  st = CLBlastSscal(N, 2.0f, ox, OX, 1, &queue, NULL);
  clFinish(queue);
  float after[N + 2 * OX];
  download(ox, after, sizeof after);
  intact = 1;
  for (int i = 0; i < N + 2 * OX; ++i) {
    const int inside = i >= OX && i < OX + N;
    if (inside ? after[i] != 2 * bx[i] : after[i] != PAD) intact = 0;
  }
  printf("sscal at offset 17: status %d, vector scaled and the 34 elements around it %s\n", (int)st,
         intact ? "intact" : "CHANGED");
  reproduced &= st == CLBlastSuccess && intact;

  clReleaseMemObject(ox);
  clReleaseMemObject(oy);
  clReleaseMemObject(orr);
  clReleaseMemObject(oi);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  printf(reproduced ? "reproduced\n" : "NOT reproduced\n");
  return reproduced ? 0 : 1;
}
