// kc — the cuda backend (see cuda_backend.h).
//
// Every impl follows one procedure (docs/backends/cuda.md): copy the call's tensors to
// guarded device buffers it owns (outputs pre-filled with NaN), run, check
// the launch (cudaGetLastError + cudaDeviceSynchronize), check the canaries
// and the read-only inputs, copy the outputs back. Vendor errors become a
// Status here with the vendor's message.
#include "cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda_status.h"
#include "device_buffer.h"
#include "kc/child.h"
#include "kernels.h"

#if KC_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace kc::backends {
namespace cuda {
namespace {

// --- Library handles, created on first use and shared by the backend's impls.

class CudaContext {
 public:
  CudaContext() = default;
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  ~CudaContext() {
    // Destroy errors at exit (driver already torn down) are not actionable.
    if (cublas_) (void)cublasDestroy(cublas_);
#if KC_CUDA_HAVE_CUDNN
    if (cudnn_) (void)cudnnDestroy(cudnn_);
#endif
  }

  Result<cublasHandle_t> cublas() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cublas_) KC_CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
    return cublas_;
  }

#if KC_CUDA_HAVE_CUDNN
  Result<cudnnHandle_t> cudnn() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cudnn_) KC_CUDNN_RETURN_IF_ERROR(cudnnCreate(&cudnn_));
    return cudnn_;
  }
#endif

  /// Serialises runs: the handles carry state (math mode) between calls.
  std::mutex& run_mutex() { return run_mu_; }

 private:
  std::mutex mu_;
  std::mutex run_mu_;
  cublasHandle_t cublas_ = nullptr;
#if KC_CUDA_HAVE_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
#endif
};

// --- Argument checks shared by the impls.

Status check_dtype(const Call& call, const char* name, DType dtype) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  if (call.t(name).dtype() != dtype) {
    return unimplemented(std::string("tensor ") + name + " is " +
                         std::string(dtype_name(call.t(name).dtype())) + ", expected " +
                         std::string(dtype_name(dtype)));
  }
  return ok_status();
}

Result<int> to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) {
    return unimplemented(std::string(what) + " = " + std::to_string(v) +
                         " does not fit the 32-bit int of the CUDA interfaces");
  }
  return static_cast<int>(v);
}

/// A row-major rows x cols matrix with unit inner stride: its leading dimension.
/// With at most one row the leading dimension never steps; it is then taken
/// as max(1, cols), which cuBLAS requires anyway.
Result<std::int64_t> leading_dim(const Tensor& t, const char* name, std::int64_t rows,
                                 std::int64_t cols) {
  if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != cols) {
    return invalid_argument(std::string(name) + " has shape " + t.shape_string() + ", expected (" +
                            std::to_string(rows) + ", " + std::to_string(cols) + ")");
  }
  if (cols > 1 && rows > 0 && t.strides()[1] != 1) {
    return unimplemented(std::string(name) + " is not unit-stride along rows");
  }
  std::int64_t ld = t.strides()[0];
  const std::int64_t min_ld = std::max<std::int64_t>(1, cols);
  if (ld < min_ld) {
    if (rows > 1 && cols > 0) {
      return unimplemented(std::string(name) + " leading dimension " + std::to_string(ld) + " < " +
                           std::to_string(min_ld));
    }
    ld = min_ld;
  }
  if (rows > 0 && cols > 0 && (rows - 1) * ld + cols > t.storage_elems()) {
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  }
  return ld;
}

/// A rank-1 tensor's element stride (>= 1).
Result<std::int64_t> vector_inc(const Tensor& t, const char* name) {
  if (t.rank() != 1) return invalid_argument(std::string(name) + " must be rank 1");
  const std::int64_t n = t.dim(0);
  std::int64_t inc = n <= 1 ? 1 : t.strides()[0];
  if (inc < 1) return unimplemented(std::string(name) + " stride " + std::to_string(inc) + " < 1");
  if (n > 0 && (n - 1) * inc + 1 > t.storage_elems()) {
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  }
  return inc;
}

Result<bool> trans_flag(const Call& call, const std::string& key) {
  const std::string v = call.get(key, "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  return invalid_argument(key + " = '" + v + "', expected N or T");
}

/// Pushes the device copy of tensor `name` onto `dev`.
Status add_device(std::vector<DeviceTensor>& dev, Call& call, const char* name, bool poison,
                  bool copy_back) {
  KC_ASSIGN_OR_RETURN(DeviceTensor d, to_device(name, call.t(name), poison, copy_back));
  dev.push_back(std::move(d));
  return ok_status();
}

// --- matmul: row-major C = alpha op(A) op(B) + beta C.

struct MatmulArgs {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 1, ldb = 1, ldc = 1;
  float alpha = 1, beta = 0;
};

Result<MatmulArgs> matmul_args(const Call& call) {
  for (const char* t : {"A", "B", "C"}) KC_RETURN_IF_ERROR(check_dtype(call, t, DType::kF32));
  MatmulArgs r;
  KC_ASSIGN_OR_RETURN(r.trans_a, trans_flag(call, "trans_a"));
  KC_ASSIGN_OR_RETURN(r.trans_b, trans_flag(call, "trans_b"));
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  const Tensor& c = call.t("C");
  if (a.rank() != 2 || c.rank() != 2) return invalid_argument("A and C must be rank 2");
  const std::int64_t m = c.dim(0), n = c.dim(1);
  const std::int64_t k = r.trans_a ? a.dim(0) : a.dim(1);
  KC_ASSIGN_OR_RETURN(r.lda, r.trans_a ? leading_dim(a, "A", k, m) : leading_dim(a, "A", m, k));
  KC_ASSIGN_OR_RETURN(r.ldb, r.trans_b ? leading_dim(b, "B", n, k) : leading_dim(b, "B", k, n));
  KC_ASSIGN_OR_RETURN(r.ldc, leading_dim(c, "C", m, n));
  KC_ASSIGN_OR_RETURN(r.m, to_int(m, "M"));
  KC_ASSIGN_OR_RETURN(r.n, to_int(n, "N"));
  KC_ASSIGN_OR_RETURN(r.k, to_int(k, "K"));
  for (std::int64_t ld : {r.lda, r.ldb, r.ldc})
    KC_RETURN_IF_ERROR(to_int(ld, "leading dimension").status());
  r.alpha = static_cast<float>(call.get_double("alpha", 1.0));
  r.beta = static_cast<float>(call.get_double("beta", 0.0));
  return r;
}

/// Device copies for matmul. With beta == 0, C is pre-filled with NaN instead
/// of uploaded: BLAS semantics say C need not be set on input (sgemm.f), so a
/// kernel that reads it anyway (0 * NaN = NaN) becomes visible.
Status matmul_to_device(Call& call, const MatmulArgs& args, std::vector<DeviceTensor>& dev) {
  KC_RETURN_IF_ERROR(add_device(dev, call, "A", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "B", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "C", args.beta == 0.0f, true));
  return ok_status();
}

Status run_cublas_sgemm(CudaContext& ctx, cublasMath_t math, Call& call) {
  KC_ASSIGN_OR_RETURN(MatmulArgs args, matmul_args(call));
  KC_ASSIGN_OR_RETURN(cublasHandle_t handle, ctx.cublas());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(matmul_to_device(call, args, dev));
  KC_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(handle, math));
  // Row-major C = op(A) op(B) is, read column-major, C^T = op(B)^T op(A)^T:
  // swap the operands and M with N, keep the transpose flags.
  const cublasOperation_t op_a = args.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = args.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  KC_CUBLAS_RETURN_IF_ERROR(cublasSgemm(
      handle, op_b, op_a, args.n, args.m, args.k, &args.alpha, dev[1].buffer.as<float>(),
      static_cast<int>(args.ldb), dev[0].buffer.as<float>(), static_cast<int>(args.lda), &args.beta,
      dev[2].buffer.as<float>(), static_cast<int>(args.ldc)));
  KC_RETURN_IF_ERROR(check_launch("cublasSgemm"));
  return finish(dev);
}

Status run_matmul_tiled(CudaContext&, Call& call) {
  KC_ASSIGN_OR_RETURN(MatmulArgs args, matmul_args(call));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(matmul_to_device(call, args, dev));
  KC_CUDA_RETURN_IF_ERROR(launch_matmul_tiled(args.m, args.n, args.k, args.trans_a, args.trans_b,
                                              args.alpha, dev[0].buffer.as<float>(), args.lda,
                                              dev[1].buffer.as<float>(), args.ldb, args.beta,
                                              dev[2].buffer.as<float>(), args.ldc));
  KC_RETURN_IF_ERROR(check_launch("matmul_tiled"));
  return finish(dev);
}

// --- sum: x {n} -> out {1}.

Status check_sum(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kF32));
  if (call.t("out").numel() != 1) return invalid_argument("out must hold exactly one element");
  return ok_status();
}

Status run_sum_atomic(CudaContext&, Call& call) {
  KC_RETURN_IF_ERROR(check_sum(call));
  KC_ASSIGN_OR_RETURN(std::int64_t inc, vector_inc(call.t("x"), "x"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "out", true, true));
  // The impl's own initialisation: the atomics add into a zeroed accumulator.
  KC_RETURN_IF_ERROR(dev[1].buffer.fill(0));
  KC_CUDA_RETURN_IF_ERROR(launch_sum_atomic(call.t("x").dim(0), dev[0].buffer.as<float>(), inc,
                                            dev[1].buffer.as<float>()));
  KC_RETURN_IF_ERROR(check_launch("sum_atomic"));
  return finish(dev);
}

Status run_sum_tree(CudaContext&, Call& call) {
  KC_RETURN_IF_ERROR(check_sum(call));
  KC_ASSIGN_OR_RETURN(std::int64_t inc, vector_inc(call.t("x"), "x"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "out", true, true));
  KC_ASSIGN_OR_RETURN(GuardedBuffer partials,
                      GuardedBuffer::allocate(kTreeSumBlocks * sizeof(float), "partials"));
  KC_RETURN_IF_ERROR(partials.fill(0xFF));
  KC_CUDA_RETURN_IF_ERROR(launch_sum_tree(call.t("x").dim(0), dev[0].buffer.as<float>(), inc,
                                          partials.as<float>(), dev[1].buffer.as<float>()));
  KC_RETURN_IF_ERROR(check_launch("sum_tree"));
  KC_RETURN_IF_ERROR(partials.check_guards());
  return finish(dev);
}

// --- softmax / log_softmax: x {rows, cols} -> y {rows, cols}, over each row.

struct RowArgs {
  int rows = 0, cols = 0;
  std::int64_t ldx = 1, ldy = 1;
};

Result<RowArgs> row_args(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "y", DType::kF32));
  const Tensor& x = call.t("x");
  if (x.rank() != 2) return invalid_argument("x must be rank 2 {rows, cols}");
  RowArgs r;
  KC_ASSIGN_OR_RETURN(r.ldx, leading_dim(x, "x", x.dim(0), x.dim(1)));
  KC_ASSIGN_OR_RETURN(r.ldy, leading_dim(call.t("y"), "y", x.dim(0), x.dim(1)));
  KC_ASSIGN_OR_RETURN(r.rows, to_int(x.dim(0), "rows"));
  KC_ASSIGN_OR_RETURN(r.cols, to_int(x.dim(1), "cols"));
  for (std::int64_t ld : {r.ldx, r.ldy})
    KC_RETURN_IF_ERROR(to_int(ld, "leading dimension").status());
  return r;
}

Status run_softmax_kernel(CudaContext&, Call& call) {
  KC_ASSIGN_OR_RETURN(RowArgs args, row_args(call));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "y", true, true));
  KC_CUDA_RETURN_IF_ERROR(launch_softmax_rows(args.rows, args.cols, dev[0].buffer.as<float>(),
                                              args.ldx, dev[1].buffer.as<float>(), args.ldy));
  KC_RETURN_IF_ERROR(check_launch("softmax_rows"));
  return finish(dev);
}

#if KC_CUDA_HAVE_CUDNN
/// An owned cudnnTensorDescriptor_t.
class TensorDesc {
 public:
  TensorDesc() = default;
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  ~TensorDesc() {
    if (desc_) (void)cudnnDestroyTensorDescriptor(desc_);
  }
  /// rows x cols as N x C x 1 x 1 with strides {ld, 1, 1, 1}: MODE_INSTANCE
  /// then normalises over C (x H x W) for each N, i.e. over each row.
  Status set_rows(int rows, int cols, std::int64_t ld) {
    KC_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&desc_));
    KC_CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptorEx(desc_, CUDNN_DATA_FLOAT, rows, cols, 1, 1,
                                                          static_cast<int>(ld), 1, 1, 1));
    return ok_status();
  }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

Status run_cudnn_softmax(CudaContext& ctx, cudnnSoftmaxAlgorithm_t algo, Call& call) {
  KC_ASSIGN_OR_RETURN(RowArgs args, row_args(call));
  KC_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.cudnn());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "y", true, true));
  if (args.rows == 0 || args.cols == 0) return finish(dev);  // cuDNN rejects empty dims
  TensorDesc xd, yd;
  KC_RETURN_IF_ERROR(xd.set_rows(args.rows, args.cols, args.ldx));
  KC_RETURN_IF_ERROR(yd.set_rows(args.rows, args.cols, args.ldy));
  const float alpha = 1.0f, beta = 0.0f;
  KC_CUDNN_RETURN_IF_ERROR(cudnnSoftmaxForward(handle, algo, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha,
                                               xd.get(), dev[0].buffer.data(), &beta, yd.get(),
                                               dev[1].buffer.data()));
  KC_RETURN_IF_ERROR(check_launch("cudnnSoftmaxForward"));
  return finish(dev);
}
#endif

// --- gather: table {rows, dim}, index I64 {n} -> out {n, dim}.

Status run_gather(CudaContext&, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "table", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "index", DType::kI64));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kF32));
  const Tensor& table = call.t("table");
  const Tensor& index = call.t("index");
  if (table.rank() != 2) return invalid_argument("table must be rank 2 {rows, dim}");
  const std::int64_t rows = table.dim(0), dim = table.dim(1);
  KC_ASSIGN_OR_RETURN(std::int64_t inc, vector_inc(index, "index"));
  const std::int64_t n = index.dim(0);
  KC_ASSIGN_OR_RETURN(std::int64_t ld_table, leading_dim(table, "table", rows, dim));
  KC_ASSIGN_OR_RETURN(std::int64_t ld_out, leading_dim(call.t("out"), "out", n, dim));
  if (n > 65535)
    return unimplemented("gather: n > 65535 exceeds the kernel's grid (one y-block per index)");
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "table", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "index", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "out", true, true));
  struct Flags {
    int bad;
    unsigned long long first_bad;
  };
  KC_ASSIGN_OR_RETURN(GuardedBuffer flags, GuardedBuffer::allocate(sizeof(Flags), "oob flags"));
  const Flags init{0, ~0ULL};
  KC_RETURN_IF_ERROR(flags.upload(&init, sizeof(init)));
  auto* fl = flags.as<Flags>();
  KC_CUDA_RETURN_IF_ERROR(launch_gather(
      n, dim, rows, dev[0].buffer.as<float>(), ld_table, dev[1].buffer.as<std::int64_t>(), inc,
      dev[2].buffer.as<float>(), ld_out, &fl->bad, &fl->first_bad));
  KC_RETURN_IF_ERROR(check_launch("gather"));
  KC_RETURN_IF_ERROR(flags.check_guards());
  Flags got{};
  KC_RETURN_IF_ERROR(flags.download(&got, sizeof(got)));
  // Guards and inputs are checked even when the kernel raised.
  KC_RETURN_IF_ERROR(finish(dev));
  if (got.bad) {
    const auto i = static_cast<std::int64_t>(got.first_bad);
    const auto v = static_cast<std::int64_t>(index.load(i * inc));
    return kernel_raised("index out of range: index[" + std::to_string(i) +
                         "] = " + std::to_string(v) + " not in [0, " + std::to_string(rows) + ")");
  }
  return ok_status();
}

// --- The impls.

using RunFn = std::function<Status(CudaContext&, Call&)>;

class CudaImpl final : public Impl {
 public:
  CudaImpl(std::shared_ptr<CudaContext> ctx, Declaration decl, RunFn run)
      : ctx_(std::move(ctx)), decl_(std::move(decl)), run_(std::move(run)) {}

  const Declaration& declaration() const override { return decl_; }

  // Defined here rather than inherited: the checks are the same as Impl's
  // default (op and dtype), kept local so kc_cuda needs nothing from kc_backends'
  // objects beyond the Impl vtable.
  Status can_implement(const Call& call) const override {
    if (call.op != decl_.op)
      return unimplemented(decl_.name + " implements " + decl_.op + ", not " + call.op);
    if (std::find(decl_.dtypes.begin(), decl_.dtypes.end(), call.config.dtype) ==
        decl_.dtypes.end()) {
      return unimplemented(decl_.name + " does not support " +
                           std::string(dtype_name(call.config.dtype)));
    }
    return ok_status();
  }

  Status run(Call& call) const override {
    std::lock_guard<std::mutex> lock(ctx_->run_mutex());
    // From here this process holds a CUDA context: workers forked later
    // cannot use CUDA (kc/child.h).
    note_runtime_started("cuda");
    Status s = run_(*ctx_, call);
    if (!s.ok()) return s.with_context(decl_.name);
    return s;
  }

 private:
  std::shared_ptr<CudaContext> ctx_;
  Declaration decl_;
  RunFn run_;
};

Declaration base_declaration(const char* name, const char* op, const char* description) {
  Declaration d;
  d.name = name;
  d.op = op;
  d.backend = "cuda";
  // "The CUDA runtime is not fork-safe": a child of a process that called into
  // CUDA gets cudaErrorInitializationError (CUDA C++ Programming Guide,
  // Initialization). This backend probes the device in a short-lived child and
  // starts CUDA in kc's process only when one of its impls runs, in-process: a
  // worker per call would start a context and the cuBLAS/cuDNN handles each
  // time (on an H200, grading the cuda impls took 212 s in workers against
  // 5.2 s in-process). So kc's process stays free of CUDA for CUDA plugins,
  // which do run in workers, unless this backend's impls run in the same kc run.
  d.runtime = {false, false,
               "the CUDA runtime cannot be used in a child forked after kc initialised it; device "
               "buffers carry their own canary bands",
               "cuda"};
  d.dtypes = {DType::kF32};
  d.determinism = Determinism::kBitwise;
  d.nan = NanPolicy::kIeeePropagate;
  d.denormal = DenormalPolicy::kIeee;
  d.description = description;
  // The library it calls, as the backend's version line names it (so a
  // contract's `version` clause reads that library's version).
  const std::string_view n = name;
  d.extra["library"] = n.starts_with("cublas.") ? "cuBLAS" : n.starts_with("cudnn.") ? "cuDNN" : "CUDA";
  return d;
}

// cuBLAS Library User Guide, §2.1.4 "Results reproducibility": "By design, all
// cuBLAS API routines from a given toolkit version generate the same bit-wise
// results at every run when executed on GPUs with the same architecture and
// the same number of SMs" (single stream; exceptions are the symv/hemv atomics
// mode and multi-stream workspaces, neither used here). Hence BITWISE, on one
// machine and one toolkit.
// cublas<t>gemm: "If beta == 0 then C does not have to be a valid input"
// (beta_zero = C_NOT_READ); alpha is "<type> scalar used for multiplication",
// nothing said for alpha = 0 (alpha_zero = FORMULA).
void declare_cublas_gemm_rules(Declaration& d) {
  d.extra["alpha_zero"] = "FORMULA";
  d.extra["beta_zero"] = "C_NOT_READ";
}

constexpr const char* kCublasReproSource =
    "cuBLAS Library User Guide §2.1.4 Results reproducibility; §2.4.2 cublasSetMathMode / "
    "cublasMath_t";

/// The device's compute capability goes on every impl (the capability judge
/// reads it against a declared sm_XY); `kernels_arch` is the oldest
/// architecture the in-project kernels were built for (0: unknown).
std::vector<std::shared_ptr<const Impl>> make_impls(const std::shared_ptr<CudaContext>& ctx, int device_cc,
                                                    int kernels_arch) {
  std::vector<std::shared_ptr<const Impl>> out;
  auto add = [&](Declaration d, RunFn run) {
    d.runtime.device_cc = device_cc;
    // In-project kernels (cuda.*): SASS for each architecture of the build and
    // PTX that later devices compile, so the oldest one is what they need.
    if (kernels_arch > 0 && d.name.starts_with("cuda."))
      d.extra["device_capability"] = "sm_" + std::to_string(kernels_arch);
    out.push_back(std::make_shared<CudaImpl>(ctx, std::move(d), std::move(run)));
  };

  // cublasMath_t, CUBLAS_DEFAULT_MATH: "uses compute and intermediate storage
  // precisions with at least the same number of mantissa and exponent bits as
  // requested" -> FP32 accumulator, inputs not rounded below FP32.
  {
    Declaration d = base_declaration("cublas.sgemm_default", "matmul",
                                     "cublasSgemm, CUBLAS_DEFAULT_MATH (row-major via C^T)");
    d.accumulator = DType::kF32;
    d.extra["input_rounding"] = "NONE";
    d.extra["math_mode"] = "CUBLAS_DEFAULT_MATH";
    d.source = kCublasReproSource;
    declare_cublas_gemm_rules(d);
    add(std::move(d),
        [](CudaContext& c, Call& call) { return run_cublas_sgemm(c, CUBLAS_DEFAULT_MATH, call); });
  }
  // CUBLAS_PEDANTIC_MATH: "uses the prescribed precision and standardized
  // arithmetic for all phases of calculations" -> FP32 throughout, no reduced
  // precision anywhere.
  {
    Declaration d = base_declaration("cublas.sgemm_pedantic", "matmul",
                                     "cublasSgemm, CUBLAS_PEDANTIC_MATH (row-major via C^T)");
    d.accumulator = DType::kF32;
    d.extra["input_rounding"] = "NONE";
    d.extra["math_mode"] = "CUBLAS_PEDANTIC_MATH";
    d.source = kCublasReproSource;
    declare_cublas_gemm_rules(d);
    add(std::move(d),
        [](CudaContext& c, Call& call) { return run_cublas_sgemm(c, CUBLAS_PEDANTIC_MATH, call); });
  }
  // CUBLAS_TF32_TENSOR_OP_MATH: "Enable acceleration of single-precision
  // routines using TF32 tensor cores" (cublasComputeType_t
  // CUBLAS_COMPUTE_32F_FAST_TF32: "allows the library to use Tensor Cores with
  // TF32 compute for 32-bit input and output matrices"). TF32 keeps 10 explicit
  // mantissa bits: the inputs are rounded to TF32 before the products, which
  // are accumulated in FP32. Declared honestly: accumulator FP32, extra
  // input_rounding = TF32. NVIDIA_TF32_OVERRIDE=0 in the environment disables
  // TF32 and makes this impl behave as sgemm_default.
  {
    Declaration d = base_declaration(
        "cublas.sgemm_tf32", "matmul",
        "cublasSgemm, CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to TF32, FP32 accumulate");
    d.accumulator = DType::kF32;
    d.extra["input_rounding"] = "TF32";
    d.extra["math_mode"] = "CUBLAS_TF32_TENSOR_OP_MATH";
    d.source =
        std::string(kCublasReproSource) +
        "; cublasComputeType_t CUBLAS_COMPUTE_32F_FAST_TF32; CUDA C++ Programming Guide, TF32";
    declare_cublas_gemm_rules(d);
    add(std::move(d), [](CudaContext& c, Call& call) {
      return run_cublas_sgemm(c, CUBLAS_TF32_TENSOR_OP_MATH, call);
    });
  }

#if KC_CUDA_HAVE_CUDNN
  // cuDNN Developer Guide, "Reproducibility (Determinism)": "By design, most
  // of cuDNN's routines from a given version generate the same bit-wise results
  // across runs when executed on GPUs with the same architecture"; the listed
  // exceptions are convolution backward algorithms, not softmax. The
  // accumulator precision of cudnnSoftmaxForward is not documented; FP32 data
  // type is the most the API states, so FP32 is declared and kc judges it.
  {
    Declaration d =
        base_declaration("cudnn.softmax", "softmax",
                         "cudnnSoftmaxForward, CUDNN_SOFTMAX_ACCURATE, MODE_INSTANCE over rows");
    d.accumulator = DType::kF32;
    d.extra["algorithm"] = "CUDNN_SOFTMAX_ACCURATE";
    d.source =
        "cuDNN API Reference, cudnnSoftmaxForward / cudnnSoftmaxAlgorithm_t (ACCURATE: "
        "\"subtract max from every point to avoid overflow\"); cuDNN Developer Guide, "
        "Reproducibility (Determinism)";
    add(std::move(d), [](CudaContext& c, Call& call) {
      return run_cudnn_softmax(c, CUDNN_SOFTMAX_ACCURATE, call);
    });
  }
  {
    Declaration d =
        base_declaration("cudnn.log_softmax", "log_softmax",
                         "cudnnSoftmaxForward, CUDNN_SOFTMAX_LOG, MODE_INSTANCE over rows");
    d.accumulator = DType::kF32;
    d.extra["algorithm"] = "CUDNN_SOFTMAX_LOG";
    d.source =
        "cuDNN API Reference, cudnnSoftmaxForward / cudnnSoftmaxAlgorithm_t (LOG); cuDNN "
        "Developer Guide, Reproducibility (Determinism)";
    add(std::move(d),
        [](CudaContext& c, Call& call) { return run_cudnn_softmax(c, CUDNN_SOFTMAX_LOG, call); });
  }
#endif

  // In-project kernels: the declarations follow from the code in kernels.cu.
  {
    Declaration d =
        base_declaration("cuda.matmul_tiled", "matmul",
                         "16x16 shared-memory tiled matmul, FP32 fmaf accumulation in k order");
    d.accumulator = DType::kF32;
    d.source =
        "backends/cuda/kernels.cu (matmul_tiled_kernel): one FP32 accumulator per output, "
        "fmaf over k in increasing order; fixed order, so BITWISE";
    d.extra["alpha_zero"] = "AB_NOT_READ";  // kernels.cu: alpha == 0 skips the k loop
    d.extra["beta_zero"] = "C_NOT_READ";
    add(std::move(d), run_matmul_tiled);
  }
  // atomicAdd of per-block partial sums: the order in which blocks add into
  // the accumulator depends on scheduling, and FP32 addition is not
  // associative, so results vary between runs (CUDA C++ Programming Guide,
  // atomic functions: no ordering between threads).
  {
    Declaration d = base_declaration("cuda.sum_atomic", "sum",
                                     "per-block tree sums combined with atomicAdd (order varies)");
    d.accumulator = DType::kF32;
    d.determinism = Determinism::kNone;
    d.source =
        "backends/cuda/kernels.cu (sum_atomic_kernel); CUDA C++ Programming Guide, Atomic "
        "Functions";
    add(std::move(d), run_sum_atomic);
  }
  // The same kernel declaring BITWISE: a deliberately wrong declaration, for
  // checking that kc's determinism contract (C-ORD-02) catches it.
  {
    Declaration d =
        base_declaration("cuda.sum_atomic_claims_bitwise", "sum",
                         "CALIBRATION (mis-declared): the atomicAdd sum, declared BITWISE");
    d.accumulator = DType::kF32;
    d.determinism = Determinism::kBitwise;
    d.extra["calibration"] = "bad";
    d.set("broken_on_purpose",
          "mis-declared on purpose (C-ORD-02 must catch it): graded only when an --impl filter names it", nullptr);
    d.source =
        "deliberately mis-declared copy of cuda.sum_atomic (the C-ORD-02 example, docs/classes/C-ORD-02.md: "
        "atomic-add reduction declared BITWISE)";
    add(std::move(d), run_sum_atomic);
  }
  {
    Declaration d =
        base_declaration("cuda.sum_tree", "sum",
                         "fixed-grid strided partial sums, shared-memory tree, second-pass tree");
    d.accumulator = DType::kF32;
    d.source =
        "backends/cuda/kernels.cu (sum_partials_kernel, sum_final_kernel): fixed grid "
        "and fixed tree, summation order a function of n only; BITWISE";
    add(std::move(d), run_sum_tree);
  }
  {
    Declaration d = base_declaration("cuda.softmax", "softmax",
                                     "row-wise softmax, max-subtracted, expf, FP32 tree sums");
    d.accumulator = DType::kF32;
    d.source = "backends/cuda/kernels.cu (softmax_rows_kernel)";
    add(std::move(d), run_softmax_kernel);
  }
  {
    Declaration d =
        base_declaration("cuda.gather", "gather",
                         "row gather; out-of-range indices set a device flag -> kKernelRaised");
    d.oob = OobPolicy::kRaise;
    d.source = "backends/cuda/kernels.cu (gather_kernel): indices checked on the device";
    add(std::move(d), run_gather);
  }
  return out;
}

// --- Probe: versions, device and peak figures.

std::string version_text(int v) {
  // CUDA encodes versions as 1000 * major + 10 * minor.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

/// FP32 lanes per SM by compute capability (CUDA C++ Programming Guide,
/// "Compute Capabilities", arithmetic instruction throughput table); 0 = unknown.
int fp32_lanes_per_sm(int major, int minor) {
  if (major == 8 && minor == 0) return 64;
  if (major == 7) return 64;
  if (major >= 8) return 128;
  return 0;
}

std::string format_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string library_versions() {
  std::string out;
  int rt = 0, drv = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) out += "CUDA runtime " + version_text(rt);
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) out += ", driver " + version_text(drv);
  int maj = 0, min = 0, pat = 0;
  if (cublasGetProperty(MAJOR_VERSION, &maj) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &min) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &pat) == CUBLAS_STATUS_SUCCESS) {
    out +=
        ", cuBLAS " + std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(pat);
  }
#if KC_CUDA_HAVE_CUDNN
  // cuDNN 9 encodes its version as major * 10000 + minor * 100 + patch.
  const std::size_t v = cudnnGetVersion();
  out += ", cuDNN " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
#else
  out += ", cuDNN absent at build time";
#endif
  return out;
}

std::string device_text(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return "device " + std::to_string(device);
  std::string out = std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) +
                    " SMs";
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
  (void)cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  (void)cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device);
  (void)cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  const int lanes = fp32_lanes_per_sm(prop.major, prop.minor);
  if (lanes > 0 && clock_khz > 0) {
    // Peak FP32 = SMs * lanes * 2 (an FMA is two flops) * boost clock.
    const double flops = double(prop.multiProcessorCount) * lanes * 2.0 * clock_khz * 1e3;
    out += ", peak FP32 " + format_fixed(flops / 1e12, 1) + " TFLOP/s";
  }
  if (mem_khz > 0 && bus_bits > 0) {
    // Peak DRAM = 2 (double data rate) * memory clock * bus width in bytes.
    const double bytes = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0);
    out += ", peak DRAM " + format_fixed(bytes / 1e9, 0) + " GB/s";
  }
  out += ", " + format_fixed(double(prop.totalGlobalMem) / (1ull << 30), 1) + " GiB)";
  return out;
}

/// What the probe learns, as lines: "1" or "0" (a device is usable), the
/// versions (and the device), the reason, and with a device its compute
/// capability (major * 10 + minor). Runs in a short-lived child, so
/// kc's own process never initialises CUDA and the workers it forks can.
Result<std::string> probe_device() {
  std::string version = library_versions();
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    return "0\n" + version + "\nno CUDA device (cudaGetDeviceCount: " +
           (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")";
  }
  int device = 0;
  (void)cudaGetDevice(&device);
  cudaDeviceProp prop{};
  const int cc = cudaGetDeviceProperties(&prop, device) == cudaSuccess ? prop.major * 10 + prop.minor : 0;
  return "1\n" + version + "; " + device_text(device) + "\ndevice " + std::to_string(device) + " of " +
         std::to_string(count) + "\n" + std::to_string(cc);
}

constexpr double kProbeTimeoutS = 60;

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }

  BackendInfo probe() override {
    BackendInfo info;
    info.name = "cuda";
    info.description =
        "cuBLAS sgemm (default, pedantic, TF32), cuDNN softmax, in-project CUDA kernels";
    auto probed = run_in_child(probe_device, kProbeTimeoutS, "the CUDA probe (a child process)");
    std::vector<std::string> lines;
    if (probed.ok()) {
      std::istringstream in(*probed);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
    }
    if (lines.size() != 3 && lines.size() != 4) {
      info.available = false;
      info.reason = probed.ok() ? "the CUDA probe gave an unreadable answer: " + *probed
                                : probed.status().message();
      available_ = false;
      return info;
    }
    info.available = lines[0] == "1";
    info.version = lines[1];
    info.reason = lines[2];
    available_ = info.available;
    device_cc_ = lines.size() == 4 ? std::atoi(lines[3].c_str()) : 0;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    if (!available_.has_value()) (void)probe();
    if (!*available_) return {};
    if (impls_.empty()) impls_ = make_impls(std::make_shared<CudaContext>(), device_cc_, KC_CUDA_MIN_ARCH);
    return impls_;
  }

 private:
  std::optional<bool> available_;
  int device_cc_ = 0;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda::CudaBackend>(); }

}  // namespace kc::backends
