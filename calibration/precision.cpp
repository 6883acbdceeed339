// kc — calibration trios for the precision contract classes:
//   C-PRC-01 accumulator preservation          (matmul: FP16 block-partial accumulator)
//   C-PRC-02 cancellation avoidance            (softmax without max subtraction; one-pass
//                                               variance as an extra bad impl outside the trio)
//   C-PRC-03 denormal declaration              (scal run under FTZ/DAZ, declared IEEE)
//   C-PRC-04 mixed-precision scaling invariance (mlp_train_step: loss scale never unscaled)
// Each kernel computes for real; the bad ones carry one documented defect
// (docs/classes/C-PRC-0*.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define KC_CALIB_HAVE_MXCSR 1
#endif

#include "calibration/calibration_backend.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- C-PRC-01

enum class Accumulator {
  kFp32,             ///< one FP32 accumulator over all of K
  kBf16,             ///< every partial sum rounded to bf16 (8 significant bits)
  kFp16BlockPartials,  ///< FP32 within blocks of 16 products, the block partials summed in FP16
};

constexpr std::int64_t kBlockK = 16;  // an MMA k-step: products inside it are summed in FP32

/// Row-major C = alpha A B + beta C (trans = N) with the given accumulator.
/// Inputs are FP32 and widen exactly; only the accumulator differs.
Status matmul_kernel(Call& call, Accumulator accumulator) {
  if (call.get("trans_a", "N") != "N" || call.get("trans_b", "N") != "N")
    return unimplemented("calibration GEMMs take untransposed operands only");
  const Tensor& a = call.t("A");
  const Tensor& b = call.t("B");
  Tensor& c = call.t("C");
  if (a.dtype() != DType::kF32) return unimplemented("calibration GEMMs are FP32 only");
  const std::int64_t m = call.get_int("M", 64), n = call.get_int("N", 64), k = call.get_int("K", 64);
  const std::int64_t lda = a.strides()[0], ldb = b.strides()[0], ldc = c.strides()[0];
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* pc = c.data<float>();
  const auto alpha = static_cast<float>(call.get_double("alpha", 1));
  const auto beta = static_cast<float>(call.get_double("beta", 0));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      switch (accumulator) {
        case Accumulator::kFp32:
          for (std::int64_t p = 0; p < k; ++p) acc += pa[i * lda + p] * pb[p * ldb + j];
          break;
        case Accumulator::kBf16:
          for (std::int64_t p = 0; p < k; ++p)
            acc = static_cast<float>(round_to(acc + pa[i * lda + p] * pb[p * ldb + j], DType::kBF16));
          break;
        case Accumulator::kFp16BlockPartials:
          // fp16 rounding overflows to inf past 65504 (IEEE conversion), as an
          // fp16 accumulator register does.
          for (std::int64_t p0 = 0; p0 < k; p0 += kBlockK) {
            float block = 0;
            for (std::int64_t p = p0; p < std::min(k, p0 + kBlockK); ++p) block += pa[i * lda + p] * pb[p * ldb + j];
            acc = static_cast<float>(round_to(acc + block, DType::kF16));
          }
          break;
      }
      float& out = pc[i * ldc + j];
      out = beta == 0 ? alpha * acc : alpha * acc + beta * out;  // C not read when beta == 0
    }
  return ok_status();
}

void add_accumulator_trio(ImplList& out) {
  add(out,
      calib_decl("calib.matmul_bf16acc", "matmul",
                 "C-PRC-01 baseline: matmul rounding every partial sum to bf16; declares accumulator = FP32"),
      [](Call& call) { return matmul_kernel(call, Accumulator::kBf16); });
  add(out,
      calib_decl("calib.matmul_fp16_blockacc", "matmul",
                 "C-PRC-01 bad: FP32 sums over k-blocks of 16, the block partials accumulated in FP16; "
                 "declares accumulator = FP32"),
      [](Call& call) { return matmul_kernel(call, Accumulator::kFp16BlockPartials); });
  add(out,
      calib_decl("calib.matmul_fp32acc", "matmul", "C-PRC-01 good: matmul with one FP32 accumulator over K"),
      [](Call& call) { return matmul_kernel(call, Accumulator::kFp32); });
}

// ---------------------------------------------------------------- C-PRC-02

enum class Softmax {
  kStable,        ///< y = exp(x - m) / Σ exp(x - m), m = row max
  kNaive,         ///< y = exp(x) / Σ exp(x): overflows once x > 88.7
  kUnnormalized,  ///< y = exp(x - m): the division by the sum is missing
};

/// Row softmax over x {rows, cols} -> y, in FP32 (expf, FP32 sum).
Status softmax_kernel(Call& call, Softmax variant) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const std::int64_t rows = x.dim(0), cols = x.dim(1);
  std::vector<float> e(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    float m = 0;
    if (variant != Softmax::kNaive) {
      m = -INFINITY;
      for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, static_cast<float>(x.at(r * cols + j)));
    }
    float sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      e[j] = std::exp(static_cast<float>(x.at(r * cols + j)) - m);
      sum += e[j];
    }
    for (std::int64_t j = 0; j < cols; ++j)
      y.set(r * cols + j, variant == Softmax::kUnnormalized ? e[j] : e[j] / sum);
  }
  return ok_status();
}

void add_cancellation_trio(ImplList& out) {
  add(out,
      calib_decl("calib.softmax_unnormalized", "softmax",
                 "C-PRC-02 baseline: softmax returning exp(x - max) without dividing by the row sum"),
      [](Call& call) { return softmax_kernel(call, Softmax::kUnnormalized); });
  add(out,
      calib_decl("calib.softmax_naive", "softmax",
                 "C-PRC-02 bad: softmax as exp(x) / sum exp(x), no max subtraction (overflows past x = 88.7)"),
      [](Call& call) { return softmax_kernel(call, Softmax::kNaive); });
  add(out,
      calib_decl("calib.softmax_stable", "softmax",
                 "C-PRC-02 good: softmax with max subtraction, FP32 exp and sum"),
      [](Call& call) { return softmax_kernel(call, Softmax::kStable); });
  // Not part of the trio: the contract's other textbook failure, for `kc check`.
  add(out,
      calib_decl("calib.variance_one_pass", "variance",
                 "C-PRC-02 extra bad: row variance as E[x^2] - E[x]^2 in one FP32 pass (cancels at large offsets)"),
      [](Call& call) {
        const Tensor& x = call.t("x");
        Tensor& v = call.t("out");
        const std::int64_t rows = x.dim(0), cols = x.dim(1);
        for (std::int64_t r = 0; r < rows; ++r) {
          float s = 0, s2 = 0;
          for (std::int64_t j = 0; j < cols; ++j) {
            const auto xv = static_cast<float>(x.at(r * cols + j));
            s += xv;
            s2 += xv * xv;
          }
          const float mean = s / static_cast<float>(cols);
          v.set(r, s2 / static_cast<float>(cols) - mean * mean);
        }
        return ok_status();
      });
}

// ---------------------------------------------------------------- C-PRC-03

/// The floating-point environment a kernel runs in.
enum class FpEnv {
  kIeee,    ///< gradual underflow (the default environment)
  kFtzDaz,  ///< flush-to-zero and denormals-are-zero, as -ffast-math's crtfastmath.o sets at startup
};

#if defined(KC_CALIB_HAVE_MXCSR)
constexpr unsigned kMxcsrFtz = 0x8000;  // bit 15: results that would be subnormal become 0
constexpr unsigned kMxcsrDaz = 0x0040;  // bit 6: subnormal operands are read as 0
#endif

/// x_i <- f(x_i) over the strided vector x, in FP32 arithmetic under `env`.
/// On x86 the environment is the real one (MXCSR, saved and restored around
/// the loop); elsewhere FTZ/DAZ is emulated by flushing operands and results.
template <typename F>
Status scal_kernel(Call& call, FpEnv env, F f) {
  Tensor& x = call.t("x");
  if (x.dtype() != DType::kF32) return unimplemented("calibration scal is FP32 only");
  float* px = x.data<float>();
  const std::int64_t n = x.numel(), inc = x.strides()[0];
  auto flush = [](float v) { return std::fabs(v) < 1.17549435e-38f ? std::copysign(0.0f, v) : v; };
#if defined(KC_CALIB_HAVE_MXCSR)
  const unsigned saved = _mm_getcsr();
  if (env == FpEnv::kFtzDaz) _mm_setcsr(saved | kMxcsrFtz | kMxcsrDaz);
  asm volatile("" ::: "memory");  // no load or store of x crosses the mode switch
  for (std::int64_t i = 0; i < n; ++i) px[i * inc] = f(px[i * inc]);
  asm volatile("" ::: "memory");
  _mm_setcsr(saved);
  (void)flush;
#else
  for (std::int64_t i = 0; i < n; ++i) {
    float& v = px[i * inc];
    v = env == FpEnv::kFtzDaz ? flush(f(flush(v))) : f(v);
  }
#endif
  return ok_status();
}

void add_denormal_trio(ImplList& out) {
  add(out,
      calib_decl("calib.scal_reciprocal", "scal",
                 "C-PRC-03 baseline: scal dividing by alpha instead of multiplying (the inverse scale)"),
      [](Call& call) {
        const auto alpha = static_cast<float>(call.get_double("alpha", 1.5));
        return scal_kernel(call, FpEnv::kIeee, [alpha](float v) { return v / alpha; });
      });
  add(out,
      calib_decl("calib.scal_ftz", "scal",
                 "C-PRC-03 bad: scal run with FTZ and DAZ set (a fast-math build); declares denormal = IEEE"),
      [](Call& call) {
        const auto alpha = static_cast<float>(call.get_double("alpha", 1.5));
        return scal_kernel(call, FpEnv::kFtzDaz, [alpha](float v) { return alpha * v; });
      });
  // KC-SCAL-01's bad impl: alpha passed to the kernel in bf16 (a scalar
  // argument cast to the activation dtype). The default alpha 1.5 is exact in
  // bf16; 0.1 and -1e-3 are not, and every product is off by their rounding.
  add(out,
      calib_decl("calib.scal_bf16_alpha", "scal",
                 "seeded bug: scal with alpha rounded to bf16 before the products (exact only for short alphas)"),
      [](Call& call) {
        const auto alpha = static_cast<float>(round_to(call.get_double("alpha", 1.5), DType::kBF16));
        return scal_kernel(call, FpEnv::kIeee, [alpha](float v) { return alpha * v; });
      });
  add(out,
      calib_decl("calib.scal_ieee", "scal", "C-PRC-03 good: scal with gradual underflow; declares denormal = IEEE"),
      [](Call& call) {
        const auto alpha = static_cast<float>(call.get_double("alpha", 1.5));
        return scal_kernel(call, FpEnv::kIeee, [alpha](float v) { return alpha * v; });
      });
}

// ---------------------------------------------------------------- C-PRC-04

/// A mixed-precision SGD recipe for the mlp_train_step op (src/ops/train/train.h):
/// FP32 master weights and arithmetic, gradient tensors stored in `grad`.
struct Recipe {
  DType grad = DType::kF32;
  bool mean_loss = true;  ///< false: the loss is Σ E², not its mean (updates B·O times too large)
  bool unscale = true;    ///< divide the gradients by the loss scale before the update
  bool rescale_on_overflow = false;  ///< dynamic loss scaling: halve s and redo a step whose gradients overflowed
};

/// Trains the tanh MLP of mlp_train_step (W1 {in, hidden}, W2 {hidden, out},
/// no biases, MSE loss on the batch X, Y) for `steps` SGD steps with loss scale
/// `loss_scale`, and writes W1_out and W2_out.
Status mlp_train_kernel(Call& call, const Recipe& recipe) {
  const std::int64_t in = call.t("W1").dim(0), hidden = call.t("W1").dim(1), outs = call.t("W2").dim(1),
                     batch = call.t("X").dim(0);
  const std::int64_t steps = call.get_int("steps", 5);
  const auto lr = static_cast<float>(call.get_double("lr", 0.05));
  const auto loss_scale = static_cast<float>(call.get_double("loss_scale", 1));
  auto floats = [&](const char* name) {
    const std::vector<double> d = call.t(name).to_doubles();
    return std::vector<float>(d.begin(), d.end());
  };
  std::vector<float> w1 = floats("W1"), w2 = floats("W2");
  const std::vector<float> x = floats("X"), y = floats("Y");
  // Storing a gradient: one rounding into the gradient format (fp16 overflows to inf past 65504).
  auto store = [&](float v) {
    return recipe.grad == DType::kF32 ? v : static_cast<float>(round_to(v, recipe.grad));
  };
  std::vector<float> a(batch * hidden), dp(batch * outs), dz(batch * hidden), dw1(w1.size()), dw2(w2.size());
  for (std::int64_t t = 0; t < steps; ++t) {
    float s = loss_scale;
    for (int attempt = 0;; ++attempt) {
      // Forward: A = tanh(X W1), P = A W2, E = P - Y; dP = s * dL/dP.
      const float dscale = s * (recipe.mean_loss ? 2.0f / static_cast<float>(batch * outs) : 2.0f);
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t h = 0; h < hidden; ++h) {
          float z = 0;
          for (std::int64_t i = 0; i < in; ++i) z += x[b * in + i] * w1[i * hidden + h];
          a[b * hidden + h] = std::tanh(z);
        }
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t o = 0; o < outs; ++o) {
          float p = 0;
          for (std::int64_t h = 0; h < hidden; ++h) p += a[b * hidden + h] * w2[h * outs + o];
          dp[b * outs + o] = store(dscale * (p - y[b * outs + o]));
        }
      // Backward: dW2 = Aᵀ dP, dZ = (dP W2ᵀ) ⊙ (1 - A²), dW1 = Xᵀ dZ.
      for (std::int64_t h = 0; h < hidden; ++h)
        for (std::int64_t o = 0; o < outs; ++o) {
          float acc = 0;
          for (std::int64_t b = 0; b < batch; ++b) acc += a[b * hidden + h] * dp[b * outs + o];
          dw2[h * outs + o] = store(acc);
        }
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t h = 0; h < hidden; ++h) {
          float acc = 0;
          for (std::int64_t o = 0; o < outs; ++o) acc += dp[b * outs + o] * w2[h * outs + o];
          const float av = a[b * hidden + h];
          dz[b * hidden + h] = store(acc * (1 - av * av));
        }
      for (std::int64_t i = 0; i < in; ++i)
        for (std::int64_t h = 0; h < hidden; ++h) {
          float acc = 0;
          for (std::int64_t b = 0; b < batch; ++b) acc += x[b * in + i] * dz[b * hidden + h];
          dw1[i * hidden + h] = store(acc);
        }
      bool finite = true;
      for (float v : dw1) finite = finite && std::isfinite(v);
      for (float v : dw2) finite = finite && std::isfinite(v);
      // Dynamic loss scaling: an overflowed step is redone at half the scale
      // (at most 64 halvings; below s = 2^-64 nothing overflows any more).
      if (!finite && recipe.rescale_on_overflow && attempt < 64) {
        s *= 0.5f;
        continue;
      }
      break;
    }
    const float unscale = recipe.unscale ? s : 1.0f;
    for (std::size_t i = 0; i < w1.size(); ++i) w1[i] -= lr * (dw1[i] / unscale);
    for (std::size_t i = 0; i < w2.size(); ++i) w2[i] -= lr * (dw2[i] / unscale);
  }
  Tensor& w1_out = call.t("W1_out");
  Tensor& w2_out = call.t("W2_out");
  for (std::size_t i = 0; i < w1.size(); ++i) w1_out.set(static_cast<std::int64_t>(i), w1[i]);
  for (std::size_t i = 0; i < w2.size(); ++i) w2_out.set(static_cast<std::int64_t>(i), w2[i]);
  return ok_status();
}

void add_scaling_trio(ImplList& out) {
  add(out,
      calib_decl("calib.mlp_sum_loss", "mlp_train_step",
                 "C-PRC-04 baseline: FP32 training on the summed loss instead of the mean (updates B*O times too large)"),
      [](Call& call) {
        Recipe r;
        r.mean_loss = false;
        return mlp_train_kernel(call, r);
      });
  add(out,
      calib_decl("calib.mlp_fp16grad_noscale", "mlp_train_step",
                 "C-PRC-04 bad: FP16 gradients of the loss-scaled loss, never unscaled and no overflow check"),
      [](Call& call) {
        Recipe r;
        r.grad = DType::kF16;
        r.unscale = false;
        return mlp_train_kernel(call, r);
      });
  add(out,
      calib_decl("calib.mlp_fp16grad_dynamic", "mlp_train_step",
                 "C-PRC-04 good: FP16 gradients, unscaled before the FP32 update, step redone at half the scale on "
                 "overflow"),
      [](Call& call) {
        Recipe r;
        r.grad = DType::kF16;
        r.rescale_on_overflow = true;
        return mlp_train_kernel(call, r);
      });
}

}  // namespace

void add_precision_impls(ImplList& out) {
  add_accumulator_trio(out);
  add_cancellation_trio(out);
  add_denormal_trio(out);
  add_scaling_trio(out);
}

}  // namespace kc::calibration
