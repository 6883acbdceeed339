// kc — Freivalds verification of a GEMM with a derived componentwise bound,
// plus a sampled exact check (include/kc/verify.h, docs/verify.md).
//
// Error model (Higham, Accuracy and Stability, §3.5). With E = C_hat - C*,
// C* = alpha op(A) op(B) + beta C0 and m = |alpha||op(A)||op(B)| + |beta||C0|,
// the kernel promises |E| <= (g m + u |C_hat|) / (1 - u) elementwise, where
// g = gamma_(K+2)(u) (or its probabilistic counterpart) and u |C*| is the
// final rounding into the output format, u |C*| <= u (|C_hat| + |E|).
// For a probe x:
//   |(C_hat x - C* x)_i| = |sum_j E_ij x_j| <= sum_j |E_ij||x_j|
//                        <= (g (m|x|)_i + u (|C_hat||x|)_i) / (1 - u)
// and (m|x|) = |alpha| |op(A)|(|op(B)||x|) + |beta| |C0||x| costs two more
// thin products, done in the same pass over A and B as the signed ones.
// The check computes in FP64; its own rounding adds gamma_(N+K+4)(u_d) times
// the same magnitudes (every term it sums is bounded by them), and the
// computed magnitudes, themselves rounded, are scaled up by (1 + that).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "kc/rng.h"
#include "kc/verify.h"

namespace kc::verify {

namespace {

constexpr std::array<EnumEntry<ProbeKind>, 2> kProbeKinds{{
    {ProbeKind::kRademacher, "rademacher", "entries +-1: |x| = 1, so the bound terms are one product"},
    {ProbeKind::kGaussian, "gaussian", "entries standard normal"},
}};
constexpr std::array<EnumEntry<ErrorModel>, 2> kModels{{
    {ErrorModel::kWorstCase, "worst_case", "gamma_(K+2)(u): Higham's deterministic componentwise bound"},
    {ErrorModel::kProbabilistic, "probabilistic",
     "exp(lambda sqrt(K+2) u + (K+2) u^2/(1-u)) - 1: Higham & Mary 2019, independent mean-zero roundings"},
}};
constexpr std::array<EnumEntry<Method>, 4> kMethods{{
    {Method::kFreivalds, "freivalds", "k random probes, residual against a derived per-row bound"},
    {Method::kSampled, "sampled", "sampled output elements against an FP64 dot product"},
    {Method::kFreivaldsAndSampled, "freivalds+sampled", "both fast checks"},
    {Method::kFullOracle, "full_oracle", "every output element against the FP64 oracle"},
}};

// Four doubles; GCC lowers it to two SSE2 registers in the default clone and
// to one AVX register in the AVX2 + FMA build. The module builds with
// -ffp-contract=fast so that clone fuses x * y + a: the FP64 bound of the
// check covers fused and unfused products alike.
typedef double V4 __attribute__((vector_size(32)));

constexpr std::int64_t kBlock = 512;  // row chunk converted to double once (4 KiB per array)
constexpr int kMaxVectors = 64;       // signed + abs probe vectors in one pass

/// acc[r][p] += sum_j bufs[r][j] vs[p][j] over j < len4 (a multiple of 4):
/// an R x P register tile, so each load of a probe chunk feeds R rows and each
/// load of a row chunk feeds P probes.
template <int R, int P>
[[gnu::always_inline]] inline void tile(const double* const* bufs, const double* const* vs, std::int64_t len4,
                                        V4* acc, int ldacc) {
  V4 a[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) a[r][p] = acc[r * ldacc + p];
  for (std::int64_t j = 0; j < len4; j += 4) {
    V4 x[R], y[P];
    for (int r = 0; r < R; ++r) std::memcpy(&x[r], bufs[r] + j, sizeof(V4));
    for (int p = 0; p < P; ++p) std::memcpy(&y[p], vs[p] + j, sizeof(V4));
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) a[r][p] += x[r] * y[p];
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r * ldacc + p] = a[r][p];
}

/// Runs tile<R, *> over np vectors, two at a time.
template <int R>
[[gnu::always_inline]] inline void tiles(const double* const* bufs, const double* const* vs, int np,
                                         std::int64_t len4, V4* acc, int ldacc) {
  int p = 0;
  for (; p + 2 <= np; p += 2) tile<R, 2>(bufs, vs + p, len4, acc + p, ldacc);
  if (np - p == 1) tile<R, 1>(bufs, vs + p, len4, acc + p, ldacc);
}

/// For R stored rows: out[r][p] = sum_j row_r[j] v[p][j] for p < nv, and
/// abs_out[r][q] = sum_j |row_r[j]| w[q][j] for q < na. Vectors are stored
/// with stride ldv. Each dot is a sum of four interleaved partial sums, in
/// blocks: a reordering the FP64 bound already covers.
template <int R>
[[gnu::always_inline]] inline void row_dots_impl(const float* const* rows, std::int64_t n, const double* v, int nv,
                                                 const double* w, int na, std::int64_t ldv, double* out,
                                                 double* abs_out) {
  V4 acc[R * kMaxVectors];
  for (int i = 0; i < R * kMaxVectors; ++i) acc[i] = V4{0, 0, 0, 0};
  // Rows of the buffers are kBlock + 24 doubles apart: power-of-two strides
  // make the row loads alias in the L1 (4 KiB aliasing) and stall the stores.
  alignas(32) double buf[R][kBlock + 24];
  alignas(32) double abuf[R][kBlock + 40];
  const double* bp[R];
  const double* abp[R];
  const double* vp[kMaxVectors];
  for (int r = 0; r < R; ++r) {
    bp[r] = buf[r];
    abp[r] = abuf[r];
  }
  double tail[R][kMaxVectors] = {};
  for (std::int64_t j0 = 0; j0 < n; j0 += kBlock) {
    const std::int64_t len = std::min(kBlock, n - j0);
    const std::int64_t len4 = len & ~std::int64_t{3};
    for (int r = 0; r < R; ++r)
      for (std::int64_t j = 0; j < len; ++j) {
        buf[r][j] = static_cast<double>(rows[r][j0 + j]);
        abuf[r][j] = std::fabs(buf[r][j]);
      }
    for (int p = 0; p < nv; ++p) vp[p] = v + p * ldv + j0;
    for (int q = 0; q < na; ++q) vp[nv + q] = w + q * ldv + j0;
    tiles<R>(bp, vp, nv, len4, acc, kMaxVectors);
    tiles<R>(abp, vp + nv, na, len4, acc + nv, kMaxVectors);
    for (int r = 0; r < R; ++r)
      for (std::int64_t j = len4; j < len; ++j) {
        for (int p = 0; p < nv; ++p) tail[r][p] += buf[r][j] * vp[p][j];
        for (int q = 0; q < na; ++q) tail[r][nv + q] += abuf[r][j] * vp[nv + q][j];
      }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < nv + na; ++p) {
      const V4& a = acc[r * kMaxVectors + p];
      const double s = ((a[0] + a[1]) + (a[2] + a[3])) + tail[r][p];
      if (p < nv) out[r * kMaxVectors + p] = s;
      else abs_out[r * kMaxVectors + p - nv] = s;
    }
  }
}

/// row_dots_impl (one row per call; see thin_product), compiled for AVX2 + FMA and for the
/// x86-64 baseline, picked at run time (arch= clones would key on the CPU
/// model name, which misses AMD parts with the same instructions).
#define KC_ROW_DOTS_BODY                                                          \
  (void)nrows;                                                                \
  row_dots_impl<1>(rows, n, v, nv, w, na, ldv, out, abs_out);
using RowDotsFn = void (*)(const float* const*, int, std::int64_t, const double*, int, const double*, int,
                           std::int64_t, double*, double*);
__attribute__((target("avx2,fma"))) void row_dots_avx2(const float* const* rows, int nrows, std::int64_t n,
                                                      const double* v, int nv, const double* w, int na,
                                                      std::int64_t ldv, double* out, double* abs_out) {
  KC_ROW_DOTS_BODY
}
void row_dots_base(const float* const* rows, int nrows, std::int64_t n, const double* v, int nv, const double* w,
                   int na, std::int64_t ldv, double* out, double* abs_out) {
  KC_ROW_DOTS_BODY
}
#undef KC_ROW_DOTS_BODY

RowDotsFn pick_row_dots() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return row_dots_avx2;
#endif
  return row_dots_base;
}
const RowDotsFn row_dots = pick_row_dots();

/// y[p][c] += row[c] * s[p], |y|: ya[q][c] += |row[c]| * sa[q] for c in [c0, c1).
void row_axpys(const float* row, std::int64_t c0,
                                                                  std::int64_t c1, const double* s,
                                                                  int nv, const double* sa, int na,
                                                                  double* y, double* ya,
                                                                  std::int64_t ldy) {
  for (std::int64_t c = c0; c < c1; ++c) {
    const double x = static_cast<double>(row[c]);
    const double ax = std::fabs(x);
    for (int p = 0; p < nv; ++p) y[p * ldy + c] += x * s[p];
    for (int q = 0; q < na; ++q) ya[q * ldy + c] += ax * sa[q];
  }
}

/// Runs body(begin, end) over [0, n) split across threads.
template <typename F>
void parallel_for(std::int64_t n, int threads, F body) {
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n / 64)));
  if (threads <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::int64_t step = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    const std::int64_t b = std::min(n, t * step), e = std::min(n, (t + 1) * step);
    pool.emplace_back([&body, b, e] { body(b, e); });
  }
  body(std::int64_t{0}, std::min(n, step));
  for (auto& th : pool) th.join();
}

/// The thin products of one operand with the probe vectors. For the stored
/// matrix M (rows x cols) and its use op(M) = M (transposed false) or M^T:
/// out[p] = op(M) v[p] and abs_out[q] = |op(M)| w[q], vectors of length
/// op(M)'s column count, outputs of its row count, all p-major.
void thin_product(const MatrixRef& m, bool transposed, const std::vector<double>& v, int nv,
                  const std::vector<double>& w, int na, int threads, std::vector<double>* out,
                  std::vector<double>* abs_out) {
  const std::int64_t out_len = transposed ? m.cols : m.rows;
  const std::int64_t in_len = transposed ? m.rows : m.cols;
  out->assign(static_cast<std::size_t>(nv * out_len), 0.0);
  abs_out->assign(static_cast<std::size_t>(na * out_len), 0.0);
  if (!transposed) {
    parallel_for(m.rows, threads, [&](std::int64_t b, std::int64_t e) {
      double o[4 * kMaxVectors], oa[4 * kMaxVectors];
      for (std::int64_t r = b; r < e;) {
        // One row at a time: measured 2.5x faster here than four-row tiles,
        // whose four streams 8 KiB apart thrash the L1 at power-of-two n.
        const int nr = 1;
        const float* rows[4];
        for (int t = 0; t < nr; ++t) rows[t] = m.data + (r + t) * m.ld;
        row_dots(rows, nr, m.cols, v.data(), nv, w.data(), na, in_len, o, oa);
        for (int t = 0; t < nr; ++t) {
          for (int p = 0; p < nv; ++p) (*out)[p * out_len + r + t] = o[t * kMaxVectors + p];
          for (int q = 0; q < na; ++q) (*abs_out)[q * out_len + r + t] = oa[t * kMaxVectors + q];
        }
        r += nr;
      }
    });
    return;
  }
  // Transposed use: stream the stored rows, each column range owned by one thread.
  parallel_for(m.cols, threads, [&](std::int64_t b, std::int64_t e) {
    double s[kMaxVectors], sa[kMaxVectors];
    for (std::int64_t r = 0; r < m.rows; ++r) {
      for (int p = 0; p < nv; ++p) s[p] = v[p * in_len + r];
      for (int q = 0; q < na; ++q) sa[q] = w[q * in_len + r];
      row_axpys(m.data + r * m.ld, b, e, s, nv, sa, na, out->data(), abs_out->data(), out_len);
    }
  });
}

Status check_matrix(const MatrixRef& m, std::int64_t rows, std::int64_t cols, const char* name) {
  if (m.rows != rows || m.cols != cols)
    return invalid_argument(std::string(name) + " is " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
                            ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
  if (m.ld < std::max<std::int64_t>(1, cols))
    return invalid_argument(std::string(name) + " leading dimension " + std::to_string(m.ld) + " < its columns");
  if (m.data == nullptr && rows > 0 && cols > 0) return invalid_argument(std::string(name) + " has no data");
  return ok_status();
}

double elem(const MatrixRef& m, std::int64_t r, std::int64_t c) {
  return static_cast<double>(m.data[r * m.ld + c]);
}

}  // namespace

std::span<const EnumEntry<ProbeKind>> probe_kind_table() { return kProbeKinds; }
std::span<const EnumEntry<ErrorModel>> error_model_table() { return kModels; }
std::span<const EnumEntry<Method>> method_table() { return kMethods; }

double model_gamma(ErrorModel model, double n, DType p, double lambda) {
  const double u = unit_roundoff(p);
  if (model == ErrorModel::kProbabilistic) {
    // Higham & Mary, "A new approach to probabilistic rounding error analysis",
    // SISC 41(5), 2019, Theorem 2.4: gamma~_n(lambda) = exp(lambda sqrt(n) u + n u^2 / (1 - u)) - 1.
    return std::expm1(lambda * std::sqrt(n) * u + n * u * u / (1 - u));
  }
  return gamma(n, p);
}

kc::Result<Result> verify_gemm(const GemmProblem& pr, const Options& opt) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t M = pr.m, N = pr.n, K = pr.k;
  if (M < 0 || N < 0 || K < 0) return invalid_argument("negative GEMM dimension");
  const bool use_ab = pr.alpha != 0 && K > 0;
  const bool use_c0 = pr.beta != 0;
  if (use_ab) {
    KC_RETURN_IF_ERROR(check_matrix(pr.a, pr.trans_a ? K : M, pr.trans_a ? M : K, "A"));
    KC_RETURN_IF_ERROR(check_matrix(pr.b, pr.trans_b ? N : K, pr.trans_b ? K : N, "B"));
  }
  if (use_c0) KC_RETURN_IF_ERROR(check_matrix(pr.c0, M, N, "C0"));
  KC_RETURN_IF_ERROR(check_matrix(pr.c, M, N, "C"));
  const int nv = opt.probes;
  const int na = opt.probe == ProbeKind::kRademacher ? std::min(nv, 1) : nv;
  if (nv < 0 || nv + na > kMaxVectors) return invalid_argument("probes must be in [0, 32] (Gaussian) or [0, 63] (Rademacher)");
  const int threads =
      opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  Result res;
  const double u = unit_roundoff(opt.precision);
  const double g = opt.gamma > 0 ? opt.gamma : model_gamma(opt.model, static_cast<double>(K) + 2, opt.precision, opt.lambda);
  res.gamma = g;
  // FP64 rounding of the check's own sums: every computed quantity is a sum of
  // at most N + K + 4 products (y = C x, z = A (B x), the beta term, the difference).
  const double gd = gamma(static_cast<double>(N + K + 4), DType::kF64);
  if (!(g < 1)) return invalid_argument("the error model's gamma is >= 1: K is too large for the precision");

  Rng rng(opt.seed);
  // ---- Freivalds: probes p-major, x[p * N + j].
  if (nv > 0 && M > 0) {
    res.probes = nv;
    std::vector<double> x(static_cast<std::size_t>(nv * N)), xa(static_cast<std::size_t>(na * N));
    for (auto& e : x) e = opt.probe == ProbeKind::kRademacher ? ((rng.next_u64() >> 63) ? 1.0 : -1.0) : rng.normal();
    if (opt.probe == ProbeKind::kRademacher) {
      std::fill(xa.begin(), xa.end(), 1.0);
    } else {
      for (std::size_t i = 0; i < xa.size(); ++i) xa[i] = std::fabs(x[i]);
    }
    std::vector<double> y, ya;  // C_hat x, |C_hat||x|   (M)
    thin_product(pr.c, false, x, nv, xa, na, threads, &y, &ya);
    std::vector<double> z(static_cast<std::size_t>(nv * M), 0.0), za(static_cast<std::size_t>(na * M), 0.0);
    if (use_ab) {
      std::vector<double> w, wa;  // op(B) x, |op(B)||x|   (K)
      thin_product(pr.b, pr.trans_b, x, nv, xa, na, threads, &w, &wa);
      thin_product(pr.a, pr.trans_a, w, nv, wa, na, threads, &z, &za);
    }
    std::vector<double> c0x, c0a;
    if (use_c0) thin_product(pr.c0, false, x, nv, xa, na, threads, &c0x, &c0a);

    const double aa = std::fabs(pr.alpha), ab = std::fabs(pr.beta);
    for (std::int64_t i = 0; i < M; ++i) {
      bool row_failed = false;
      for (int p = 0; p < nv; ++p) {
        const int q = opt.probe == ProbeKind::kRademacher ? 0 : p;
        const std::size_t ip = static_cast<std::size_t>(p * M + i), iq = static_cast<std::size_t>(q * M + i);
        double expect = pr.alpha * z[ip];
        double mag = aa * za[iq];
        if (use_c0) {
          expect += pr.beta * c0x[ip];
          mag += ab * c0a[iq];
        }
        const double cabs = ya[iq];
        if (!std::isfinite(mag))
          return unimplemented("inputs are not finite: the Freivalds bound is undefined (use the full oracle)");
        const double resid = std::fabs(y[ip] - expect);
        const double bound =
            opt.bound_scale * ((g * mag + u * cabs) / (1 - u) + gd * (mag + cabs)) * (1 + gd);
        double ratio = bound > 0 ? resid / bound : (resid == 0 ? 0 : std::numeric_limits<double>::infinity());
        if (std::isnan(ratio)) ratio = std::numeric_limits<double>::infinity();  // NaN in C
        if (ratio > res.freivalds_ratio || res.freivalds_worst_row < 0) {
          res.freivalds_ratio = ratio;
          res.freivalds_worst_row = i;
          res.freivalds_worst_probe = p;
          res.freivalds_residual = resid;
          res.freivalds_bound = bound;
        }
        if (ratio > 1) row_failed = true;
        if (opt.keep_row_bounds && p == 0) res.row_bounds.push_back(bound);
      }
      if (row_failed) {
        ++res.failing_rows;
        if (static_cast<std::int64_t>(res.rows.size()) < opt.max_rows_reported) res.rows.push_back(i);
      }
    }
  }

  // ---- Sampled elements: an FP64 dot product each, with its own bound.
  // Each sample is a random row and a column from one of a few random groups
  // of kGroup adjacent columns: reading op(B)'s column j strides through
  // memory, and adjacent columns share cache lines, so gathering the groups'
  // columns once costs a few passes over B's lines instead of one per sample.
  if (opt.samples > 0 && M > 0 && N > 0) {
    constexpr std::int64_t kGroup = 16;
    const std::int64_t s = std::min<std::int64_t>(opt.samples, M * N);
    const bool all = s == M * N;
    std::vector<std::int64_t> si(static_cast<std::size_t>(s)), sj(static_cast<std::size_t>(s));
    std::vector<std::int64_t> groups;
    const std::int64_t ngroups = std::max<std::int64_t>(1, std::min<std::int64_t>((s + kGroup - 1) / kGroup, 4));
    for (std::int64_t t = 0; t < ngroups; ++t) groups.push_back(rng.uniform_int(0, std::max<std::int64_t>(0, N - kGroup)));
    for (std::int64_t t = 0; t < s; ++t) {
      if (all) {
        si[t] = t / N;
        sj[t] = t % N;
      } else {
        si[t] = rng.uniform_int(0, M - 1);
        sj[t] = std::min(N - 1, groups[static_cast<std::size_t>(t % ngroups)] + rng.uniform_int(0, kGroup - 1));
      }
    }
    // op(B)'s sampled columns, gathered in one pass: col[t][k].
    std::vector<double> col;
    if (use_ab) {
      col.assign(static_cast<std::size_t>(s * K), 0.0);
      for (std::int64_t k = 0; k < K; ++k)
        for (std::int64_t t = 0; t < s; ++t)
          col[static_cast<std::size_t>(t * K + k)] = pr.trans_b ? elem(pr.b, sj[t], k) : elem(pr.b, k, sj[t]);
    }
    const double gk = gamma(static_cast<double>(K + 2), DType::kF64);
    for (std::int64_t t = 0; t < s; ++t) {
      const std::int64_t i = si[t], j = sj[t];
      double dot = 0, mag = 0;
      if (use_ab) {
        const double* bc = col.data() + t * K;
        for (std::int64_t k = 0; k < K; ++k) {
          const double a = pr.trans_a ? elem(pr.a, k, i) : elem(pr.a, i, k);
          dot += a * bc[k];
          mag += std::fabs(a * bc[k]);
        }
      }
      double ref = pr.alpha * dot;
      mag *= std::fabs(pr.alpha);
      if (use_c0) {
        ref += pr.beta * elem(pr.c0, i, j);
        mag += std::fabs(pr.beta * elem(pr.c0, i, j));
      }
      if (!std::isfinite(mag))
        return unimplemented("inputs are not finite: the sampled bound is undefined (use the full oracle)");
      // |C_hat - C*| <= (g mag + u |C*|) / (1 - u) (the kernel), |ref - C*| <= gk mag (this sum).
      const double bound = opt.bound_scale * ((g * mag + u * std::fabs(ref)) / (1 - u) + gk * mag) * (1 + gk);
      const double resid = std::fabs(elem(pr.c, i, j) - ref);
      double ratio = bound > 0 ? resid / bound : (resid == 0 ? 0 : std::numeric_limits<double>::infinity());
      if (std::isnan(ratio)) ratio = std::numeric_limits<double>::infinity();
      ++res.samples;
      if (ratio > 1) ++res.failing_samples;
      if (ratio > res.sample_ratio || res.sample_worst_row < 0) {
        res.sample_ratio = ratio;
        res.sample_worst_row = i;
        res.sample_worst_col = j;
      }
    }
  }

  const bool f_fail = res.freivalds_ratio > 1, s_fail = res.sample_ratio > 1;
  res.pass = !f_fail && !s_fail;
  res.worst_ratio = std::max(res.freivalds_ratio, res.sample_ratio);
  if (res.probes > 0 && res.samples > 0) {
    res.method = f_fail == s_fail ? Method::kFreivaldsAndSampled : (f_fail ? Method::kFreivalds : Method::kSampled);
  } else {
    res.method = res.probes > 0 ? Method::kFreivalds : Method::kSampled;
  }
  char buf[256];
  if (f_fail && (!s_fail || res.freivalds_ratio >= res.sample_ratio)) {
    std::snprintf(buf, sizeof buf,
                  "freivalds: row %lld probe %d residual %.3g > bound %.3g (ratio %.3g); %lld of %lld rows fail",
                  static_cast<long long>(res.freivalds_worst_row), res.freivalds_worst_probe, res.freivalds_residual,
                  res.freivalds_bound, res.freivalds_ratio, static_cast<long long>(res.failing_rows),
                  static_cast<long long>(M));
  } else if (s_fail) {
    std::snprintf(buf, sizeof buf, "sampled: element (row %lld, col %lld) ratio %.3g; %lld of %lld samples fail",
                  static_cast<long long>(res.sample_worst_row), static_cast<long long>(res.sample_worst_col),
                  res.sample_ratio, static_cast<long long>(res.failing_samples), static_cast<long long>(res.samples));
  } else {
    std::snprintf(buf, sizeof buf, "pass: freivalds (%d probes) max ratio %.3g, sampled (%lld) max ratio %.3g",
                  res.probes, res.freivalds_ratio, static_cast<long long>(res.samples), res.sample_ratio);
  }
  res.detail = buf;
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

kc::Result<Result> verify_matmul(const Call& inputs, const Call& outputs, Options options) {
  if (inputs.op != "matmul" || !inputs.has("A") || !inputs.has("B") || !inputs.has("C") || !outputs.has("C"))
    return invalid_argument("verify_matmul needs a matmul call with tensors A, B, C");
  // Floats as stored; narrower formats widened (exactly) into owned copies.
  std::vector<std::vector<float>> owned;
  auto ref = [&](const Tensor& t) -> kc::Result<MatrixRef> {
    if (t.rank() != 2) return invalid_argument("matmul tensors are matrices");
    const DType d = t.dtype();
    if (d == DType::kF64) return unimplemented("FP64 GEMMs need a wider oracle than the FP64 fast check");
    if (!dtype_info(d).is_float) return unimplemented("integer GEMMs are not verified by the fast check");
    if (t.strides()[1] != 1) return unimplemented("matrix is not unit-stride along rows");
    if (d == DType::kF32 || d == DType::kTF32)
      return MatrixRef{t.data<float>(), t.dim(0), t.dim(1), t.strides()[0]};
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(t.at(i));
    owned.push_back(std::move(v));
    return MatrixRef{owned.back().data(), t.dim(0), t.dim(1), t.dim(1)};
  };
  owned.reserve(4);
  auto trans = [&](const char* key) {
    const std::string v = inputs.get(key, "N");
    return v == "T" || v == "t";
  };
  GemmProblem p;
  p.m = inputs.get_int("M", 64);
  p.n = inputs.get_int("N", 64);
  p.k = inputs.get_int("K", 64);
  p.trans_a = trans("trans_a");
  p.trans_b = trans("trans_b");
  // alpha and beta as the kernel sees them: scalars of the call's precision.
  p.alpha = round_to(inputs.get_double("alpha", 1), inputs.config.dtype);
  p.beta = round_to(inputs.get_double("beta", 0), inputs.config.dtype);
  KC_ASSIGN_OR_RETURN(p.a, ref(inputs.t("A")));
  KC_ASSIGN_OR_RETURN(p.b, ref(inputs.t("B")));
  KC_ASSIGN_OR_RETURN(p.c0, ref(inputs.t("C")));
  KC_ASSIGN_OR_RETURN(p.c, ref(outputs.t("C")));
  if (options.precision == DType::kF32 && inputs.config.dtype != DType::kF32) options.precision = inputs.config.dtype;
  return verify_gemm(p, options);
}

}  // namespace kc::verify
