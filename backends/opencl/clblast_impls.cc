// kc — CLBlast routines as impls of the opencl backend (gemm, dot, nrm2,
// asum, amax, scal), on the same guarded device buffers as the in-project
// kernels. CLBlast's C API (clblast_c.h) takes a queue and an event; every
// call is followed by clFinish.
//
// Declarations: CLBlast 1.5 doc/api.md (routine semantics), its README
// ("CLBlast ... the precision of the routine" for S routines: FP32 in and
// out), and its kernels (src/kernels/level1/xdot.opencl, xnrm2.opencl,
// xasum.opencl, xamax.opencl: a fixed two-stage reduction, WGS1 work-groups
// writing partials and one WGS2 group combining them, no atomics; xgemm: one
// FP32 accumulator per output in a fixed tiling). Fixed orders, no atomics:
// BITWISE on one device and tuning.
#include "cl_impl.h"

#if KC_OPENCL_HAVE_CLBLAST

#include <clblast_c.h>

#include <string>

#include "cl_buffer.h"
#include "cl_runtime.h"

namespace kc::backends::opencl {
namespace {

Status clblast_status(CLBlastStatusCode code, const std::string& what) {
  if (code == CLBlastSuccess) return ok_status();
  const std::string text = what + ": CLBlast status " + std::to_string(static_cast<int>(code));
  // CLBlast rejects empty problems ("Dimensions M, N, and K have to be larger
  // than zero", CLBlastInvalidDimension): the routine cannot run that config.
  if (code == CLBlastInvalidDimension) return unimplemented(text + " (CLBlastInvalidDimension: sizes must be > 0)");
  if (code == CLBlastNotImplemented) return unimplemented(text + " (CLBlastNotImplemented)");
  return internal_error(text);
}

Status finish_queue(const std::string& what) {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  return cl_status(clFinish(rt->queue()), "clFinish after " + what);
}

Status run_gemm(Call& call) {
  KC_ASSIGN_OR_RETURN(MatmulArgs a, matmul_args(call));
  if (a.m == 0 || a.n == 0) return ok_status();  // nothing to write; CLBlast rejects it
  if (a.k == 0) return unimplemented("CLBlast rejects K = 0 (CLBlastInvalidDimension)");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_matmul_devices(dev, call, a));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(
      CLBlastSgemm(CLBlastLayoutRowMajor, a.trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                   a.trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, a.m, a.n, a.k, a.alpha, dev[0].buffer.mem(),
                   0, a.lda, dev[1].buffer.mem(), 0, a.ldb, a.beta, dev[2].buffer.mem(), 0, a.ldc, &q, nullptr),
      "CLBlastSgemm"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastSgemm"));
  return finish(dev);
}

enum class Level1 { kDot, kNrm2, kAsum };

Status run_level1(Level1 which, Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kF32));
  KC_ASSIGN_OR_RETURN(std::int64_t incx, vector_inc(call.t("x"), "x"));
  std::int64_t incy = 1;
  if (which == Level1::kDot) {
    KC_RETURN_IF_ERROR(check_dtype(call, "y", DType::kF32));
    KC_ASSIGN_OR_RETURN(incy, vector_inc(call.t("y"), "y"));
  }
  const auto n = static_cast<std::size_t>(call.t("x").dim(0));
  if (n == 0) return unimplemented("CLBlast rejects n = 0 (CLBlastInvalidDimension)");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  if (which == Level1::kDot) KC_RETURN_IF_ERROR(add_device(dev, call, "y", false, false));
  KC_RETURN_IF_ERROR(add_device(dev, call, "out", true, true));
  cl_command_queue q = rt->queue();
  cl_mem out = dev.back().buffer.mem();
  const auto ix = static_cast<std::size_t>(incx), iy = static_cast<std::size_t>(incy);
  CLBlastStatusCode code = CLBlastSuccess;
  const char* what = "";
  switch (which) {
    case Level1::kDot:
      what = "CLBlastSdot";
      code = CLBlastSdot(n, out, 0, dev[0].buffer.mem(), 0, ix, dev[1].buffer.mem(), 0, iy, &q, nullptr);
      break;
    case Level1::kNrm2:
      what = "CLBlastSnrm2";
      code = CLBlastSnrm2(n, out, 0, dev[0].buffer.mem(), 0, ix, &q, nullptr);
      break;
    case Level1::kAsum:
      what = "CLBlastSasum";
      code = CLBlastSasum(n, out, 0, dev[0].buffer.mem(), 0, ix, &q, nullptr);
      break;
  }
  KC_RETURN_IF_ERROR(clblast_status(code, what));
  KC_RETURN_IF_ERROR(finish_queue(what));
  return finish(dev);
}

Status run_scal(Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_ASSIGN_OR_RETURN(std::int64_t incx, vector_inc(call.t("x"), "x"));
  const auto n = static_cast<std::size_t>(call.t("x").dim(0));
  if (n == 0) return unimplemented("CLBlast rejects n = 0 (CLBlastInvalidDimension)");
  const auto alpha = static_cast<float>(call.get_double("alpha", 1.0));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, true));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(
      CLBlastSscal(n, alpha, dev[0].buffer.mem(), 0, static_cast<std::size_t>(incx), &q, nullptr), "CLBlastSscal"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastSscal"));
  return finish(dev);
}

Status run_iamax(Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kI64));
  KC_ASSIGN_OR_RETURN(std::int64_t incx, vector_inc(call.t("x"), "x"));
  const auto n = static_cast<std::size_t>(call.t("x").dim(0));
  if (n == 0) return unimplemented("CLBlast rejects n = 0 (CLBlastInvalidDimension)");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_device(dev, call, "x", false, false));
  // CLBlast writes the index as an unsigned int into imax_buffer: a guarded
  // 4-byte device buffer of its own, widened to the op's I64 afterwards.
  KC_ASSIGN_OR_RETURN(GuardedBuffer imax, GuardedBuffer::allocate(sizeof(cl_uint), "imax"));
  const cl_uint poison = 0xFFFFFFFFu;
  KC_RETURN_IF_ERROR(imax.write(&poison, sizeof poison));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(
      CLBlastiSamax(n, imax.mem(), 0, dev[0].buffer.mem(), 0, static_cast<std::size_t>(incx), &q, nullptr),
      "CLBlastiSamax"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastiSamax"));
  KC_RETURN_IF_ERROR(imax.check_guards());
  KC_RETURN_IF_ERROR(finish(dev));
  cl_uint idx = poison;
  KC_RETURN_IF_ERROR(imax.read(&idx, sizeof idx));
  call.t("out").store(0, idx == poison ? -1.0 : static_cast<double>(idx));
  return ok_status();
}

constexpr const char* kClblastDoc =
    "CLBlast 1.5 doc/api.md and README; kernels src/kernels/level1/*.opencl and level3/xgemm*.opencl "
    "(fixed-order reductions, no atomics)";

Declaration clblast_declaration(const char* name, const char* op, const char* description) {
  Declaration d = base_declaration(name, op, description);
  d.source = kClblastDoc;
  d.extra["library"] = "CLBlast";  // its part of the backend's version line ("CLBlast 1.5.3")
  return d;
}

}  // namespace

std::vector<std::shared_ptr<const Impl>> clblast_impls() {
  std::vector<std::shared_ptr<const Impl>> out;
  auto add = [&](Declaration d, RunFn run) { out.push_back(std::make_shared<ClImpl>(std::move(d), std::move(run))); };
  {
    // xGEMM: "C = alpha * A * B + beta * C", row-major layout supported
    // (CLBlastLayoutRowMajor). doc/api.md gives only the formula: nothing on
    // whether A and B are read when alpha = 0 or C when beta = 0, so neither
    // BLAS rule (KC-GEMM-02, KC-GEMM-03) is declared.
    Declaration d = clblast_declaration("clblast.sgemm", "matmul", "CLBlastSgemm, row-major");
    d.accumulator = DType::kF32;
    d.extra["alpha_zero"] = "FORMULA";
    d.extra["beta_zero"] = "FORMULA";
    add(std::move(d), run_gemm);
  }
  {
    Declaration d = clblast_declaration("clblast.sdot", "dot", "CLBlastSdot: two-stage fixed reduction");
    d.accumulator = DType::kF32;
    add(std::move(d), [](Call& c) { return run_level1(Level1::kDot, c); });
  }
  {
    // xNRM2: "Accumulates the square of n elements in the x vector and takes
    // the square-root": the doc describes no scaling (reference snrm2 scales
    // to avoid overflow of the squares), recorded as extra[scaling].
    Declaration d = clblast_declaration("clblast.snrm2", "nrm2", "CLBlastSnrm2: sqrt of a fixed-order sum of squares");
    d.accumulator = DType::kF32;
    d.extra["scaling"] = "NONE documented (squares summed)";
    add(std::move(d), [](Call& c) { return run_level1(Level1::kNrm2, c); });
  }
  {
    Declaration d = clblast_declaration("clblast.sasum", "asum", "CLBlastSasum: two-stage fixed reduction of |x_i|");
    d.accumulator = DType::kF32;
    add(std::move(d), [](Call& c) { return run_level1(Level1::kAsum, c); });
  }
  {
    // xAMAX: "Finds the index of a maximum (not necessarily the first if there
    // are multiple) of the absolute values in the x vector": ties may return
    // any maximal position; the index is 0-based (CLBlast's C interface); NaN
    // handling is not documented.
    Declaration d = clblast_declaration("clblast.isamax", "iamax", "CLBlastiSamax: index of a max |x_i| (0-based)");
    d.extra["iamax_ties"] = "ANY (doc: not necessarily the first)";
    add(std::move(d), run_iamax);
  }
  {
    // xSCAL: "Multiplies n elements of vector x by a scalar constant":
    // alpha = 0 multiplies too, so NaN * 0 stays NaN (as reference sscal).
    Declaration d = clblast_declaration("clblast.sscal", "scal", "CLBlastSscal: x = alpha x");
    d.extra["scal_alpha_zero"] = "MULTIPLIES";
    add(std::move(d), run_scal);
  }
  return out;
}

}  // namespace kc::backends::opencl

#else  // !KC_OPENCL_HAVE_CLBLAST

namespace kc::backends::opencl {
std::vector<std::shared_ptr<const Impl>> clblast_impls() { return {}; }
}  // namespace kc::backends::opencl

#endif
