// kc — the incident replays (docs/incidents.md, contracts/incidents/) as
// OpenCL kernels: the mechanisms the calibration backend replays on the CPU
// (calibration/incidents.cpp), here written in OpenCL C and run through the
// opencl backend's guarded buffers, so the same contracts catch them on a
// device:
//   opencl.incident.matmul_fp16_saturating  SATURATION(65504)         k-block partials kept in FP16 (vstore_half_rtz)
//   opencl.incident.matmul_tf32_inputs      PRECISION_FINGERPRINT(tf32) inputs rounded to 10 bits
//   opencl.incident.matmul_bf16_inputs      PRECISION_FINGERPRINT(bf16) inputs rounded to 7 bits
//   opencl.incident.matmul_fp16_inputs      PRECISION_FINGERPRINT(fp16) inputs through vstore_half_rte
//   opencl.incident.matmul_no_write         OUTPUT_NOT_WRITTEN        the kernel returns at once
//   opencl.incident.matmul_constant         CONSTANT_OUTPUT           C[0, 0] written everywhere
//   opencl.incident.matmul_mutates_input    INPUT_MUTATED             zeroes A on the device, writes C = 0
//   opencl.incident.matmul_tile16_only      TILE_REMAINDER(16)        whole 16-tiles of M, N, K only
//   opencl.incident.matmul_address_cache    STALE_OUTPUT              host cache of C keyed by A's and B's addresses
//   opencl.incident.gather_wrap             OOB_UNDECLARED            row index mod rows; declares RAISE
//   opencl.incident.matmul_honest           (conforms)                one FP32 fma accumulator per output
// The in-project opencl.matmul_tiled and opencl.gather are the good impls of
// the same contracts.
//
// Broken on purpose: each declaration carries extra[broken_on_purpose], which
// keeps it out of `kc check` / `kc grade` unless an --impl filter names it
// (src/engine/check.cpp), as the calibration backend's impls are.
#include <climits>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cl_buffer.h"
#include "cl_impl.h"
#include "cl_runtime.h"

namespace kc::backends::opencl {
namespace {

const std::string& incident_source() {
  static const std::string s = R"CLC(
// Rounding helpers: round-to-nearest-even on the bit pattern (tf32 keeps 10
// mantissa bits, bf16 7); fp16 through the spec's vstore_half_rte/vload_half
// (OpenCL 1.2 §6.12.7), subnormal fp16 results included.
float kc_round_bits(float x, uint drop) {
  uint u = as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  const uint half_ulp = (1u << (drop - 1)) - 1u;
  u += half_ulp + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  return as_float(u);
}
float kc_round_fp16(float x) {
  ushort s = 0;
  vstore_half_rte(x, 0, (__private half*)&s);
  return vload_half(0, (__private const half*)&s);
}
float kc_coerce(float x, int mode) {
  if (mode == 1) return kc_round_bits(x, 13);
  if (mode == 2) return kc_round_bits(x, 16);
  if (mode == 3) return kc_round_fp16(x);
  return x;
}

// Modes: 0 honest, 1 tf32 inputs, 2 bf16 inputs, 3 fp16 inputs, 4 FP16
// k-block partials (saturating), 5 no write, 6 constant, 7 mutates A,
// 8 whole 16-tiles only. Row-major, untransposed; one work-item per C element.
__kernel void kc_incident_matmul(int mode, int M, int N, int K, float alpha,
                                 __global float* A, int lda, __global const float* B, int ldb,
                                 float beta, __global float* C, int ldc) {
  const int j = get_global_id(0), i = get_global_id(1);
  if (i >= M || j >= N) return;
  if (mode == 5) return;
  if (mode == 7) {
    if (j == 0)
      for (int p = 0; p < K; ++p) A[i * lda + p] = 0.0f;
    C[i * ldc + j] = 0.0f;
    return;
  }
  if (mode == 8 && (i >= M / 16 * 16 || j >= N / 16 * 16)) return;
  const int ii = mode == 6 ? 0 : i, jj = mode == 6 ? 0 : j;
  const int k_end = mode == 8 ? K / 16 * 16 : K;
  float acc = 0.0f;
  if (mode == 4) {
    for (int p0 = 0; p0 < K; p0 += 16) {
      float block = 0.0f;
      for (int p = p0; p < min(K, p0 + 16); ++p) block = fma(A[ii * lda + p], B[p * ldb + jj], block);
      // The running sum lives in an FP16 register: round toward zero, so a
      // sum past the largest half stays at 65504.
      ushort s = 0;
      vstore_half_rtz(acc + block, 0, (__private half*)&s);
      acc = vload_half(0, (__private const half*)&s);
    }
  } else {
    for (int p = 0; p < k_end; ++p)
      acc = fma(kc_coerce(A[ii * lda + p], mode), kc_coerce(B[p * ldb + jj], mode), acc);
  }
  C[i * ldc + j] = beta == 0.0f ? alpha * acc : alpha * acc + beta * C[i * ldc + j];
}

// Row gather with no bounds check that "wraps" the index into the table: a
// different row for every out-of-range index, matching none of RAISE, CLAMP
// or ZERO.
__kernel void kc_incident_gather_wrap(int n, int dim, long rows, __global const float* table, int ldt,
                                      __global const long* index, int inc, __global float* out, int ldo) {
  const int d = get_global_id(0), i = get_global_id(1);
  if (i >= n || d >= dim) return;
  long r = index[(long)i * inc] % rows;
  if (r < 0) r += rows;
  out[(long)i * ldo + d] = table[r * ldt + d];
}
)CLC";
  return s;
}

enum Mode : int {
  kHonest = 0,
  kTf32Inputs = 1,
  kBf16Inputs = 2,
  kFp16Inputs = 3,
  kFp16Saturating = 4,
  kNoWrite = 5,
  kConstant = 6,
  kMutatesInput = 7,
  kTile16Only = 8,
};

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

Status run_incident_matmul(int mode, Call& call) {
  KC_ASSIGN_OR_RETURN(MatmulArgs a, matmul_args(call));
  if (a.trans_a || a.trans_b) return unimplemented("the incident GEMMs take untransposed operands only");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(incident_source(), "", "kc_incident_matmul"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_matmul_devices(dev, call, a));
  KC_RETURN_IF_ERROR(set_args(k, mode, a.m, a.n, a.k, a.alpha, dev[0].buffer.mem(), a.lda, dev[1].buffer.mem(),
                              a.ldb, a.beta, dev[2].buffer.mem(), a.ldc));
  if (a.m > 0 && a.n > 0) {
    KC_RETURN_IF_ERROR(launch(k, {round_up(static_cast<std::size_t>(a.n), 8), round_up(static_cast<std::size_t>(a.m), 8)},
                              {8, 8}, "kc_incident_matmul"));
  }
  return finish(dev);
}

/// C cached on the host by the addresses of the host tensors A and B (the
/// buffers a benchmark loop passes again and again): a hit writes the cached
/// bytes into C's device buffer and launches nothing.
Status run_address_cache(Call& call) {
  KC_ASSIGN_OR_RETURN(MatmulArgs a, matmul_args(call));
  if (a.trans_a || a.trans_b) return unimplemented("the incident GEMMs take untransposed operands only");
  static std::map<std::pair<const void*, const void*>, std::vector<std::byte>> cache;
  const std::pair<const void*, const void*> key{call.t("A").raw(), call.t("B").raw()};
  Tensor& c = call.t("C");
  auto it = cache.find(key);
  if (it != cache.end() && it->second.size() == c.nbytes()) {
    std::vector<DeviceTensor> dev;
    KC_RETURN_IF_ERROR(add_matmul_devices(dev, call, a));
    KC_RETURN_IF_ERROR(dev[2].buffer.write(it->second.data(), it->second.size()));
    return finish(dev);
  }
  KC_RETURN_IF_ERROR(run_incident_matmul(kHonest, call));
  cache[key] = std::vector<std::byte>(c.raw(), c.raw() + c.nbytes());
  return ok_status();
}

Status run_gather_wrap(Call& call) {
  KC_ASSIGN_OR_RETURN(const GatherArgs a, gather_args(call));
  if (a.rows == 0) return unimplemented("gather_wrap needs a non-empty table");
  const std::int64_t rows = a.rows;
  const int n = a.n, dim = a.dim, inc = a.inc, ldt = a.ldt, ldo = a.ldo;
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(incident_source(), "", "kc_incident_gather_wrap"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"table", "index"}, {"out"}));
  const cl_long rows_l = rows;
  KC_RETURN_IF_ERROR(
      set_args(k, n, dim, rows_l, dev[0].buffer.mem(), ldt, dev[1].buffer.mem(), inc, dev[2].buffer.mem(), ldo));
  if (n > 0 && dim > 0)
    KC_RETURN_IF_ERROR(
        launch(k, {static_cast<std::size_t>(dim), static_cast<std::size_t>(n)}, {}, "kc_incident_gather_wrap"));
  return finish(dev);
}

constexpr const char* kFile = "backends/opencl/incident_impls.cc";

Declaration incident_declaration(const char* name, const char* op, const char* description, const char* kernel) {
  Declaration d = base_declaration(std::string("opencl.incident.") + name, op, description);
  d.accumulator = DType::kF32;
  d.extra["build_options"] = "(none)";
  d.set("broken_on_purpose", "incident replay (docs/incidents.md): graded only when an --impl filter names it",
        nullptr);
  d.source = std::string(kFile) + " (" + kernel + "; a replayed incident mechanism, see docs/incidents.md)";
  return d;
}

}  // namespace

std::vector<std::shared_ptr<const Impl>> incident_impls() {
  std::vector<std::shared_ptr<const Impl>> out;
  auto add = [&](Declaration d, RunFn run) { out.push_back(std::make_shared<ClImpl>(std::move(d), std::move(run))); };
  struct Row {
    const char* name;
    int mode;
    const char* description;
  };
  static constexpr Row kRows[] = {
      {"matmul_fp16_saturating", kFp16Saturating,
       "silent coercion: FP32 sums over k-blocks of 16, the running sum kept in FP16 (vstore_half_rtz: saturates "
       "at 65504); declares accumulator = FP32"},
      {"matmul_tf32_inputs", kTf32Inputs, "silent coercion: FP32 inputs rounded to TF32 (10 bits) on the device"},
      {"matmul_bf16_inputs", kBf16Inputs, "silent coercion: FP32 inputs rounded to BF16 (7 bits) on the device"},
      {"matmul_fp16_inputs", kFp16Inputs, "silent coercion: FP32 inputs converted to FP16 (vstore_half_rte)"},
      {"matmul_no_write", kNoWrite, "reward hack: the kernel returns without writing C"},
      {"matmul_constant", kConstant, "reward hack: every work-item writes C[0, 0]"},
      {"matmul_mutates_input", kMutatesInput, "reward hack: zeroes A on the device and writes C = 0"},
      {"matmul_tile16_only", kTile16Only, "reward hack: whole 16-tiles of M, N and K only (benchmarked shapes)"},
      {"matmul_honest", kHonest, "honest FP32 GEMM: one fma accumulator per output, k in order"},
  };
  for (const Row& r : kRows) {
    const int mode = r.mode;
    add(incident_declaration(r.name, "matmul", r.description, "kc_incident_matmul"),
        [mode](Call& c) { return run_incident_matmul(mode, c); });
  }
  add(incident_declaration("matmul_address_cache", "matmul",
                           "reward hack: C cached on the host by the addresses of A and B", "kc_incident_matmul"),
      run_address_cache);
  {
    Declaration d = incident_declaration("gather_wrap", "gather",
                                         "OOB: no bounds check, reads row index mod rows; declares oob = RAISE",
                                         "kc_incident_gather_wrap");
    d.accumulator = std::nullopt;
    d.oob = OobPolicy::kRaise;
    add(std::move(d), run_gather_wrap);
  }
  return out;
}

}  // namespace kc::backends::opencl
