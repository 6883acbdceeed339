/* The kernel half of fastmath_nan_relu: kc's reference relu and gelu_erf
 * loops (backends/compilers/reference_kernels.cc), compiled on their own
 * with -Ofast so the optimiser sees no caller's values. */
#include <math.h>

void relu_loop(const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void gelu_erf_loop(const float* x, float* y, int n) {
  for (int i = 0; i < n; ++i)
    y[i] = x[i] == -INFINITY ? 0.0f : 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}
