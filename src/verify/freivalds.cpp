// kc — Freivalds verification of a GEMM with a derived componentwise bound,
// plus a sampled exact check (include/kc/verify.h, docs/verify.md).
//
// Error model (Higham, Accuracy and Stability, §3.5). With E = C_hat - C*,
// C* = alpha op(A) op(B) + beta C0 and m = |alpha||op(A)||op(B)| + |beta||C0|,
// the kernel promises |E| <= (g m + u |C_hat|) / (1 - u) elementwise, where
// g = gamma_(K+2)(u_acc) (or its probabilistic counterpart; u_acc the declared
// accumulator's unit roundoff) and u |C*| is the final rounding into the
// output format, u |C*| <= u (|C_hat| + |E|), u = u_out (docs/verify.md,
// "Low-precision inputs").
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
#include <optional>
#include <thread>
#include <vector>

#include "kc/bound.h"
#include "kc/rng.h"
#include "kc/verify.h"
#include "verify/thin_product.h"

namespace kc::verify {

namespace {

// The FP32 block path's rounding, gamma_33(u32) of the magnitudes, against the
// kernel's own gamma_(K+2)(u): at K, N >= 1024 it loosens the bound by at most
// about 6% (33 u32 on each of m and |C||x| against 1026 u on m).
constexpr std::int64_t kFp32MinLength = 1024;
// Shorter sums, down to kFp32ShortLength, take the FP32 path with blocks of
// half the length (r = 8 FMAs per lane, gamma_17(u32)): against gamma_(K+2)(u)
// at most ~7% at K = 256 and ~3.4% at K = 512. Below it, FP64.
constexpr std::int64_t kFp32ShortLength = 256;
constexpr int kFp32ShortRoundings = detail::kFp32Roundings / 2;

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

Status check_matrix(const MatrixRef& m, std::int64_t rows, std::int64_t cols, const char* name) {
  if (m.rows != rows || m.cols != cols)
    return invalid_argument(std::string(name) + " is " + std::to_string(m.rows) + " x " + std::to_string(m.cols) +
                            ", expected " + std::to_string(rows) + " x " + std::to_string(cols));
  if (m.ld != 0 && m.ld < std::max<std::int64_t>(1, cols))
    return invalid_argument(std::string(name) + " leading dimension " + std::to_string(m.ld) + " < its columns");
  if (m.data == nullptr && rows > 0 && cols > 0) return invalid_argument(std::string(name) + " has no data");
  return ok_status();
}

double elem(const MatrixRef& m, std::int64_t r, std::int64_t c) {
  return static_cast<double>(m.data[r * m.ld + c]);
}

// The sampled check's dot products for eight columns of bcol at once:
// dot[t] = sum_k arow[k] bcol[k * ld + t], dmag[t] = sum_k |arow[k] bcol[k * ld + t]|,
// k in order, one FP64 vector lane per column (each lane's sum is the one
// column's sum, as one column at a time). Vector types (and clones for the
// wider units): scalar, with its eight sums in registers, 64 samples took
// 0.037 ms at K = 1024 (and 0.077 with them in memory).
#if defined(__x86_64__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void sample_dots8(const double* arow, const double* bcol, std::int64_t ld, std::int64_t K, double* dot, double* dmag) {
  typedef double D8 __attribute__((vector_size(64)));
  typedef std::int64_t L8 __attribute__((vector_size(64)));
  D8 d{}, m{};
  for (std::int64_t k = 0; k < K; ++k) {
    D8 b;
    std::memcpy(&b, bcol + k * ld, sizeof b);
    const D8 prod = arow[k] * b;
    d += prod;
    m += reinterpret_cast<D8>(reinterpret_cast<L8>(prod) & 0x7fffffffffffffffLL);
  }
  std::memcpy(dot, &d, sizeof d);
  std::memcpy(dmag, &m, sizeof m);
}
// One column.
void sample_dot1(const double* arow, const double* bcol, std::int64_t ld, std::int64_t K, double* dot, double* dmag) {
  double d = 0, m = 0;
  for (std::int64_t k = 0; k < K; ++k) {
    d += arow[k] * bcol[k * ld];
    m += std::fabs(arow[k] * bcol[k * ld]);
  }
  *dot = d;
  *dmag = m;
}

// The check's buffers, kept per thread from one call to the next. At n = 4096
// and k = 10 a call uses about 2.5 MiB of them, and fresh pages cost a fault
// each on first touch (with the first form of the row judging below, keeping
// them took a call from 15.1-15.4 to 13.4-13.7 ms; docs/verify.md "Cost").
// Only a thread's first call, or a larger problem, pays it now. fill() sets
// the length and the contents without giving back capacity.
struct Scratch {
  std::vector<double> x, y, z, w, c0x, mag, cabs, bcol, arow;
  std::vector<float> xf, wf, ones, ca32, za32, c0a32, wa32;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}
template <typename T>
std::vector<T>& fill(std::vector<T>& v, std::int64_t n, T value) {
  v.assign(static_cast<std::size_t>(n), value);
  return v;
}
// The same for a buffer that is written in full before it is read: its
// contents are left as they were (these buffers are cold at each call, and
// zeroing them first doubled their writes).
template <typename T>
std::vector<T>& sized(std::vector<T>& v, std::int64_t n) {
  v.resize(static_cast<std::size_t>(n));
  return v;
}

// Rademacher entries j < n from the bits of each draw, 64 to a draw: bit t of
// a draw set -> its entry t is +1, clear -> -1; xf gets them as FP32, x as
// FP64. Four at a time from the draw broadcast over four lanes, masked,
// compared and turned into a float's bits (SSE2); the FP64 copy is widened
// from those. One entry at a time, with a branch per entry, this took 0.32 ms
// at n = 4096, k = 10; without the branch but one entry at a time (the loop
// was not vectorized), ~4% of the whole check at n = 512 on one thread (perf).
void rademacher_entries(Rng& rng, std::int64_t n, float* xf, double* x) {
  typedef std::uint32_t U4 __attribute__((vector_size(16)));
  for (std::int64_t j0 = 0; j0 < n; j0 += 64) {
    const std::uint64_t bits = rng.next_u64();
    alignas(16) float block[64];
    for (int h = 0; h < 2; ++h) {
      const U4 b = U4{} + static_cast<std::uint32_t>(bits >> (32 * h));
      for (int t = 0; t < 32; t += 4) {
        const U4 clear = (U4)((b & (U4{1, 2, 4, 8} << t)) == 0);  // all ones where the bit is clear
        const U4 f = (clear & 0x80000000u) | 0x3f800000u;       // -1.0f there, +1.0f elsewhere
        std::memcpy(block + 32 * h + t, &f, sizeof f);
      }
    }
    if (n - j0 >= 64) {  // fixed trip counts: vectorized at -O2
      std::memcpy(xf + j0, block, sizeof block);
      for (int t = 0; t < 64; ++t) x[j0 + t] = static_cast<double>(block[t]);
    } else {
      for (std::int64_t t = 0; t < n - j0; ++t) {
        xf[j0 + t] = block[t];
        x[j0 + t] = static_cast<double>(block[t]);
      }
    }
  }
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

double gemm_rounding_count(double k, DType inputs, DType accumulator) {
  // A product of two values with s significant bits has at most 2 s of them:
  // exact in FP32 (24) for s <= 12, barring underflow.
  const bool exact_products = dtype_info(inputs).mantissa_bits + 1 <= 12;
  const bool narrow_acc = unit_roundoff(accumulator) > unit_roundoff(DType::kF32);
  return k + 2 + (narrow_acc && !exact_products ? 1 : 0);
}

double gemm_bound_underflow(double k, double alpha, DType accumulator, DType output) {
  double u = gemm_underflow_allowance(k, alpha, accumulator);
  if (output != accumulator) u += underflow_unit(output);
  if (unit_roundoff(accumulator) > unit_roundoff(DType::kF32))
    u += std::max(1.0, std::fabs(alpha)) * k * underflow_unit(DType::kF32);
  return u;
}

namespace {

/// One verify_gemm call: the problem, the options and what the steps share,
/// in the order the steps run (sample grid, probes, signed passes, magnitudes,
/// row judgements, sampled elements, conclusion).
class GemmCheck {
 public:
  GemmCheck(const GemmProblem& pr, const Options& opt, int threads, double g, double u, double under)
      : pr_(pr),
        opt_(opt),
        M_(pr.m),
        N_(pr.n),
        K_(pr.k),
        threads_(threads),
        nv_(opt.probes),
        g_(g),
        u_(u),
        under_(under),
        use_ab_(pr.alpha != 0 && pr.k > 0),
        use_c0_(pr.beta != 0),
        ws_(scratch()),
        rng_(opt.seed),
        bcol_(ws_.bcol) {}

  Result res;

  /// The sampled check's grid, chosen before the Freivalds passes so that the
  /// pass over B can gather its columns: sr distinct random rows times sc
  /// distinct random columns (sr sc >= samples), from its own random stream,
  /// so that every element is equally likely to be in it.
  void pick_sample_grid();
  /// Freivalds: k probes, the signed products, the magnitudes and one
  /// judgement per row. kUnimplemented when the inputs are not finite.
  Status freivalds();
  /// Sampled elements: an FP64 dot product each, with its own bound.
  Status sampled();
  /// pass, method and detail from the two parts' worst ratios.
  void conclude();

 private:
  void draw_probes();
  void signed_passes();
  void magnitudes();
  Status judge_rows();
  void gather_sample_operands();
  /// One streaming pass (detail::thin_pass) of op(m) over count vectors.
  void pass(const MatrixRef& m, bool transposed, const double* v, int count, std::int64_t ldv, bool abs_rows,
            const float* wa, double* out, std::int64_t ldo, float* mag, const float* vf = nullptr, bool gather = false);
  double residual(std::int64_t i, int p) const;
  /// A residual's weight in the search for a row's worst probe: NaN in C is
  /// beyond any bound.
  double key(std::int64_t i, int p) const;
  /// Row i's bound for probe p; none when the inputs' magnitudes are not finite.
  std::optional<double> row_bound(std::int64_t i, int p) const;
  /// Judges row i's worst residual (of probe p; p < 0: the first probe with
  /// the largest key); returns whether it is beyond the bound.
  bool judge(std::int64_t i, int p, double worst, double bound);

  const GemmProblem& pr_;
  const Options& opt_;
  const std::int64_t M_, N_, K_;
  const int threads_, nv_;
  const double g_, u_, under_;
  const bool use_ab_, use_c0_;
  Scratch& ws_;
  Rng rng_;
  // The sample grid.
  bool sampling_ = false;
  std::int64_t sr_ = 0, sc_ = 0;
  std::vector<std::int64_t> si_, sj_;
  // bcol[k * sc + t] = op(B)[k][sj[t]], filled by the Freivalds pass over B when it runs.
  std::vector<double>& bcol_;
  bool bcol_gathered_ = false;
  // Freivalds: probes p-major with padded strides (detail::padded_stride).
  bool rademacher_ = true, fp32_ = false, used_fp32_ = false;
  int fp32_r_ = 0;
  std::int64_t ldx_ = 0, ldw_ = 0, ldm_ = 0;
  std::vector<double> x_l1_;
  double gd_ = 0, gf_ = 0, uf_ = 0;
};

void GemmCheck::pick_sample_grid() {
  sampling_ = opt_.samples > 0 && M_ > 0 && N_ > 0;
  sr_ = M_;
  sc_ = N_;
  if (!sampling_) return;
  if (opt_.samples < M_ * N_) {
    sr_ =
        std::min<std::int64_t>(M_, static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(opt_.samples)))));
    sc_ = std::min<std::int64_t>(N_, (opt_.samples + sr_ - 1) / sr_);
    sr_ = std::min<std::int64_t>(M_, (opt_.samples + sc_ - 1) / sc_);
  }
  Rng srng(derive_seed(opt_.seed, 1));
  // Distinct indices: a partial Fisher-Yates shuffle when the pick is a large
  // share of the range, rejection otherwise.
  auto pick = [&](std::int64_t count, std::int64_t range) {
    std::vector<std::int64_t> out;
    if (count * 4 >= range) {
      std::vector<std::int64_t> all(static_cast<std::size_t>(range));
      for (std::int64_t t = 0; t < range; ++t) all[t] = t;
      for (std::int64_t t = 0; t < count; ++t) std::swap(all[t], all[srng.uniform_int(t, range - 1)]);
      out.assign(all.begin(), all.begin() + count);
    } else {
      while (static_cast<std::int64_t>(out.size()) < count) {
        const std::int64_t v = srng.uniform_int(0, range - 1);
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  si_ = pick(sr_, M_);
  sj_ = pick(sc_, N_);
}

void GemmCheck::pass(const MatrixRef& m, bool transposed, const double* v, int count, std::int64_t ldv, bool abs_rows,
                     const float* wa, double* out, std::int64_t ldo, float* mag, const float* vf, bool gather) {
  detail::ThinPass ps;
  ps.m = &m;
  ps.transposed = transposed;
  ps.v = v;
  ps.nv = count;
  ps.ldv = ldv;
  ps.abs_rows = abs_rows;
  ps.wa = wa;
  ps.out = out;
  ps.ldo = ldo;
  ps.mag = mag;
  ps.threads = threads_;
  ps.vf = vf;
  ps.fp32_roundings = fp32_r_;
  if (gather) {
    ps.gather_cols = sj_.data();
    ps.gather_count = sc_;
    ps.gather_out = sized(bcol_, K_ * sc_).data();  // the pass writes every row
  }
  used_fp32_ = detail::thin_pass(ps) || used_fp32_;
}

Status GemmCheck::freivalds() {
  if (nv_ <= 0 || M_ <= 0) return ok_status();
  res.probes = nv_;
  rademacher_ = opt_.probe == ProbeKind::kRademacher;
  ldx_ = detail::padded_stride(N_);
  ldw_ = detail::padded_stride(K_);
  ldm_ = detail::padded_stride(M_);
  // FP32 blocks (detail::ThinPass::vf) for the signed products of long sums:
  // with Rademacher probes B X and C X are exact in every product, and the
  // extra FP32 rounding is a few dozen u32 against the kernel's (K + 2) u.
  fp32_ = rademacher_ && detail::fp32_blocks_available() && std::min(N_, K_) >= kFp32ShortLength;
  fp32_r_ = std::min(N_, K_) >= kFp32MinLength ? detail::kFp32Roundings : kFp32ShortRoundings;
  draw_probes();
  signed_passes();
  magnitudes();
  return judge_rows();
}

void GemmCheck::draw_probes() {
  // Probe p's entries are x[p * ldx + j], j < N; the padding is never read.
  // Rademacher probes are drawn as FP32 (xf) and widened into x.
  std::vector<double>& x = sized(ws_.x, nv_ * ldx_);
  std::vector<float>& xf = sized(ws_.xf, rademacher_ ? nv_ * ldx_ : 0);
  for (int p = 0; p < nv_; ++p) {
    double* xp = x.data() + p * ldx_;
    if (!rademacher_) {
      for (std::int64_t j = 0; j < N_; ++j) xp[j] = rng_.normal();
      continue;
    }
    rademacher_entries(rng_, N_, xf.data() + p * ldx_, xp);
  }
  // sum_j |x_j| per probe: the kernel's underflow term enters row i's
  // residual as under * ||x||_1 (N for Rademacher probes).
  x_l1_.assign(static_cast<std::size_t>(nv_), rademacher_ ? static_cast<double>(N_) : 0.0);
  if (!rademacher_)
    for (int p = 0; p < nv_; ++p)
      for (std::int64_t j = 0; j < N_; ++j) x_l1_[p] += std::fabs(x[static_cast<std::size_t>(p * ldx_ + j)]);
}

void GemmCheck::signed_passes() {
  // Signed products in FP64: y = C_hat X, z = op(A) (op(B) X), c0x = C0 X.
  // Rademacher probes: |X| is all ones, so |op(B)||X| 1-vector, |op(A)|(|op(B)||X|)
  // and |C_hat||X| are single FP32 magnitude products taken in the same passes.
  const std::int64_t msize = nv_ * ldm_;
  const std::vector<double>& x = ws_.x;
  std::vector<double>& y = sized(ws_.y, msize);
  std::vector<double>& z = use_ab_ ? sized(ws_.z, msize) : fill(ws_.z, msize, 0.0);
  const std::vector<float>& ones = fill(ws_.ones, std::max<std::int64_t>(N_, 1), 1.0f);
  std::vector<float>& ca32 = fill(ws_.ca32, M_, 0.0f);
  std::vector<float>& za32 = fill(ws_.za32, M_, 0.0f);
  std::vector<float>& c0a32 = fill(ws_.c0a32, M_, 0.0f);
  std::vector<float>& wa32 = fill(ws_.wa32, std::max<std::int64_t>(K_, 1), 0.0f);
  const float* x32 = fp32_ ? ws_.xf.data() : nullptr;
  const float* unit = rademacher_ ? ones.data() : nullptr;
  pass(pr_.c, false, x.data(), nv_, ldx_, false, unit, y.data(), ldm_, ca32.data(), x32);
  if (use_ab_) {
    std::vector<double>& w = sized(ws_.w, nv_ * ldw_);
    pass(pr_.b, pr_.trans_b, x.data(), nv_, ldx_, false, unit, w.data(), ldw_, wa32.data(), x32,
         sampling_ && !pr_.trans_b);
    bcol_gathered_ = sampling_ && !pr_.trans_b;
    std::vector<float>& wf = ws_.wf;
    if (fp32_) wf.assign(w.begin(), w.end());  // rounded to FP32: u32 |w| more, counted below
    pass(pr_.a, pr_.trans_a, w.data(), nv_, ldw_, false, rademacher_ ? wa32.data() : nullptr, z.data(), ldm_,
         za32.data(), fp32_ ? wf.data() : nullptr);
  }
  if (use_c0_) {
    fill(ws_.c0x, msize, 0.0);
    pass(pr_.c0, false, x.data(), nv_, ldx_, false, unit, ws_.c0x.data(), ldm_, c0a32.data(), x32);
  }
}

void GemmCheck::magnitudes() {
  // Upper bounds, in FP64, on the exact magnitudes m|x| = |alpha||op(A)|(|op(B)||x|) + |beta||C0||x|
  // and |C_hat||x|: nq of them per row (one for Rademacher probes, one per probe otherwise).
  // A computed sum s_hat of nonnegative terms, each through at most d roundings of unit
  // roundoff u_, satisfies s <= (s_hat + d eta) / (1 - d u_) (eta: the subnormal spacing, for
  // an FMA whose result underflows; additions of floats are exact in the subnormal range).
  const int nq = rademacher_ ? 1 : nv_;
  std::vector<double>& mag = fill(ws_.mag, nq * M_, 0.0);
  std::vector<double>& cabs = fill(ws_.cabs, nq * M_, 0.0);
  const double u32 = unit_roundoff(DType::kF32), u64 = unit_roundoff(DType::kF64), eta32 = 0x1p-149;
  const double dn = static_cast<double>(N_) + 16, dk = static_cast<double>(K_) + 16;
  const double aa = std::fabs(pr_.alpha), ab = std::fabs(pr_.beta);
  bool inputs_fp64 = !rademacher_ || dn * u32 >= 0.5 || dk * u32 >= 0.5, c_fp64 = inputs_fp64;
  if (!inputs_fp64) {
    for (std::int64_t i = 0; i < M_; ++i) {
      const double zi = (static_cast<double>(ws_.za32[i]) + dk * eta32) / (1 - dk * u32) / (1 - dn * u32);
      const double mi = aa * zi + ab * (static_cast<double>(ws_.c0a32[i]) / (1 - dn * u32));
      const double ci = static_cast<double>(ws_.ca32[i]) / (1 - dn * u32);
      if (!std::isfinite(mi)) inputs_fp64 = true;  // an FP32 sum overflowed: redo in FP64
      if (!std::isfinite(ci)) c_fp64 = true;
      mag[i] = mi;
      cabs[i] = ci;
    }
  }
  if (inputs_fp64 || c_fp64) {
    // FP64 magnitudes: |op(M)| applied to |x| by the same kernel. FP32 x FP64
    // products cannot underflow or overflow in FP64, so d = in_len + 8 roundings.
    const double d64n = static_cast<double>(N_) + 8, d64k = static_cast<double>(K_) + 8;
    std::vector<double> xa(static_cast<std::size_t>(nq * ldx_), 0.0);
    for (int q = 0; q < nq; ++q)
      for (std::int64_t j = 0; j < N_; ++j)
        xa[static_cast<std::size_t>(q * ldx_ + j)] = std::fabs(ws_.x[static_cast<std::size_t>(q * ldx_ + j)]);
    std::vector<double> t(static_cast<std::size_t>(nq * ldm_));
    if (c_fp64) {
      pass(pr_.c, false, xa.data(), nq, ldx_, true, nullptr, t.data(), ldm_, nullptr);
      for (int q = 0; q < nq; ++q)
        for (std::int64_t i = 0; i < M_; ++i) cabs[q * M_ + i] = t[q * ldm_ + i] / (1 - d64n * u64);
    }
    if (inputs_fp64) {
      std::vector<double> za(static_cast<std::size_t>(nq * ldm_), 0.0), c0a(static_cast<std::size_t>(nq * ldm_), 0.0);
      if (use_ab_) {
        std::vector<double> wa(static_cast<std::size_t>(nq * ldw_));
        pass(pr_.b, pr_.trans_b, xa.data(), nq, ldx_, true, nullptr, wa.data(), ldw_, nullptr);
        pass(pr_.a, pr_.trans_a, wa.data(), nq, ldw_, true, nullptr, za.data(), ldm_, nullptr);
      }
      if (use_c0_) pass(pr_.c0, false, xa.data(), nq, ldx_, true, nullptr, c0a.data(), ldm_, nullptr);
      for (int q = 0; q < nq; ++q)
        for (std::int64_t i = 0; i < M_; ++i)
          mag[q * M_ + i] = (aa * za[q * ldm_ + i] / (1 - d64k * u64) + ab * c0a[q * ldm_ + i]) / (1 - d64n * u64);
    }
  }
}

double GemmCheck::residual(std::int64_t i, int p) const {
  const std::size_t ip = static_cast<std::size_t>(p * ldm_ + i);
  double expect = pr_.alpha * ws_.z[ip];
  if (use_c0_) expect += pr_.beta * ws_.c0x[ip];
  return std::fabs(ws_.y[ip] - expect);
}

double GemmCheck::key(std::int64_t i, int p) const {
  const double r = residual(i, p);
  return std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
}

std::optional<double> GemmCheck::row_bound(std::int64_t i, int p) const {
  const std::size_t iq = static_cast<std::size_t>((rademacher_ ? 0 : p) * M_ + i);
  const double m_i = ws_.mag[iq], cabs_i = ws_.cabs[iq];
  if (!std::isfinite(m_i)) return std::nullopt;
  return opt_.bound_scale *
         ((g_ * m_i + u_ * cabs_i) / (1 - u_) + under_ * x_l1_[p] * (1 + gd_) + (gd_ + gf_) * (m_i + cabs_i) + uf_) *
         (1 + gd_);
}

bool GemmCheck::judge(std::int64_t i, int p, double worst, double bound) {
  const double inf = std::numeric_limits<double>::infinity();
  double ratio = bound > 0 ? worst / bound : (worst == 0 ? 0 : inf);
  if (std::isnan(ratio)) ratio = inf;
  if (ratio > res.freivalds_ratio || res.freivalds_worst_row < 0) {
    if (p < 0)
      for (p = 0; key(i, p) != worst;) ++p;
    res.freivalds_ratio = ratio;
    res.freivalds_worst_row = i;
    res.freivalds_worst_probe = p;
    res.freivalds_residual = residual(i, p);
    res.freivalds_bound = bound;
  }
  return ratio > 1;
}

Status GemmCheck::judge_rows() {
  // FP64 rounding of the signed sums: w = op(B) x and y = C x take at most N + 8 roundings per
  // term, z = op(A) w another K + 8, then alpha, beta and the difference: gamma_(N+K+20)(u_64)
  // times the exact magnitudes bounds every one of them.
  gd_ = gamma(static_cast<double>(N_ + K_ + 20), DType::kF64);
  // FP32 blocks: each term of w = op(B) x (x = +-1, exact products) takes at
  // most r = fp32_r roundings of u32 before its block is widened, so
  // |w_hat - op(B) x| <= gamma_r(u32) |op(B)| 1; w rounded to FP32 adds u32 |w_hat|;
  // z = op(A) w32 takes r more, so |z_hat - op(A) op(B) x| <= gamma_(2r+1)(u32) m
  // (gamma_a + gamma_b + gamma_a gamma_b <= gamma_(a+b)); y = C x and C0 x take
  // gamma_r(u32) of their magnitudes. Products op(A)_ij w_j may underflow:
  // an FMA then errs by up to eta32 / 2 absolute, K of them per row. Sums of
  // +-x are exact in the subnormal range.
  res.fp32_blocks = used_fp32_;
  gf_ = used_fp32_ ? gamma(2.0 * fp32_r_ + 1, DType::kF32) : 0.0;
  uf_ = used_fp32_ ? static_cast<double>(K_) * 0x1p-149 / 2 : 0.0;
  const char* const not_finite = "inputs are not finite: the Freivalds bound is undefined (use the full oracle)";
  for (std::int64_t i = 0; i < M_; ++i) {
    bool row_failed = false;
    if (rademacher_) {
      // Every probe has the same bound in a row (|x| = 1, ||x||_1 = N): the
      // row is judged once, by its largest residual, taken without a branch
      // per probe (random residuals mispredict one: this loop took 0.28 ms
      // at n = 4096, k = 10 with it, 0.09-0.13 ms without, measured).
      const std::optional<double> b = row_bound(i, 0);
      if (!b) return unimplemented(not_finite);
      const double bound = *b;
      if (opt_.keep_row_bounds) res.row_bounds.push_back(bound);
      double worst = 0;
      for (int p = 0; p < nv_; ++p) worst = std::max(worst, key(i, p));
      row_failed = judge(i, -1, worst, bound);
    } else {
      for (int p = 0; p < nv_; ++p) {
        const std::optional<double> b = row_bound(i, p);
        if (!b) return unimplemented(not_finite);
        const double bound = *b;
        if (opt_.keep_row_bounds && p == 0) res.row_bounds.push_back(bound);
        row_failed = judge(i, p, key(i, p), bound) || row_failed;
      }
    }
    if (row_failed) {
      ++res.failing_rows;
      if (static_cast<std::int64_t>(res.rows.size()) < opt_.max_rows_reported) res.rows.push_back(i);
    }
  }
  return ok_status();
}

void GemmCheck::gather_sample_operands() {
  // arow[t * K + k] = op(A)[si[t]][k]; bcol unless the pass over B filled it.
  std::vector<double>& arow = fill(ws_.arow, sr_ * K_, 0.0);
  if (!bcol_gathered_) {
    fill(bcol_, K_ * sc_, 0.0);
    if (pr_.trans_b) {
      for (std::int64_t t = 0; t < sc_; ++t)
        for (std::int64_t k = 0; k < K_; ++k) bcol_[k * sc_ + t] = elem(pr_.b, sj_[t], k);
    } else {
      for (std::int64_t k = 0; k < K_; ++k)
        for (std::int64_t t = 0; t < sc_; ++t) bcol_[k * sc_ + t] = elem(pr_.b, k, sj_[t]);
    }
  }
  if (pr_.trans_a) {
    for (std::int64_t k = 0; k < K_; ++k)
      for (std::int64_t t = 0; t < sr_; ++t) arow[t * K_ + k] = elem(pr_.a, k, si_[t]);
  } else {
    for (std::int64_t t = 0; t < sr_; ++t)
      for (std::int64_t k = 0; k < K_; ++k) arow[t * K_ + k] = elem(pr_.a, si_[t], k);
  }
}

Status GemmCheck::sampled() {
  if (!sampling_) return ok_status();
  if (use_ab_) gather_sample_operands();
  const std::vector<double>& arow = ws_.arow;
  const double gk = gamma(static_cast<double>(K_ + 2), DType::kF64);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dot(static_cast<std::size_t>(sc_)), dmag(static_cast<std::size_t>(sc_));
  for (std::int64_t tr = 0; tr < sr_; ++tr) {
    const std::int64_t i = si_[tr];
    std::fill(dot.begin(), dot.end(), 0.0);
    std::fill(dmag.begin(), dmag.end(), 0.0);
    if (use_ab_) {
      std::int64_t t0 = 0;
      for (; t0 + 8 <= sc_; t0 += 8)
        sample_dots8(arow.data() + tr * K_, bcol_.data() + t0, sc_, K_, dot.data() + t0, dmag.data() + t0);
      for (; t0 < sc_; ++t0)
        sample_dot1(arow.data() + tr * K_, bcol_.data() + t0, sc_, K_, dot.data() + t0, dmag.data() + t0);
    }
    for (std::int64_t tc = 0; tc < sc_; ++tc) {
      const std::int64_t j = sj_[tc];
      double ref = pr_.alpha * dot[tc];
      double mag = std::fabs(pr_.alpha) * dmag[tc];
      if (use_c0_) {
        ref += pr_.beta * elem(pr_.c0, i, j);
        mag += std::fabs(pr_.beta * elem(pr_.c0, i, j));
      }
      if (!std::isfinite(mag))
        return unimplemented("inputs are not finite: the sampled bound is undefined (use the full oracle)");
      // |C_hat - C*| <= (g mag + u |C*|) / (1 - u) + under (the kernel), |ref - C*| <= gk mag (this sum).
      const double bound =
          opt_.bound_scale * ((g_ * mag + u_ * std::fabs(ref)) / (1 - u_) + under_ + gk * mag) * (1 + gk);
      const double resid = std::fabs(elem(pr_.c, i, j) - ref);
      double ratio = bound > 0 ? resid / bound : (resid == 0 ? 0 : inf);
      if (std::isnan(ratio)) ratio = inf;
      ++res.samples;
      if (ratio > 1) ++res.failing_samples;
      if (ratio > res.sample_ratio || res.sample_worst_row < 0) {
        res.sample_ratio = ratio;
        res.sample_worst_row = i;
        res.sample_worst_col = j;
      }
    }
  }
  return ok_status();
}

void GemmCheck::conclude() {
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
    std::snprintf(
        buf, sizeof buf, "freivalds: row %lld probe %d residual %.3g > bound %.3g (ratio %.3g); %lld of %lld rows fail",
        static_cast<long long>(res.freivalds_worst_row), res.freivalds_worst_probe, res.freivalds_residual,
        res.freivalds_bound, res.freivalds_ratio, static_cast<long long>(res.failing_rows), static_cast<long long>(M_));
  } else if (s_fail) {
    std::snprintf(buf, sizeof buf, "sampled: element (row %lld, col %lld) ratio %.3g; %lld of %lld samples fail",
                  static_cast<long long>(res.sample_worst_row), static_cast<long long>(res.sample_worst_col),
                  res.sample_ratio, static_cast<long long>(res.failing_samples), static_cast<long long>(res.samples));
  } else {
    std::snprintf(buf, sizeof buf, "pass: freivalds (%d probes) max ratio %.3g, sampled (%lld) max ratio %.3g",
                  res.probes, res.freivalds_ratio, static_cast<long long>(res.samples), res.sample_ratio);
  }
  res.detail = buf;
}

}  // namespace

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
  if (opt.probes < 0 || opt.probes > detail::kMaxPassVectors) return invalid_argument("probes must be in [0, 64]");
  const int threads =
      opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  // The kernel's model (docs/verify.md, "Low-precision inputs"): A, B, C0 hold
  // values of opt.precision; every rounding before the store of C has unit
  // roundoff at most u_acc (g = gamma_(K+2)(u_acc)); the store rounds once to
  // the output format (u).
  const DType acc = opt.accumulator.value_or(opt.precision), out = opt.output.value_or(opt.precision);
  const double u = unit_roundoff(out);
  const double g =
      opt.gamma > 0
          ? opt.gamma
          : model_gamma(opt.model, gemm_rounding_count(static_cast<double>(K), opt.precision, acc), acc, opt.lambda);
  if (!(g < 1)) return invalid_argument("the error model's gamma is >= 1: K is too large for the accumulator");
  // Gradual underflow in the kernel, as the full check allows it
  // (Op::underflow_allowance for matmul): an absolute term per element.
  const double under = gemm_bound_underflow(static_cast<double>(K), pr.alpha, acc, out);

  GemmCheck check(pr, opt, threads, g, u, under);
  check.res.gamma = g;
  check.res.u_out = u;
  check.res.underflow = under;
  check.pick_sample_grid();
  KC_RETURN_IF_ERROR(check.freivalds());
  KC_RETURN_IF_ERROR(check.sampled());
  check.conclude();
  check.res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(check.res);
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
  // The impl's declared accumulator (`with accumulator = ...`) where it is
  // wider than the storage format, as matmul's underflow allowance takes it
  // (the same absolute term as the full check: gemm_bound_underflow with a
  // wider accumulator is Op::underflow_allowance). A narrower one is the
  // contract's to weigh, through ACC in its bound (options.gamma).
  const std::optional<DType> declared = inputs.config.accumulator;
  if (!options.accumulator && declared &&
      dtype_info(*declared).mantissa_bits > dtype_info(options.precision).mantissa_bits)
    options.accumulator = declared;
  return verify_gemm(p, options);
}

kc::Result<Result> verify_fused_matmul(const Call& inputs, const Call& outputs, Options options) {
  if (inputs.op != "fused_matmul" || !inputs.has("A") || !inputs.has("B") || !inputs.has("bias") ||
      !outputs.has("C"))
    return invalid_argument("verify_fused_matmul needs a fused_matmul call with tensors A, B, bias, C");
  // C = act(A B + bias). Freivalds needs C to be linear in the product: only
  // the identity activation leaves A B + bias observable. A nonlinear one
  // (relu, gelu, silu) hides it, and its output is judged by the full oracle.
  const std::string act = inputs.get("activation", "gelu_erf");
  if (act != "identity")
    return unimplemented("fused_matmul with activation " + act +
                         ": the pre-activation A B + bias is not observable, so the fast check cannot judge it");
  const Tensor& a = inputs.t("A");
  const Tensor& b = inputs.t("B");
  const Tensor& bias = inputs.t("bias");
  const Tensor& c = outputs.t("C");
  for (const Tensor* t : {&a, &b, &bias, &c})
    if (t->dtype() != DType::kF32 || t->strides().back() != 1)
      return unimplemented("the fast fused_matmul check reads unit-stride FP32 tensors");
  GemmProblem p;
  p.m = a.dim(0);
  p.k = a.dim(1);
  p.n = b.dim(1);
  p.alpha = 1;
  p.beta = 1;
  p.a = {a.data<float>(), p.m, p.k, a.strides()[0]};
  p.b = {b.data<float>(), p.k, p.n, b.strides()[0]};
  // The bias as C0 = 1 bias^T: leading dimension 0, every row the same stored row.
  p.c0 = {bias.data<float>(), p.m, p.n, 0};
  p.c = {c.data<float>(), p.m, p.n, c.strides()[0]};
  return verify_gemm(p, options);
}

}  // namespace kc::verify
