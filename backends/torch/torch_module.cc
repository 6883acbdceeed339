// kc — libkc_torch.so: libtorch 1.13 (ATen) CPU ops behind the plugin C ABI
// (kc/kc_plugin.h), loaded by the torch backend (torch_backend.cpp). It is an
// ordinary kc plugin too: `kc check --plugin libkc_torch.so` grades the same
// impls under backend "plugin".
//
// kc's buffers are wrapped with at::from_blob (shape and strides as given, no
// copy); each op runs the ATen function a PyTorch user calls and the result is
// copied into kc's output view (in place for addmm_).
//
// Declarations and where they come from. PyTorch 1.13 documentation
// (https://pytorch.org/docs/1.13/, page names below) where it speaks; where it
// is silent the ATen source of 1.13 (aten/src/ATen/native/..., file named) is
// the authority and is cited as such.
//  accumulator  matmul/addmm: FP32 — CPU float GEMM goes to the BLAS sgemm
//               (aten/src/ATen/native/CPUBlas.cpp: gemm -> sgemm_), which
//               accumulates in single precision. sum: FP32 — cascade_sum with
//               opmath_type<float> = float (native/cpu/SumKernel.cpp). var:
//               FP64 — std_var_kernel_impl reduces with WelfordOps<scalar_t,
//               double, ...> (native/cpu/ReduceOpsKernel.cpp). softmax /
//               log_softmax: FP32 vectorised (native/cpu/SoftMaxKernel.cpp).
//  determinism  BITWISE: torch.use_deterministic_algorithms lists no CPU op of
//               these as nondeterministic; results depend on the thread count
//               (intra-op parallel reductions split by thread), so the _t1/_t2
//               impls fix it (torch.set_num_threads) and the others run with the
//               worker's fixed default ("Reproducibility" note, notes/randomness).
//  nan          IEEE_PROPAGATE: the functions are defined by their formulas
//               (torch.nn.functional.gelu, torch.softmax, torch.addmm) with no
//               NaN exception; kc measures it.
//  denormal     IEEE: torch.set_flush_denormal "is disabled by default".
//  reduction_range  softmax / log_softmax: SAFE — SoftMaxKernel.cpp subtracts
//               the row max before exp. var: SAFE — the FP64 Welford state
//               holds FP32 squares (<= 1.2e77, >= 2^-298) and their sums
//               without overflow or underflow. layer_norm: UNSPECIFIED — the
//               docs give the formula only (RowwiseMoments accumulates in
//               float; docs/findings.md records what it returns).
//  oob          RAISE for index_select, gather and embedding: the docs do not
//               state it; the 1.13 CPU kernels check every index and throw
//               c10::IndexError "index out of range in self" (index_select_out_cpu_,
//               embedding via index_select, native/TensorAdvancedIndexing.cpp) or
//               c10::Error "index ... is out of bounds for dimension 0"
//               (gather, native/cpu/ScatterGatherKernel.cpp). Negative indices are
//               not wrapped. Every c10::Error becomes KC_RAISED with its message.
//  alpha/beta   addmm: out = beta * input + alpha * (mat1 @ mat2); "If beta is 0,
//               then input will be ignored, and nan and inf in it will not be
//               propagated" (torch.addmm). alpha = 0 is not special-cased by the
//               docs: A and B are read (alpha_zero = FORMULA, so KC-GEMM-03's BLAS
//               rule does not apply). matmul has no alpha/beta: calls with
//               alpha != 1 or beta != 0 are outside its shape class (KC_UNSUPPORTED).
//  inf_policy   gelu: "GELU(x) = x * Phi(x)" and, for approximate='tanh',
//               0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//               (torch.nn.functional.gelu / torch.nn.GELU); nothing on
//               infinities. At x = -inf both are -inf * 0 = NaN in IEEE
//               arithmetic, and 1.13 CPU returns NaN (observed, C-EXC-01):
//               FORMULA.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>  // macros only

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "kc/kc_plugin.h"

namespace {

/// What went wrong, as the plugin ABI reports it.
struct Fail {
  int32_t code;
  std::string message;
};

const kc_tensor* find_tensor(const kc_call* call, std::string_view name) {
  for (int32_t i = 0; i < call->num_tensors; ++i)
    if (name == call->tensors[i].name) return &call->tensors[i];
  return nullptr;
}

std::string attr(const kc_call* call, std::string_view key, std::string fallback) {
  for (int32_t i = 0; i < call->num_attrs; ++i)
    if (key == call->attrs[i].key) return call->attrs[i].value;
  return fallback;
}

double attr_double(const kc_call* call, std::string_view key, double fallback) {
  const std::string v = attr(call, key, "");
  if (v.empty()) return fallback;
  return std::strtod(v.c_str(), nullptr);
}

/// kc's buffer as an ATen tensor (no copy).
at::Tensor view(const kc_call* call, std::string_view name) {
  const kc_tensor* t = find_tensor(call, name);
  if (!t) throw Fail{KC_UNSUPPORTED, "call has no tensor '" + std::string(name) + "'"};
  at::ScalarType st;
  switch (t->dtype) {
    case KC_DTYPE_F32:
      st = at::kFloat;
      break;
    case KC_DTYPE_I64:
      st = at::kLong;
      break;
    case KC_DTYPE_BF16:
      st = at::kBFloat16;  // kc stores bf16 as the upper 16 bits of a float, as c10::BFloat16 does
      break;
    case KC_DTYPE_F16:
      st = at::kHalf;  // IEEE binary16, as c10::Half
      break;
    default:
      throw Fail{KC_UNSUPPORTED, "tensor '" + std::string(name) + "' has a dtype this module does not take"};
  }
  return at::from_blob(t->data, at::IntArrayRef(t->shape, t->rank), at::IntArrayRef(t->strides, t->rank),
                       at::TensorOptions().dtype(st));
}

bool trans(const kc_call* call, const char* key) {
  const std::string v = attr(call, key, "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  throw Fail{KC_UNSUPPORTED, std::string(key) + " = '" + v + "', expected N or T"};
}

/// op(X) of a stored matrix.
at::Tensor op_view(const kc_call* call, const char* name, const char* trans_key) {
  at::Tensor t = view(call, name);
  return trans(call, trans_key) ? t.t() : t;
}

/// Runs `body` with at::set_num_threads(threads) when threads > 0, restoring the previous count.
template <typename F>
void with_threads(int threads, F&& body) {
  if (threads <= 0) return body();
  const int previous = at::get_num_threads();
  at::set_num_threads(threads);
  try {
    body();
  } catch (...) {
    at::set_num_threads(previous);
    throw;
  }
  at::set_num_threads(previous);
}

// ---- The kernels. Each takes the call and the impl's thread count.

void run_matmul(const kc_call* call, int) {
  if (attr_double(call, "alpha", 1) != 1 || attr_double(call, "beta", 0) != 0)
    throw Fail{KC_UNSUPPORTED, "torch.matmul has no alpha/beta (torch.addmm does)"};
  view(call, "C").copy_(at::matmul(op_view(call, "A", "trans_a"), op_view(call, "B", "trans_b")));
}

void run_addmm(const kc_call* call, int) {
  at::Tensor c = view(call, "C");
  const double alpha = attr_double(call, "alpha", 1);
  const double beta = attr_double(call, "beta", 0);
  // In place on kc's C, as torch.Tensor.addmm_: beta = 0 ignores C's contents.
  c.addmm_(op_view(call, "A", "trans_a"), op_view(call, "B", "trans_b"), beta, alpha);
}

void run_softmax(const kc_call* call, int) { view(call, "y").copy_(at::softmax(view(call, "x"), -1)); }
void run_log_softmax(const kc_call* call, int) { view(call, "y").copy_(at::log_softmax(view(call, "x"), -1)); }
void run_gelu_erf(const kc_call* call, int) { view(call, "y").copy_(at::gelu(view(call, "x"), "none")); }
void run_gelu_tanh(const kc_call* call, int) { view(call, "y").copy_(at::gelu(view(call, "x"), "tanh")); }

void run_exp(const kc_call* call, int) { view(call, "y").copy_(at::exp(view(call, "x"))); }
void run_tanh(const kc_call* call, int) { view(call, "y").copy_(at::tanh(view(call, "x"))); }
void run_erf(const kc_call* call, int) { view(call, "y").copy_(at::erf(view(call, "x"))); }
void run_silu(const kc_call* call, int) { view(call, "y").copy_(at::silu(view(call, "x"))); }

void run_index_select(const kc_call* call, int) {
  view(call, "out").copy_(at::index_select(view(call, "table"), 0, view(call, "index")));
}
void run_embedding(const kc_call* call, int) {
  const auto pad = static_cast<int64_t>(attr_double(call, "padding_idx", -1));
  view(call, "out").copy_(at::embedding(view(call, "table"), view(call, "index"), pad));
}
void run_gather(const kc_call* call, int) {
  // torch.gather(table, 0, idx) with idx[i][j] = index[i]: out[i][j] = table[index[i]][j].
  at::Tensor table = view(call, "table");
  at::Tensor index = view(call, "index");
  at::Tensor idx = index.unsqueeze(1).expand({index.size(0), table.size(1)});
  view(call, "out").copy_(at::gather(table, 0, idx));
}

void run_layernorm(const kc_call* call, int) {
  // torch.nn.functional.layer_norm over the last axis (normalized_shape = {cols}).
  at::Tensor x = view(call, "x");
  const double eps = attr_double(call, "eps", 1e-5);
  view(call, "y").copy_(at::layer_norm(x, {x.size(-1)}, view(call, "gamma"), view(call, "beta"), eps));
}

void run_sum(const kc_call* call, int threads) {
  with_threads(threads, [&] { view(call, "out").copy_(at::sum(view(call, "x")).reshape({1})); });
}
void run_mean(const kc_call* call, int) { view(call, "out").copy_(at::mean(view(call, "x"), {1})); }
void run_var(const kc_call* call, int threads) {
  // Population variance (the op's definition): unbiased = false.
  with_threads(threads, [&] { view(call, "out").copy_(at::var(view(call, "x"), {1}, /*unbiased=*/false)); });
}

using Kernel = void (*)(const kc_call*, int);

struct Entry {
  const char* name;
  const char* op;
  const char* declares;
  const char* description;
  Kernel kernel;
  int threads;
  int32_t dtype = KC_DTYPE_F32;  ///< the data tensors' precision (indices are I64)
  const char* dtypes = "FP32";
};

// `source = ...` must hold no comma (the declares list is comma-separated).
#define KC_TORCH_SRC(page) "source = PyTorch 1.13 docs (https://pytorch.org/docs/1.13/) " page
#define KC_TORCH_COMMON "determinism = BITWISE, nan = IEEE_PROPAGATE, denormal = IEEE"

constexpr Entry kEntries[] = {
    {"torch.matmul", "matmul", "accumulator = FP32, " KC_TORCH_COMMON ", alpha_zero = FORMULA, beta_zero = C_NOT_READ, " KC_TORCH_SRC("torch.matmul; sgemm via aten/src/ATen/native/CPUBlas.cpp"),
     "at::matmul(op(A), op(B)); alpha = 1 and beta = 0 only", &run_matmul, 0},
    {"torch.addmm", "matmul", "accumulator = FP32, " KC_TORCH_COMMON ", alpha_zero = FORMULA, beta_zero = C_NOT_READ, " KC_TORCH_SRC("torch.addmm; sgemm via aten/src/ATen/native/CPUBlas.cpp"),
     "C.addmm_(op(A), op(B), beta, alpha): C = beta C + alpha op(A) op(B)", &run_addmm, 0},
    {"torch.softmax", "softmax", "accumulator = FP32, " KC_TORCH_COMMON ", reduction_range = SAFE, " KC_TORCH_SRC("torch.nn.functional.softmax; native/cpu/SoftMaxKernel.cpp (row max subtracted before exp)"),
     "at::softmax(x, -1)", &run_softmax, 0},
    {"torch.log_softmax", "log_softmax", "accumulator = FP32, " KC_TORCH_COMMON ", reduction_range = SAFE, " KC_TORCH_SRC("torch.nn.functional.log_softmax; native/cpu/SoftMaxKernel.cpp (row max subtracted before exp)"),
     "at::log_softmax(x, -1)", &run_log_softmax, 0},
    {"torch.gelu_erf", "gelu_erf", KC_TORCH_COMMON ", inf_policy = FORMULA, " KC_TORCH_SRC("torch.nn.functional.gelu approximate='none'"),
     "at::gelu(x, \"none\")", &run_gelu_erf, 0},
    {"torch.gelu_tanh", "gelu_tanh", KC_TORCH_COMMON ", inf_policy = FORMULA, " KC_TORCH_SRC("torch.nn.functional.gelu approximate='tanh'"),
     "at::gelu(x, \"tanh\")", &run_gelu_tanh, 0},
    {"torch.index_select", "index_select", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.index_select; bounds check in native/TensorAdvancedIndexing.cpp index_select_out_cpu_"),
     "at::index_select(table, 0, index)", &run_index_select, 0},
    {"torch.embedding", "embedding", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.nn.functional.embedding; native/Embedding.cpp -> index_select"),
     "at::embedding(table, index, padding_idx)", &run_embedding, 0},
    {"torch.gather", "gather", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.gather; bounds check in native/cpu/ScatterGatherKernel.cpp"),
     "at::gather(table, 0, index expanded to {n, dim})", &run_gather, 0},
    {"torch.layernorm", "layernorm", "accumulator = FP32, " KC_TORCH_COMMON ", reduction_range = UNSPECIFIED, " KC_TORCH_SRC("torch.nn.functional.layer_norm (biased variance; the formula only); RowwiseMoments in native/cpu/layer_norm_kernel.cpp"),
     "at::layer_norm(x, {cols}, gamma, beta, eps)", &run_layernorm, 0},
    {"torch.sum", "sum", "accumulator = FP32, " KC_TORCH_COMMON ", " KC_TORCH_SRC("torch.sum; cascade_sum in native/cpu/SumKernel.cpp"),
     "at::sum(x), default threads", &run_sum, 0},
    {"torch.sum_t1", "sum", "accumulator = FP32, " KC_TORCH_COMMON ", threads = 1, " KC_TORCH_SRC("torch.sum; torch.set_num_threads"),
     "at::sum(x), at::set_num_threads(1)", &run_sum, 1},
    {"torch.sum_t2", "sum", "accumulator = FP32, " KC_TORCH_COMMON ", threads = 2, " KC_TORCH_SRC("torch.sum; torch.set_num_threads"),
     "at::sum(x), at::set_num_threads(2)", &run_sum, 2},
    {"torch.var", "variance", "accumulator = FP64, " KC_TORCH_COMMON ", reduction_range = SAFE, " KC_TORCH_SRC("torch.var unbiased=False; WelfordOps<float double> in native/cpu/ReduceOpsKernel.cpp (FP32 squares and their sums stay inside FP64's range)"),
     "at::var(x, 1, unbiased=false) (Welford, FP64 accumulator, whatever estimator is asked)", &run_var, 0},
    {"torch.var_t1", "variance", "accumulator = FP64, " KC_TORCH_COMMON ", threads = 1, reduction_range = SAFE, " KC_TORCH_SRC("torch.var; torch.set_num_threads"),
     "at::var(x, 1, unbiased=false), at::set_num_threads(1)", &run_var, 1},
    {"torch.var_t2", "variance", "accumulator = FP64, " KC_TORCH_COMMON ", threads = 2, reduction_range = SAFE, " KC_TORCH_SRC("torch.var; torch.set_num_threads"),
     "at::var(x, 1, unbiased=false), at::set_num_threads(2)", &run_var, 2},
    // bf16 tensors: the same ATen functions. The accumulator is what ATen's
    // OpMathType.h states for reduced-precision inputs ("For FP16 or BFloat16
    // inputs, ops should perform internal math in FP32": opmath_type<BFloat16>
    // = float); the docs' "Numerical accuracy" note speaks of reduced-precision
    // GEMM reductions on CUDA only. KC-GEMM-BF16-02's accumulator_bits probe
    // measures what the CPU kernels do. (CPU fp16 matmul is not implemented in
    // 1.13: "addmm_impl_cpu_" not implemented for 'Half'.)
    {"torch.matmul_bf16", "matmul", "accumulator = FP32, " KC_TORCH_COMMON ", alpha_zero = FORMULA, beta_zero = C_NOT_READ, " KC_TORCH_SRC("torch.matmul on bfloat16 tensors; opmath_type<BFloat16> = float in ATen/OpMathType.h"),
     "at::matmul(op(A), op(B)) on bf16 tensors; alpha = 1 and beta = 0 only", &run_matmul, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.softmax_bf16", "softmax", "accumulator = FP32, " KC_TORCH_COMMON ", reduction_range = SAFE, " KC_TORCH_SRC("torch.nn.functional.softmax on bfloat16 tensors; native/cpu/SoftMaxKernel.cpp (row max subtracted before exp) in opmath_type float"),
     "at::softmax(x, -1) on bf16 tensors", &run_softmax, 0, KC_DTYPE_BF16, "BF16"},
    // More bf16 ops, and the few Half ops libtorch 1.13 runs on the CPU at
    // all (docs/backends/torch.md lists the others with their errors: GEMM,
    // softmax, layer_norm, exp, tanh, erf, gelu, silu and relu raise "... not
    // implemented for 'Half'"). Sources for the reduced-precision arithmetic:
    // opmath_type<Half> = opmath_type<BFloat16> = float (ATen/OpMathType.h,
    // "ops should perform internal math in FP32"); Vectorized<BFloat16>
    // widens to float for every operation and narrows the result
    // (cpu/vec/vec256/vec256_bfloat16.h:209-241 map(), :511-519 binary ops),
    // so a function is one float evaluation rounded once, but a computation
    // written in Vectorized<BFloat16> rounds every step. layer_norm is such a
    // computation: RowwiseMomentsImpl<T> (native/cpu/moments_utils.h:58-128)
    // keeps its Welford mean and M2 in T; on bf16 rows the statistics are
    // bf16 (measured: rows of mean 30 and spread 0.5 come out 0.36 off where
    // layer_norm in float then one bf16 rounding is 0.0077 off), so
    // torch.layernorm_bf16 declares accumulator = BF16, not the FP32 of
    // OpMathType.h. sum and mean reduce in float: [1, 2^-j ..., -1] keeps its
    // small terms down to 2^-14 on Half and bf16 rows of 3, 130 and 4096.
    // accuracy = UNDOCUMENTED where the docs give a formula and no accuracy
    // and the measured results leave the bound of one rounding (engine:
    // "measured, not judged", docs/judge.md): mean rounds the float sum to
    // the tensor's dtype before dividing (two roundings into FP16, 1.3 times
    // the bound at 7 columns); gelu_tanh and silu on bf16 compute in bf16
    // steps (1 + tanh cancels: -0 at x = -4 where gelu is -7.0e-5);
    // gelu_erf's float 1 + erf cancels below x = -5 (0 for -7.4e-8);
    // log_softmax sums exp in float but rounds the sum to bf16 before its
    // log (34 times the bound at 7 columns, where -log S is small). The
    // bf16 exp, tanh and erf are one float evaluation rounded once and
    // declare it the same way, as the docs state nothing more for them.
    {"torch.sum_fp16", "sum", "accumulator = FP32, " KC_TORCH_COMMON ", " KC_TORCH_SRC("torch.sum on float16 tensors; cascade_sum in native/cpu/SumKernel.cpp with opmath_type<Half> = float (ATen/OpMathType.h)"),
     "at::sum(x) on fp16 tensors", &run_sum, 0, KC_DTYPE_F16, "FP16"},
    {"torch.mean_fp16", "mean", "accumulator = FP32, " KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, " KC_TORCH_SRC("torch.mean on float16 tensors; sum in opmath_type<Half> = float (ATen/OpMathType.h) divided by the count"),
     "at::mean(x, {1}) on fp16 tensors", &run_mean, 0, KC_DTYPE_F16, "FP16"},
    {"torch.index_select_fp16", "index_select", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.index_select on float16 tables; bounds check in native/TensorAdvancedIndexing.cpp index_select_out_cpu_"),
     "at::index_select(table, 0, index) on an fp16 table", &run_index_select, 0, KC_DTYPE_F16, "FP16"},
    {"torch.embedding_fp16", "embedding", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.nn.functional.embedding on a float16 table; native/Embedding.cpp -> index_select"),
     "at::embedding(table, index, padding_idx) on an fp16 table", &run_embedding, 0, KC_DTYPE_F16, "FP16"},
    {"torch.gather_fp16", "gather", KC_TORCH_COMMON ", oob = RAISE, " KC_TORCH_SRC("torch.gather on a float16 table; bounds check in native/cpu/ScatterGatherKernel.cpp"),
     "at::gather(table, 0, index expanded to {n, dim}) on an fp16 table", &run_gather, 0, KC_DTYPE_F16, "FP16"},
    {"torch.sum_bf16", "sum", "accumulator = FP32, " KC_TORCH_COMMON ", " KC_TORCH_SRC("torch.sum on bfloat16 tensors; cascade_sum in native/cpu/SumKernel.cpp with opmath_type<BFloat16> = float (ATen/OpMathType.h)"),
     "at::sum(x) on bf16 tensors", &run_sum, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.mean_bf16", "mean", "accumulator = FP32, " KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, " KC_TORCH_SRC("torch.mean on bfloat16 tensors; sum in opmath_type<BFloat16> = float (ATen/OpMathType.h) divided by the count"),
     "at::mean(x, {1}) on bf16 tensors", &run_mean, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.log_softmax_bf16", "log_softmax", "accumulator = FP32, " KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, reduction_range = SAFE, " KC_TORCH_SRC("torch.nn.functional.log_softmax on bfloat16 tensors; native/cpu/SoftMaxKernel.cpp (row max subtracted before exp) in opmath_type float"),
     "at::log_softmax(x, -1) on bf16 tensors", &run_log_softmax, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.layernorm_bf16", "layernorm", "accumulator = BF16, " KC_TORCH_COMMON ", reduction_range = UNSPECIFIED, " KC_TORCH_SRC("torch.nn.functional.layer_norm on bfloat16 tensors; RowwiseMomentsImpl<T> keeps the Welford moments in T (native/cpu/moments_utils.h:58-128) and Vectorized<BFloat16> rounds every operation to bf16 (cpu/vec/vec256/vec256_bfloat16.h:511-519); not the FP32 of ATen/OpMathType.h"),
     "at::layer_norm(x, {cols}, gamma, beta, eps) on bf16 tensors", &run_layernorm, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.exp_bf16", "exp", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, " KC_TORCH_SRC("torch.exp on bfloat16 tensors; Vectorized<BFloat16>::exp in float rounded once (cpu/vec/vec256/vec256_bfloat16.h:299-310)"),
     "at::exp(x) on bf16 tensors", &run_exp, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.tanh_bf16", "tanh", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, " KC_TORCH_SRC("torch.tanh on bfloat16 tensors; Vectorized<BFloat16>::map in float rounded once (cpu/vec/vec256/vec256_bfloat16.h:209-215)"),
     "at::tanh(x) on bf16 tensors", &run_tanh, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.erf_bf16", "erf", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, " KC_TORCH_SRC("torch.erf on bfloat16 tensors; Vectorized<BFloat16>::erf in float rounded once (cpu/vec/vec256/vec256_bfloat16.h:279-297)"),
     "at::erf(x) on bf16 tensors", &run_erf, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.gelu_erf_bf16", "gelu_erf", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, inf_policy = FORMULA, " KC_TORCH_SRC("torch.nn.functional.gelu approximate='none' on bfloat16 tensors"),
     "at::gelu(x, \"none\") on bf16 tensors", &run_gelu_erf, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.gelu_tanh_bf16", "gelu_tanh", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, inf_policy = FORMULA, " KC_TORCH_SRC("torch.nn.functional.gelu approximate='tanh' on bfloat16 tensors"),
     "at::gelu(x, \"tanh\") on bf16 tensors", &run_gelu_tanh, 0, KC_DTYPE_BF16, "BF16"},
    {"torch.silu_bf16", "silu", KC_TORCH_COMMON ", accuracy = UNDOCUMENTED, inf_policy = FORMULA, " KC_TORCH_SRC("torch.nn.functional.silu on bfloat16 tensors (x * sigmoid(x): -inf * 0 = NaN at -inf)"),
     "at::silu(x) on bf16 tensors", &run_silu, 0, KC_DTYPE_BF16, "BF16"},
};
constexpr int kNumEntries = sizeof kEntries / sizeof kEntries[0];

void put(char* message, size_t size, const std::string& text) {
  if (!message || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(message, text.data(), n);
  message[n] = '\0';
}

int32_t run_entry(const kc_call* call, char* message, size_t message_size, void* user_data) {
  const Entry& e = *static_cast<const Entry*>(user_data);
  for (int32_t i = 0; i < call->num_tensors; ++i) {
    const kc_tensor& t = call->tensors[i];
    const bool index = std::string_view(t.name) == "index";
    if (t.dtype != (index ? KC_DTYPE_I64 : e.dtype)) {
      put(message, message_size, std::string(e.name) + " takes " + e.dtypes + " tensors (I64 indices)");
      return KC_UNSUPPORTED;
    }
  }
  try {
    e.kernel(call, e.threads);
    return KC_OK;
  } catch (const Fail& f) {
    put(message, message_size, f.message);
    return f.code;
  } catch (const c10::Error& err) {
    // The library's own error (an out-of-range index, a shape it rejects): raised.
    put(message, message_size, std::string(e.name) + ": " + err.what_without_backtrace());
    return KC_RAISED;
  } catch (const std::exception& err) {
    put(message, message_size, std::string(e.name) + ": " + err.what());
    return KC_RAISED;
  }
}

kc_impl_desc g_impls[kNumEntries];
kc_plugin g_plugin;
std::string g_version;

}  // namespace

extern "C" __attribute__((visibility("default"))) const kc_plugin* kc_plugin_init(uint32_t host_abi_version) {
  if (host_abi_version < KC_PLUGIN_ABI_VERSION) return nullptr;
  if (g_plugin.abi_version == 0) {
    for (int i = 0; i < kNumEntries; ++i) {
      const Entry& e = kEntries[i];
      g_impls[i] = kc_impl_desc{e.name, e.op, e.dtypes, e.declares, e.description, &run_entry,
                                const_cast<Entry*>(&e)};
    }
    g_version = std::string("libtorch ") + TORCH_VERSION;
    g_plugin = kc_plugin{KC_PLUGIN_ABI_VERSION, "kc_torch", g_version.c_str(), kNumEntries, g_impls};
  }
  return &g_plugin;
}
