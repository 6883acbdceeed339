// kc — calibration trios for the capability contracts (contracts/capability,
// docs/capability.md). Every kernel is an FP32 GEMM that declares what it
// supports (shape_class, layouts), what it does outside that (unsupported,
// fallback) and the path it runs (path), and reports the path each call took
// (kc/capability.h), as a library with introspection would:
//   calib.cap_tile16_zeros          baseline: declares the 16-tile class, writes zeros
//   calib.cap_tile16_silent         bad: runs the whole-tile kernel on every shape (remainders lost, no error)
//   calib.cap_tile16_raise          good: raises on a size that is not a multiple of 16
//   calib.cap_tile16_fallback       good: the scalar fallback it declares serves the other sizes
//   calib.cap_tile16_misrouted      bad: a dispatch test for a 32-deep K tile sends supported K to the fallback
//   calib.cap_dense_ignores_lda     bad: declares dense layouts only, reads A as dense whatever its stride
//   calib.cap_dense_raise           good: raises on a padded leading dimension
//   calib.cap_fp32_request_tf32     bad: declares strict FP32 arithmetic, rounds its inputs to TF32, no path report
//   calib.cap_fp32_request_strict   good: strict FP32, as declared, no path report
//   calib.cap_bf16_request_strict   a "bf16 math" GEMM whose bf16 path never runs (strict FP32), no path report
//   calib.cap_bf16_request_served   the bf16 path as requested (inputs rounded to bf16, FP32 accumulation)
//   calib.cap_align16_silent        bad: declares 16-byte alignment and RAISE, loads A and B from the 16-byte
//                                   boundary at or below their pointers (an aligned-load kernel), no check
//   calib.cap_align16_raise         good: raises on an operand that is not 16-byte aligned
//   calib.cap_align16_fallback      declares FALLBACK: its unaligned path serves misaligned operands
//   calib.cap_align_any             declares alignment any: unaligned loads throughout
//   calib.cap_ws_wraps              bad: declares workspace = 4 * M * N and RAISE, keeps its partial sums in the
//                                   workspace it is given, wrapping around a short one: wrong C, no error
//   calib.cap_ws_raise              good: raises on a workspace below its need
//   calib.cap_ws_overruns           declares RAISE, writes its partial sums past a short workspace
//   calib.cap_ws_fallback           declares FALLBACK: its own buffer serves a call with a short workspace
//   calib.cap_device_ud2            bad: declares device_capability = sse2, but its long-K path (K > 64) executes
//                                   an instruction outside the declaration (ud2 here: SIGILL on every CPU)
//   calib.cap_device_sse2           good: declares sse2 and executes nothing else
//   calib.cap_device_amx_raise      declares amx-tile and RAISE: raises on a CPU without AMX
//   calib.cap_device_amx_ud2        declares amx-tile and RAISE, runs its AMX kernel whatever the CPU (SIGILL
//                                   without AMX)
//   calib.cap_latency_hidden_path   bad: declares the one path 'blocked', reports none; K off a multiple of 16
//                                   runs a generic path with 8 times the work (right numbers, another path)
//   calib.cap_latency_one_path      good: the same GEMM on its one path for every K
// The impls outside a trio (the bf16 requests, the workspace overrun and
// fallback, the AMX pair, whose verdicts depend on the CPU) are judged in
// tests/unit/engine/capability_test.cpp.
#include "kc/capability.h"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "calibration/calibration_backend.h"
#include "calibration/gemm.h"
#include "kc/cpu_features.h"

namespace kc::calibration {
namespace {

constexpr std::int64_t kTile = 16;
constexpr char kTilePath[] = "tile16";
constexpr char kScalarPath[] = "scalar";

/// The whole-tile kernel: 16 x 16 blocks of C over K in steps of 16, with no
/// remainder code (its dispatcher is meant to send it multiples of 16 only).
void tile16_whole(const Gemm& g) {
  const std::int64_t m_end = g.m / kTile * kTile, n_end = g.n / kTile * kTile, k_end = g.k / kTile * kTile;
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j)
      if (i >= m_end || j >= n_end) store_c(g, i, j, 0.0f);  // rows and columns no tile reaches
  float acc[kTile][kTile];
  for (std::int64_t i0 = 0; i0 < m_end; i0 += kTile)
    for (std::int64_t j0 = 0; j0 < n_end; j0 += kTile) {
      for (auto& row : acc) std::fill(std::begin(row), std::end(row), 0.0f);
      for (std::int64_t k0 = 0; k0 < k_end; k0 += kTile)
        for (std::int64_t i = i0; i < i0 + kTile; ++i)
          for (std::int64_t p = k0; p < k0 + kTile; ++p) {
            const float aip = g.a[i * g.lda + p];
            for (std::int64_t j = j0; j < j0 + kTile; ++j) acc[i - i0][j - j0] += aip * g.b[p * g.ldb + j];
          }
      for (std::int64_t i = i0; i < i0 + kTile; ++i)
        for (std::int64_t j = j0; j < j0 + kTile; ++j) store_c(g, i, j, acc[i - i0][j - j0]);
    }
}

bool multiple_of_tile(const Gemm& g) { return g.m % kTile == 0 && g.n % kTile == 0 && g.k % kTile == 0; }

std::string sizes_of(const Gemm& g) {
  return "M = " + std::to_string(g.m) + ", N = " + std::to_string(g.n) + ", K = " + std::to_string(g.k);
}

enum class Dispatch {
  kZeros,      ///< writes zeros (the baseline)
  kAlwaysTile, ///< the whole-tile kernel on every shape, no check
  kRaise,      ///< the whole-tile kernel on multiples of 16, an error otherwise
  kFallback,   ///< the whole-tile kernel on multiples of 16, the scalar GEMM otherwise
  kMisrouted,  ///< as kFallback, but the test asks K for a multiple of 32
};

Status tile16_gemm(Call& call, Dispatch dispatch) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  switch (dispatch) {
    case Dispatch::kZeros:
      for (std::int64_t i = 0; i < g.m; ++i)
        for (std::int64_t j = 0; j < g.n; ++j) store_c(g, i, j, 0.0f);
      report_selected_path(kTilePath);
      return ok_status();
    case Dispatch::kAlwaysTile:
      tile16_whole(g);
      report_selected_path(kTilePath);
      return ok_status();
    case Dispatch::kRaise:
      if (!multiple_of_tile(g))
        return kernel_raised("unsupported shape (" + sizes_of(g) + "): the 16-tile kernel needs multiples of 16");
      tile16_whole(g);
      report_selected_path(kTilePath);
      return ok_status();
    case Dispatch::kFallback:
    case Dispatch::kMisrouted: {
      const bool tile = dispatch == Dispatch::kFallback ? multiple_of_tile(g) : multiple_of_tile(g) && g.k % 32 == 0;
      if (tile) {
        tile16_whole(g);
        report_selected_path(kTilePath);
      } else {
        plain_gemm_on(g);
        report_selected_path(kScalarPath, sizes_of(g) + " failed the 16-tile kernel's dispatch test");
      }
      return ok_status();
    }
  }
  return ok_status();
}

/// A GEMM for dense operands: A read as if its leading dimension were K.
Status dense_gemm(Call& call, bool check_strides) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  if (check_strides && (g.lda != g.k || g.ldb != g.n || g.ldc != g.n))
    return kernel_raised("unsupported layout: leading dimensions (" + std::to_string(g.lda) + ", " +
                         std::to_string(g.ldb) + ", " + std::to_string(g.ldc) + ") are not the dense (" +
                         std::to_string(g.k) + ", " + std::to_string(g.n) + ", " + std::to_string(g.n) + ")");
  Gemm dense = g;
  dense.lda = g.k;
  plain_gemm_on(dense);
  report_selected_path("dense");
  return ok_status();
}

/// A GEMM that reports no path: kc can only infer which one ran. With
/// `inputs` = FP32 the strict GEMM; otherwise A and B rounded to that format
/// (exact products in FP32, as bf16 / TF32 dot-product instructions form them)
/// and summed in FP32.
Status rounded_input_gemm(Call& call, DType inputs) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  rounded_inputs_gemm_on(g, inputs);
  return ok_status();
}

/// An operand pointer moved down to the 16-byte boundary at or below it: what
/// a kernel written for aligned operands (aligned vector loads on an address
/// it assumes aligned) reads from.
template <typename T>
const T* aligned_down(const T* p) {
  return reinterpret_cast<const T*>(reinterpret_cast<std::uintptr_t>(p) / 16 * 16);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

enum class AlignDispatch { kSilent, kRaise, kFallback, kAny };

/// A GEMM declared for 16-byte aligned operands. Its aligned path loads A and
/// B from their pointers rounded down to 16 bytes (stores to C are
/// unaligned): right on aligned operands, the wrong elements on others.
Status align16_gemm(Call& call, AlignDispatch dispatch) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  const bool aligned = aligned16(g.a) && aligned16(g.b) && aligned16(g.c);
  if (dispatch == AlignDispatch::kAny || (!aligned && dispatch == AlignDispatch::kFallback)) {
    plain_gemm_on(g);
    report_selected_path("unaligned");
    return ok_status();
  }
  if (!aligned && dispatch == AlignDispatch::kRaise)
    return kernel_raised("unsupported alignment: A, B and C must be 16-byte aligned (A at " +
                         std::to_string(reinterpret_cast<std::uintptr_t>(g.a) % 16) + ", B at " +
                         std::to_string(reinterpret_cast<std::uintptr_t>(g.b) % 16) + ", C at " +
                         std::to_string(reinterpret_cast<std::uintptr_t>(g.c) % 16) + " bytes past a 16-byte boundary)");
  Gemm loads = g;
  loads.a = aligned_down(g.a);
  loads.b = aligned_down(g.b);
  plain_gemm_on(loads);
  report_selected_path("aligned16");
  return ok_status();
}

Declaration align_decl(const char* name, const char* description, const char* alignment, const char* unsupported) {
  Declaration d = calib_decl(name, "matmul", description);
  d.extra["alignment"] = alignment;
  d.extra["unsupported"] = unsupported;
  d.extra["path"] = std::string(alignment) == "any" ? "unaligned" : "aligned16";
  if (std::string(unsupported) == "FALLBACK") d.extra["fallback"] = "unaligned";
  return d;
}

enum class WorkspaceUse { kWraps, kRaise, kOverruns, kFallback };

/// A GEMM that keeps every C_ij's sum in a workspace of M * N floats
/// (4 * M * N bytes) and copies them to C at the end: the workspace the call
/// gives, or its own where the call gives none (or, kFallback, a short one).
Status workspace_gemm(Call& call, WorkspaceUse use) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  const std::int64_t need = g.m * g.n;  // floats
  Tensor* given = call_workspace(call);
  const std::int64_t have = given ? given->numel() / static_cast<std::int64_t>(sizeof(float)) : need;
  std::vector<float> own;
  float* ws = nullptr;
  std::int64_t slots = need;
  const char* path = "workspace";
  if (!given || (have < need && use == WorkspaceUse::kFallback)) {
    own.assign(static_cast<std::size_t>(need), 0.0f);
    ws = own.data();
    if (given) path = "own_workspace";
  } else {
    if (have < need && use == WorkspaceUse::kRaise)
      return kernel_raised("workspace of " + std::to_string(given->numel()) + " bytes, below the " +
                           std::to_string(need * 4) + " this GEMM needs");
    ws = reinterpret_cast<float*>(given->raw());
    if (use == WorkspaceUse::kWraps) slots = std::min(need, have);  // kOverruns: uses `need` regardless
  }
  if (slots <= 0) slots = 1;
  std::vector<float> unused;
  if (given && use == WorkspaceUse::kWraps && have == 0) {  // nothing to wrap around: a one-float stand-in
    unused.assign(1, 0.0f);
    ws = unused.data();
  }
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < g.k; ++p) acc += g.a[i * g.lda + p] * g.b[p * g.ldb + j];
      float v = acc;
      std::memcpy(&ws[(i * g.n + j) % slots], &v, sizeof v);  // the workspace need not be float-aligned
    }
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) {
      float v = 0;
      std::memcpy(&v, &ws[(i * g.n + j) % slots], sizeof v);
      store_c(g, i, j, v);
    }
  report_selected_path(path);
  return ok_status();
}

Declaration workspace_decl(const char* name, const char* description, const char* unsupported) {
  Declaration d = calib_decl(name, "matmul", description);
  d.extra["workspace"] = "4 * M * N";
  d.extra["unsupported"] = unsupported;
  d.extra["path"] = "workspace";
  if (std::string(unsupported) == "FALLBACK") d.extra["fallback"] = "own_workspace";
  return d;
}

Declaration tile16_decl(const char* name, const char* description, const char* unsupported) {
  Declaration d = calib_decl(name, "matmul", description);
  d.shape_class = "multiple_of(16, M, N, K)";
  d.extra["unsupported"] = unsupported;
  d.extra["path"] = kTilePath;
  if (std::string(unsupported) == "FALLBACK") d.extra["fallback"] = kScalarPath;
  return d;
}

/// An instruction the CPU refuses: what a kernel compiled for a wider vector
/// ISA than the CPU has runs into (ud2 on x86, SIGILL on every CPU).
[[noreturn]] void illegal_instruction() {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("ud2");
#endif
  std::raise(SIGILL);
  std::abort();
}

enum class DeviceUse {
  kDeclared,      ///< executes only what the declaration names
  kLongKUnnamed,  ///< K > 64 takes a path outside the declaration
  kCheckAmx,      ///< raises where the CPU has no AMX, as declared
  kAssumeAmx,     ///< runs the "AMX kernel" whatever the CPU
};

Status device_gemm(Call& call, DeviceUse use) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  const bool amx = cpu_has(CpuFeature::kAmxTile);
  if (use == DeviceUse::kLongKUnnamed && g.k > 64) illegal_instruction();
  if (use == DeviceUse::kCheckAmx && !amx) return kernel_raised("this CPU has no AMX (amx-tile): the kernel needs it");
  if (use == DeviceUse::kAssumeAmx && !amx) illegal_instruction();
  plain_gemm_on(g);
  return ok_status();
}

Declaration device_decl(const char* name, const char* description, const char* capability) {
  Declaration d = calib_decl(name, "matmul", description);
  d.extra["device_capability"] = capability;
  d.extra["unsupported"] = "RAISE";
  return d;
}

Declaration dense_decl(const char* name, const char* description) {
  Declaration d = calib_decl(name, "matmul", description);
  d.extra["layouts"] = "CONTIGUOUS";
  d.extra["unsupported"] = "RAISE";
  d.extra["path"] = "dense";
  return d;
}

/// Work a hidden fallback does per call, in multiples of the blocked path's.
constexpr int kFallbackWork = 8;

enum class LatencyUse {
  kHiddenFallback,  ///< K off a multiple of 16 runs a path with kFallbackWork times the work
  kOnePath,         ///< one path for every K
};

/// A GEMM declaring the one path "blocked" and reporting none, as a library
/// without introspection would. Under kHiddenFallback a K that is not a
/// multiple of 16 goes to a slower generic path (here: the product formed
/// kFallbackWork times, into a scratch buffer but for the last): the same
/// numbers, another path, visible only in the time per unit of work.
Status latency_gemm(Call& call, LatencyUse use) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  if (use == LatencyUse::kHiddenFallback && g.k % kTile != 0) {
    std::vector<float> scratch(static_cast<std::size_t>(g.m * g.n));
    Gemm spent = g;
    spent.c = scratch.data();
    spent.ldc = g.n;
    spent.beta = 0;
    for (int r = 1; r < kFallbackWork; ++r) {
      plain_gemm_on(spent);
      asm volatile("" : : "r"(scratch.data()) : "memory");  // the work is done, not folded away
    }
  }
  plain_gemm_on(g);
  return ok_status();
}

Declaration latency_decl(const char* name, const char* description) {
  Declaration d = calib_decl(name, "matmul", description);
  d.extra["path"] = "blocked";
  return d;
}

}  // namespace

void add_capability_impls(ImplList& out) {
  add(out,
      tile16_decl("calib.cap_tile16_zeros",
                  "capability baseline: declares the 16-tile shape class and writes zeros", "RAISE"),
      [](Call& call) { return tile16_gemm(call, Dispatch::kZeros); });
  add(out,
      tile16_decl("calib.cap_tile16_silent",
                  "KC-CAP-SHAPE-01 bad: declares multiples of 16 and unsupported = RAISE, but runs its whole-tile "
                  "kernel on every shape: remainders are lost without an error",
                  "RAISE"),
      [](Call& call) { return tile16_gemm(call, Dispatch::kAlwaysTile); });
  add(out,
      tile16_decl("calib.cap_tile16_raise",
                  "KC-CAP-SHAPE-01 good: the 16-tile kernel, raising on a size that is not a multiple of 16", "RAISE"),
      [](Call& call) { return tile16_gemm(call, Dispatch::kRaise); });
  add(out,
      tile16_decl("calib.cap_tile16_fallback",
                  "KC-CAP-PATH-01 good: the 16-tile kernel on multiples of 16, its declared scalar fallback on the "
                  "other sizes",
                  "FALLBACK"),
      [](Call& call) { return tile16_gemm(call, Dispatch::kFallback); });
  add(out,
      tile16_decl("calib.cap_tile16_misrouted",
                  "KC-CAP-PATH-01 bad: its dispatch test asks K for a multiple of 32 (a wider kernel's), so supported "
                  "shapes with K = 16, 48, ... silently take the scalar fallback",
                  "FALLBACK"),
      [](Call& call) { return tile16_gemm(call, Dispatch::kMisrouted); });
  add(out,
      dense_decl("calib.cap_dense_ignores_lda",
                 "KC-CAP-LAYOUT-01 bad: declares dense layouts only and unsupported = RAISE, but reads A as dense "
                 "whatever its leading dimension"),
      [](Call& call) { return dense_gemm(call, false); });
  struct Request {
    const char* name;
    const char* path_precision;
    DType runs;
    const char* description;
  };
  const Request requests[] = {
      {"calib.cap_fp32_request_tf32", "FP32", DType::kTF32,
       "KC-CAP-PATH-02 bad: declares strict FP32 arithmetic but rounds its inputs to TF32 (a tensor-core path taken "
       "silently); reports no path"},
      {"calib.cap_fp32_request_strict", "FP32", DType::kF32,
       "KC-CAP-PATH-02 good: strict FP32 arithmetic, as declared; reports no path"},
      {"calib.cap_bf16_request_strict", "BF16", DType::kF32,
       "offered with bf16 math, but its bf16 path never runs: strict FP32, reported nowhere"},
      {"calib.cap_bf16_request_served", "BF16", DType::kBF16,
       "bf16 math as requested (inputs rounded to bf16, FP32 accumulation); reports no path"},
  };
  for (const Request& r : requests) {
    Declaration d = calib_decl(r.name, "matmul", r.description);
    d.extra["path_precision"] = r.path_precision;
    const DType runs = r.runs;
    add(out, std::move(d), [runs](Call& call) { return rounded_input_gemm(call, runs); });
  }
  add(out,
      align_decl("calib.cap_align16_silent",
                 "KC-CAP-ALIGN-01 bad: declares 16-byte aligned operands and unsupported = RAISE, but never checks: "
                 "its aligned loads read a misaligned A or B from the 16-byte boundary below it, without an error",
                 "16", "RAISE"),
      [](Call& call) { return align16_gemm(call, AlignDispatch::kSilent); });
  add(out,
      align_decl("calib.cap_align16_raise",
                 "KC-CAP-ALIGN-01 good: the aligned GEMM, raising on an operand that is not 16-byte aligned", "16",
                 "RAISE"),
      [](Call& call) { return align16_gemm(call, AlignDispatch::kRaise); });
  add(out,
      align_decl("calib.cap_align16_fallback",
                 "the aligned GEMM on 16-byte aligned operands, its declared unaligned path on the others", "16",
                 "FALLBACK"),
      [](Call& call) { return align16_gemm(call, AlignDispatch::kFallback); });
  add(out,
      align_decl("calib.cap_align_any", "a GEMM with unaligned loads throughout: declares alignment any", "any",
                 "RAISE"),
      [](Call& call) { return align16_gemm(call, AlignDispatch::kAny); });
  add(out,
      workspace_decl("calib.cap_ws_wraps",
                     "KC-CAP-WORKSPACE-01 bad: declares workspace = 4 * M * N and unsupported = RAISE, but keeps its "
                     "partial sums in whatever workspace it is given, wrapping around a short one: later sums "
                     "overwrite earlier ones, without an error",
                     "RAISE"),
      [](Call& call) { return workspace_gemm(call, WorkspaceUse::kWraps); });
  add(out,
      workspace_decl("calib.cap_ws_raise",
                     "KC-CAP-WORKSPACE-01 good: the workspace GEMM, raising on a workspace below 4 * M * N bytes",
                     "RAISE"),
      [](Call& call) { return workspace_gemm(call, WorkspaceUse::kRaise); });
  add(out,
      workspace_decl("calib.cap_ws_overruns",
                     "declares workspace = 4 * M * N and RAISE, but writes its partial sums past a short workspace",
                     "RAISE"),
      [](Call& call) { return workspace_gemm(call, WorkspaceUse::kOverruns); });
  add(out,
      workspace_decl("calib.cap_ws_fallback",
                     "the workspace GEMM; its declared fallback, a buffer of its own, serves a short workspace",
                     "FALLBACK"),
      [](Call& call) { return workspace_gemm(call, WorkspaceUse::kFallback); });
  add(out,
      device_decl("calib.cap_device_ud2",
                  "KC-CAP-DEVICE-01 bad: declares device_capability = sse2, but its long-K path (K > 64) executes an "
                  "instruction the declaration does not cover (ud2: SIGILL on any CPU)",
                  "sse2"),
      [](Call& call) { return device_gemm(call, DeviceUse::kLongKUnnamed); });
  add(out,
      device_decl("calib.cap_device_sse2",
                  "KC-CAP-DEVICE-01 good: declares device_capability = sse2 and executes nothing beyond it", "sse2"),
      [](Call& call) { return device_gemm(call, DeviceUse::kDeclared); });
  add(out,
      device_decl("calib.cap_device_amx_raise",
                  "declares device_capability = amx-tile and RAISE: raises on a CPU without AMX", "amx-tile"),
      [](Call& call) { return device_gemm(call, DeviceUse::kCheckAmx); });
  add(out,
      device_decl("calib.cap_device_amx_ud2",
                  "declares device_capability = amx-tile and RAISE, but runs its AMX kernel on any CPU (SIGILL "
                  "without AMX)",
                  "amx-tile"),
      [](Call& call) { return device_gemm(call, DeviceUse::kAssumeAmx); });
  add(out,
      dense_decl("calib.cap_dense_raise",
                 "KC-CAP-LAYOUT-01 good: the dense GEMM, raising on a padded leading dimension"),
      [](Call& call) { return dense_gemm(call, true); });
  add(out,
      latency_decl("calib.cap_latency_hidden_path",
                   "KC-CAP-PATH-03 bad: declares the one path 'blocked', reports none, and sends K off a multiple of "
                   "16 to a generic path with 8 times the work: right numbers, another path"),
      [](Call& call) { return latency_gemm(call, LatencyUse::kHiddenFallback); });
  add(out,
      latency_decl("calib.cap_latency_one_path",
                   "KC-CAP-PATH-03 good: declares the one path 'blocked' and runs it for every K"),
      [](Call& call) { return latency_gemm(call, LatencyUse::kOnePath); });
}

}  // namespace kc::calibration
