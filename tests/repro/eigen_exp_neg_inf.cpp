// Eigen 3.4, vectorized float exp: exp(-inf) is not 0 (KC-SOFTMAX-MASKED x
// eigen.sse2.softmax, eigen.avx2.softmax: masked entries of a row come out
// as tiny positives where softmax gives exactly 0).
//
// Eigen's "Catalog of coefficient-wise math functions" lists a.exp() as the
// coefficient-wise `using std::exp; exp(a[i]);`, and ISO C (Annex F.10.3.1)
// fixes exp(-inf) = +0. Built with -msse2 and with -mavx2 -mfma (tests/repro/
// CMakeLists.txt), as kc's eigen.sse2 / eigen.avx2 impls are; the packet path
// (pexp) runs on whole packets, the scalar tail on the rest.
//
// Prints what a.exp() returned at -inf; exits 0 when it is not +0 (the
// behaviour reproduces), 1 otherwise, 2 when the CPU lacks the build's SIMD.
#include <Eigen/Core>

#include <cmath>
#include <cstdio>

int main() {
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("this CPU has no AVX2: nothing to run\n");
    return 2;
  }
#endif
  Eigen::ArrayXf x = Eigen::ArrayXf::Constant(16, -INFINITY);
  x[1] = -1.0f;
  const Eigen::ArrayXf y = x.exp();
  int wrong = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) wrong += std::isinf(x[i]) && y[i] != 0.0f;
  std::printf("Eigen %d.%d.%d, SIMD %s: exp(-inf) = %g (std::exp(-inf) = %g); %d of 15 infinite inputs not mapped to 0\n",
              EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse(),
              static_cast<double>(y[0]), std::exp(-INFINITY), wrong);
  return wrong > 0 ? 0 : 1;
}
