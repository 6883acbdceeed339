// kc_bench_detection: the detection power of kc::verify, measured.
//
//   1. Single corrupted element: C_ij += +-f T_i for f in {0.1, 0.5, 1, 1.5, 3, 10},
//      where T_i is the Freivalds bound of row i (docs/verify.md: the
//      "tolerance" of the fast check). Honest C from OpenBLAS sgemm.
//   2. Precision coercion: tf32, bf16 and fp16 inputs (rounded, then an FP32
//      sgemm), and fp16 accumulation (every partial sum rounded to fp16).
//   3. False positives: honest FP32 impls from kc's backend registry on random
//      shapes (M, N, K in [1, 2n], random transposes, beta in {0, 0.5}).
// Rates are over independent draws (inputs, probes, samples): --trials for the corruption
// rows and the honest sgemm, --coercion-trials for the coercion rows (the first that many
// input draws), --fp-trials for section 3, whose shapes go up to 2 --fp-n. Each defaults to
// --trials or --n, so a large n can keep the slow parts (four GEMMs per coercion trial; the
// registry's naive ref.matmul) short.
//
// usage: kc_bench_detection [--n N] [--trials T] [--coercion-trials T] [--fp-n N]
//                           [--fp-trials T] [--model worst_case|probabilistic]
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "kc/backend.h"
#include "kc/op.h"
#include "kc/rng.h"
#include "kc/verify.h"

namespace {

using kc::verify::Options;

struct Counts {
  int detected = 0, by_freivalds = 0, by_sampled = 0;
  double min_ratio = 1e300, max_ratio = 0;
  void add(const kc::verify::Result& r) {
    if (!r.pass) ++detected;
    if (r.freivalds_ratio > 1) ++by_freivalds;
    if (r.sample_ratio > 1) ++by_sampled;
    min_ratio = std::min(min_ratio, r.worst_ratio);
    max_ratio = std::max(max_ratio, r.worst_ratio);
  }
};

void print_row(const std::string& label, const Counts& c, int trials, const char* note = "") {
  std::printf("  %-26s %6d %7.1f%% %10.1f%% %9.1f%%   %9.3g %9.3g%s\n", label.c_str(), trials,
              100.0 * c.detected / trials, 100.0 * c.by_freivalds / trials, 100.0 * c.by_sampled / trials,
              c.min_ratio, c.max_ratio, note);
}

float round_f(float v, kc::DType t) { return static_cast<float>(kc::round_to(v, t)); }

/// One element of the fp16-accumulated product: row a (contiguous) times a
/// column of b read with stride `ldb`, every partial sum rounded to fp16
/// through kc's software rounding.
float fp16acc_dot(std::int64_t n, const float* a, const float* b, std::int64_t ldb) {
  float acc = 0;
  for (std::int64_t k = 0; k < n; ++k) acc = kc::f16_bits_to_f32(kc::f32_to_f16_bits(acc + a[k] * b[k * ldb]));
  return acc;
}

/// C = A B with every partial sum rounded to fp16 (k innermost): the reference
/// emulation, one element at a time (B transposed first, so columns are contiguous).
void gemm_fp16_accumulator_scalar(std::int64_t n, const std::vector<float>& a, const std::vector<float>& b,
                                  std::vector<float>& c) {
  std::vector<float> bt(b.size());
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < n; ++j) bt[j * n + k] = b[k * n + j];
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = fp16acc_dot(n, &a[i * n], &bt[j * n], 1);
}

// The same arithmetic 8 output columns per vector: acc = fp16(fp32(acc + fp32(a_ik b_kj))).
// The product and the sum are separate FP32 roundings, as in the scalar code (a baseline
// x86-64 build has no FMA to contract them into); "fma" is left out of the target on purpose,
// so that -ffp-contract cannot fuse them here either. VCVTPS2PH with immediate 0 rounds to
// nearest even, gives infinity on overflow and fp16 subnormals below 2^-14, like round_to.
// One chain acc -> add -> cvtps2ph -> cvtph2ps is ~12-15 cycles long, so a tile keeps
// kRows x kVecs = 12 independent chains in flight (12 accumulators + 2 loads + 1 broadcast:
// 15 of the 16 ymm registers).
template <int kRows, int kVecs>
__attribute__((target("avx2,f16c"))) inline void fp16acc_tile(std::int64_t n, const float* a, const float* b,
                                                                float* c, std::int64_t i, std::int64_t j) {
  __m256 acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < n; ++k) {
    __m256 bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_loadu_ps(b + k * n + j + 8 * v);
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + (i + r) * n + k);
      for (int v = 0; v < kVecs; ++v)
        acc[r][v] = _mm256_cvtph_ps(
            _mm256_cvtps_ph(_mm256_add_ps(acc[r][v], _mm256_mul_ps(av, bv[v])), _MM_FROUND_TO_NEAREST_INT));
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(c + (i + r) * n + j + 8 * v, acc[r][v]);
}

// Rows [i0, i1) of C: 6 x 16 tiles, then 1-row tiles; columns past the last multiple of 8
// go through the scalar formula (same roundings, so the same bits).
__attribute__((target("avx2,f16c"))) void fp16acc_rows_avx2(std::int64_t n, const float* a, const float* b,
                                                             float* c, std::int64_t i0, std::int64_t i1) {
  constexpr int kRows = 6;
  const std::int64_t j16 = n / 16 * 16, j8 = n / 8 * 8;
  std::int64_t i = i0;
  for (; i + kRows <= i1; i += kRows) {
    for (std::int64_t j = 0; j < j16; j += 16) fp16acc_tile<kRows, 2>(n, a, b, c, i, j);
    if (j8 > j16) fp16acc_tile<kRows, 1>(n, a, b, c, i, j16);
  }
  for (; i < i1; ++i) {
    for (std::int64_t j = 0; j < j16; j += 16) fp16acc_tile<1, 2>(n, a, b, c, i, j);
    if (j8 > j16) fp16acc_tile<1, 1>(n, a, b, c, i, j16);
  }
  for (i = i0; i < i1; ++i)
    for (std::int64_t j = j8; j < n; ++j) c[i * n + j] = fp16acc_dot(n, a + i * n, b + j, n);
}

bool have_f16c() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"); }

/// gemm_fp16_accumulator_scalar's result, bit for bit: vectorized (AVX2 + F16C) with rows split
/// over the cores, or the scalar code where the CPU lacks F16C.
void gemm_fp16_accumulator(std::int64_t n, const std::vector<float>& a, const std::vector<float>& b,
                           std::vector<float>& c) {
  if (!have_f16c()) {
    gemm_fp16_accumulator_scalar(n, a, b, c);
    return;
  }
  const std::int64_t threads =
      std::clamp<std::int64_t>(static_cast<std::int64_t>(std::thread::hardware_concurrency()), 1, (n + 5) / 6);
  // Chunks of whole 6-row tiles, so that only the last chunk has a 1-row remainder.
  const std::int64_t chunk = ((n + threads - 1) / threads + 5) / 6 * 6;
  std::vector<std::thread> pool;
  for (std::int64_t i0 = chunk; i0 < n; i0 += chunk)
    pool.emplace_back(fp16acc_rows_avx2, n, a.data(), b.data(), c.data(), i0, std::min(n, i0 + chunk));
  fp16acc_rows_avx2(n, a.data(), b.data(), c.data(), 0, std::min(n, chunk));
  for (auto& t : pool) t.join();
}

/// Checks gemm_fp16_accumulator against the scalar reference, bit for bit, at an n that has
/// row and column remainders, at scales that reach fp16 subnormals (1e-3: products ~1e-6)
/// and overflow to infinity (300: sums ~1e6 > 65504).
bool fp16_accumulator_matches_scalar() {
  const std::int64_t n = 45;  // 7 tiles of 6 rows + 3; 2 x 16 + 8 + 5 columns
  std::vector<float> a(static_cast<std::size_t>(n * n)), b(a.size()), c_ref(a.size()), c_vec(a.size());
  kc::Rng rng(0x66703136ull);
  for (const double scale : {1.0, 1e-3, 300.0}) {
    for (auto& v : a) v = static_cast<float>(scale * rng.normal());
    for (auto& v : b) v = static_cast<float>(scale * rng.normal());
    gemm_fp16_accumulator_scalar(n, a, b, c_ref);
    gemm_fp16_accumulator(n, a, b, c_vec);
    if (std::memcmp(c_ref.data(), c_vec.data(), c_ref.size() * sizeof(float)) != 0) {
      std::fprintf(stderr, "kc_bench_detection: vectorized fp16 accumulation differs from the scalar emulation "
                           "(n = %lld, scale %g)\n", static_cast<long long>(n), scale);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: kc_bench_detection [--n N] [--trials T] [--coercion-trials T] [--fp-n N] [--fp-trials T]\n"
      "                          [--model worst_case|probabilistic]\n";
  std::int64_t n = 128, fp_n = -1;
  int trials = 500, coercion_trials = -1, fp_trials = -1;
  kc::verify::ErrorModel model = kc::verify::ErrorModel::kWorstCase;
  if (argc % 2 == 0) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--n") n = std::atoll(argv[i + 1]);
    else if (f == "--trials") trials = std::atoi(argv[i + 1]);
    else if (f == "--coercion-trials") coercion_trials = std::atoi(argv[i + 1]);
    else if (f == "--fp-n") fp_n = std::atoll(argv[i + 1]);
    else if (f == "--fp-trials") fp_trials = std::atoi(argv[i + 1]);
    else if (f == "--model" && kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]))
      model = *kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]);
    else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  if (coercion_trials < 0) coercion_trials = trials;
  if (fp_n < 0) fp_n = n;
  if (fp_trials < 0) fp_trials = trials;
  if (n < 1 || fp_n < 1 || trials < 1 || coercion_trials < 1 || fp_trials < 1) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  if (!fp16_accumulator_matches_scalar()) return 1;
  auto lib = kc::bench::open_openblas();
  if (!lib) return 1;
  Options base;
  base.probes = 10;
  base.samples = 64;
  base.model = model;
  base.threads = 1;
  const std::size_t nn = static_cast<std::size_t>(n * n);
  std::printf("kc_bench_detection: n = %lld (square, normal(0,1) inputs), "
              "Freivalds k = %d Rademacher + %lld sampled elements, model %s (gamma = %.3g); "
              "fp16 accumulation %s\n\n",
              static_cast<long long>(n), base.probes, static_cast<long long>(base.samples),
              std::string(kc::enum_name(kc::verify::error_model_table(), model)).c_str(),
              kc::verify::model_gamma(model, static_cast<double>(n + 2), kc::DType::kF32, base.lambda),
              have_f16c() ? "vectorized (AVX2 + F16C, checked bit for bit against the scalar emulation)" : "scalar");
  std::printf("  %-26s %6s %8s %11s %10s   %9s %9s\n", "case", "trials", "detected", "freivalds", "sampled",
              "min ratio", "max ratio");

  // 1 + 2: per trial, one input draw, an honest sgemm and its corruptions/coercions.
  const double factors[] = {0.1, 0.5, 1, 1.5, 3, 10};
  const char* coercion_names[] = {"coercion tf32 inputs", "coercion bf16 inputs", "coercion fp16 inputs",
                                  "coercion fp16 accumulator"};
  Counts corrupt[6], coerce[4], honest;
  std::vector<float> a(nn), b(nn), c(nn), bad(nn), ar(nn), br(nn);
  kc::Rng rng(0x6465746563ull);
  for (int t = 0; t < std::max(trials, coercion_trials); ++t) {
    for (auto& v : a) v = static_cast<float>(rng.normal());
    for (auto& v : b) v = static_cast<float>(rng.normal());
    kc::bench::sgemm_rowmajor(*lib, n, n, n, a.data(), b.data(), c.data());
    kc::verify::GemmProblem p;
    p.m = p.n = p.k = n;
    p.a = {a.data(), n, n, n};
    p.b = {b.data(), n, n, n};
    p.c = {c.data(), n, n, n};
    Options o = base;
    o.seed = kc::derive_seed(0x6b63, static_cast<std::uint64_t>(t));
    o.keep_row_bounds = true;
    auto h = kc::verify::verify_gemm(p, o);
    if (!h.ok()) return 1;
    if (t < trials) honest.add(*h);
    o.keep_row_bounds = false;
    for (int f = 0; f < 6 && t < trials; ++f) {
      bad = c;
      const std::int64_t i = rng.uniform_int(0, n - 1), j = rng.uniform_int(0, n - 1);
      const double sign = rng.uniform() < 0.5 ? -1 : 1;
      bad[static_cast<std::size_t>(i * n + j)] += static_cast<float>(sign * factors[f] * h->row_bounds[static_cast<std::size_t>(i)]);
      kc::verify::GemmProblem q = p;
      q.c = {bad.data(), n, n, n};
      o.seed = kc::derive_seed(0x6b63 + 1 + static_cast<std::uint64_t>(f), static_cast<std::uint64_t>(t));
      auto r = kc::verify::verify_gemm(q, o);
      if (!r.ok()) return 1;
      corrupt[f].add(*r);
    }
    const kc::DType in_types[] = {kc::DType::kTF32, kc::DType::kBF16, kc::DType::kF16};
    for (int co = 0; co < 4 && t < coercion_trials; ++co) {
      if (co < 3) {
        for (std::size_t e = 0; e < nn; ++e) {
          ar[e] = round_f(a[e], in_types[co]);
          br[e] = round_f(b[e], in_types[co]);
        }
        kc::bench::sgemm_rowmajor(*lib, n, n, n, ar.data(), br.data(), bad.data());
      } else {
        gemm_fp16_accumulator(n, a, b, bad);
      }
      kc::verify::GemmProblem q = p;
      q.c = {bad.data(), n, n, n};
      o.seed = kc::derive_seed(0x6b63 + 10 + static_cast<std::uint64_t>(co), static_cast<std::uint64_t>(t));
      auto r = kc::verify::verify_gemm(q, o);
      if (!r.ok()) return 1;
      coerce[co].add(*r);
    }
  }
  for (int f = 0; f < 6; ++f) {
    char label[64];
    std::snprintf(label, sizeof label, "corrupt 1 elem %.1fx T_i", factors[f]);
    print_row(label, corrupt[f], trials);
  }
  for (int co = 0; co < 4; ++co) print_row(coercion_names[co], coerce[co], coercion_trials);
  print_row("honest openblas sgemm", honest, trials, "   (false-positive rate)");

  // 3: false positives of honest registry impls on random shapes.
  std::printf("\nfalse positives on honest impls, random shapes M, N, K in [1, %lld], random transposes, "
              "beta in {0, 0.5}, %d trials each:\n",
              static_cast<long long>(2 * fp_n), fp_trials);
  kc::BackendRegistry reg;
  if (!kc::register_builtin_backends(reg).ok()) return 1;
  const kc::Op* op = kc::builtin_ops().find("matmul");
  for (const char* name : {"openblas.sgemm", "blis.sgemm", "refblas.sgemm", "ref.matmul"}) {
    auto impl = reg.find_impl(name);
    if (!impl) {
      std::printf("  %-26s unavailable\n", name);
      continue;
    }
    Counts fp;
    int ran = 0;
    kc::Rng srng(kc::derive_seed(0x6670, std::hash<std::string>{}(name)));
    for (int t = 0; t < fp_trials; ++t) {
      kc::Config config;
      config.params = {{"M", std::to_string(srng.uniform_int(1, 2 * fp_n))},
                       {"N", std::to_string(srng.uniform_int(1, 2 * fp_n))},
                       {"K", std::to_string(srng.uniform_int(1, 2 * fp_n))},
                       {"trans_a", srng.uniform() < 0.5 ? "N" : "T"},
                       {"trans_b", srng.uniform() < 0.5 ? "N" : "T"},
                       {"beta", srng.uniform() < 0.5 ? "0" : "0.5"}};
      auto call = op->make_call(config);
      if (!call.ok()) continue;
      op->fill(*call, kc::FillSpec{}, srng);
      const kc::Call inputs = *call;
      if (!impl->run(*call).ok()) continue;
      Options o = base;
      o.seed = kc::derive_seed(0x6b63, static_cast<std::uint64_t>(t));
      auto r = kc::verify::verify_matmul(inputs, *call, o);
      if (!r.ok()) continue;
      ++ran;
      fp.add(*r);
    }
    std::printf("  %-26s %d of %d flagged (%.2f%%), worst ratio %.3g\n", name, fp.detected, ran,
                ran ? 100.0 * fp.detected / ran : 0.0, fp.max_ratio);
  }
  return 0;
}
