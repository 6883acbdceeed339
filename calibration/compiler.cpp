// kc — calibration trios for the compiler-induced contract classes:
//   C-CMP-01 fused equivalence      (fused_matmul: matmul + bias + activation)
//   C-CMP-02 schedule invariance    (matmul over a split-K schedule space)
//   C-CMP-03 shape polymorphism     (matmul tiled 16 x 16 x 16)
// Each kernel computes for real; the bad ones carry one documented defect
// (docs/classes/C-CMP-0*.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibration_backend.h"
#include "calibration/gemm.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- C-CMP-01

// The activations of fused_matmul, evaluated in double from the FP32
// pre-activation (the kernel's own code, independent of the oracle).
double act_relu(double z) { return z > 0 ? z : 0.0; }
double act_gelu_erf(double z) { return 0.5 * z * std::erfc(-z / std::sqrt(2.0)); }
// The tanh approximation of GELU (Hendrycks & Gimpel): up to 4.7e-4 away from
// erf-GELU (at |z| = 2.7), and relatively far off in the negative tail.
double act_gelu_tanh(double z) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * z * (1.0 + std::tanh(c * (z + 0.044715 * z * z * z)));
}
double act_silu(double z) { return z >= 0 ? z / (1.0 + std::exp(-z)) : z * std::exp(z) / (1.0 + std::exp(z)); }

enum class Epilogue {
  kFaithful,       ///< the activation the call asks for
  kTanhForErf,     ///< gelu_erf computed with the tanh formula (a "fast GELU" epilogue)
  kBiasDropped,    ///< the epilogue forgets the bias
};

/// C = act(A·B + bias) in one pass: FP32 accumulation over K, the bias added
/// in FP32, the activation applied before C is written. Works for FP32 and
/// FP16 storage (inputs widen exactly to float).
Status fused_kernel(Call& call, Epilogue epilogue) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  const Tensor& bias = call.t("bias");
  Tensor& c = call.t("C");
  const std::int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  const std::string act = call.get("activation", "gelu_erf");
  double (*f)(double) = nullptr;
  if (act == "relu") f = act_relu;
  else if (act == "gelu_erf") f = epilogue == Epilogue::kTanhForErf ? act_gelu_tanh : act_gelu_erf;
  else if (act == "gelu_tanh") f = act_gelu_tanh;
  else if (act == "silu") f = act_silu;
  else if (act == "identity") f = [](double z) { return z; };
  else return unimplemented("activation '" + act + "'");

  std::vector<float> fa(static_cast<std::size_t>(m * k)), fb(static_cast<std::size_t>(k * n)),
      fbias(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < m * k; ++i) fa[i] = static_cast<float>(a.at(i));
  for (std::int64_t i = 0; i < k * n; ++i) fb[i] = static_cast<float>(b.at(i));
  for (std::int64_t j = 0; j < n; ++j) fbias[j] = static_cast<float>(bias.at(j));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p) acc += fa[i * k + p] * fb[p * n + j];
      const float z = epilogue == Epilogue::kBiasDropped ? acc : acc + fbias[j];
      c.set(i * n + j, f(z));  // one rounding into C's format
    }
  return ok_status();
}

void add_fused_trio(ImplList& out) {
  auto decl = [](const char* name, const char* description) {
    Declaration d = calib_decl(name, "fused_matmul", description);
    d.dtypes = {DType::kF32, DType::kF16};
    return d;
  };
  add(out,
      decl("calib.fused_nobias",
           "C-CMP-01 baseline: fused matmul + activation whose epilogue forgets the bias"),
      [](Call& call) { return fused_kernel(call, Epilogue::kBiasDropped); });
  add(out,
      decl("calib.fused_gelu_tanh",
           "C-CMP-01 bad: fused matmul + bias + GELU using the tanh approximation where erf-GELU is declared"),
      [](Call& call) { return fused_kernel(call, Epilogue::kTanhForErf); });
  add(out,
      decl("calib.fused_fp32",
           "C-CMP-01 good: fused matmul + bias + activation, FP32 accumulation, the activation asked for"),
      [](Call& call) { return fused_kernel(call, Epilogue::kFaithful); });
}

// ---------------------------------------------------------------- C-CMP-02

/// The schedule space of the split-K GEMM: K cut into S contiguous chunks.
int splits_of(const std::string& schedule) {
  if (schedule == "k_serial") return 1;
  if (schedule == "split_k2") return 2;
  if (schedule == "split_k4") return 4;
  if (schedule == "split_k8") return 8;
  return 0;
}

enum class SplitDefect {
  kNone,
  kFp16WorkspaceAt8,  ///< split_k8 parks its partial sums in an FP16 workspace
  kLastSplitDropped,  ///< the reduction over partials stops one split early
};

/// Split-K GEMM: every split accumulates its chunk of K in FP32 into a
/// workspace partial; the partials are then reduced in FP32, in split order.
Status split_k_gemm(Call& call, const std::string& default_schedule, SplitDefect defect) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  const std::string schedule = call.get("schedule", default_schedule);
  const int splits = splits_of(schedule);
  if (splits == 0) return unimplemented("schedule '" + schedule + "' is not in this kernel's space");
  const bool fp16_workspace = defect == SplitDefect::kFp16WorkspaceAt8 && splits == 8;
  const int reduced = defect == SplitDefect::kLastSplitDropped && splits > 1 ? splits - 1 : splits;
  const std::int64_t chunk = (g.k + splits - 1) / splits;
  std::vector<float> partial(static_cast<std::size_t>(splits));
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      for (int s = 0; s < splits; ++s) {
        float acc = 0;
        const std::int64_t lo = s * chunk, hi = std::min(g.k, lo + chunk);
        for (std::int64_t p = lo; p < hi; ++p) acc += g.a[i * g.lda + p] * g.b[p * g.ldb + j];
        // The defect: a half-precision workspace rounds every partial to FP16.
        partial[s] = fp16_workspace ? static_cast<float>(round_to(acc, DType::kF16)) : acc;
      }
      float sum = 0;
      for (int s = 0; s < reduced; ++s) sum += partial[s];
      store_c(g, i, j, sum);
    }
  return ok_status();
}

void add_schedule_trio(ImplList& out) {
  auto decl = [](const char* name, const char* description, std::vector<std::string> schedules) {
    Declaration d = calib_decl(name, "matmul", description);
    d.schedules = std::move(schedules);
    return d;
  };
  const std::vector<std::string> space = {"k_serial", "split_k2", "split_k4", "split_k8"};
  add(out,
      decl("calib.matmul_splitk_droplast",
           "C-CMP-02 baseline: split-K GEMM whose reduction over partials stops one split early",
           {"split_k2", "split_k4", "split_k8"}),
      [](Call& call) { return split_k_gemm(call, "split_k2", SplitDefect::kLastSplitDropped); });
  add(out,
      decl("calib.matmul_splitk_fp16ws",
           "C-CMP-02 bad: split-K GEMM whose split_k8 schedule keeps partial sums in an FP16 workspace", space),
      [](Call& call) { return split_k_gemm(call, "k_serial", SplitDefect::kFp16WorkspaceAt8); });
  add(out,
      decl("calib.matmul_splitk_fp32",
           "C-CMP-02 good: split-K GEMM with FP32 partial sums in every schedule", space),
      [](Call& call) { return split_k_gemm(call, "k_serial", SplitDefect::kNone); });
}

// ---------------------------------------------------------------- C-CMP-03

constexpr std::int64_t kTile = 16;

enum class TileDefect {
  kNone,
  kRemainderDropped,  ///< only whole 16-tiles are computed, in M, N and K
  kFirstKTileOnly,    ///< the K loop stops after its first tile
};

/// Tiled GEMM: 16 x 16 blocks of C, each accumulated in FP32 over K in steps
/// of 16. The honest kernel clips the last tile of every dimension.
Status tiled_gemm(Call& call, TileDefect defect) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  const bool whole_only = defect == TileDefect::kRemainderDropped;
  // Extent a tile loop covers: every element, or only the whole tiles.
  auto covered = [&](std::int64_t size) { return whole_only ? size / kTile * kTile : size; };
  const std::int64_t m_end = covered(g.m), n_end = covered(g.n), k_end = covered(g.k);
  float acc[kTile][kTile];
  for (std::int64_t i0 = 0; i0 < m_end; i0 += kTile)
    for (std::int64_t j0 = 0; j0 < n_end; j0 += kTile) {
      const std::int64_t i1 = std::min(i0 + kTile, m_end), j1 = std::min(j0 + kTile, n_end);
      for (auto& row : acc) std::fill(std::begin(row), std::end(row), 0.0f);
      for (std::int64_t k0 = 0; k0 < k_end; k0 += kTile) {
        const std::int64_t k1 = std::min(k0 + kTile, k_end);
        for (std::int64_t i = i0; i < i1; ++i)
          for (std::int64_t p = k0; p < k1; ++p) {
            const float aip = g.a[i * g.lda + p];
            for (std::int64_t j = j0; j < j1; ++j) acc[i - i0][j - j0] += aip * g.b[p * g.ldb + j];
          }
        if (defect == TileDefect::kFirstKTileOnly) break;
      }
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = j0; j < j1; ++j) store_c(g, i, j, acc[i - i0][j - j0]);
    }
  return ok_status();
}

void add_shape_trio(ImplList& out) {
  // All three claim every shape (shape_class = any, the calib_decl default).
  add(out,
      calib_decl("calib.matmul_tile16_k1tile",
                 "matmul", "C-CMP-03 baseline: 16x16x16-tiled GEMM whose K loop stops after one tile"),
      [](Call& call) { return tiled_gemm(call, TileDefect::kFirstKTileOnly); });
  add(out,
      calib_decl("calib.matmul_tile16_noremainder", "matmul",
                 "C-CMP-03 bad: 16x16x16-tiled GEMM that computes whole tiles only (remainders dropped)"),
      [](Call& call) { return tiled_gemm(call, TileDefect::kRemainderDropped); });
  add(out,
      calib_decl("calib.matmul_tile16",
                 "matmul", "C-CMP-03 good: 16x16x16-tiled GEMM with clipped remainder tiles"),
      [](Call& call) { return tiled_gemm(call, TileDefect::kNone); });
}

}  // namespace

void add_compiler_impls(ImplList& out) {
  add_fused_trio(out);
  add_schedule_trio(out);
  add_shape_trio(out);
}

}  // namespace kc::calibration
