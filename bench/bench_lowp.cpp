// kc_bench_lowp: kc::verify on low-precision GEMMs, measured (docs/verify.md,
// "Low-precision inputs").
//
// Each configuration is an input format (bf16, fp16, fp8 E4M3, fp8 E5M2), a
// declared accumulator (FP32, FP16, BF16) and an output format. Inputs are
// normal(0, 1) draws rounded to the input format; they are the exact inputs.
// An honest GEMM really accumulates in the declared format: with FP32, the
// OpenBLAS sgemm of the stored values (products exact in FP32, FP32 sums),
// then one rounding to the output format; with FP16 or BF16, an emulation
// that rounds every partial sum once to that format (checked bit for bit
// against kc::round_to at start).
//
//   1. Detection, per configuration, at n x n x n (--n, default 128), every
//      row over --trials independent draws (default 500):
//        elem f x T_i   one element moved by f times its row's Freivalds bound T_i
//        row  f x T_i/N every element of one row moved by f T_i / N (random
//                       signs): f times the row's mean per-element tolerance
//        sum in bf16 / fp16 (coerced): the running sum rounded to a format
//                       narrower than the declared one
//        honest         the false-positive row: 0 flagged is required (the
//                       bench exits 1 otherwise)
//      for f in {0.5, 1, 2, 5, 10}. Corrupted values are left as floats (not
//      rounded to the output format).
//   2. Headroom of an honest GEMM, per configuration and K (--ks, default
//      256,1024,4096) at M = N = --tight-n (default 128), --tight-trials draws
//      each (default 10), in both error models: how far the threshold is above
//      the error the honest GEMM really made, at the row or element where it is
//      closest. Freivalds: T_i / |r_i| (the probe residual, the checksum
//      methods' "threshold over honest residual"); elementwise: t_ij /
//      |C_hat_ij - C_ij| over every element (the sampled check run on all M N
//      elements; its FP64 reference is within gamma_(K+2)(u_64) |A||B| of the
//      exact product, included in t_ij).
//
// usage: kc_bench_lowp [--n N] [--trials T] [--model worst_case|probabilistic]
//                      [--ks K1,K2,...] [--tight-n N] [--tight-trials T]
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kc/bound.h"
#include "kc/dtype.h"
#include "kc/rng.h"
#include "kc/verify.h"

namespace {

using kc::DType;
using kc::verify::ErrorModel;
using kc::verify::Options;

struct Config {
  const char* label;
  DType in, acc, out;
};

const Config kConfigs[] = {
    {"bf16 in, FP32 acc, bf16 out", DType::kBF16, DType::kF32, DType::kBF16},
    {"bf16 in, FP32 acc, FP32 out", DType::kBF16, DType::kF32, DType::kF32},
    {"fp16 in, FP32 acc, fp16 out", DType::kF16, DType::kF32, DType::kF16},
    {"e4m3 in, FP32 acc, bf16 out", DType::kFP8E4M3, DType::kF32, DType::kBF16},
    {"e5m2 in, FP32 acc, bf16 out", DType::kFP8E5M2, DType::kF32, DType::kBF16},
    {"fp16 in, FP16 acc, fp16 out", DType::kF16, DType::kF16, DType::kF16},
    {"bf16 in, BF16 acc, bf16 out", DType::kBF16, DType::kBF16, DType::kBF16},
};

/// x rounded once to t (bf16 or fp16): the significand cut with
/// round-to-nearest-even in the double's bits where x is in t's normal range,
/// kc::round_to elsewhere (subnormals, overflow). Bit for bit kc::round_to.
double round_fast(double x, DType t) {
  const kc::DTypeInfo& info = kc::dtype_info(t);
  const double ax = std::fabs(x);
  if (!(ax >= info.min_normal && ax <= info.max_finite)) return kc::round_to(x, t);
  const int drop = 52 - info.mantissa_bits;
  std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  bits += (std::uint64_t{1} << (drop - 1)) - 1 + ((bits >> drop) & 1);
  bits &= ~((std::uint64_t{1} << drop) - 1);
  const double r = std::bit_cast<double>(bits);
  return std::fabs(r) > info.max_finite ? kc::round_to(x, t) : r;
}

/// The exact a + b rounded once to t: its FP64 sum s and the sum's error e
/// (TwoSum). Rounding s is rounding a + b unless s lies exactly halfway between
/// two values of t and e is not zero: then e says which side a + b is on.
double add_round(double a, double b, DType t) {
  const double s = a + b, bb = s - a, e = (a - (s - bb)) + (b - bb);
  if (t == DType::kF64) return s;
  const double r = round_fast(s, t);
  if (e == 0 || r == s) return r;
  const double other = s + (s - r);  // the other neighbour of s in t when s is halfway
  if (round_fast(other, t) != other) return r;
  return e > 0 ? std::max(r, other) : std::min(r, other);
}

/// round_fast against kc::round_to on values around t's ties, subnormals and range
/// ends; add_round on ties with a term below the FP64 sum's last place.
bool rounding_matches(DType t) {
  kc::Rng rng(0x726f756e64ull);
  const kc::DTypeInfo& info = kc::dtype_info(t);
  for (int i = 0; i < 2000000; ++i) {
    const double e = std::ldexp(1.0, static_cast<int>(rng.uniform_int(-30, 20)));
    double x = rng.normal() * e;
    if (i % 4 == 1) x = info.max_finite * (1 + 0.01 * rng.normal());
    if (i % 4 == 2) x = info.min_normal * rng.uniform() * 2;
    if (i % 4 == 3) {  // a tie, or one FP64 step off it
      const double v = kc::round_to(x, t), half = std::ldexp(1.0, std::ilogb(v) - info.mantissa_bits - 1);
      x = std::nextafter(v + half, i % 8 == 3 ? INFINITY : (i % 16 == 7 ? -INFINITY : v + half));
    }
    const double a = round_fast(x, t), b = kc::round_to(x, t);
    if (std::bit_cast<std::uint64_t>(a) != std::bit_cast<std::uint64_t>(b)) {
      std::fprintf(stderr, "kc_bench_lowp: round_fast(%a, %s) = %a, kc::round_to %a\n", x,
                   std::string(kc::dtype_name(t)).c_str(), a, b);
      return false;
    }
  }
  // add_round's tie rule: a value halfway between two of t's, plus a term too
  // small to change its FP64 sum, rounds toward that term's side.
  for (int i = 0; i < 100000; ++i) {
    const double v = kc::round_to(rng.normal(), t);
    if (v == 0) continue;
    const double half = std::ldexp(1.0, std::ilogb(v) - info.mantissa_bits - 1), tie = v + half;
    const double tiny = (i % 2 ? 1 : -1) * std::ldexp(std::fabs(tie), -60);
    const double got = add_round(tie, tiny, t);
    const double want = kc::round_to(std::nextafter(tie, tiny > 0 ? INFINITY : -INFINITY), t);
    if (tie + tiny != tie || got != want) {
      std::fprintf(stderr, "kc_bench_lowp: add_round(%a, %a, %s) = %a, expected %a\n", tie, tiny,
                   std::string(kc::dtype_name(t)).c_str(), got, want);
      return false;
    }
  }
  return true;
}

struct Problem {
  std::int64_t m, n, k;
  std::vector<float> a, b, c;
};

void draw(Problem& p, DType in, kc::Rng& rng) {
  p.a.resize(static_cast<std::size_t>(p.m * p.k));
  p.b.resize(static_cast<std::size_t>(p.k * p.n));
  for (auto& v : p.a) v = static_cast<float>(kc::round_to(rng.normal(), in));
  for (auto& v : p.b) v = static_cast<float>(kc::round_to(rng.normal(), in));
}

/// C = A B with every partial sum rounded once to `running` (products formed in
/// FP32, exact for these inputs but for underflow), then once to `out`.
void gemm_emulated(const Problem& p, DType running, DType out, std::vector<float>& c) {
  c.assign(static_cast<std::size_t>(p.m * p.n), 0.0f);
  std::vector<double> acc(static_cast<std::size_t>(p.n));
  for (std::int64_t i = 0; i < p.m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (std::int64_t k = 0; k < p.k; ++k) {
      const float a = p.a[static_cast<std::size_t>(i * p.k + k)];
      const float* b = p.b.data() + k * p.n;
      for (std::int64_t j = 0; j < p.n; ++j) acc[j] = add_round(acc[j], static_cast<double>(a * b[j]), running);
    }
    for (std::int64_t j = 0; j < p.n; ++j) c[static_cast<std::size_t>(i * p.n + j)] = static_cast<float>(kc::round_to(acc[j], out));
  }
}

/// The honest GEMM of a configuration.
void gemm_honest(const kc::backends::BlasLibrary& lib, const Problem& p, const Config& cf, std::vector<float>& c) {
  if (cf.acc != DType::kF32) {
    gemm_emulated(p, cf.acc, cf.out, c);
    return;
  }
  c.resize(static_cast<std::size_t>(p.m * p.n));
  kc::bench::sgemm_rowmajor(lib, p.m, p.n, p.k, p.a.data(), p.b.data(), c.data());
  for (auto& v : c) v = static_cast<float>(kc::round_to(v, cf.out));
}

kc::verify::GemmProblem gemm_problem(const Problem& p, const std::vector<float>& c) {
  kc::verify::GemmProblem g;
  g.m = p.m, g.n = p.n, g.k = p.k;
  g.a = {p.a.data(), p.m, p.k, p.k};
  g.b = {p.b.data(), p.k, p.n, p.n};
  g.c = {c.data(), p.m, p.n, p.n};
  return g;
}

Options options_for(const Config& cf, ErrorModel model) {
  Options o;
  o.probes = 10;
  o.samples = 64;
  o.model = model;
  o.threads = 1;
  o.precision = cf.in;
  o.accumulator = cf.acc;
  o.output = cf.out;
  return o;
}

struct Counts {
  int trials = 0, detected = 0, by_freivalds = 0, by_sampled = 0;
  double min_ratio = 1e300, max_ratio = 0;
  void add(const kc::verify::Result& r) {
    ++trials;
    if (!r.pass) ++detected;
    if (r.freivalds_ratio > 1) ++by_freivalds;
    if (r.sample_ratio > 1) ++by_sampled;
    min_ratio = std::min(min_ratio, r.worst_ratio);
    max_ratio = std::max(max_ratio, r.worst_ratio);
  }
};

void print_row(const std::string& label, const Counts& c, const char* note = "") {
  if (c.trials == 0) return;
  std::printf("    %-24s %6d %7.1f%% %10.1f%% %9.1f%%   %9.3g %9.3g%s\n", label.c_str(), c.trials,
              100.0 * c.detected / c.trials, 100.0 * c.by_freivalds / c.trials, 100.0 * c.by_sampled / c.trials,
              c.min_ratio, c.max_ratio, note);
}

double unit(DType t) { return kc::unit_roundoff(t); }

/// Section 1 for one configuration; returns the honest trials flagged.
int detection(const kc::backends::BlasLibrary& lib, const Config& cf, std::int64_t n, int trials, ErrorModel model) {
  const double g =
      kc::verify::model_gamma(model, kc::verify::gemm_rounding_count(static_cast<double>(n), cf.in, cf.acc), cf.acc, 6);
  std::printf("\n  %s (u_acc = 2^%d, u_out = 2^%d, g = %.3g)\n", cf.label, std::ilogb(unit(cf.acc)),
              std::ilogb(unit(cf.out)), g);
  if (!(g < 1)) {
    std::printf("    no bound in this model: gamma >= 1 at K = %lld\n", static_cast<long long>(n));
    return 0;
  }
  const double factors[] = {0.5, 1, 2, 5, 10};
  Counts elem[5], row[5], coerced[2], honest;
  std::vector<DType> narrower;  // running-sum formats narrower than the declared accumulator
  for (DType t : {DType::kF16, DType::kBF16})
    if (unit(t) > unit(cf.acc)) narrower.push_back(t);
  Problem p{n, n, n, {}, {}, {}};
  std::vector<float> bad;
  kc::Rng rng(kc::derive_seed(0x6c6f7770ull, static_cast<std::uint64_t>(cf.in) * 16 + static_cast<std::uint64_t>(cf.acc)));
  for (int t = 0; t < trials; ++t) {
    draw(p, cf.in, rng);
    gemm_honest(lib, p, cf, p.c);
    Options o = options_for(cf, model);
    o.seed = kc::derive_seed(0x6b63, static_cast<std::uint64_t>(t));
    o.keep_row_bounds = true;
    auto h = kc::verify::verify_gemm(gemm_problem(p, p.c), o);
    if (!h.ok()) {
      std::fprintf(stderr, "verify: %s\n", h.status().to_string().c_str());
      std::exit(1);
    }
    honest.add(*h);
    o.keep_row_bounds = false;
    for (int f = 0; f < 5; ++f) {
      for (int kind = 0; kind < 2; ++kind) {
        bad = p.c;
        const std::int64_t i = rng.uniform_int(0, n - 1);
        const double ti = h->row_bounds[static_cast<std::size_t>(i)];
        if (kind == 0) {
          const std::int64_t j = rng.uniform_int(0, n - 1);
          bad[static_cast<std::size_t>(i * n + j)] += static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) * factors[f] * ti);
        } else {
          for (std::int64_t j = 0; j < n; ++j)
            bad[static_cast<std::size_t>(i * n + j)] +=
                static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) * factors[f] * ti / static_cast<double>(n));
        }
        o.seed = kc::derive_seed(0x6b63 + 1 + static_cast<std::uint64_t>(2 * f + kind), static_cast<std::uint64_t>(t));
        auto r = kc::verify::verify_gemm(gemm_problem(p, bad), o);
        if (!r.ok()) std::exit(1);
        (kind == 0 ? elem : row)[f].add(*r);
      }
    }
    for (std::size_t c = 0; c < narrower.size(); ++c) {
      gemm_emulated(p, narrower[c], cf.out, bad);
      o.seed = kc::derive_seed(0x6b63 + 20 + c, static_cast<std::uint64_t>(t));
      auto r = kc::verify::verify_gemm(gemm_problem(p, bad), o);
      if (!r.ok()) std::exit(1);
      coerced[c].add(*r);
    }
  }
  std::printf("    %-24s %6s %8s %11s %10s   %9s %9s\n", "case", "trials", "detected", "freivalds", "sampled",
              "min ratio", "max ratio");
  char label[64];
  for (int f = 0; f < 5; ++f) {
    std::snprintf(label, sizeof label, "elem %.1fx T_i", factors[f]);
    print_row(label, elem[f]);
  }
  for (int f = 0; f < 5; ++f) {
    std::snprintf(label, sizeof label, "row  %.1fx T_i/N each", factors[f]);
    print_row(label, row[f]);
  }
  for (std::size_t c = 0; c < narrower.size(); ++c)
    print_row("sum in " + std::string(kc::dtype_name(narrower[c])) + " (coerced)", coerced[c]);
  print_row("honest", honest, honest.detected == 0 ? "   (false positives: none)" : "   FALSE POSITIVES");
  return honest.detected;
}

/// Section 2: min and max over the draws of 1 / ratio, for one model.
struct Headroom {
  double frv_min = 1e300, frv_max = 0, elem_min = 1e300, elem_max = 0;
  bool bound = true;
};

Headroom headroom(const Config& cf, std::int64_t mn, std::int64_t k,
                  int trials, ErrorModel model, std::vector<Problem>& draws) {
  Headroom h;
  const double g =
      kc::verify::model_gamma(model, kc::verify::gemm_rounding_count(static_cast<double>(k), cf.in, cf.acc), cf.acc, 6);
  if (!(g < 1)) {
    h.bound = false;
    return h;
  }
  for (int t = 0; t < trials; ++t) {
    Problem& p = draws[static_cast<std::size_t>(t)];
    Options o = options_for(cf, model);
    o.samples = mn * mn;  // every element
    o.seed = kc::derive_seed(0x7469676874ull, static_cast<std::uint64_t>(t));
    auto r = kc::verify::verify_gemm(gemm_problem(p, p.c), o);
    if (!r.ok()) {
      std::fprintf(stderr, "verify: %s\n", r.status().to_string().c_str());
      std::exit(1);
    }
    if (!r->pass) std::printf("    (an honest GEMM was flagged: %s)\n", r->detail.c_str());
    h.frv_min = std::min(h.frv_min, 1 / r->freivalds_ratio);
    h.frv_max = std::max(h.frv_max, 1 / r->freivalds_ratio);
    h.elem_min = std::min(h.elem_min, 1 / r->sample_ratio);
    h.elem_max = std::max(h.elem_max, 1 / r->sample_ratio);
  }
  return h;
}

std::string span(double lo, double hi) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g-%.3g", lo, hi);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: kc_bench_lowp [--n N] [--trials T] [--model worst_case|probabilistic] [--ks K1,K2,...]\n"
      "                     [--tight-n N] [--tight-trials T]\n";
  std::int64_t n = 128, tight_n = 128;
  int trials = 500, tight_trials = 10;
  std::vector<std::int64_t> ks = {256, 1024, 4096};
  ErrorModel model = ErrorModel::kWorstCase;
  if (argc % 2 == 0) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--n") n = std::atoll(argv[i + 1]);
    else if (f == "--trials") trials = std::atoi(argv[i + 1]);
    else if (f == "--tight-n") tight_n = std::atoll(argv[i + 1]);
    else if (f == "--tight-trials") tight_trials = std::atoi(argv[i + 1]);
    else if (f == "--model" && kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]))
      model = *kc::enum_parse(kc::verify::error_model_table(), argv[i + 1]);
    else if (f == "--ks") {
      ks.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string item; std::getline(ss, item, ',');) ks.push_back(std::atoll(item.c_str()));
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  if (n < 1 || tight_n < 1 || trials < 0 || tight_trials < 0 || ks.empty() ||
      std::any_of(ks.begin(), ks.end(), [](std::int64_t k) { return k < 1; })) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  for (DType t : {DType::kF16, DType::kBF16})
    if (!rounding_matches(t)) return 1;
  auto lib = kc::bench::open_openblas();
  if (!lib) return 1;
  lib->set_threads(1);

  int false_positives = 0;
  if (trials > 0) {
    std::printf("kc_bench_lowp: detection at n = %lld, %d trials per row, Freivalds k = 10 Rademacher + 64 sampled "
                "elements, model %s; inputs normal(0,1) rounded to the input format\n",
                static_cast<long long>(n), trials,
                std::string(kc::enum_name(kc::verify::error_model_table(), model)).c_str());
    for (const Config& cf : kConfigs) false_positives += detection(*lib, cf, n, trials, model);
  }

  if (tight_trials > 0) {
    std::printf("\nheadroom of honest GEMMs: threshold / error where they are closest (min-max over %d draws), "
                "M = N = %lld; every element judged for the elementwise figure\n",
                tight_trials, static_cast<long long>(tight_n));
    std::printf("  %-28s %6s | %-29s | %-29s\n", "", "", "worst case", "probabilistic (lambda = 6)");
    std::printf("  %-28s %6s | %14s %14s | %14s %14s\n", "configuration", "K", "T_i/|r_i|", "t_ij/|e_ij|",
                "T_i/|r_i|", "t_ij/|e_ij|");
    for (const Config& cf : kConfigs) {
      for (std::int64_t k : ks) {
        std::vector<Problem> draws(static_cast<std::size_t>(tight_trials));
        kc::Rng rng(kc::derive_seed(0x7469676874ull, static_cast<std::uint64_t>(k)));
        for (auto& p : draws) {
          p.m = p.n = tight_n;
          p.k = k;
          draw(p, cf.in, rng);
          gemm_honest(*lib, p, cf, p.c);
        }
        const Headroom w = headroom(cf, tight_n, k, tight_trials, ErrorModel::kWorstCase, draws);
        const Headroom q = headroom(cf, tight_n, k, tight_trials, ErrorModel::kProbabilistic, draws);
        auto cell = [](const Headroom& h, bool frv) {
          return h.bound ? (frv ? span(h.frv_min, h.frv_max) : span(h.elem_min, h.elem_max)) : std::string("no bound");
        };
        std::printf("  %-28s %6lld | %14s %14s | %14s %14s\n", cf.label, static_cast<long long>(k), cell(w, true).c_str(),
                    cell(w, false).c_str(), cell(q, true).c_str(), cell(q, false).c_str());
        std::fflush(stdout);
        for (const Headroom* h : {&w, &q})
          if (h->bound && (h->frv_min < 1 || h->elem_min < 1)) ++false_positives;
      }
    }
  }
  if (false_positives > 0) {
    std::printf("\n%d honest configurations or trials flagged: FALSE POSITIVES\n", false_positives);
    return 1;
  }
  return 0;
}
