#include "bench/bench_util.h"

#include <cstdio>

namespace kc::bench {

std::shared_ptr<const backends::BlasLibrary> open_openblas() {
  auto lib = backends::BlasLibrary::open(backends::openblas_spec());
  if (!lib.ok()) {
    std::fprintf(stderr, "openblas unavailable: %s\n", lib.status().message().c_str());
    return nullptr;
  }
  return *lib;
}

void sgemm_rowmajor(const backends::BlasLibrary& lib, std::int64_t m, std::int64_t n, std::int64_t k,
                    const float* a, const float* b, float* c) {
  const backends::FortranInt M = static_cast<backends::FortranInt>(m), N = static_cast<backends::FortranInt>(n),
                             K = static_cast<backends::FortranInt>(k);
  const float one = 1, zero = 0;
  lib.sgemm("N", "N", &N, &M, &K, &one, b, &N, a, &K, &zero, c, &N, 1, 1);
}

void dgemm_rowmajor(DgemmFn dgemm, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                    const double* b, double* c) {
  const backends::FortranInt M = static_cast<backends::FortranInt>(m), N = static_cast<backends::FortranInt>(n),
                             K = static_cast<backends::FortranInt>(k);
  const double one = 1, zero = 0;
  dgemm("N", "N", &N, &M, &K, &one, b, &N, a, &K, &zero, c, &N, 1, 1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void fill_uniform(std::vector<float>& v, std::uint64_t seed) {
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(static_cast<double>(s >> 11) * 0x1.0p-52 - 1.0);
  }
}

}  // namespace kc::bench
