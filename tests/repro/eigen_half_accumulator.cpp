// Eigen 3.4, matrix products over Eigen::half and Eigen::bfloat16: every
// product and every partial sum is rounded to the 16-bit type, so the
// accumulator is FP16 / BF16 (what eigen.<level>.matmul_fp16 / _bf16 declare,
// docs/backends/eigen.md).
//
// Eigen's scalar operators on half convert both operands to float, operate
// once and round back (Eigen/src/Core/arch/Default/Half.h, the CPU
// "emulated" operators; BFloat16.h likewise); the AVX / AVX-512 packets do
// the same per lane, and pmadd is padd(pmul(a, b), c). Built with -msse2 and
// with -mavx2 -mfma (tests/repro/CMakeLists.txt), as the eigen.sse2 and
// eigen.avx2 impls are.
//
// Two readings, as kc's accumulator_bits probe takes them (M = 32, N = 4):
//  - row r of A is 1, K - 2 copies of 2^-(r+1), -1 against a B of ones; an
//    accumulator of p significant bits loses the small terms from r + 1 = p
//    on (11 for FP16, 8 for bf16 when the sum runs in order);
//  - a product rounded to the type: (1 + 2^-10)(1 + 3 2^-10) - 1 is
//    2^-8 + 3 2^-20 exactly, which FP16 holds as 2^-8 + 2^-18; a product
//    rounded to half first gives 2^-8.
// Prints both and exits 0 when the FP16 reading at K = 3 is 11 bits, bf16's
// 8, and the product is rounded (the behaviour reproduces), 1 otherwise,
// 2 when the CPU lacks the build's SIMD.
#include <Eigen/Core>

#include <cmath>
#include <cstdio>

namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The first r + 1 whose row lost its small terms (0: none lost).
template <typename T>
int first_lost_bit(int k) {
  const int m = 32, n = 4;
  RowMat<T> a = RowMat<T>::Zero(m, k), b = RowMat<T>::Ones(k, n), c(m, n);
  for (int r = 0; r < m; ++r) {
    a(r, 0) = T(1.0f);
    for (int j = 1; j + 1 < k; ++j) a(r, j) = T(std::ldexp(1.0f, -(r + 1)));
    a(r, k - 1) = T(-1.0f);
  }
  c.noalias() = a * b;
  for (int r = 0; r < m; ++r) {
    const double exact = (k - 2) * std::ldexp(1.0, -(r + 1));
    if (std::fabs(static_cast<double>(static_cast<float>(c(r, 0))) - exact) > 0.5 * exact) return r + 1;
  }
  return 0;
}

/// (1 + 2^-10)(1 + 3 2^-10) - 1 as a 32 x 2 by 2 x 4 half product.
double rounded_product() {
  using H = Eigen::half;
  RowMat<H> a(32, 2), b(2, 4), c(32, 4);
  for (int r = 0; r < 32; ++r) {
    a(r, 0) = H(1.0f + std::ldexp(1.0f, -10));
    a(r, 1) = H(-1.0f);
  }
  for (int j = 0; j < 4; ++j) {
    b(0, j) = H(1.0f + 3 * std::ldexp(1.0f, -10));
    b(1, j) = H(1.0f);
  }
  c.noalias() = a * b;
  return static_cast<double>(static_cast<float>(c(0, 0)));
}

}  // namespace

int main() {
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("this CPU has no AVX2: nothing to run\n");
    return 2;
  }
#endif
  const int h3 = first_lost_bit<Eigen::half>(3), h130 = first_lost_bit<Eigen::half>(130);
  const int b3 = first_lost_bit<Eigen::bfloat16>(3), b130 = first_lost_bit<Eigen::bfloat16>(130);
  const double p = rounded_product();
  std::printf("Eigen %d.%d.%d, SIMD %s\n", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION,
              Eigen::SimdInstructionSetsInUse());
  std::printf("half:     1 + 2^-j lost its small terms from j = %d (K = 3), j = %d (K = 130)\n", h3, h130);
  std::printf("bfloat16: 1 + 2^-j lost its small terms from j = %d (K = 3), j = %d (K = 130)\n", b3, b130);
  std::printf("half: (1 + 2^-10)(1 + 3 2^-10) - 1 = %.10g (2^-8 = %.10g; exact in FP16 %.10g)\n", p,
              std::ldexp(1.0, -8), std::ldexp(1.0, -8) + std::ldexp(1.0, -18));
  return h3 == 11 && b3 == 8 && p == std::ldexp(1.0, -8) ? 0 : 1;
}
