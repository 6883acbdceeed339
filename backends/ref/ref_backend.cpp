// kc — the `ref` backend: plain fp32 loops, fp32 accumulation in natural
// order, one impl per core op. They are the readable baseline every other
// backend is compared with, and what the engine runs on any machine.
#include "ref_backend.h"

#include "backends/ref/train_kernels.h"
#include "ref_elementwise.h"

#include <cmath>
#include <string>
#include <vector>

namespace kc::backends {
namespace {

/// One fp32 kernel: its declaration and a function over the Call.
class RefImpl final : public Impl {
 public:
  using Kernel = Status (*)(Call&);

  RefImpl(std::string op, std::string description, Kernel kernel) : kernel_(kernel) {
    decl_.name = "ref." + op;
    decl_.op = op;
    decl_.backend = "ref";
    decl_.dtypes = {DType::kF32};
    decl_.accumulator = DType::kF32;
    decl_.determinism = Determinism::kBitwise;  // sequential loops, no threads
    decl_.nan = NanPolicy::kIeeePropagate;
    decl_.denormal = DenormalPolicy::kIeee;     // no fast-math, no FTZ/DAZ flags set
    decl_.source = "kc in-project reference kernel";
    decl_.description = std::move(description);
    if (decl_.op == "matmul") {
      // run_matmul: alpha == 0 skips the product loop, beta == 0 never reads C.
      decl_.extra["alpha_zero"] = "AB_NOT_READ";
      decl_.extra["beta_zero"] = "C_NOT_READ";
    }
    // ref_transformer.cpp selects ±inf out: gelu/silu(-inf) = 0, the limit.
    if (decl_.op == "gelu_erf" || decl_.op == "gelu_tanh" || decl_.op == "silu") decl_.extra["inf_policy"] = "LIMIT";
    // What the code does at extreme magnitudes (contracts/range): run_softmax
    // subtracts the row max, so exp sees arguments <= 0 and the sum lies in
    // [1, cols]; run_layernorm and run_rmsnorm sum squares in fp32 unscaled.
    if (decl_.op == "softmax" || decl_.op == "log_softmax") {
      decl_.extra["reduction_range"] = "SAFE";
      decl_.source += "; reduction_range: run_softmax, max-subtracted (exp arguments <= 0, row sum in [1, cols])";
    } else if (decl_.op == "layernorm" || decl_.op == "rmsnorm") {
      decl_.extra["reduction_range"] = "UNSCALED";
      decl_.source += "; reduction_range: ref_transformer.cpp sums the (centred) squares in fp32, unscaled";
    }
  }

  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    if (call.op != decl_.op) return unimplemented(decl_.name + " implements " + decl_.op + ", not " + call.op);
    if (call.config.dtype != DType::kF32) {
      return unimplemented(decl_.name + " supports FP32 only, not " + std::string(dtype_name(call.config.dtype)));
    }
    for (const Tensor& t : call.tensors) {
      if (t.dtype() != DType::kF32 && t.dtype() != DType::kI64)
        return unimplemented(decl_.name + ": tensor dtype " + std::string(dtype_name(t.dtype())));
    }
    return ok_status();
  }

  Status run(Call& call) const override {
    KC_RETURN_IF_ERROR(can_implement(call));
    return kernel_(call);
  }

 private:
  Declaration decl_;
  Kernel kernel_;
};

/// A strided fp32 vector view.
struct Vec {
  float* p;
  std::int64_t n, inc;
  float& operator[](std::int64_t i) const { return p[i * inc]; }
};
Vec vec(Tensor& t) { return {t.data<float>(), t.dim(0), t.strides()[0]}; }

bool transposed(const Call& call, const char* key) {
  const std::string v = call.get(key, "N");
  return v == "T" || v == "t";
}

// C = alpha op(A) op(B) + beta C, row-major with leading dimensions. As in
// reference sgemm.f: alpha == 0 never reads A or B; beta == 0 never reads C.
Status run_matmul(Call& call) {
  Tensor& ta = call.t("A");
  Tensor& tb = call.t("B");
  Tensor& tc = call.t("C");
  const bool tra = transposed(call, "trans_a"), trb = transposed(call, "trans_b");
  const std::int64_t m = tc.dim(0), n = tc.dim(1);
  const std::int64_t k = tra ? ta.dim(0) : ta.dim(1);
  const std::int64_t lda = ta.strides()[0], ldb = tb.strides()[0], ldc = tc.strides()[0];
  const float alpha = static_cast<float>(call.get_double("alpha", 1));
  const float beta = static_cast<float>(call.get_double("beta", 0));
  const float* a = ta.data<float>();
  const float* b = tb.data<float>();
  float* c = tc.data<float>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0f) {
        for (std::int64_t p = 0; p < k; ++p) {
          const float av = tra ? a[p * lda + i] : a[i * lda + p];
          const float bv = trb ? b[j * ldb + p] : b[p * ldb + j];
          acc += av * bv;
        }
        acc *= alpha;
      }
      float& cij = c[i * ldc + j];
      cij = beta == 0.0f ? acc : acc + beta * cij;
    }
  }
  return ok_status();
}

Status run_dot(Call& call) {
  const Vec x = vec(call.t("x")), y = vec(call.t("y"));
  float acc = 0.0f;
  for (std::int64_t i = 0; i < x.n; ++i) acc += x[i] * y[i];
  call.t("out").data<float>()[0] = acc;
  return ok_status();
}

Status run_asum(Call& call) {
  const Vec x = vec(call.t("x"));
  float acc = 0.0f;
  for (std::int64_t i = 0; i < x.n; ++i) acc += std::fabs(x[i]);
  call.t("out").data<float>()[0] = acc;
  return ok_status();
}

// The classic scale/ssq recurrence (as in LAPACK's slassq before 3.10): one
// pass, fp32 throughout, no overflow of the squares for large |x|.
Status run_nrm2(Call& call) {
  const Vec x = vec(call.t("x"));
  float scale = 0.0f, ssq = 1.0f;
  bool nan = false, inf = false;
  for (std::int64_t i = 0; i < x.n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) nan = true;
    if (std::isinf(v)) inf = true;
    if (v == 0.0f || !std::isfinite(v)) continue;
    const float a = std::fabs(v);
    if (scale < a) {
      const float r = scale / a;
      ssq = 1.0f + ssq * r * r;
      scale = a;
    } else {
      const float r = a / scale;
      ssq += r * r;
    }
  }
  float out = scale * std::sqrt(ssq);
  if (inf) out = INFINITY;
  if (nan) out = std::nanf("");
  call.t("out").data<float>()[0] = out;
  return ok_status();
}

Status run_scal(Call& call) {
  const Vec x = vec(call.t("x"));
  const float alpha = static_cast<float>(call.get_double("alpha", 1.5));
  for (std::int64_t i = 0; i < x.n; ++i) x[i] = alpha * x[i];
  return ok_status();
}

// isamax.f: first index of the largest |x_i| by `if (|x_i| > dmax)`.
Status run_iamax(Call& call) {
  const Vec x = vec(call.t("x"));
  std::int64_t best = x.n > 0 ? 0 : -1;
  float dmax = x.n > 0 ? std::fabs(x[0]) : 0.0f;
  for (std::int64_t i = 1; i < x.n; ++i) {
    if (std::fabs(x[i]) > dmax) {
      best = i;
      dmax = std::fabs(x[i]);
    }
  }
  call.t("out").data<std::int64_t>()[0] = best;
  return ok_status();
}

Status run_sum(Call& call) {
  const Vec x = vec(call.t("x"));
  float acc = 0.0f;
  for (std::int64_t i = 0; i < x.n; ++i) acc += x[i];
  call.t("out").data<float>()[0] = acc;
  return ok_status();
}

template <bool kLog>
Status run_softmax(Call& call) {
  Tensor& tx = call.t("x");
  Tensor& ty = call.t("y");
  const std::int64_t rows = tx.dim(0), cols = tx.dim(1);
  const std::int64_t ldx = tx.strides()[0], ldy = ty.strides()[0];
  const float* x = tx.data<float>();
  float* y = ty.data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    float* yr = y + r * ldy;
    // Max subtraction; a NaN anywhere in the row propagates through the sum.
    float m = -INFINITY;
    bool nan = false;
    for (std::int64_t c = 0; c < cols; ++c) {
      if (std::isnan(xr[c])) nan = true;
      else if (xr[c] > m) m = xr[c];
    }
    if (nan) m = std::nanf("");
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - m);
    if constexpr (kLog) {
      const float ls = std::log(sum);
      for (std::int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - m) - ls;
    } else {
      for (std::int64_t c = 0; c < cols; ++c) yr[c] = std::exp(xr[c] - m) / sum;
    }
  }
  return ok_status();
}

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "ref";
    info.available = true;
    info.version = "builtin";
    info.reason = "compiled into kc";
    info.description = "in-project fp32 reference kernels (plain loops, fp32 accumulation)";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    // The one table of ref impls; the transformer, training and multi-precision
    // elementwise kernels follow from their own files.
    std::vector<std::shared_ptr<const Impl>> out = {
        std::make_shared<RefImpl>("matmul", "triple loop, fp32 accumulator, k innermost", run_matmul),
        std::make_shared<RefImpl>("dot", "sequential fp32 dot product", run_dot),
        std::make_shared<RefImpl>("asum", "sequential fp32 sum of |x_i|", run_asum),
        std::make_shared<RefImpl>("nrm2", "one-pass scaled sum of squares (scale/ssq) in fp32", run_nrm2),
        std::make_shared<RefImpl>("scal", "x_i = alpha * x_i in fp32", run_scal),
        std::make_shared<RefImpl>("iamax", "first index of max |x_i| (isamax rules)", run_iamax),
        std::make_shared<RefImpl>("sum", "sequential fp32 sum", run_sum),
        std::make_shared<RefImpl>("softmax", "max-subtracted fp32 softmax per row", run_softmax<false>),
        std::make_shared<RefImpl>("log_softmax", "max-subtracted fp32 log-softmax per row",
                                  run_softmax<true>),
    };
    for (auto& impl : ref_transformer_impls()) out.push_back(std::move(impl));
    for (const RefKernel& k : train_ref_kernels()) out.push_back(std::make_shared<RefImpl>(k.op, k.description, k.run));
    for (auto& impl : make_ref_elementwise_impls()) out.push_back(std::move(impl));
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> make_ref_backend() { return std::make_unique<RefBackend>(); }

std::shared_ptr<const Impl> make_ref_impl(std::string op, std::string description, Status (*kernel)(Call&)) {
  return std::make_shared<RefImpl>(std::move(op), std::move(description), kernel);
}

}  // namespace kc::backends
