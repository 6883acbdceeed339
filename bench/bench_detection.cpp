// kc_bench_detection: the detection power of kc::verify, measured.
//
//   1. Single corrupted element: C_ij += +-f T_i for f in {0.1, 0.5, 1, 1.5, 3, 10},
//      where T_i is the Freivalds bound of row i (docs/verify.md: the
//      "tolerance" of the fast check). Honest C from OpenBLAS sgemm.
//   2. Precision coercion: tf32, bf16 and fp16 inputs (rounded, then an FP32
//      sgemm), and fp16 accumulation (every partial sum rounded to fp16).
//   3. False positives: honest FP32 impls from kc's backend registry on random
//      shapes (M, N, K in [1, 2n], random transposes, beta in {0, 0.5}).
// Rates are over --trials independent draws (inputs, probes, samples).
//
// usage: kc_bench_detection [--n N] [--trials T] [--model worst_case|probabilistic]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
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

void print_row(const std::string& label, const Counts& c, int trials) {
  std::printf("  %-26s %7.1f%% %10.1f%% %9.1f%%   %9.3g %9.3g\n", label.c_str(), 100.0 * c.detected / trials,
              100.0 * c.by_freivalds / trials, 100.0 * c.by_sampled / trials, c.min_ratio, c.max_ratio);
}

float round_f(float v, kc::DType t) { return static_cast<float>(kc::round_to(v, t)); }

/// C = A B with every partial sum rounded to fp16 (k innermost).
void gemm_fp16_accumulator(std::int64_t n, const std::vector<float>& a, const std::vector<float>& b,
                           std::vector<float>& c) {
  std::vector<float> bt(b.size());
  for (std::int64_t k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < n; ++j) bt[j * n + k] = b[k * n + j];
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t k = 0; k < n; ++k) acc = kc::f16_bits_to_f32(kc::f32_to_f16_bits(acc + a[i * n + k] * bt[j * n + k]));
      c[i * n + j] = acc;
    }
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 128;
  int trials = 500;
  kc::verify::ErrorModel model = kc::verify::ErrorModel::kWorstCase;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--n") n = std::atoll(argv[i + 1]);
    else if (f == "--trials") trials = std::atoi(argv[i + 1]);
    else if (f == "--model" && kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]))
      model = *kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: kc_bench_detection [--n N] [--trials T] [--model worst_case|probabilistic]\n");
      return 2;
    }
  }
  auto lib = kc::bench::open_openblas();
  if (!lib) return 1;
  Options base;
  base.probes = 10;
  base.samples = 64;
  base.model = model;
  base.threads = 1;
  const std::size_t nn = static_cast<std::size_t>(n * n);
  std::printf("kc_bench_detection: n = %lld (square, normal(0,1) inputs), %d trials per row, "
              "Freivalds k = %d Rademacher + %lld sampled elements, model %s (gamma = %.3g)\n\n",
              static_cast<long long>(n), trials, base.probes, static_cast<long long>(base.samples),
              std::string(kc::enum_name(kc::verify::error_model_table(), model)).c_str(),
              kc::verify::model_gamma(model, static_cast<double>(n + 2), kc::DType::kF32, base.lambda));
  std::printf("  %-26s %8s %11s %10s   %9s %9s\n", "case", "detected", "freivalds", "sampled", "min ratio",
              "max ratio");

  // 1 + 2: per trial, one input draw, an honest sgemm and its corruptions/coercions.
  const double factors[] = {0.1, 0.5, 1, 1.5, 3, 10};
  const char* coercion_names[] = {"coercion tf32 inputs", "coercion bf16 inputs", "coercion fp16 inputs",
                                  "coercion fp16 accumulator"};
  Counts corrupt[6], coerce[4], honest;
  std::vector<float> a(nn), b(nn), c(nn), bad(nn), ar(nn), br(nn);
  kc::Rng rng(0x6465746563ull);
  for (int t = 0; t < trials; ++t) {
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
    honest.add(*h);
    o.keep_row_bounds = false;
    for (int f = 0; f < 6; ++f) {
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
    for (int co = 0; co < 4; ++co) {
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
  for (int co = 0; co < 4; ++co) print_row(coercion_names[co], coerce[co], trials);
  std::printf("  %-26s %7.1f%% %10.1f%% %9.1f%%   %9.3g %9.3g   (false-positive rate)\n", "honest openblas sgemm",
              100.0 * honest.detected / trials, 100.0 * honest.by_freivalds / trials,
              100.0 * honest.by_sampled / trials, honest.min_ratio, honest.max_ratio);

  // 3: false positives of honest registry impls on random shapes.
  std::printf("\nfalse positives on honest impls, random shapes M, N, K in [1, %lld], random transposes, "
              "beta in {0, 0.5}, %d trials each:\n",
              static_cast<long long>(2 * n), trials);
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
    for (int t = 0; t < trials; ++t) {
      kc::Config config;
      config.params = {{"M", std::to_string(srng.uniform_int(1, 2 * n))},
                       {"N", std::to_string(srng.uniform_int(1, 2 * n))},
                       {"K", std::to_string(srng.uniform_int(1, 2 * n))},
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
