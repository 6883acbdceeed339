// Eigen 3.4, vectorized float exp below the underflow threshold: finite x
// with x < ln(FLT_MIN) = -87.34 do not underflow gradually to 0; every x at
// or below about -88.72 returns the same 2^-128 = 2.94e-39 (KC-RANGE-04 x
// eigen.sse2.softmax, eigen.avx2.softmax, eigen.clang_avx2.softmax:
// UNDERFLOW_FLOOR(2.93827e-39)). A max-subtracted softmax of a row spanning
// +-1e38 then writes 2.94e-39 / S where the result is 0.
//
// Eigen's "Catalog of coefficient-wise math functions" gives a.exp() as the
// coefficient-wise `using std::exp; exp(a[i]);`; std::exp(-100) = 3.7e-44
// and std::exp(-1000) = 0. Built with -msse2 and with -mavx2 -mfma
// (tests/repro/CMakeLists.txt), as kc's eigen.sse2 / eigen.avx2 impls are.
//
// Prints what a.exp() returned; exits 0 when the floor shows (exp of a finite
// x <= -1000, 0 in std::exp, comes back nonzero), 1 otherwise, 2 when the CPU
// lacks the build's SIMD. (An -mavx512f build flushes instead: exp(-88) = 0.)
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
  const float xs[8] = {-88.0f, -89.0f, -95.0f, -100.0f, -104.0f, -1000.0f, -1e30f, -3e38f};
  Eigen::ArrayXf x(16);
  for (int i = 0; i < 16; ++i) x[i] = xs[i % 8];  // whole packets: the vectorized path
  const Eigen::ArrayXf y = x.exp();
  const double subnormal_unit = std::ldexp(1.0, -149);
  int off = 0, floored = 0;
  for (int i = 0; i < 8; ++i) {
    const double want = std::exp(static_cast<double>(xs[i]));
    const double got = y[i];
    const bool wrong = std::fabs(got - static_cast<double>(static_cast<float>(want))) > 4 * subnormal_unit;
    off += wrong;
    floored += xs[i] <= -1000.0f && got != 0;
    std::printf("exp(%g) = %g (std::exp: %g)%s\n", xs[i], got, want, wrong ? "  <- off" : "");
  }
  // The softmax of one row {1e38, -1e38, 0, -5e37} x 2 with the max subtracted.
  Eigen::ArrayXf row(8);
  row << 1e38f, -1e38f, 0.0f, -5e37f, 1e38f, -1e38f, 0.0f, -5e37f;
  const Eigen::ArrayXf e = (row - row.maxCoeff()).exp();
  const Eigen::ArrayXf p = e / e.sum();
  std::printf("Eigen %d.%d.%d, SIMD %s: softmax{1e38, -1e38, 0, -5e37, ...} = {%g, %g, %g, %g, ...} (exact: "
              "{0.5, 0, 0, 0, ...}); %d of 8 inputs off std::exp, %d of 3 with exp(x) = 0 nonzero\n",
              EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse(),
              static_cast<double>(p[0]), static_cast<double>(p[1]), static_cast<double>(p[2]),
              static_cast<double>(p[3]), off, floored);
  return floored > 0 ? 0 : 1;
}
