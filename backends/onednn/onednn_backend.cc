// kc — the onednn backend (see onednn_backend.h).
//
// Every impl builds one oneDNN primitive for the call's exact layout (strides
// included, so the matmul op's leading-dimension padding and transposes are
// described to oneDNN rather than copied away), wraps kc's buffers as oneDNN
// memory objects without copying, executes on a CPU stream and waits.
//
// Declarations and where they come from (oneDNN 2.6 Developer Guide,
// https://oneapi-src.github.io/oneDNN/v2.6/ ; page names below):
//  accumulator  FP32 for f32 primitives: "Data Types" (dev_guide_data_types):
//               f32 primitives compute and accumulate in f32. The fpmath_mode
//               knob ("Primitive Attributes: floating-point math mode",
//               dev_guide_attributes_fpmath_mode) lets an f32 primitive
//               down-convert its *inputs* to bf16 when set to bf16; the
//               accumulator stays f32, so those impls declare accumulator FP32
//               plus fpmath = BF16 (their inputs may be bf16-rounded).
//  determinism  BITWISE: "Primitive Attributes: deterministic"
//               (dev_guide_attributes_deterministic): "For most primitives,
//               oneDNN provides a run-to-run deterministic execution for a fixed
//               environment" — same platform, library, threads and ISA. Each
//               impl fixes its ISA cap and (for the _t impls) its thread count;
//               the others use the worker's default OpenMP thread count, which
//               is fixed for a process.
//  nan          IEEE_PROPAGATE: every primitive's page defines it by its
//               formula with no exception for NaN (e.g. "Eltwise": relu
//               dst = src if src > 0 else alpha*src, so NaN -> alpha*NaN = NaN).
//               kc measures whether the JIT kernels keep that promise. Two
//               formulas do not cover NaN: relu is defined piecewise on s > 0
//               and s <= 0, and NaN is neither; exp is e^s, a real function.
//               For those the docs are silent, and the declaration is what
//               2.6.3 does (observed, tests/repro: relu(NaN) = 0 from the
//               vmaxps-based kernel, exp(NaN) = +inf): nan = MASK (no NaN out),
//               so a change of behaviour shows up in C-EXC-01.
//  denormal     IEEE: oneDNN 2.6 has no denormal mode; its kernels leave MXCSR
//               (FTZ/DAZ) as the calling thread has it, and kc's worker runs
//               with FTZ/DAZ clear.
//  alpha/beta   matmul and inner product map the matmul op's alpha to an output
//               scale and beta to a `sum` post-op ("Primitive Attributes: Post-ops",
//               dev_guide_attributes_post_ops: dst = scale * (src x wei) +
//               sum_scale * dst). beta = 0 adds no sum post-op, so C is not read.
//               alpha = 0: the docs define the result as scale * (src x wei), which
//               reads A and B; they promise nothing about skipping them, and
//               nothing about NaN or Inf in them (declared alpha_zero = FORMULA,
//               beta_zero = C_NOT_READ, so the BLAS rule of KC-GEMM-03 does not
//               apply). Measured on 2.6.3 with NaN in A, alpha = 0, beta = 0.5
//               (tests/repro/onednn_matmul_alpha_zero.cpp): the avx512_core
//               brgemm kernel multiplies through the zero scale (NaN in the rows
//               of C that meet the NaN), the avx2 gemm:jit kernel returns beta*C:
//               the two ISA paths differ, and the docs allow both.
//               inner_product: 2.6 has no f32 implementation with output scales
//               (they serve int8), so alpha != 1 is kUnimplemented (not applicable).
//
// Knobs that change the kernels that run, each a separate impl:
//  max ISA      dnnl_set_max_cpu_isa ("CPU Dispatcher Control",
//               dev_guide_cpu_dispatcher_control). It can be set only before
//               oneDNN first reads it (first primitive creation) and never again
//               in that process. kc runs each impl in a fresh worker forked from
//               a parent that has created no primitive (probe() only asks for the
//               version), so every worker sets its own cap. In-process
//               (--isolate none) the first impl fixes the ISA; a variant whose
//               cap then cannot take effect reports kUnimplemented (the case is
//               not applicable) instead of silently running the wrong kernels.
//  threads      omp_set_num_threads on the kernel's thread (Debian's oneDNN uses
//               the OpenMP runtime), restored afterwards.
//  fpmath       primitive_attr::set_fpmath_mode(strict | bf16). On a CPU
//               without avx512_core_bf16 / AMX, 2.6 has no kernel that uses the
//               bf16 allowance and the results equal strict mode's; kc says so in
//               the impl's description and the test checks it.
#include "onednn_backend.h"

#include <dnnl.hpp>

#include "kc/capability.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if KC_ONEDNN_OPENMP
#include <omp.h>
#endif

namespace kc::backends {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using Dims = memory::dims;

constexpr const char* kDocs = "oneDNN 2.6 Developer Guide (https://oneapi-src.github.io/oneDNN/v2.6/)";

enum class Kind { kMatmul, kInnerProduct, kFused, kSoftmax, kLogSoftmax, kEltwise, kSum, kMean, kNorm2, kLayerNorm };

/// One ISA cap: the name used in impl names and dnnl's enum.
struct IsaCap {
  const char* name;
  dnnl::cpu_isa isa;
  const char* cpu_feature;  ///< __builtin_cpu_supports name the host needs for the cap to take effect
};

constexpr IsaCap kIsaCaps[] = {
    {"sse41", dnnl::cpu_isa::sse41, "sse4.1"},
    {"avx", dnnl::cpu_isa::avx, "avx"},
    {"avx2", dnnl::cpu_isa::avx2, "avx2"},
    {"avx512_core", dnnl::cpu_isa::avx512_core, "avx512bw"},
    {"avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16, "avx512bf16"},
};

bool host_has(const char* feature) {
  // __builtin_cpu_supports needs a literal; spell the table out.
  const std::string f = feature;
  if (f == "sse4.1") return __builtin_cpu_supports("sse4.1");
  if (f == "avx") return __builtin_cpu_supports("avx");
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (f == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
  return false;
}

/// Knobs of one impl.
struct Knobs {
  std::optional<IsaCap> isa;
  int threads = 0;  ///< 0: the worker's default
  dnnl::fpmath_mode fpmath = dnnl::fpmath_mode::strict;
};

Status from_dnnl_error(const dnnl::error& e, const std::string& impl) {
  const std::string msg = impl + ": oneDNN: " + e.what();
  if (e.status == dnnl_unimplemented) return unimplemented(msg);
  if (e.status == dnnl_invalid_arguments) return invalid_argument(msg);
  return kernel_raised(msg);
}

/// Whether an implementation oneDNN names ("brg:avx512_core_bf16", "gemm:jit",
/// "ref:any") carries bf16 arithmetic: its ISA part names bf16 or AMX.
bool bf16_kernel(const std::string& impl) {
  return impl.find("bf16") != std::string::npos || impl.find("amx") != std::string::npos;
}

/// Reports the implementation oneDNN selected for the call
/// (primitive_desc::impl_info_str, "Primitive descriptor: implementation info",
/// dev_guide_primitive_descriptor / dnnl_primitive_desc_query with
/// query::impl_info_str). Under fpmath_mode bf16 on f32 data, a kernel without
/// bf16 arithmetic means the allowance was not used: the reason says why.
void note_path(const std::string& impl, dnnl::fpmath_mode fpmath = dnnl::fpmath_mode::strict, bool f32_data = true) {
  std::string reason;
  if (fpmath == dnnl::fpmath_mode::bf16 && f32_data && !bf16_kernel(impl)) {
    reason = "fpmath_mode bf16 allows f32 inputs to be rounded to bf16 but does not require it "
             "(dev_guide_attributes_fpmath_mode); oneDNN " + std::to_string(dnnl_version()->major) + "." +
             std::to_string(dnnl_version()->minor) + "." + std::to_string(dnnl_version()->patch) + " selected " +
             impl + ", a strict f32 kernel without bf16 instructions";
    reason += __builtin_cpu_supports("avx512bf16") ? ", although this CPU has avx512_bf16"
                                                    : "; this CPU has no bf16 instructions (avx512_bf16, AMX)";
  }
  report_selected_path(impl, reason);
}

/// oneDNN's data type for a kc dtype: f32 and bf16 here (2.6 has no f16
/// kernels for this CPU: dev_guide_data_types lists CPU inference as f32,
/// bf16, s8/u8); anything else is f32 and rejected by the impl's dtype check.
memory::data_type dnnl_type(DType t) {
  return t == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

/// A kc tensor's shape and strides as a oneDNN memory descriptor of its dtype.
memory::desc md_of(const Tensor& t) {
  Dims dims(t.shape().begin(), t.shape().end());
  Dims strides(t.strides().begin(), t.strides().end());
  return memory::desc(dims, dnnl_type(t.dtype()), strides);
}

memory mem(const memory::desc& md, const dnnl::engine& eng, const Tensor& t) {
  // oneDNN takes a non-const handle; inputs are only read.
  return memory(md, eng, const_cast<std::byte*>(t.raw()));
}

dnnl::engine& cpu_engine() {
  // Created on first use, in the worker, after any ISA cap was applied.
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

Result<bool> trans_of(const Call& call, const char* key) {
  const std::string v = call.get(key, "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  return invalid_argument(std::string(key) + " = '" + v + "', expected N or T");
}

/// op(X) of a stored row-major matrix as a logical rows x cols descriptor.
memory::desc logical_md(const Tensor& t, bool trans) {
  const auto ld = t.strides()[0];
  if (!trans) return memory::desc({t.dim(0), t.dim(1)}, dnnl_type(t.dtype()), Dims{ld, 1});
  return memory::desc({t.dim(1), t.dim(0)}, dnnl_type(t.dtype()), Dims{1, ld});
}

/// alpha as an output scale, beta as a sum post-op (see the header comment).
dnnl::primitive_attr gemm_attr(const Call& call, dnnl::fpmath_mode fpmath) {
  dnnl::primitive_attr attr;
  attr.set_fpmath_mode(fpmath);
  const float alpha = static_cast<float>(call.get_double("alpha", 1));
  const float beta = static_cast<float>(call.get_double("beta", 0));
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(beta);
    attr.set_post_ops(po);
  }
  return attr;
}

Status run_matmul(Call& call, const Knobs& k, bool inner_product) {
  KC_ASSIGN_OR_RETURN(bool ta, trans_of(call, "trans_a"));
  KC_ASSIGN_OR_RETURN(bool tb, trans_of(call, "trans_b"));
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2) return invalid_argument("A, B and C must be rank 2");
  const memory::desc a_md = logical_md(a, ta);  // M x K
  const memory::desc b_md = logical_md(b, tb);  // K x N
  const memory::desc c_md = md_of(c);           // M x N
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  const dnnl::primitive_attr attr = gemm_attr(call, k.fpmath);
  if (!inner_product) {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, eng);
    note_path(pd.impl_info_str(), k.fpmath, a.dtype() == DType::kF32);
    dnnl::matmul(pd).execute(s, {{DNNL_ARG_SRC, mem(a_md, eng, a)},
                                 {DNNL_ARG_WEIGHTS, mem(b_md, eng, b)},
                                 {DNNL_ARG_DST, mem(c_md, eng, c)}});
  } else {
    // Inner product weights are {OC, IC} = {N, K}: op(B) transposed.
    const Dims bd = b_md.dims();
    const auto ldb = b.strides()[0];
    const memory::desc w_md({bd[1], bd[0]}, dnnl_type(b.dtype()), tb ? Dims{ldb, 1} : Dims{1, ldb});
    dnnl::inner_product_forward::primitive_desc pd(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, a_md, w_md, c_md), attr, eng);
    note_path(pd.impl_info_str(), k.fpmath, a.dtype() == DType::kF32);
    dnnl::inner_product_forward(pd).execute(s, {{DNNL_ARG_SRC, mem(a_md, eng, a)},
                                                {DNNL_ARG_WEIGHTS, mem(w_md, eng, b)},
                                                {DNNL_ARG_DST, mem(c_md, eng, c)}});
  }
  s.wait();
  return ok_status();
}

Result<std::optional<algorithm>> activation_alg(const std::string& name, float* alpha) {
  *alpha = 0;
  if (name == "identity") return std::optional<algorithm>{};
  if (name == "relu") return std::optional<algorithm>{algorithm::eltwise_relu};
  if (name == "gelu_erf") return std::optional<algorithm>{algorithm::eltwise_gelu_erf};
  if (name == "gelu_tanh") return std::optional<algorithm>{algorithm::eltwise_gelu_tanh};
  if (name == "silu") {
    *alpha = 1;  // swish: x * sigmoid(alpha x)
    return std::optional<algorithm>{algorithm::eltwise_swish};
  }
  return unimplemented("no oneDNN eltwise post-op for activation '" + name + "'");
}

// fused_matmul: matmul with a bias {1, N} and one eltwise post-op (dev_guide_matmul:
// "dst = post_ops(src x weights + bias)").
Status run_fused(Call& call, const Knobs& k) {
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  const Tensor& bias = call.t("bias");
  Tensor& c = call.t("C");
  float alpha = 0;
  KC_ASSIGN_OR_RETURN(std::optional<algorithm> alg, activation_alg(call.get("activation", "gelu_erf"), &alpha));
  dnnl::primitive_attr attr;
  attr.set_fpmath_mode(k.fpmath);
  if (alg) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, *alg, alpha, 0.0f);
    attr.set_post_ops(po);
  }
  const memory::desc a_md = md_of(a), b_md = md_of(b), c_md = md_of(c);
  const memory::desc bias_md({1, bias.dim(0)}, dnnl_type(bias.dtype()), Dims{bias.dim(0), bias.strides()[0]});
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr, eng);
  note_path(pd.impl_info_str(), k.fpmath, a.dtype() == DType::kF32);
  dnnl::matmul(pd).execute(s, {{DNNL_ARG_SRC, mem(a_md, eng, a)},
                               {DNNL_ARG_WEIGHTS, mem(b_md, eng, b)},
                               {DNNL_ARG_BIAS, mem(bias_md, eng, bias)},
                               {DNNL_ARG_DST, mem(c_md, eng, c)}});
  s.wait();
  return ok_status();
}

Status run_softmax(Call& call, bool log) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  if (x.strides() != y.strides()) return unimplemented("x and y must share a layout (oneDNN 2.6 softmax has one data descriptor)");
  const memory::desc md = md_of(x);
  const int axis = static_cast<int>(x.rank()) - 1;
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(md, eng, x)}, {DNNL_ARG_DST, mem(md, eng, y)}};
  if (log) {
    dnnl::logsoftmax_forward::primitive_desc pd(
        dnnl::logsoftmax_forward::desc(dnnl::prop_kind::forward_inference, md, axis), eng);
    note_path(pd.impl_info_str());
    dnnl::logsoftmax_forward(pd).execute(s, args);
  } else {
    dnnl::softmax_forward::primitive_desc pd(dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, axis),
                                             eng);
    note_path(pd.impl_info_str());
    dnnl::softmax_forward(pd).execute(s, args);
  }
  s.wait();
  return ok_status();
}

/// The eltwise algorithm of a kc elementwise op ("Eltwise", dev_guide_eltwise).
std::optional<std::pair<algorithm, float>> eltwise_of(const std::string& op) {
  if (op == "relu") return std::pair{algorithm::eltwise_relu, 0.0f};
  if (op == "exp") return std::pair{algorithm::eltwise_exp, 0.0f};
  if (op == "log") return std::pair{algorithm::eltwise_log, 0.0f};
  if (op == "tanh") return std::pair{algorithm::eltwise_tanh, 0.0f};
  if (op == "gelu_erf") return std::pair{algorithm::eltwise_gelu_erf, 0.0f};
  if (op == "gelu_tanh") return std::pair{algorithm::eltwise_gelu_tanh, 0.0f};
  if (op == "silu") return std::pair{algorithm::eltwise_swish, 1.0f};
  return std::nullopt;
}

Status run_eltwise(Call& call) {
  const auto alg = eltwise_of(call.op);
  if (!alg) return unimplemented("no oneDNN eltwise algorithm for op '" + call.op + "'");
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  if (x.strides() != y.strides()) return unimplemented("x and y must share a layout (one eltwise data descriptor)");
  const memory::desc md = md_of(x);
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, alg->first, md, alg->second, 0.0f), eng);
  note_path(pd.impl_info_str());
  dnnl::eltwise_forward(pd).execute(s, {{DNNL_ARG_SRC, mem(md, eng, x)}, {DNNL_ARG_DST, mem(md, eng, y)}});
  s.wait();
  return ok_status();
}

// Reductions ("Reduction", dev_guide_reduction): sum over a strided vector;
// mean and norm_lp_sum (p = 2, eps = 0: sqrt(sum |x|^2)) along the rows of {rows, cols}.
Status run_reduction(Call& call, Kind kind) {
  const Tensor& x = call.t("x");
  Tensor& out = call.t("out");
  memory::desc src_md = md_of(x);
  memory::desc dst_md;
  if (kind == Kind::kSum) {
    dst_md = memory::desc({1}, dnnl_type(out.dtype()), Dims{1});
  } else {
    if (x.rank() != 2 || out.rank() != 1) return invalid_argument("x must be {rows, cols} and out {rows}");
    dst_md = memory::desc({x.dim(0), 1}, dnnl_type(out.dtype()), Dims{out.strides()[0], 1});
  }
  // oneDNN rejects a reduction that reduces nothing (src dims == dst dims,
  // "could not create a reduction descriptor"): n = 1 or cols = 1.
  if (src_md.dims() == dst_md.dims())
    return unimplemented("oneDNN's reduction needs at least one reduced dimension of size > 1");
  const algorithm alg = kind == Kind::kSum    ? algorithm::reduction_sum
                        : kind == Kind::kMean ? algorithm::reduction_mean
                                              : algorithm::reduction_norm_lp_sum;
  const float p = kind == Kind::kNorm2 ? 2.0f : 0.0f;
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, src_md, dst_md, p, 0.0f), eng);
  note_path(pd.impl_info_str());
  dnnl::reduction(pd).execute(s, {{DNNL_ARG_SRC, mem(src_md, eng, x)}, {DNNL_ARG_DST, mem(dst_md, eng, out)}});
  s.wait();
  return ok_status();
}

// layernorm ("Layer Normalization", dev_guide_layer_normalization): forward
// inference with use_scale | use_shift; mean and variance are computed per
// row (variance = (1/C) sum (x - mean)^2, the biased one the op defines) and
// y = gamma (x - mean) / sqrt(variance + eps) + beta. 2.6 has no RMS variant.
Status run_layernorm(Call& call) {
  const Tensor& x = call.t("x");
  const Tensor& gamma = call.t("gamma");
  const Tensor& beta = call.t("beta");
  Tensor& y = call.t("y");
  if (x.strides() != y.strides()) return unimplemented("x and y must share a layout (one layer-norm data descriptor)");
  const memory::desc md = md_of(x);
  // Scale and shift are f32 in 2.6 whatever the data type
  // (dev_guide_layer_normalization): bf16 gamma and beta widen exactly.
  std::vector<float> g32(static_cast<std::size_t>(gamma.numel())), b32(static_cast<std::size_t>(beta.numel()));
  for (std::int64_t i = 0; i < gamma.numel(); ++i) g32[static_cast<std::size_t>(i)] = static_cast<float>(gamma.at(i));
  for (std::int64_t i = 0; i < beta.numel(); ++i) b32[static_cast<std::size_t>(i)] = static_cast<float>(beta.at(i));
  const memory::desc g_md({gamma.numel()}, memory::data_type::f32, Dims{1});
  const memory::desc b_md({beta.numel()}, memory::data_type::f32, Dims{1});
  const auto eps = static_cast<float>(call.get_double("eps", 1e-5));
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  dnnl::layer_normalization_forward::primitive_desc pd(
      dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, md, eps, flags), eng);
  note_path(pd.impl_info_str());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(md, eng, x)},
                                       {DNNL_ARG_DST, mem(md, eng, y)},
                                       {DNNL_ARG_SCALE, memory(g_md, eng, g32.data())},
                                       {DNNL_ARG_SHIFT, memory(b_md, eng, b32.data())}};
  // Inference computes the statistics itself; some implementations still want
  // buffers for them (the descriptors say so by a non-zero size).
    if (pd.mean_desc().get_size() != 0) args.emplace(DNNL_ARG_MEAN, memory(pd.mean_desc(), eng));
  if (pd.variance_desc().get_size() != 0) args.emplace(DNNL_ARG_VARIANCE, memory(pd.variance_desc(), eng));
  dnnl::layer_normalization_forward(pd).execute(s, args);
  s.wait();
  return ok_status();
}

/// The process's ISA cap, once applied: oneDNN allows one value per process.
Status apply_isa(const IsaCap& cap, const std::string& impl) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  // Returns dnnl_invalid_arguments once oneDNN has read the setting (any
  // primitive created in this process); the effective ISA then says whether
  // this process already runs under the wanted cap.
  const dnnl_status_t st = dnnl_set_max_cpu_isa(static_cast<dnnl_cpu_isa_t>(cap.isa));
  const dnnl::cpu_isa effective = dnnl::get_effective_cpu_isa();
  if (effective == cap.isa) return ok_status();
  return unimplemented(impl + ": oneDNN's max ISA is fixed once per process and this one runs at ISA 0x" +
                       [&] {
                         char buf[16];
                         std::snprintf(buf, sizeof buf, "%x", static_cast<unsigned>(effective));
                         return std::string(buf);
                       }() +
                       (st == dnnl_success ? "" : " (set after first use)") +
                       "; ISA variants need a fresh process each (--isolate process)");
}

class OnednnImpl final : public Impl {
 public:
  OnednnImpl(Declaration decl, Kind kind, Knobs knobs) : decl_(std::move(decl)), kind_(kind), knobs_(std::move(knobs)) {}

  const Declaration& declaration() const override { return decl_; }

  Status run(Call& call) const override {
    for (const Tensor& t : call.tensors)
      if (std::find(decl_.dtypes.begin(), decl_.dtypes.end(), t.dtype()) == decl_.dtypes.end())
        return unimplemented(decl_.name + " takes " + std::string(dtype_name(decl_.dtypes.front())) +
                             " tensors, got " + std::string(dtype_name(t.dtype())));
    if (knobs_.isa) KC_RETURN_IF_ERROR(apply_isa(*knobs_.isa, decl_.name));
#if KC_ONEDNN_OPENMP
    const int previous = omp_get_max_threads();
    if (knobs_.threads > 0) omp_set_num_threads(knobs_.threads);
#endif
    Status s;
    try {
      s = dispatch(call);
    } catch (const dnnl::error& e) {
      s = from_dnnl_error(e, decl_.name);
    }
#if KC_ONEDNN_OPENMP
    if (knobs_.threads > 0) omp_set_num_threads(previous);
#endif
    return s;
  }

 private:
  Status dispatch(Call& call) const {
    switch (kind_) {
      case Kind::kMatmul:
        return run_matmul(call, knobs_, false);
      case Kind::kInnerProduct:
        return run_matmul(call, knobs_, true);
      case Kind::kFused:
        return run_fused(call, knobs_);
      case Kind::kSoftmax:
        return run_softmax(call, false);
      case Kind::kLogSoftmax:
        return run_softmax(call, true);
      case Kind::kEltwise:
        return run_eltwise(call);
      case Kind::kSum:
      case Kind::kMean:
      case Kind::kNorm2:
        return run_reduction(call, kind_);
      case Kind::kLayerNorm:
        return run_layernorm(call);
    }
    return internal_error("unknown kind");
  }

  Declaration decl_;
  Kind kind_;
  Knobs knobs_;
};

/// One row of the impl table: name suffix, kc op, kind, whether it accumulates, description, doc page.
struct Row {
  const char* suffix;
  const char* op;
  Kind kind;
  bool accumulates;
  const char* description;
  const char* page;
};

constexpr Row kRows[] = {
    {"matmul", "matmul", Kind::kMatmul, true, "matmul primitive, alpha as output scale, beta as sum post-op",
     "dev_guide_matmul, dev_guide_attributes_post_ops"},
    {"inner_product", "matmul", Kind::kInnerProduct, true,
     "inner_product_forward (weights = op(B)^T), alpha as output scale, beta as sum post-op",
     "dev_guide_inner_product"},
    {"fused_matmul", "fused_matmul", Kind::kFused, true, "matmul with bias and one eltwise post-op",
     "dev_guide_matmul, dev_guide_attributes_post_ops"},
    {"softmax", "softmax", Kind::kSoftmax, true, "softmax_forward along the last axis", "dev_guide_softmax"},
    {"log_softmax", "log_softmax", Kind::kLogSoftmax, true, "logsoftmax_forward along the last axis",
     "dev_guide_logsoftmax"},
    {"relu", "relu", Kind::kEltwise, false, "eltwise_relu (alpha = 0)", "dev_guide_eltwise"},
    {"exp", "exp", Kind::kEltwise, false, "eltwise_exp", "dev_guide_eltwise"},
    {"log", "log", Kind::kEltwise, false, "eltwise_log", "dev_guide_eltwise"},
    {"tanh", "tanh", Kind::kEltwise, false, "eltwise_tanh", "dev_guide_eltwise"},
    {"gelu_erf", "gelu_erf", Kind::kEltwise, false, "eltwise_gelu_erf", "dev_guide_eltwise"},
    {"gelu_tanh", "gelu_tanh", Kind::kEltwise, false, "eltwise_gelu_tanh", "dev_guide_eltwise"},
    {"silu", "silu", Kind::kEltwise, false, "eltwise_swish (alpha = 1)", "dev_guide_eltwise"},
    {"sum", "sum", Kind::kSum, true, "reduction_sum over the strided vector", "dev_guide_reduction"},
    {"mean", "mean", Kind::kMean, true, "reduction_mean along each row", "dev_guide_reduction"},
    {"norm2", "norm2", Kind::kNorm2, true, "reduction_norm_lp_sum, p = 2, eps = 0", "dev_guide_reduction"},
    {"layernorm", "layernorm", Kind::kLayerNorm, true,
     "layer_normalization_forward, inference, use_scale | use_shift", "dev_guide_layer_normalization"},
};

Declaration declaration_of(const Row& row, const std::string& name, const std::string& extra_description) {
  Declaration d;
  d.name = name;
  d.op = row.op;
  d.backend = "onednn";
  d.dtypes = {DType::kF32};
  if (row.accumulates) d.accumulator = DType::kF32;  // dev_guide_data_types
  d.determinism = Determinism::kBitwise;             // dev_guide_attributes_deterministic (fixed environment)
  d.nan = NanPolicy::kIeeePropagate;                 // formulas on each primitive's page
  d.denormal = DenormalPolicy::kIeee;                // no denormal mode in 2.6; MXCSR untouched
  d.oob = OobPolicy::kUndefined;                     // no indexing primitives here
  d.extra["fpmath"] = "STRICT";
  d.source = std::string(kDocs) + ": " + row.page + ", dev_guide_data_types, dev_guide_attributes_deterministic";
  if (row.kind == Kind::kMatmul || row.kind == Kind::kInnerProduct) {
    d.extra["alpha_zero"] = "FORMULA";   // dst = scale * (src x wei): nothing said for scale = 0
    d.extra["beta_zero"] = "C_NOT_READ";  // no sum post-op at beta = 0: dst is written, never read
  }
  // dev_guide_eltwise gives gelu_erf 0.5 s (1 + erf(s / sqrt 2)), gelu_tanh
  // 0.5 s (1 + tanh(...)), swish s / (1 + e^(-alpha s)), and says nothing of
  // infinite s; at s = -inf each formula is -inf * 0 or -inf / inf, NaN in
  // IEEE arithmetic, and 2.6.3 returns NaN there (observed, C-EXC-01).
  const std::string op = row.op;
  if (op == "relu" || op == "exp") d.nan = NanPolicy::kMask;  // docs silent on NaN; observed (header)
  if (op == "gelu_erf" || op == "gelu_tanh" || op == "silu") d.extra["inf_policy"] = "FORMULA";
  // dev_guide_eltwise states no accuracy for its functions (exp, log, tanh, ...).
  if (row.kind == Kind::kEltwise && op != "relu") d.extra["ulp_bound"] = "UNDOCUMENTED";
  // Nor for softmax and logsoftmax (dev_guide_softmax, dev_guide_logsoftmax),
  // whose exp and log are oneDNN's own approximations: a finite result outside
  // a bound derived for correctly rounded exp and log breaks no promise of
  // oneDNN's, and kc reports it as a measurement (docs/judge.md).
  if ((row.kind == Kind::kEltwise && op != "relu") || row.kind == Kind::kSoftmax || row.kind == Kind::kLogSoftmax)
    d.extra["accuracy"] = "UNDOCUMENTED";
  // Extreme magnitudes (contracts/range): dev_guide_softmax subtracts
  // nu = max over the axis "to produce numerically stable results", so exp
  // never sees a positive argument: SAFE. dev_guide_layer_normalization and
  // dev_guide_reduction give the plain formulas (sum of (src - mu)^2 / C,
  // (sum |src|^p)^(1/p), sum / n) and say nothing of rows near overflow or
  // underflow: UNSPECIFIED (measured, not judged; docs/findings.md).
  if (row.kind == Kind::kSoftmax || row.kind == Kind::kLogSoftmax) {
    d.extra["reduction_range"] = "SAFE";
    d.source += "; reduction_range: dev_guide_softmax (nu = max, subtracted for numerical stability)";
  } else if (row.kind == Kind::kLayerNorm || row.kind == Kind::kMean || row.kind == Kind::kNorm2) {
    d.extra["reduction_range"] = "UNSPECIFIED";
    d.source += "; reduction_range: " + std::string(row.page) + " states the formula only";
  }
  d.description = std::string(row.description) + extra_description;
  return d;
}

/// The path a bf16 request asks for (docs/capability.md): a kernel with bf16
/// arithmetic, as impl_info_str names it (brg:avx512_core_bf16, ..._amx). The
/// strict f32 kernels are the fallback dev_guide_attributes_fpmath_mode
/// permits (the attribute names the down-conversions that are allowed, not
/// ones that must happen), so any other path is the declared fallback. Every shape and layout is in the
/// class (primitive creation, not the impl, refuses what it cannot serve), so
/// nothing is outside it: unsupported = UNDEFINED states no more than that.
void declare_bf16_path(Declaration& d) {
  d.extra["path"] = "*bf16*|*amx*";
  d.extra["path_precision"] = "BF16";  // what the path computes in: bf16 inputs, f32 accumulation
  d.extra["fallback"] = "*";
  d.extra["unsupported"] = "UNDEFINED";
  d.source += "; path: the kernel primitive_desc::impl_info_str names (dev_guide_primitive_descriptor), a bf16 "
              "kernel requested, the strict f32 kernels the fallback dev_guide_attributes_fpmath_mode allows";
}

std::string version_string() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  if (v->hash && std::strcmp(v->hash, "N/A") != 0) s += " (" + std::string(v->hash) + ")";
  s += std::string(", CPU runtime ") + (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  return s;
}

class OnednnBackend final : public Backend {
 public:
  std::string_view name() const override { return "onednn"; }

  BackendInfo probe() override {
    // Only the version: creating a primitive here would fix oneDNN's max ISA
    // for kc's process and every worker forked from it.
    BackendInfo info;
    info.name = "onednn";
    info.description = "oneDNN CPU primitives (matmul, inner product, softmax, eltwise, reduction)";
    info.available = true;
    info.version = version_string();
    std::string caps;
    for (const IsaCap& cap : kIsaCaps)
      if (host_has(cap.cpu_feature)) caps += (caps.empty() ? "" : ", ") + std::string(cap.name);
    info.reason = "linked at build time (libdnnl); max-ISA variants for this CPU: " + caps;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (!impls_.empty()) return impls_;
    for (const Row& row : kRows)
      impls_.push_back(std::make_shared<OnednnImpl>(declaration_of(row, std::string("onednn.") + row.suffix, ""),
                                                    row.kind, Knobs{}));
    // bf16 data, f32 accumulation: "oneDNN uses wider accumulator datatypes
    // (... f32 for floating-point computations), and converts intermediate
    // results to f32" (dev_guide_data_types, General numerical behavior); CPU
    // inference takes f32, bf16, s8/u8 there, and 2.6 builds its bf16 kernels
    // for avx512_core and up (measured: matmul brg:avx512_core_bf16, softmax
    // jit:avx512_core, layer norm simple, eltwise and reduction
    // jit:avx512_core_bf16 on this CPU; no f16 primitive is created).
    if (host_has("avx512bw")) {
      for (const Row& row : kRows) {
        const std::string s = row.suffix;
        if (s == "inner_product" || s == "fused_matmul" || s == "norm2" || s == "gelu_tanh" || s == "log") continue;
        Declaration d = declaration_of(row, std::string("onednn.") + row.suffix + "_bf16", ", bf16 data");
        d.dtypes = {DType::kBF16};
        d.source += ", dev_guide_data_types (bf16 data, f32 accumulation and intermediates)";
        // The bf16 matmul runs on VDPBF16PS (brg:avx512_core_bf16 here), which the
        // Intel SDM (vol. 2, VDPBF16PS) describes as treating denormal inputs as
        // zero and flushing denormal results to zero whatever MXCSR says.
        if (s == "matmul") {
          d.denormal = DenormalPolicy::kFtzDaz;
          d.source += ", Intel SDM VDPBF16PS (denormal inputs read as zero, denormal results flushed)";
          declare_bf16_path(d);
        }
        impls_.push_back(std::make_shared<OnednnImpl>(std::move(d), row.kind, Knobs{}));
      }
    }
    const Row& mm = kRows[0];
    const Row& sm = kRows[3];
    // fpmath_mode = bf16: f32 inputs may be rounded to bf16 where the CPU has bf16 kernels.
    {
      Knobs k;
      k.fpmath = dnnl::fpmath_mode::bf16;
      const bool bf16_hw = host_has("avx512bf16");
      Declaration d = declaration_of(
          mm, "onednn.matmul_fpmath_bf16",
          bf16_hw ? ", fpmath_mode bf16 (this CPU has avx512_core_bf16: inputs may be rounded to bf16)"
                  : ", fpmath_mode bf16 (no bf16 kernels on this CPU: runs the strict f32 kernels)");
      d.extra["fpmath"] = "BF16";
      d.source = std::string(kDocs) + ": dev_guide_attributes_fpmath_mode, dev_guide_matmul";
      declare_bf16_path(d);
      impls_.push_back(std::make_shared<OnednnImpl>(std::move(d), Kind::kMatmul, k));
    }
    // Max-ISA variants of matmul and softmax, for the caps this CPU can run.
    for (const IsaCap& cap : kIsaCaps) {
      if (!host_has(cap.cpu_feature)) continue;
      for (const Row* row : {&mm, &sm}) {
        Knobs k;
        k.isa = cap;
        Declaration d = declaration_of(*row, std::string("onednn.") + row->suffix + "_isa_" + cap.name,
                                       std::string(", max ISA ") + cap.name);
        d.extra["max_isa"] = cap.name;
        d.source += ", dev_guide_cpu_dispatcher_control";
        impls_.push_back(std::make_shared<OnednnImpl>(std::move(d), row->kind, k));
      }
    }
    // Thread-count variants of matmul and sum.
    for (int t : {1, 2}) {
      for (const Row* row : {&mm, &kRows[12]}) {
        Knobs k;
        k.threads = t;
        Declaration d = declaration_of(*row, std::string("onednn.") + row->suffix + "_t" + std::to_string(t),
                                       ", " + std::to_string(t) + " OpenMP thread(s)");
        d.extra["threads"] = std::to_string(t);
        impls_.push_back(std::make_shared<OnednnImpl>(std::move(d), row->kind, k));
      }
    }
    return impls_;
  }

 private:
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<OnednnBackend>(); }

}  // namespace kc::backends
