// kc_bench_freivalds: what a GEMM check costs against the GEMM it checks.
//
// For n in {256, ..., 4096}, times on this machine, in one run:
//   sgemm      OpenBLAS sgemm, C = A B, n x n x n (the kernel under test)
//   fast       kc::verify: Freivalds with k = 10 Rademacher probes and its
//              derived per-row bound (|A|(|B||x|) terms included), plus 64
//              sampled elements against an FP64 dot product
//   freivalds  the same without the sampled elements
//   full       the FP64-oracle check: A, B widened to FP64, OpenBLAS dgemm for
//              A B and for |A||B|, every element judged against its bound
//   read       the memory floor: reading A, B and C once (a vectorised sum that
//              prefetches 1 KiB ahead, on threads the process keeps)
//   target     PASS or MISS against the cost targets: the fast check at most
//              10% of the sgemm at n = 512, 3% at 1024, 1.5x the read at n >= 2048
//   floor/gemm the compute floor as a share of the sgemm: the check's 2 (k + 1)
//              flops per element of A, B and C at the sgemm's own flop rate,
//              3 (k + 1) / n (6.4% at n = 512 and 3.2% at n = 1024 for k = 10)
// Each figure is the best of 6-25 runs (25 at n <= 512, where a run takes
// milliseconds and one slow second of a shared guest would otherwise decide
// a figure); both the checks and sgemm use every core.
// Every timed item (fast, freivalds, read, and each row of the second table)
// runs alone right after its own sgemm, so all find the same state.
// A second table, at the largest n, times the fast check for k in {1, 2, 3, 5, 10}
// probes (and k = 10 on the 8-lane kernel where the 16-lane one runs),
// interleaved run by run, against the same sgemm, the read floor and a compute
// floor (the check's flops at the sgemm's flop rate).
// The header names the OpenBLAS core: where OpenBLAS misdetects the CPU (an SSE3
// "Prescott" core on an AVX-512 machine), rerun with OPENBLAS_CORETYPE set to
// the right one, or the ratios are against a slow sgemm.
//
// usage: kc_bench_freivalds [--min-n N] [--max-n N] [--probes K] [--samples S]
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "kc/verify.h"
#include "src/verify/thin_product.h"

namespace {

using kc::bench::seconds_since;
using Clock = std::chrono::steady_clock;

typedef float V8f __attribute__((vector_size(32)));

__attribute__((target_clones("avx2", "default"))) float sum_floats(const float* p, std::int64_t n) {
  V8f acc[4] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    // 1 KiB ahead, as the check's kernel prefetches its rows: without it the
    // k = 1 check read faster than this "floor" (0.91x). One run each at
    // n = 4096: 6.7 ms without, 5.8 ms with (docs/verify.md "Cost").
    __builtin_prefetch(p + i + 256, 0, 3);
    __builtin_prefetch(p + i + 256 + 16, 0, 3);
    for (int r = 0; r < 4; ++r) {
      V8f x;
      std::memcpy(&x, p + i + 8 * r, sizeof x);
      acc[r] += x;
    }
  }
  float s = 0;
  for (; i < n; ++i) s += p[i];
  for (int r = 0; r < 4; ++r)
    for (int l = 0; l < 8; ++l) s += acc[r][l];
  return s;
}

/// Reads every float of the three matrices once, split across threads that
/// the process keeps (as the check keeps its workers): a thread started per
/// read cost more than the read itself at n <= 512 and flattered check/read.
/// Workers poll for the next read for a short while, then sleep, as the
/// check's do, so both find their helpers equally awake after an sgemm.
class ReadPool {
 public:
  explicit ReadPool(int threads) : threads_(threads), part_(static_cast<std::size_t>(threads), 0.0) {
    for (int t = 1; t < threads; ++t) std::thread([this, t] { work(t); }).detach();
  }
  double read_once(const std::vector<const std::vector<float>*>& ms) {
    ms_ = &ms;
    left_.store(threads_ - 1, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    slice(0);
    while (left_.load(std::memory_order_acquire) != 0) {
    }
    double s = 0;
    for (double v : part_) s += v;
    return s;
  }

 private:
  void slice(int t) {
    double s = 0;
    for (const auto* m : *ms_) {
      const std::int64_t n = static_cast<std::int64_t>(m->size()), step = (n + threads_ - 1) / threads_;
      const std::int64_t b = std::min(n, t * step), e = std::min(n, (t + 1) * step);
      s += sum_floats(m->data() + b, e - b);
    }
    part_[static_cast<std::size_t>(t)] = s;
  }
  [[noreturn]] void work(int t) {
    unsigned seen = 0;
    for (;;) {
      unsigned now = gen_.load(std::memory_order_acquire);
      for (int spin = 0; now == seen; ++spin) {
        if (spin >= 500) gen_.wait(seen, std::memory_order_acquire);
        now = gen_.load(std::memory_order_acquire);
      }
      seen = now;
      slice(t);
      left_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  const int threads_;
  std::vector<double> part_;
  const std::vector<const std::vector<float>*>* ms_ = nullptr;
  std::atomic<unsigned> gen_{0};
  std::atomic<int> left_{0};
};

ReadPool& read_pool(int threads) {
  static ReadPool* p = new ReadPool(threads);  // never destroyed: its workers outlive main
  return *p;
}

double read_once(const std::vector<const std::vector<float>*>& ms, int threads) {
  return read_pool(threads).read_once(ms);
}

/// The full FP64-oracle check; returns the worst ratio.
double full_check(kc::bench::DgemmFn dgemm, std::int64_t n, const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& c) {
  const std::size_t nn = static_cast<std::size_t>(n * n);
  std::vector<double> ad(nn), bd(nn), aa(nn), ba(nn), ref(nn), mag(nn);
  for (std::size_t i = 0; i < nn; ++i) {
    ad[i] = a[i];
    bd[i] = b[i];
    aa[i] = std::fabs(ad[i]);
    ba[i] = std::fabs(bd[i]);
  }
  kc::bench::dgemm_rowmajor(dgemm, n, n, n, ad.data(), bd.data(), ref.data());
  kc::bench::dgemm_rowmajor(dgemm, n, n, n, aa.data(), ba.data(), mag.data());
  const double g = kc::gamma(static_cast<double>(n + 2), kc::DType::kF32), u = kc::unit_roundoff(kc::DType::kF32);
  double worst = 0;
  for (std::size_t i = 0; i < nn; ++i) worst = std::max(worst, std::fabs(c[i] - ref[i]) / (g * mag[i] + u * std::fabs(ref[i])));
  return worst;
}

/// One sgemm, timed. Every timed item runs alone right after one of these,
/// as a check would follow the GEMM it checks, so that all of them find the
/// caches and the guest in the same state (data the previous item read may
/// still be cached, which would favour whichever came second). OpenBLAS's
/// threads go to sleep right after the call (OPENBLAS_THREAD_TIMEOUT, set in
/// main) instead of spinning for ~2^28 cycles on the cores the next item needs.
/// An earlier version paused 250 ms instead: whatever ran first after the
/// pause ran up to 2x slower on this guest (docs/verify.md, "Cost").
double timed_gemm(const kc::backends::BlasLibrary& lib, std::int64_t n, std::vector<float>& a, std::vector<float>& b,
                  std::vector<float>& c) {
  const auto t0 = Clock::now();
  kc::bench::sgemm_rowmajor(lib, n, n, n, a.data(), b.data(), c.data());
  return seconds_since(t0);
}

/// The fast check at one n for several probe counts, interleaved run by run so
/// that every row sees the same machine (this guest's speed drifts within
/// seconds: docs/verify.md, "Cost"); every timed row, the read floor included,
/// runs alone right after its own sgemm. On a CPU with AVX-512 a row
/// times k = 10 on the 8-lane FP32 kernel the 16-lane one replaces. Besides the read floor, each row gets a
/// compute floor: the check's 2 (k + 1) flops per element of A, B and C at the
/// sgemm's own flop rate, i.e. t_sgemm * 3 (k + 1) / n — a floor when OpenBLAS
/// dispatches its best kernels for the CPU (the header names the core it picked;
/// OPENBLAS_CORETYPE overrides a misdetection, docs/verify.md).
void probe_counts(const kc::backends::BlasLibrary& lib, std::int64_t n, std::int64_t samples, int threads) {
  using kc::verify::detail::Fp32Kernel;
  const std::size_t nn = static_cast<std::size_t>(n * n);
  std::vector<float> a(nn), b(nn), c(nn);
  kc::bench::fill_uniform(a, 1 + static_cast<std::uint64_t>(n));
  kc::bench::fill_uniform(b, 2 + static_cast<std::uint64_t>(n));
  struct Row {
    int probes;  // 0: the read floor
    Fp32Kernel cap = Fp32Kernel::kAvx512;
    double best = 1e30;
    bool pass = true;
  };
  std::vector<Row> rows;
  for (int k : {1, 2, 3, 5, 10}) rows.push_back({k});
  const bool wide = kc::verify::detail::fp32_kernel() == Fp32Kernel::kAvx512;
  if (wide) rows.push_back({10, Fp32Kernel::kAvx2});
  rows.push_back({0});
  double t_gemm = 1e30;
  volatile double sink = 0;
  const int counts = static_cast<int>(rows.size()), runs = 6;
  kc::verify::GemmProblem p;
  p.m = p.n = p.k = n;
  p.a = {a.data(), n, n, n};
  p.b = {b.data(), n, n, n};
  p.c = {c.data(), n, n, n};
  for (int r = 0; r < runs; ++r) {
    for (int q = 0; q < counts; ++q) {
      Row& row = rows[static_cast<std::size_t>(q)];
      t_gemm = std::min(t_gemm, timed_gemm(lib, n, a, b, c));
      if (row.probes == 0) {
        const auto t0 = Clock::now();
        sink = sink + read_once({&a, &b, &c}, threads);
        row.best = std::min(row.best, seconds_since(t0));
        continue;
      }
      kc::verify::Options o;
      o.probes = row.probes;
      o.samples = samples;
      o.threads = threads;
      o.seed = static_cast<std::uint64_t>(r + 1);
      const Fp32Kernel saved = kc::verify::detail::cap_fp32_kernel(row.cap);
      const auto t0 = Clock::now();
      auto v = kc::verify::verify_gemm(p, o);
      row.best = std::min(row.best, seconds_since(t0));
      kc::verify::detail::cap_fp32_kernel(saved);
      row.pass = row.pass && v.ok() && v->pass;
    }
  }
  const double t_read = rows.back().best;
  std::printf("\nfast check at n = %lld by probe count k (best of %d, each row alone right after an sgemm; sgemm %.2f ms, "
              "read %.3f ms; + %lld sampled elements)\ncompute floor = the check's 2 (k + 1) flops per element of A, B, "
              "C at the sgemm's flop rate%s\n",
              static_cast<long long>(n), runs, t_gemm * 1e3, t_read * 1e3, static_cast<long long>(samples),
              wide ? "; 10 (8-lane): k = 10 on the AVX2 kernel instead of the AVX-512 one" : "");
  std::printf("%12s %10s %11s %11s %14s %16s\n", "k", "check ms", "check/gemm", "check/read", "compute floor",
              "check/max(floors)");
  for (const Row& row : rows) {
    if (row.probes == 0) continue;
    const double t_compute = t_gemm * 3.0 * (row.probes + 1) / static_cast<double>(n);
    const std::string label = std::to_string(row.probes) + (row.cap == Fp32Kernel::kAvx2 ? " (8-lane)" : "");
    std::printf("%12s %10.3f %10.2f%% %10.2fx %11.3f ms %15.2fx%s\n", label.c_str(), row.best * 1e3,
                100 * row.best / t_gemm, row.best / t_read, t_compute * 1e3, row.best / std::max(t_read, t_compute),
                row.pass ? "" : "  (FAILED an honest sgemm)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t min_n = 256, max_n = 4096;
  int probes = 10;
  std::int64_t samples = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--max-n") max_n = std::atoll(argv[i + 1]);
    else if (f == "--min-n") min_n = std::atoll(argv[i + 1]);
    else if (f == "--probes") probes = std::atoi(argv[i + 1]);
    else if (f == "--samples") samples = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: kc_bench_freivalds [--min-n N] [--max-n N] [--probes K] [--samples S]\n");
      return 2;
    }
  }
  // OpenBLAS reads this when it is loaded: its idle threads sleep after 2^4
  // cycles instead of spinning on the cores the check is timed on (timed_gemm).
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", /*overwrite=*/0);
  auto lib = kc::bench::open_openblas();
  if (!lib) return 1;
  auto dgemm = reinterpret_cast<kc::bench::DgemmFn>(lib->symbol("dgemm_"));
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  lib->set_threads(threads);
  std::printf("kc_bench_freivalds: OpenBLAS %s, %d threads; check = Freivalds k=%d Rademacher + %lld sampled elements\n",
              lib->version().c_str(), threads, probes, static_cast<long long>(samples));
  std::printf("times in ms, best of the runs shown; ratios are check time / sgemm time and check time / read time\n\n");
  std::printf("targets (fast): <= 10%% of the sgemm at n = 512, <= 3%% at 1024, <= 1.5x the read at n >= 2048\n\n");
  std::printf("%6s %4s %10s %8s %9s %10s %10s %8s | %10s %10s %8s %11s | %9s %9s | %s\n", "n", "runs", "sgemm",
              "GFLOP/s", "fast", "freivalds", "full", "read", "fast/gemm", "full/gemm", "frv/gemm", "floor/gemm",
              "fast/read", "frv/read", "target");
  std::int64_t last_n = 0;
  for (std::int64_t n = min_n; n <= max_n; n *= 2) {
    last_n = n;
    const std::size_t nn = static_cast<std::size_t>(n * n);
    std::vector<float> a(nn), b(nn), c(nn);
    kc::bench::fill_uniform(a, 1 + static_cast<std::uint64_t>(n));
    kc::bench::fill_uniform(b, 2 + static_cast<std::uint64_t>(n));
    const int runs = n <= 512 ? 25 : n <= 1024 ? 9 : 6;
    double t_gemm = 1e30, t_fast = 1e30, t_frv = 1e30, t_full = 1e30, t_read = 1e30;
    double fast_ratio = 0, full_ratio = 0;
    bool all_pass = true;
    volatile double sink = 0;
    kc::verify::GemmProblem p;
    p.m = p.n = p.k = n;
    p.a = {a.data(), n, n, n};
    p.b = {b.data(), n, n, n};
    p.c = {c.data(), n, n, n};
    for (int r = 0; r < runs; ++r) {
      // The fast check, its Freivalds part alone (no samples), the read: each after its own sgemm.
      for (int item = 0; item < 3; ++item) {
        t_gemm = std::min(t_gemm, timed_gemm(*lib, n, a, b, c));
        if (item == 2) {
          const auto t0 = Clock::now();
          sink = sink + read_once({&a, &b, &c}, threads);
          t_read = std::min(t_read, seconds_since(t0));
          continue;
        }
        kc::verify::Options o;
        o.probes = probes;
        o.samples = item == 0 ? samples : 0;
        o.threads = threads;
        o.seed = static_cast<std::uint64_t>(r + 1);
        const auto t0 = Clock::now();
        auto v = kc::verify::verify_gemm(p, o);
        double& best = item == 0 ? t_fast : t_frv;
        best = std::min(best, seconds_since(t0));
        if (!v.ok()) {
          std::fprintf(stderr, "verify failed: %s\n", v.status().to_string().c_str());
          return 1;
        }
        all_pass = all_pass && v->pass;
        if (item == 0) fast_ratio = std::max(fast_ratio, v->worst_ratio);
      }
    }
    // The full check costs several sgemms: one run is enough above 1024. Its
    // runs come after the others: between them, its FP64 arrays and dgemms
    // slowed the next round's first check (0.33 against 0.29 ms at n = 512
    // for the same check run first and second, one run with --samples 0).
    for (int r = 0; dgemm && r < (n <= 1024 ? runs : 1); ++r) {
      const auto t0 = Clock::now();
      full_ratio = std::max(full_ratio, full_check(dgemm, n, a, b, c));
      t_full = std::min(t_full, seconds_since(t0));
    }
    const double gflops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / t_gemm * 1e-9;
    // The compute floor as a share of the sgemm: the check's 2 (k + 1) flops per
    // element of A, B and C at the sgemm's own flop rate, 3 (k + 1) / n.
    const double floor_share = 3.0 * (probes + 1) / static_cast<double>(n);
    // The targets, on the fast check (samples included): <= 10% of the sgemm at
    // n = 512, <= 3% at 1024, <= 1.5x the read from 2048 on; none at 256.
    char target[64] = "-";
    if (n == 512 || n == 1024) {
      const double limit = n == 512 ? 10.0 : 3.0, got = 100 * t_fast / t_gemm;
      std::snprintf(target, sizeof target, "gemm<=%.0f%%: %s", limit, got <= limit ? "PASS" : "MISS");
    } else if (n >= 2048) {
      std::snprintf(target, sizeof target, "read<=1.5x: %s", t_fast / t_read <= 1.5 ? "PASS" : "MISS");
    }
    std::printf("%6lld %4d %10.2f %8.1f %9.3f %10.3f %10.1f %8.3f | %9.2f%% %9.2fx %7.2f%% %10.2f%% | %8.2fx %8.2fx | %s%s\n",
                static_cast<long long>(n), runs, t_gemm * 1e3, gflops, t_fast * 1e3, t_frv * 1e3, t_full * 1e3,
                t_read * 1e3, 100 * t_fast / t_gemm, t_full / t_gemm, 100 * t_frv / t_gemm, 100 * floor_share,
                t_fast / t_read, t_frv / t_read, target, all_pass ? "" : "  (fast check FAILED an honest sgemm)");
    std::fflush(stdout);
    (void)fast_ratio;
    (void)full_ratio;
  }
  if (last_n > 0) probe_counts(*lib, last_n, samples, threads);
  return 0;
}
