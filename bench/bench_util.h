// kc — shared helpers of the benchmarks: OpenBLAS through kc's BLAS loader,
// timing, and the coerced kernels the detection table uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/blas/blas_library.h"

namespace kc::bench {

/// dgemm_ in the same (gfortran, LP64) convention as SgemmFn.
using DgemmFn = void (*)(const char*, const char*, const backends::FortranInt*, const backends::FortranInt*,
                         const backends::FortranInt*, const double*, const double*, const backends::FortranInt*,
                         const double*, const backends::FortranInt*, const double*, double*,
                         const backends::FortranInt*, std::size_t, std::size_t);

/// OpenBLAS, loaded as backends/blas does; nullptr (with a message on stderr) if absent.
std::shared_ptr<const backends::BlasLibrary> open_openblas();

/// Row-major C (m x n) = A (m x k) B (k x n) through the column-major sgemm_ (C^T = B^T A^T).
void sgemm_rowmajor(const backends::BlasLibrary& lib, std::int64_t m, std::int64_t n, std::int64_t k,
                    const float* a, const float* b, float* c);
void dgemm_rowmajor(DgemmFn dgemm, std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                    const double* b, double* c);

double seconds_since(std::chrono::steady_clock::time_point t0);

/// Fast uniform fill in [-1, 1) (xorshift; the benchmarks need volume, not quality).
void fill_uniform(std::vector<float>& v, std::uint64_t seed);

}  // namespace kc::bench
