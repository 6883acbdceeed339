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
//
// Buffer offsets. Every CLBlast buffer argument comes with an offset in
// elements (x_offset, y_offset, dot_offset, imax_offset, ...), which callers
// working on sub-ranges of one cl_mem pass non-zero. The level-1 routines run
// twice: as clblast.<routine> with every offset 0, and as
// clblast.<routine>_offset with x, y and the result each placed at its own
// non-zero element offset (kOffsets) inside a larger device buffer. The
// elements before and after the vector in that buffer hold a canary pattern
// that is compared after the call: a write there is GUARD_OVERWRITTEN(<tensor>,
// before|after), as a write past the buffer's end is. Distinct offsets per
// buffer catch an offset applied to the wrong buffer; the result a routine
// reads from the wrong place is caught by the contracts' oracle.
//
// Increments. CLBlast takes x_inc and y_inc as size_t: a negative increment is
// not representable, and x_inc = 0 is rejected (CLBlastInvalidIncrementX,
// src/utilities/buffer_test.hpp TestVectorX). So no impl here declares
// increments = BLAS or nonpositive_inc, and kc runs them at positive
// increments only (Impl::can_implement).
#include "cl_impl.h"
#include "opencl_testing.h"

#if KC_OPENCL_HAVE_CLBLAST

#include <clblast_c.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cl_buffer.h"
#include "cl_runtime.h"
#include "kc/canary.h"
#include "kc/poison.h"

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

/// Where a level-1 impl places its buffers: element offsets of x, y and the
/// result (imax for iamax) inside their device buffers.
struct Offsets {
  std::size_t x = 0, y = 0, out = 0;
};
/// The offsets of the clblast.*_offset impls: odd, distinct per buffer (an
/// offset passed for the wrong buffer shows), and not a multiple of any
/// vector width (CLBlast's fast unit-stride kernels require offset 0, so the
/// general kernels run).
constexpr Offsets kOffsets{17, 5, 3};

std::size_t element_bytes(const Tensor& t) { return static_cast<std::size_t>(dtype_info(t.dtype()).storage_bytes); }

/// One vector (or result) at element `offset` of a guarded device buffer:
/// [offset elements of canary | payload | offset elements of canary], the
/// whole inside GuardedBuffer's bands. With offset 0 this is the plain layout.
class OffsetBuffer {
 public:
  /// Uploads `bytes` of `payload` at element `offset` (elements of `esize` bytes).
  static Result<OffsetBuffer> create(std::string name, const std::byte* payload, std::size_t bytes,
                                     std::size_t esize, std::size_t offset) {
    OffsetBuffer b;
    b.name_ = std::move(name);
    b.bytes_ = bytes;
    b.pad_ = offset * esize;
    b.offset_ = offset;
    KC_ASSIGN_OR_RETURN(b.buf_, GuardedBuffer::allocate(bytes + 2 * b.pad_, b.name_));
    std::vector<std::byte> staged(bytes + 2 * b.pad_);
    for (std::size_t i = 0; i < b.pad_; ++i) {
      staged[i] = static_cast<std::byte>(canary::band_byte(i, false));
      staged[b.pad_ + bytes + i] = static_cast<std::byte>(canary::band_byte(i, true));
    }
    if (bytes) std::memcpy(staged.data() + b.pad_, payload, bytes);
    KC_RETURN_IF_ERROR(b.buf_.write(staged.data(), staged.size()));
    return b;
  }
  /// A call tensor as it is (an input, or scal's in/out x).
  static Result<OffsetBuffer> input(Call& call, const char* name, std::size_t offset) {
    if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
    Tensor& t = call.t(name);
    KC_ASSIGN_OR_RETURN(OffsetBuffer b, create(name, t.raw(), t.nbytes(), element_bytes(t), offset));
    b.host_ = &t;
    return b;
  }
  /// A call output, its elements uploaded as kc's output fill (cl_buffer.h to_device).
  static Result<OffsetBuffer> output(Call& call, const char* name, std::size_t offset) {
    if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
    Tensor& t = call.t(name);
    std::vector<std::byte> staged(t.raw(), t.raw() + t.nbytes());
    if (t.numel() > 0) fill_logical(staged.data(), t, logical_fill(t).value_or(Fill::kPoison));
    KC_ASSIGN_OR_RETURN(OffsetBuffer b, create(name, staged.data(), staged.size(), element_bytes(t), offset));
    b.host_ = &t;
    return b;
  }

  cl_mem mem() const { return buf_.mem(); }
  std::size_t offset() const { return offset_; }

  /// The bands, then the canary around the payload: OK, or
  /// GUARD_OVERWRITTEN(name, before|after) naming the elements that changed.
  Status check() const {
    KC_RETURN_IF_ERROR(buf_.check_guards());
    if (pad_ == 0) return ok_status();
    std::vector<std::byte> got(bytes_ + 2 * pad_);
    KC_RETURN_IF_ERROR(buf_.read(got.data(), got.size()));
    for (bool after : {false, true}) {
      const std::byte* band = got.data() + (after ? pad_ + bytes_ : 0);
      std::size_t changed = 0, first = pad_;
      for (std::size_t i = 0; i < pad_; ++i) {
        if (band[i] != static_cast<std::byte>(canary::band_byte(i, after))) {
          ++changed;
          first = std::min(first, i);
        }
      }
      if (changed == 0) continue;
      const std::string where = after ? "byte +" + std::to_string(first) + " past the end of the vector"
                                      : "byte " + std::to_string(first) + " of the buffer, before the vector";
      return canary::guard_overwritten(
          name_, after,
          "the routine wrote outside the vector placed at element offset " + std::to_string(offset_) +
              " of its device buffer (" + std::to_string(changed) + " of the " + std::to_string(pad_) +
              " canary bytes " + (after ? "after" : "before") + " it changed, the first at " + where + ")");
    }
    return ok_status();
  }
  /// The payload into `dst` (bytes_ bytes).
  Status read_payload(std::byte* dst) const {
    if (bytes_ == 0) return ok_status();
    std::vector<std::byte> got(bytes_ + pad_);
    KC_RETURN_IF_ERROR(buf_.read(got.data(), got.size()));
    std::memcpy(dst, got.data() + pad_, bytes_);
    return ok_status();
  }
  /// The payload into the host tensor it came from: inputs too, so that a
  /// routine writing one shows as INPUT_MUTATED (cl_buffer.h finish()).
  Status read_back() const { return host_ ? read_payload(host_->raw()) : ok_status(); }

 private:
  GuardedBuffer buf_;
  std::string name_;
  Tensor* host_ = nullptr;
  std::size_t bytes_ = 0, pad_ = 0, offset_ = 0;
};

/// Every buffer's guards and canaries first, then every read-back (nothing
/// reaches the host when a check fails).
Status finish_offset(std::initializer_list<const OffsetBuffer*> bufs) {
  for (const OffsetBuffer* b : bufs)
    if (b) KC_RETURN_IF_ERROR(b->check());
  for (const OffsetBuffer* b : bufs)
    if (b) KC_RETURN_IF_ERROR(b->read_back());
  return ok_status();
}

enum class Level1 { kDot, kNrm2, kAsum };

Status run_level1(Level1 which, Call& call, Offsets off) {
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
  KC_ASSIGN_OR_RETURN(OffsetBuffer x, OffsetBuffer::input(call, "x", off.x));
  OffsetBuffer y;
  if (which == Level1::kDot) {
    KC_ASSIGN_OR_RETURN(y, OffsetBuffer::input(call, "y", off.y));
  }
  KC_ASSIGN_OR_RETURN(OffsetBuffer out, OffsetBuffer::output(call, "out", off.out));
  cl_command_queue q = rt->queue();
  const auto ix = static_cast<std::size_t>(incx), iy = static_cast<std::size_t>(incy);
  CLBlastStatusCode code = CLBlastSuccess;
  const char* what = "";
  switch (which) {
    case Level1::kDot:
      what = "CLBlastSdot";
      code = CLBlastSdot(n, out.mem(), out.offset(), x.mem(), x.offset(), ix, y.mem(), y.offset(), iy, &q, nullptr);
      break;
    case Level1::kNrm2:
      what = "CLBlastSnrm2";
      code = CLBlastSnrm2(n, out.mem(), out.offset(), x.mem(), x.offset(), ix, &q, nullptr);
      break;
    case Level1::kAsum:
      what = "CLBlastSasum";
      code = CLBlastSasum(n, out.mem(), out.offset(), x.mem(), x.offset(), ix, &q, nullptr);
      break;
  }
  KC_RETURN_IF_ERROR(clblast_status(code, what));
  KC_RETURN_IF_ERROR(finish_queue(what));
  return finish_offset({&x, which == Level1::kDot ? &y : nullptr, &out});
}

Status run_scal(Call& call, Offsets off) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_ASSIGN_OR_RETURN(std::int64_t incx, vector_inc(call.t("x"), "x"));
  const auto n = static_cast<std::size_t>(call.t("x").dim(0));
  if (n == 0) return unimplemented("CLBlast rejects n = 0 (CLBlastInvalidDimension)");
  const auto alpha = static_cast<float>(call.get_double("alpha", 1.0));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(OffsetBuffer x, OffsetBuffer::input(call, "x", off.x));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(
      CLBlastSscal(n, alpha, x.mem(), x.offset(), static_cast<std::size_t>(incx), &q, nullptr), "CLBlastSscal"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastSscal"));
  return finish_offset({&x});
}

Status run_iamax(Call& call, Offsets off) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kI64));
  KC_ASSIGN_OR_RETURN(std::int64_t incx, vector_inc(call.t("x"), "x"));
  const auto n = static_cast<std::size_t>(call.t("x").dim(0));
  if (n == 0) return unimplemented("CLBlast rejects n = 0 (CLBlastInvalidDimension)");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(OffsetBuffer x, OffsetBuffer::input(call, "x", off.x));
  // CLBlast writes the index as an unsigned int into imax_buffer at
  // imax_offset: a guarded buffer of its own, poisoned, widened to the op's
  // I64 afterwards. doc/api.md: "the index of a maximum ... in the x
  // vector", 0-based in the C API, as kc's iamax: no 1-based conversion.
  // The value is passed on as CLBlast returned it, never corrected: 1.5.3's
  // xamax.opencl stores the buffer position id * x_inc + x_offset instead of
  // the element index id, which the contracts then see (docs/findings.md).
  const cl_uint poison = 0xFFFFFFFFu;
  KC_ASSIGN_OR_RETURN(OffsetBuffer imax, OffsetBuffer::create("imax", reinterpret_cast<const std::byte*>(&poison),
                                                              sizeof poison, sizeof poison, off.out));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(
      CLBlastiSamax(n, imax.mem(), imax.offset(), x.mem(), x.offset(), static_cast<std::size_t>(incx), &q, nullptr),
      "CLBlastiSamax"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastiSamax"));
  KC_RETURN_IF_ERROR(finish_offset({&x, &imax}));
  cl_uint idx = poison;
  KC_RETURN_IF_ERROR(imax.read_payload(reinterpret_cast<std::byte*>(&idx)));
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
  // The level-1 routines, each as clblast.<routine> (every offset 0) and
  // clblast.<routine>_offset (kOffsets): same declaration, same contracts.
  auto add_level1 = [&](Declaration d, const std::function<Status(Call&, Offsets)>& run) {
    Declaration o = d;
    o.name += "_offset";
    o.description += "; x at element offset " + std::to_string(kOffsets.x) +
                     (d.op == "dot" ? ", y at " + std::to_string(kOffsets.y) : std::string()) +
                     (d.op == "scal" ? std::string() : ", the result at " + std::to_string(kOffsets.out)) +
                     " of larger device buffers, the elements around them checked";
    o.extra["buffer_offsets"] = "x " + std::to_string(kOffsets.x) +
                                (d.op == "dot" ? ", y " + std::to_string(kOffsets.y) : std::string()) +
                                (d.op == "scal" ? std::string() : ", result " + std::to_string(kOffsets.out)) +
                                " elements (canary before and after)";
    o.source += "; offsets: the C API's *_offset arguments, in elements (doc/api.md)";
    add(std::move(d), [run](Call& c) { return run(c, Offsets{}); });
    add(std::move(o), [run](Call& c) { return run(c, kOffsets); });
  };
  {
    Declaration d = clblast_declaration("clblast.sdot", "dot", "CLBlastSdot: two-stage fixed reduction");
    d.accumulator = DType::kF32;
    add_level1(std::move(d), [](Call& c, Offsets o) { return run_level1(Level1::kDot, c, o); });
  }
  {
    // xNRM2: "Accumulates the square of n elements in the x vector and takes
    // the square-root" (doc/api.md), and xnrm2.opencl does that: each work
    // item adds x_i * x_i to an FP32 accumulator, the partials are summed and
    // the epilogue stores sqrt(sum). No scaling (reference snrm2.f90 scales
    // to keep the squares in range), so nrm2_range = SAFE is not declared
    // (KC-NRM2-01..03 do not apply); reduction_range = UNSCALED records it.
    Declaration d = clblast_declaration("clblast.snrm2", "nrm2", "CLBlastSnrm2: sqrt of a fixed-order sum of squares");
    d.accumulator = DType::kF32;
    d.extra["scaling"] = "NONE (squares summed in FP32)";
    d.extra["reduction_range"] = "UNSCALED";
    d.source += "; reduction_range: src/kernels/level1/xnrm2.opencl (MultiplyAdd(acc, x1, x2) of the elements, "
                "sqrt of the sum in Xnrm2Epilogue: no scaling)";
    add_level1(std::move(d), [](Call& c, Offsets o) { return run_level1(Level1::kNrm2, c, o); });
  }
  {
    Declaration d = clblast_declaration("clblast.sasum", "asum", "CLBlastSasum: two-stage fixed reduction of |x_i|");
    d.accumulator = DType::kF32;
    add_level1(std::move(d), [](Call& c, Offsets o) { return run_level1(Level1::kAsum, c, o); });
  }
  {
    // xAMAX: "Finds the index of a maximum (not necessarily the first if there
    // are multiple) of the absolute values in the x vector": ties may return
    // any maximal position; the index is 0-based (CLBlast's C interface).
    // (1.5.3 returns the buffer position at x_inc > 1 or x_offset > 0, a
    // defect the contracts report: docs/findings.md.)
    // NaN: doc/api.md says nothing. xamax.opencl starts every work item from
    // max = 0, index 0 and takes x_i only when |x_i| > max, and combines the
    // partials with the same >: a NaN is never taken (not even at x_0, which
    // the reference isamax.f returns), so the rule is not GREATER_THAN and not
    // FIRST_NAN: UNSPECIFIED, judged by no contract.
    Declaration d = clblast_declaration("clblast.isamax", "iamax", "CLBlastiSamax: index of a max |x_i| (0-based)");
    d.extra["iamax_ties"] = "ANY (doc: not necessarily the first)";
    d.extra["iamax_nan"] = "UNSPECIFIED";
    d.source += "; iamax_nan: not in doc/api.md; src/kernels/level1/xamax.opencl compares |x_i| > max from max = 0, "
                "so a NaN is never returned";
    add_level1(std::move(d), [](Call& c, Offsets o) { return run_iamax(c, o); });
  }
  {
    // xSCAL: "Multiplies n elements of vector x by a scalar constant"; both
    // kernels of xscal.opencl (Xscal, XscalFast) store Multiply(alpha, x_i)
    // for every element and xscal.cpp has no alpha = 0 branch: 0 * NaN and
    // 0 * Inf are NaN, the reference sscal.f rule (KC-SCAL-02).
    Declaration d = clblast_declaration("clblast.sscal", "scal", "CLBlastSscal: x = alpha x");
    d.extra["scal_alpha_zero"] = "MULTIPLY";
    d.source += "; scal_alpha_zero: src/kernels/level1/xscal.opencl (Multiply(result, alpha, xvalue) for every "
                "element in Xscal and XscalFast) and src/routines/level1/xscal.cpp (no alpha = 0 branch)";
    add_level1(std::move(d), [](Call& c, Offsets o) { return run_scal(c, o); });
  }
  return out;
}

}  // namespace kc::backends::opencl

namespace kc::backends::opencl_testing {

Status run_clblast_scal_at(std::int64_t n, std::int64_t placed, std::int64_t passed) {
  using namespace kc::backends::opencl;
  if (n < 1 || placed < 0 || passed < 0) return invalid_argument("run_clblast_scal_at: n >= 1, offsets >= 0");
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<float> x(static_cast<std::size_t>(n), 2.0f);
  KC_ASSIGN_OR_RETURN(OffsetBuffer buf,
                      OffsetBuffer::create("x", reinterpret_cast<const std::byte*>(x.data()), x.size() * sizeof(float),
                                           sizeof(float), static_cast<std::size_t>(placed)));
  cl_command_queue q = rt->queue();
  KC_RETURN_IF_ERROR(clblast_status(CLBlastSscal(x.size(), 3.0f, buf.mem(), static_cast<std::size_t>(passed), 1, &q,
                                                 nullptr),
                                    "CLBlastSscal"));
  KC_RETURN_IF_ERROR(finish_queue("CLBlastSscal"));
  KC_RETURN_IF_ERROR(buf.check());
  KC_RETURN_IF_ERROR(buf.read_payload(reinterpret_cast<std::byte*>(x.data())));
  for (float v : x)
    if (v != 6.0f) return internal_error("an element of x is not 3 * 2 after CLBlastSscal");
  return ok_status();
}

}  // namespace kc::backends::opencl_testing

#else  // !KC_OPENCL_HAVE_CLBLAST

namespace kc::backends::opencl {
std::vector<std::shared_ptr<const Impl>> clblast_impls() { return {}; }
}  // namespace kc::backends::opencl

namespace kc::backends::opencl_testing {
Status run_clblast_scal_at(std::int64_t, std::int64_t, std::int64_t) {
  return unimplemented("kc was built without CLBlast");
}
}  // namespace kc::backends::opencl_testing

#endif
