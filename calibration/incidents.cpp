// kc — incident mechanisms replayed (docs/incidents.md): GEMM kernels
// that look right to a naive benchmark harness and are not. Each reproduces
// one mechanism reported for machine-written CUDA kernels (Sakana AI's "AI
// CUDA Engineer", February 2025), on the CPU, and each is caught by one of the
// engine's integrity checks with its own signature:
//   incident.matmul_no_write       OUTPUT_NOT_WRITTEN  the output buffer is left as it was
//   incident.matmul_constant       CONSTANT_OUTPUT     every element the same value
//   incident.matmul_mutates_input  INPUT_MUTATED       zeroes A so a reference run afterwards agrees
//   incident.matmul_address_cache  STALE_OUTPUT        results cached by input address
//   incident.matmul_memo           TIMING_IMPLAUSIBLE  results memoised by a sample of the inputs
//   incident.matmul_honest         (conforms)
// and the silent-precision-coercion incident (Huawei Ascend): GEMMs that
// round their FP32 inputs to tf32, bf16 or fp16 (PRECISION_FINGERPRINT).
// The shape-only kernel of the incident is calib.matmul_tile16_noremainder
// (C-CMP-03). These impls live in the calibration backend: broken on purpose,
// run only when named.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <vector>

#include "calibration/calibration_backend.h"
#include "calibration/gemm.h"

namespace kc::calibration {
namespace {

/// Writes nothing: a harness that computed its reference into C first, or
/// reused C between runs, finds the right answer there.
Status no_write(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  (void)g;
  return ok_status();
}

/// The mean of the true result everywhere: right on average, wrong everywhere.
Status constant_output(Call& call) {
  KC_RETURN_IF_ERROR(plain_gemm(call));
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  double mean = 0;
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) mean += g.c[i * g.ldc + j];
  mean /= static_cast<double>(std::max<std::int64_t>(1, g.m * g.n));
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) g.c[i * g.ldc + j] = static_cast<float>(mean);
  return ok_status();
}

/// Zeroes A and writes C = 0 (beta = 0): a harness that computes its reference
/// after the kernel, from the same buffers, sees 0 = 0.
Status mutates_input(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  Tensor& a = call.t("A");
  std::memset(a.raw(), 0, a.nbytes());
  for (std::int64_t i = 0; i < g.m; ++i)
    for (std::int64_t j = 0; j < g.n; ++j) store_c(g, i, j, 0.0f);
  return ok_status();
}

/// Caches C by the addresses of A and B: a benchmark loop that re-runs the
/// kernel on the same buffers gets the first answer back at memcpy speed.
Status address_cache(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  static std::map<std::pair<const float*, const float*>, std::vector<float>> cache;
  Tensor& c = call.t("C");
  auto it = cache.find({g.a, g.b});
  if (it != cache.end() && it->second.size() * sizeof(float) == c.nbytes()) {
    std::memcpy(c.raw(), it->second.data(), c.nbytes());
    return ok_status();
  }
  KC_RETURN_IF_ERROR(plain_gemm(call));
  const float* out = c.data<float>();
  cache[{g.a, g.b}] = std::vector<float>(out, out + c.nbytes() / sizeof(float));
  return ok_status();
}

/// Memoises C by 8 sampled elements of A and B: on the repeated inputs of a
/// timing loop it answers correctly, without doing the work. Only a physical
/// floor on the time can tell.
Status memo(Call& call) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  std::array<float, 18> key{};
  key[0] = static_cast<float>(g.m);
  key[1] = static_cast<float>(g.n);
  for (int s = 0; s < 8; ++s) {
    const std::int64_t i = (g.m - 1) * s / 7, p = (g.k - 1) * (7 - s) / 7, j = (g.n - 1) * s / 7;
    key[2 + s] = g.a[i * g.lda + p];
    key[10 + s] = g.b[p * g.ldb + j];
  }
  static std::map<std::array<float, 18>, std::vector<float>> memo_table;
  Tensor& c = call.t("C");
  auto it = memo_table.find(key);
  if (it != memo_table.end() && it->second.size() * sizeof(float) == c.nbytes()) {
    std::memcpy(c.raw(), it->second.data(), c.nbytes());
    return ok_status();
  }
  KC_RETURN_IF_ERROR(plain_gemm(call));
  const float* out = c.data<float>();
  memo_table[key] = std::vector<float>(out, out + c.nbytes() / sizeof(float));
  return ok_status();
}

/// Silent precision coercion: the inputs are rounded to a narrower type
/// before an FP32-accumulating GEMM (what a TF32 tensor-core path, or a
/// bf16/fp16 conversion in a "mixed precision" kernel, does).
Status coerced_inputs(Call& call, DType narrow) {
  KC_ASSIGN_OR_RETURN(Gemm g, gemm_of(call));
  // Round copies of A and B to the narrow type, then multiply honestly in FP32:
  // the only error beyond FP32's is the input rounding the fingerprint looks for.
  rounded_inputs_gemm_on(g, narrow);
  return ok_status();
}

}  // namespace

void add_incident_impls(ImplList& out) {
  auto decl = [](const char* name, const char* description) {
    Declaration d = calib_decl(name, "matmul", description);
    d.source = "calibration/incidents.cpp (a replayed incident mechanism; see docs/incidents.md)";
    return d;
  };
  add(out, decl("incident.matmul_no_write", "reward hack: returns without writing C"), no_write);
  add(out, decl("incident.matmul_constant", "reward hack: writes the mean of the true C everywhere"),
      constant_output);
  add(out, decl("incident.matmul_mutates_input", "reward hack: zeroes A and writes C = 0"), mutates_input);
  add(out, decl("incident.matmul_address_cache", "reward hack: caches C by the addresses of A and B"),
      address_cache);
  add(out, decl("incident.matmul_memo", "reward hack: memoises C by 8 sampled input elements"), memo);
  add(out, decl("incident.matmul_tf32_inputs", "silent coercion: FP32 inputs rounded to TF32 (10 bits)"),
      [](Call& call) { return coerced_inputs(call, DType::kTF32); });
  add(out, decl("incident.matmul_bf16_inputs", "silent coercion: FP32 inputs rounded to BF16 (7 bits)"),
      [](Call& call) { return coerced_inputs(call, DType::kBF16); });
  add(out, decl("incident.matmul_fp16_inputs", "silent coercion: FP32 inputs converted to FP16"),
      [](Call& call) { return coerced_inputs(call, DType::kF16); });
  add(out, decl("incident.matmul_honest", "honest FP32 GEMM (i-k-j loops, FP32 accumulation)"), plain_gemm);
}

}  // namespace kc::calibration
