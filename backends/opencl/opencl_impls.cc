// kc — the opencl backend's in-project kernels as impls (kernels.cc), each
// built three ways: with default options, with -cl-fast-relaxed-math and with
// -cl-denorms-are-zero (OpenCL 1.2 §5.6.4.2, "Math Intrinsics Options").
//
// Every run follows one procedure: copy the call's tensors into guarded
// device buffers (outputs pre-filled with NaN bytes), launch, clFinish, check
// the canary bands, copy everything back (cl_buffer.h).
#include <algorithm>
#include <climits>
#include <mutex>
#include <string>
#include <utility>

#include "cl_buffer.h"
#include "cl_impl.h"
#include "cl_runtime.h"
#include "kernels.h"

namespace kc::backends::opencl {

// --- ClImpl and argument checks.

Status ClImpl::can_implement(const Call& call) const {
  if (call.op != decl_.op) return unimplemented(decl_.name + " implements " + decl_.op + ", not " + call.op);
  if (std::find(decl_.dtypes.begin(), decl_.dtypes.end(), call.config.dtype) == decl_.dtypes.end())
    return unimplemented(decl_.name + " does not support " + std::string(dtype_name(call.config.dtype)));
  return ok_status();
}

Status ClImpl::run(Call& call) const {
  auto rt = Runtime::get();
  if (!rt.ok()) return rt.status().with_context(decl_.name);
  std::lock_guard<std::mutex> lock((*rt)->run_mutex());
  Status s = run_(call);
  if (!s.ok()) return s.with_context(decl_.name);
  return s;
}

Status check_dtype(const Call& call, const char* name, DType dtype) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  if (call.t(name).dtype() != dtype) {
    return unimplemented(std::string("tensor ") + name + " is " + std::string(dtype_name(call.t(name).dtype())) +
                         ", expected " + std::string(dtype_name(dtype)));
  }
  return ok_status();
}

Result<int> to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    return unimplemented(std::string(what) + " = " + std::to_string(v) + " does not fit the kernels' 32-bit int");
  return static_cast<int>(v);
}

Result<std::int64_t> leading_dim(const Tensor& t, const char* name, std::int64_t rows, std::int64_t cols) {
  if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != cols) {
    return invalid_argument(std::string(name) + " has shape " + t.shape_string() + ", expected (" +
                            std::to_string(rows) + ", " + std::to_string(cols) + ")");
  }
  if (cols > 1 && rows > 0 && t.strides()[1] != 1)
    return unimplemented(std::string(name) + " is not unit-stride along rows");
  std::int64_t ld = t.strides()[0];
  const std::int64_t min_ld = std::max<std::int64_t>(1, cols);
  if (ld < min_ld) {
    if (rows > 1 && cols > 0)
      return unimplemented(std::string(name) + " leading dimension " + std::to_string(ld) + " < " +
                           std::to_string(min_ld));
    ld = min_ld;
  }
  if (rows > 0 && cols > 0 && (rows - 1) * ld + cols > t.storage_elems())
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  return ld;
}

Result<std::int64_t> vector_inc(const Tensor& t, const char* name) {
  if (t.rank() != 1) return invalid_argument(std::string(name) + " must be rank 1");
  const std::int64_t n = t.dim(0);
  const std::int64_t inc = n <= 1 ? 1 : t.strides()[0];
  if (inc < 1) return unimplemented(std::string(name) + " stride " + std::to_string(inc) + " < 1");
  if (n > 0 && (n - 1) * inc + 1 > t.storage_elems())
    return invalid_argument(std::string(name) + " storage is smaller than its strides reach");
  return inc;
}

Result<bool> trans_flag(const Call& call, const std::string& key) {
  const std::string v = call.get(key, "N");
  if (v == "N" || v == "n") return false;
  if (v == "T" || v == "t") return true;
  return invalid_argument(key + " = '" + v + "', expected N or T");
}

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
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  KC_ASSIGN_OR_RETURN(lda, r.trans_a ? leading_dim(a, "A", k, m) : leading_dim(a, "A", m, k));
  KC_ASSIGN_OR_RETURN(ldb, r.trans_b ? leading_dim(b, "B", n, k) : leading_dim(b, "B", k, n));
  KC_ASSIGN_OR_RETURN(ldc, leading_dim(c, "C", m, n));
  KC_ASSIGN_OR_RETURN(r.m, to_int(m, "M"));
  KC_ASSIGN_OR_RETURN(r.n, to_int(n, "N"));
  KC_ASSIGN_OR_RETURN(r.k, to_int(k, "K"));
  KC_ASSIGN_OR_RETURN(r.lda, to_int(lda, "lda"));
  KC_ASSIGN_OR_RETURN(r.ldb, to_int(ldb, "ldb"));
  KC_ASSIGN_OR_RETURN(r.ldc, to_int(ldc, "ldc"));
  // Element offsets must fit the kernels' int arithmetic too.
  for (std::int64_t elems : {a.storage_elems(), b.storage_elems(), c.storage_elems()})
    KC_RETURN_IF_ERROR(to_int(elems, "matrix storage elements").status());
  r.alpha = static_cast<float>(call.get_double("alpha", 1.0));
  r.beta = static_cast<float>(call.get_double("beta", 0.0));
  return r;
}

Status add_matmul_devices(std::vector<DeviceTensor>& dev, Call& call, const MatmulArgs& a) {
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"A", "B"}, {}));
  return add_device(dev, call, "C", a.beta == 0.0f, true);
}

Result<SumArgs> sum_args(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kF32));
  if (call.t("out").numel() != 1) return invalid_argument("out must hold exactly one element");
  SumArgs r;
  KC_ASSIGN_OR_RETURN(std::int64_t inc, vector_inc(call.t("x"), "x"));
  KC_ASSIGN_OR_RETURN(r.n, to_int(call.t("x").dim(0), "n"));
  KC_ASSIGN_OR_RETURN(r.incx, to_int(inc, "incx"));
  KC_RETURN_IF_ERROR(to_int(call.t("x").storage_elems(), "x storage").status());
  return r;
}

Result<GatherArgs> gather_args(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "table", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "index", DType::kI64));
  KC_RETURN_IF_ERROR(check_dtype(call, "out", DType::kF32));
  const Tensor& table = call.t("table");
  const Tensor& index = call.t("index");
  if (table.rank() != 2) return invalid_argument("table must be rank 2 {rows, dim}");
  GatherArgs a;
  a.rows = table.dim(0);
  KC_ASSIGN_OR_RETURN(a.inc64, vector_inc(index, "index"));
  KC_ASSIGN_OR_RETURN(a.n, to_int(index.dim(0), "n"));
  KC_ASSIGN_OR_RETURN(a.dim, to_int(table.dim(1), "dim"));
  KC_ASSIGN_OR_RETURN(std::int64_t ldt64, leading_dim(table, "table", a.rows, a.dim));
  KC_ASSIGN_OR_RETURN(std::int64_t ldo64, leading_dim(call.t("out"), "out", a.n, a.dim));
  KC_ASSIGN_OR_RETURN(a.inc, to_int(a.inc64, "index stride"));
  KC_ASSIGN_OR_RETURN(a.ldt, to_int(ldt64, "ldt"));
  KC_ASSIGN_OR_RETURN(a.ldo, to_int(ldo64, "ldo"));
  return a;
}

Result<RowsArgs> rows_args(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "y", DType::kF32));
  const Tensor& x = call.t("x");
  if (x.rank() != 2) return invalid_argument("x must be rank 2 {rows, cols}");
  RowsArgs r;
  KC_ASSIGN_OR_RETURN(std::int64_t ldx, leading_dim(x, "x", x.dim(0), x.dim(1)));
  KC_ASSIGN_OR_RETURN(std::int64_t ldy, leading_dim(call.t("y"), "y", x.dim(0), x.dim(1)));
  KC_ASSIGN_OR_RETURN(r.rows, to_int(x.dim(0), "rows"));
  KC_ASSIGN_OR_RETURN(r.cols, to_int(x.dim(1), "cols"));
  KC_ASSIGN_OR_RETURN(r.ldx, to_int(ldx, "ldx"));
  KC_ASSIGN_OR_RETURN(r.ldy, to_int(ldy, "ldy"));
  return r;
}

Result<int> unary_args(const Call& call) {
  KC_RETURN_IF_ERROR(check_dtype(call, "x", DType::kF32));
  KC_RETURN_IF_ERROR(check_dtype(call, "y", DType::kF32));
  const Tensor& x = call.t("x");
  if (x.storage_elems() != x.numel() || call.t("y").storage_elems() != x.numel())
    return unimplemented("x and y must be contiguous");
  return to_int(x.numel(), "n");
}

Declaration base_declaration(const std::string& name, const std::string& op, const std::string& description) {
  Declaration d;
  d.name = name;
  d.op = op;
  d.backend = "opencl";
  d.runtime = kOpenclRuntime;
  d.dtypes = {DType::kF32};
  d.determinism = Determinism::kBitwise;
  d.nan = NanPolicy::kIeeePropagate;
  d.denormal = DenormalPolicy::kIeee;
  d.description = description;
  return d;
}

namespace {

std::size_t round_up(std::size_t v, std::size_t m) { return (v + m - 1) / m * m; }

// --- Build variants (OpenCL 1.2 §5.6.4.2, Math Intrinsics Options).

struct Variant {
  const char* suffix;   ///< appended to the impl name
  const char* options;  ///< clBuildProgram options
  const char* note;     ///< for descriptions
};
constexpr Variant kVariants[] = {
    {"", "", "default build options"},
    {"_fastmath", "-cl-fast-relaxed-math", "built with -cl-fast-relaxed-math"},
    {"_daz", "-cl-denorms-are-zero", "built with -cl-denorms-are-zero"},
};

// What each variant may do, from the spec (OpenCL 1.2 §5.6.4.2):
//  -cl-denorms-are-zero: "the single precision denormalized numbers may be
//    flushed to zero ... This is intended to be a performance hint and the
//    OpenCL compiler can choose not to flush denorms to zero if the device
//    supports single precision denormalized numbers." Declared FTZ_DAZ: the
//    behaviour the option requests; C-PRC-03 reports whether the compiler took
//    the hint (IEEE_OBSERVED when it did not).
//  -cl-fast-relaxed-math: "Sets the optimization options -cl-finite-math-only
//    and -cl-unsafe-math-optimizations"; finite-math-only: "assume that
//    arguments and results are not NaNs or ±∞"; unsafe-math: "(b) may violate
//    IEEE 754 standard and (c) may violate the OpenCL numerical compliance
//    requirements as defined in section 7.4", and implies -cl-no-signed-zeros
//    and -cl-mad-enable ("mad computes a * b + c with reduced accuracy"). kc's
//    NaN vocabulary has no "no promise" value: these impls keep the default
//    build's IEEE_PROPAGATE and record the spec's caveat in extra[nan_promise],
//    so C-EXC-01 shows what the relaxed build really does with NaN/Inf.
void apply_variant(Declaration& d, const Variant& v, const DeviceFacts& facts) {
  // Default build: subnormals are kept when the device reports CL_FP_DENORM
  // (OpenCL 1.2 §4.2 Table 4.3, CL_DEVICE_SINGLE_FP_CONFIG); otherwise they
  // may be flushed (§7.5.3 "Edge Case Behavior in Flush To Zero Mode").
  d.denormal = facts.single_denorm ? DenormalPolicy::kIeee : DenormalPolicy::kFtzDaz;
  d.extra["build_options"] = *v.options ? v.options : "(none)";
  std::string src = "OpenCL 1.2 spec §5.6.4.2 (build options), §4.2 Table 4.3 (CL_DEVICE_SINGLE_FP_CONFIG)";
  if (std::string(v.suffix) == "_daz") {
    d.denormal = DenormalPolicy::kFtzDaz;
    d.extra["denormal_promise"] = "may flush (a hint the compiler may ignore when the device has CL_FP_DENORM)";
  } else if (std::string(v.suffix) == "_fastmath") {
    d.extra["nan_promise"] = "none: -cl-finite-math-only lets the compiler assume no NaN/Inf";
    d.extra["signed_zeros"] = "not preserved (-cl-no-signed-zeros)";
    d.extra["mad"] = "a*b+c may use a reduced-accuracy mad (-cl-mad-enable)";
  }
  d.source = src + (d.source.empty() ? "" : "; " + d.source);
  d.name += v.suffix;
  d.description += std::string(" (") + v.note + ")";
}

// --- matmul.

struct Tile {
  const char* schedule;
  int ts, wpt;
};
// Tile sizes and local sizes: work-group TS x (TS / WPT).
constexpr Tile kTiles[] = {
    {"ts8", 8, 1}, {"ts16", 16, 1}, {"ts32", 32, 1}, {"ts16_wpt4", 16, 4}, {"ts32_wpt8", 32, 8},
};
constexpr const char* kDefaultTile = "ts16";

std::string tile_options(const Variant& v, const Tile& t) {
  std::string o = v.options;
  if (!o.empty()) o += " ";
  return o + "-DTS=" + std::to_string(t.ts) + " -DWPT=" + std::to_string(t.wpt);
}

Status run_matmul(const Variant& v, Call& call) {
  const std::string schedule = call.get("schedule", kDefaultTile);
  const Tile* tile = nullptr;
  for (const Tile& t : kTiles)
    if (schedule == t.schedule) tile = &t;
  if (!tile) return invalid_argument("unknown schedule '" + schedule + "' (ts8 | ts16 | ts32 | ts16_wpt4 | ts32_wpt8)");
  KC_ASSIGN_OR_RETURN(MatmulArgs a, matmul_args(call));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(matmul_source(), tile_options(v, *tile), "kc_matmul_tiled"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_matmul_devices(dev, call, a));
  const int ta = a.trans_a, tb = a.trans_b;
  KC_RETURN_IF_ERROR(set_args(k, a.m, a.n, a.k, ta, tb, a.alpha, dev[0].buffer.mem(), a.lda, dev[1].buffer.mem(),
                              a.ldb, a.beta, dev[2].buffer.mem(), a.ldc));
  const auto ts = static_cast<std::size_t>(tile->ts);
  const std::size_t rts = ts / static_cast<std::size_t>(tile->wpt);
  const std::size_t groups_x = round_up(static_cast<std::size_t>(a.n), ts) / ts;
  const std::size_t groups_y = round_up(static_cast<std::size_t>(a.m), ts) / ts;
  KC_RETURN_IF_ERROR(launch(k, {groups_x * ts, groups_y * rts}, {ts, rts}, "kc_matmul_tiled"));
  return finish(dev);
}

// --- sum.

Status run_sum_tree(const Variant& v, Call& call) {
  KC_ASSIGN_OR_RETURN(SumArgs a, sum_args(call));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel kp, rt->kernel(common_source(), v.options, "kc_sum_partials"));
  KC_ASSIGN_OR_RETURN(cl_kernel kf, rt->kernel(common_source(), v.options, "kc_sum_final"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"out"}));
  KC_ASSIGN_OR_RETURN(GuardedBuffer partials, GuardedBuffer::allocate(kSumGroups * sizeof(float), "partials"));
  std::vector<float> nan_fill(kSumGroups, __builtin_nanf(""));
  KC_RETURN_IF_ERROR(partials.write(nan_fill.data(), nan_fill.size() * sizeof(float)));
  KC_RETURN_IF_ERROR(set_args(kp, a.n, dev[0].buffer.mem(), a.incx, partials.mem()));
  // The fixed grid runs even for n == 0 (every partial is then 0).
  KC_RETURN_IF_ERROR(launch(kp, {std::size_t{kSumGroups} * kSumLocal}, {kSumLocal}, "kc_sum_partials"));
  const int count = kSumGroups;
  KC_RETURN_IF_ERROR(set_args(kf, count, partials.mem(), dev[1].buffer.mem()));
  KC_RETURN_IF_ERROR(launch(kf, {std::size_t{kSumLocal}}, {kSumLocal}, "kc_sum_final"));
  KC_RETURN_IF_ERROR(partials.check_guards());
  return finish(dev);
}

Status run_sum_atomic(const Variant& v, Call& call) {
  KC_ASSIGN_OR_RETURN(SumArgs a, sum_args(call));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(common_source(), v.options, "kc_sum_atomic"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"out"}));
  // The impl's own initialisation: the atomics add into a zeroed accumulator.
  const float zero = 0.0f;
  KC_RETURN_IF_ERROR(dev[1].buffer.write(&zero, sizeof zero));
  KC_RETURN_IF_ERROR(set_args(k, a.n, dev[0].buffer.mem(), a.incx, dev[1].buffer.mem()));
  KC_RETURN_IF_ERROR(launch(k, {round_up(static_cast<std::size_t>(a.n), kSumLocal)}, {kSumLocal}, "kc_sum_atomic"));
  return finish(dev);
}

// --- softmax / log_softmax.

Status run_softmax(const Variant& v, bool log_out, Call& call) {
  KC_ASSIGN_OR_RETURN(RowsArgs a, rows_args(call));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(common_source(), v.options, "kc_softmax_rows"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"y"}));
  const int lg = log_out ? 1 : 0;
  KC_RETURN_IF_ERROR(set_args(k, a.rows, a.cols, dev[0].buffer.mem(), a.ldx, dev[1].buffer.mem(), a.ldy, lg));
  if (a.cols > 0)
    KC_RETURN_IF_ERROR(launch(k, {static_cast<std::size_t>(a.rows) * kSoftmaxLocal}, {kSoftmaxLocal}, "kc_softmax_rows"));
  return finish(dev);
}

// --- gather.


Status run_gather(const Variant& v, Call& call) {
  KC_ASSIGN_OR_RETURN(const GatherArgs a, gather_args(call));
  const Tensor& index = call.t("index");
  const std::int64_t rows = a.rows, inc64 = a.inc64;
  const int n = a.n, dim = a.dim, inc = a.inc, ldt = a.ldt, ldo = a.ldo;
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(common_source(), v.options, "kc_gather"));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"table", "index"}, {"out"}));
  KC_ASSIGN_OR_RETURN(GuardedBuffer bad, GuardedBuffer::allocate(sizeof(cl_int), "oob flag"));
  const cl_int none = INT_MAX;
  KC_RETURN_IF_ERROR(bad.write(&none, sizeof none));
  const cl_long rows_l = rows;
  KC_RETURN_IF_ERROR(set_args(k, n, dim, rows_l, dev[0].buffer.mem(), ldt, dev[1].buffer.mem(), inc,
                              dev[2].buffer.mem(), ldo, bad.mem()));
  KC_RETURN_IF_ERROR(launch(k, {static_cast<std::size_t>(dim), static_cast<std::size_t>(n)}, {}, "kc_gather"));
  KC_RETURN_IF_ERROR(bad.check_guards());
  cl_int first_bad = INT_MAX;
  KC_RETURN_IF_ERROR(bad.read(&first_bad, sizeof first_bad));
  // Guards and inputs are checked even when the kernel raised.
  KC_RETURN_IF_ERROR(finish(dev));
  if (first_bad != INT_MAX) {
    const auto value = static_cast<std::int64_t>(index.load(static_cast<std::int64_t>(first_bad) * inc64));
    return kernel_raised("index out of range: index[" + std::to_string(first_bad) + "] = " + std::to_string(value) +
                         " not in [0, " + std::to_string(rows) + ")");
  }
  return ok_status();
}

// --- elementwise.

Status run_unary(const Variant& v, const std::string& fn, Call& call) {
  KC_ASSIGN_OR_RETURN(int n, unary_args(call));
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  KC_ASSIGN_OR_RETURN(cl_kernel k, rt->kernel(common_source(), v.options, "kc_" + fn));
  std::vector<DeviceTensor> dev;
  KC_RETURN_IF_ERROR(add_devices(dev, call, {"x"}, {"y"}));
  KC_RETURN_IF_ERROR(set_args(k, n, dev[0].buffer.mem(), dev[1].buffer.mem()));
  KC_RETURN_IF_ERROR(launch(k, {round_up(static_cast<std::size_t>(n), 64)}, {64}, "kc_" + fn));
  return finish(dev);
}

struct UnaryRow {
  const char* fn;
  const char* ulp;  ///< OpenCL 1.2 §7.4 Table 7.1 minimum accuracy (full profile)
  const char* description;
};
constexpr UnaryRow kUnary[] = {
    {"relu", "0 (exact)", "y = x > 0 || isnan(x) ? x : 0"},
    {"exp", "3", "y = exp(x), OpenCL built-in"},
    {"log", "3", "y = log(x), OpenCL built-in"},
    {"tanh", "5", "y = tanh(x), OpenCL built-in"},
    {"erf", "16", "y = erf(x), OpenCL built-in"},
    {"gelu_erf", "composite of erf (16 ulp) and 3 roundings", "y = 0.5 x (1 + erf(x / sqrt 2))"},
};

constexpr const char* kKernelsFile = "backends/opencl/kernels.cc";

}  // namespace

std::vector<std::pair<std::string, std::string>> project_programs() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Variant& v : kVariants) {
    out.emplace_back(common_source(), v.options);
    for (const Tile& t : kTiles) out.emplace_back(matmul_source(), tile_options(v, t));
  }
  return out;
}

std::vector<std::shared_ptr<const Impl>> project_impls(const DeviceFacts& facts) {
  std::vector<std::shared_ptr<const Impl>> out;
  for (const Variant& v : kVariants) {
    auto add = [&](Declaration d, RunFn run) {
      apply_variant(d, v, facts);
      out.push_back(std::make_shared<ClImpl>(std::move(d), std::move(run)));
    };
    {
      Declaration d = base_declaration("opencl.matmul_tiled", "matmul",
                                       "tiled matmul in local memory, FP32 fma over k in order; schedules = tile "
                                       "x local size");
      d.accumulator = DType::kF32;
      for (const Tile& t : kTiles) d.schedules.push_back(t.schedule);
      d.extra["default_schedule"] = kDefaultTile;
      // fma(): "the correctly rounded floating-point representation of the sum
      // of c with the infinitely precise product of a and b" (OpenCL 1.2
      // §6.12.2); alpha/beta follow the reference BLAS (alpha = 0 reads no A/B,
      // beta = 0 reads no C).
      d.extra["alpha_zero"] = "AB_NOT_READ";
      d.extra["beta_zero"] = "C_NOT_READ";
      d.source = std::string(kKernelsFile) + " (kc_matmul_tiled); OpenCL 1.2 §6.12.2 fma";
      add(std::move(d), [v](Call& c) { return run_matmul(v, c); });
    }
    {
      Declaration d = base_declaration("opencl.sum_tree", "sum",
                                       "fixed grid (64 x 256) strided partials, local-memory trees, second-pass tree");
      d.accumulator = DType::kF32;
      d.source = std::string(kKernelsFile) +
                 " (kc_sum_partials, kc_sum_final): order a function of n only, so BITWISE";
      add(std::move(d), [v](Call& c) { return run_sum_tree(v, c); });
    }
    {
      // Work-groups run concurrently in an order the runtime chooses (OpenCL
      // 1.2 §3.2, execution model: no order between work-groups is specified),
      // and each adds its
      // sum with a compare-exchange loop (§6.12.11 atomic_cmpxchg): the FP32
      // additions into out happen in that order, so the rounding may differ
      // between runs. Declared NONE.
      Declaration d = base_declaration("opencl.sum_atomic", "sum",
                                       "per-group local-memory trees added with a float atomic (compare-exchange)");
      d.accumulator = DType::kF32;
      d.determinism = Determinism::kNone;
      d.source = std::string(kKernelsFile) + " (kc_sum_atomic); OpenCL 1.2 §3.2 execution model, §6.12.11";
      add(std::move(d), [v](Call& c) { return run_sum_atomic(v, c); });
    }
    for (bool lg : {false, true}) {
      Declaration d = base_declaration(lg ? "opencl.log_softmax" : "opencl.softmax", lg ? "log_softmax" : "softmax",
                                       "one work-group per row: max-subtracted, FP32 local-memory tree sums");
      d.accumulator = DType::kF32;
      d.extra["softmax_stabilization"] = "max_subtraction";
      d.source = std::string(kKernelsFile) + " (kc_softmax_rows)";
      add(std::move(d), [v, lg](Call& c) { return run_softmax(v, lg, c); });
    }
    {
      Declaration d = base_declaration("opencl.gather", "gather",
                                       "row gather; out-of-range indices set a device flag and the call raises");
      d.oob = OobPolicy::kRaise;
      d.source = std::string(kKernelsFile) + " (kc_gather): indices checked on the device, atomic_min flag";
      add(std::move(d), [v](Call& c) { return run_gather(v, c); });
    }
    for (const UnaryRow& u : kUnary) {
      Declaration d = base_declaration(std::string("opencl.") + u.fn, u.fn, u.description);
      d.extra["ulp_bound"] = u.ulp;
      d.source = std::string(kKernelsFile) + " (kc_" + u.fn + "); OpenCL 1.2 §7.4 Table 7.1 (ULP of built-ins)";
      const std::string fn = u.fn;
      add(std::move(d), [v, fn](Call& c) { return run_unary(v, fn, c); });
    }
  }
  return out;
}

}  // namespace kc::backends::opencl
