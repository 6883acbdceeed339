// kc — `ref` kernels of the training ops (see train_kernels.h). FP32
// throughout, natural order, max-subtracted log-sum-exp.
#include "backends/ref/train_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kc/ops/bpe.h"

namespace kc::backends {
namespace {

/// max and Σ exp(x_j / scale - max) of one row of x/scale, in FP32.
struct RowLse {
  float m, s;
  float lse() const { return m + std::log(s); }
};
RowLse row_lse(const float* x, std::int64_t cols, float scale) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t c = 0; c < cols; ++c) m = std::max(m, x[c] / scale);
  float s = 0;
  for (std::int64_t c = 0; c < cols; ++c) s += std::exp(x[c] / scale - m);
  return {m, s};
}

Status check_target(std::int64_t t, std::int64_t cols) {
  if (t < 0 || t >= cols) return Status(StatusCode::kKernelRaised, "target out of range");
  return ok_status();
}

}  // namespace

Status cross_entropy_fp32(Call& call, bool softmax_gradient) {
  const Tensor& tz = call.t("z");
  const std::int64_t rows = tz.dim(0), cols = tz.dim(1);
  const float* z = tz.data<float>();
  const std::int64_t* target = call.t("target").data<std::int64_t>();
  float* loss = call.t("loss").data<float>();
  float* dz = call.t("dz").data<float>();
  for (std::int64_t r = 0; r < rows; ++r) {
    KC_RETURN_IF_ERROR(check_target(target[r], cols));
    const float* zr = z + r * cols;
    const RowLse l = row_lse(zr, cols, 1.0f);
    loss[r] = l.lse() - zr[target[r]];
    for (std::int64_t c = 0; c < cols; ++c) {
      const float p = softmax_gradient ? std::exp(zr[c] - l.m) / l.s : zr[c];
      dz[r * cols + c] = p - (c == target[r] ? 1.0f : 0.0f);
    }
  }
  return ok_status();
}

namespace {

Status run_cross_entropy(Call& call) { return cross_entropy_fp32(call, /*softmax_gradient=*/true); }

Status run_kd_loss(Call& call) { return kd_loss_fp32(call, /*t2=*/true); }

Status run_adamw(Call& call) { return adamw_fp32(call, false, true, -1); }

Status run_bpe_roundtrip(Call& call) {
  const tokenize::BpeTokenizer& tok = tokenize::BpeTokenizer::builtin();
  return bpe_roundtrip_rows(call, [&](const std::string& s) { return tok.decode(tok.encode(s)); });
}

}  // namespace

Status kd_loss_fp32(Call& call, bool t2) {
  const Tensor& ts = call.t("zs");
  const std::int64_t rows = ts.dim(0), cols = ts.dim(1);
  const float* zs = ts.data<float>();
  const float* zt = call.t("zt").data<float>();
  const std::int64_t* target = call.t("target").data<std::int64_t>();
  float* loss = call.t("loss").data<float>();
  const auto alpha = static_cast<float>(call.get_double("alpha", 0.5));
  const auto temp = static_cast<float>(call.get_double("T", 1));
  for (std::int64_t r = 0; r < rows; ++r) {
    KC_RETURN_IF_ERROR(check_target(target[r], cols));
    const float* s = zs + r * cols;
    const float* t = zt + r * cols;
    const RowLse ls = row_lse(s, cols, temp), lt = row_lse(t, cols, temp);
    const float lse_s = ls.lse(), lse_t = lt.lse();
    float kl = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float log_p = t[c] / temp - lse_t, log_q = s[c] / temp - lse_s;
      kl += std::exp(log_p) * (log_p - log_q);
    }
    const RowLse l1 = row_lse(s, cols, 1.0f);
    const float ce = l1.lse() - s[target[r]];
    loss[r] = alpha * (t2 ? temp * temp : 1.0f) * kl + (1 - alpha) * ce;
  }
  return ok_status();
}

Status adamw_fp32(Call& call, bool coupled, bool bias_correction, double beta2_override) {
  float* p = call.t("param").data<float>();
  const float* g = call.t("grad").data<float>();
  float* m = call.t("m").data<float>();
  float* v = call.t("v").data<float>();
  const std::int64_t n = call.t("param").numel();
  const std::int64_t step = call.get_int("step", 10);
  const auto lr = static_cast<float>(call.get_double("lr", 1e-3));
  const auto beta1 = static_cast<float>(call.get_double("beta1", 0.9));
  const auto beta2 = static_cast<float>(beta2_override >= 0 ? beta2_override : call.get_double("beta2", 0.999));
  const auto eps = static_cast<float>(call.get_double("eps", 1e-8));
  const auto wd = static_cast<float>(call.get_double("weight_decay", 0.01));
  if (step < 1) return Status(StatusCode::kKernelRaised, "adamw: step must be >= 1");
  // torch.optim.AdamW (single-tensor path): bias corrections from pow, then
  // denom = sqrt(v) / sqrt(bc2) + eps, param -= (lr / bc1) * m / denom.
  const float bc1 = bias_correction ? 1 - std::pow(beta1, static_cast<float>(step)) : 1.0f;
  const float bc2 = bias_correction ? 1 - std::pow(beta2, static_cast<float>(step)) : 1.0f;
  const float step_size = lr / bc1;
  const float bc2_sqrt = std::sqrt(bc2);
  for (std::int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    if (coupled) gi = gi + wd * p[i];
    else p[i] = p[i] * (1 - lr * wd);
    m[i] = beta1 * m[i] + (1 - beta1) * gi;
    v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    p[i] = p[i] - step_size * (m[i] / denom);
  }
  return ok_status();
}

Status bpe_roundtrip_rows(Call& call, const std::function<Result<std::string>(const std::string&)>& roundtrip) {
  const Tensor& x = call.t("x");
  Tensor& y = call.t("y");
  const std::int64_t rows = x.dim(0), len = x.dim(1), cap = y.dim(1);
  const std::int64_t* in = x.data<std::int64_t>();
  std::int64_t* out = y.data<std::int64_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    std::string bytes;
    for (std::int64_t i = 0; i < len; ++i) {
      if (in[r * len + i] < 0 || in[r * len + i] > 255) return Status(StatusCode::kKernelRaised, "input is not a byte");
      bytes += static_cast<char>(in[r * len + i]);
    }
    Result<std::string> back = roundtrip(bytes);
    if (!back.ok()) return Status(StatusCode::kKernelRaised, back.status().message());
    if (static_cast<std::int64_t>(back->size()) > cap)
      return Status(StatusCode::kKernelRaised, "decoded row longer than its output room");
    for (std::int64_t i = 0; i < cap; ++i)
      out[r * cap + i] = i < static_cast<std::int64_t>(back->size()) ? static_cast<unsigned char>((*back)[static_cast<std::size_t>(i)]) : -1;
  }
  return ok_status();
}

Status grad_accum_fp32(Call& call, bool average, float factor) {
  const Tensor& tw = call.t("W");
  const std::int64_t f = tw.dim(0), o = tw.dim(1), b = call.t("X").dim(0);
  const std::int64_t a = call.get_int("micro_batches", 1);
  if (a <= 0 || b % a != 0) return Status(StatusCode::kKernelRaised, "micro_batches must divide batch");
  const std::int64_t mb = b / a;
  const float* w = tw.data<float>();
  const float* x = call.t("X").data<float>();
  const float* y = call.t("Y").data<float>();
  float* g = call.t("G").data<float>();
  for (std::int64_t i = 0; i < f * o; ++i) g[i] = 0;
  std::vector<float> part(static_cast<std::size_t>(f * o)), e(static_cast<std::size_t>(mb * o));
  const float scale = factor / static_cast<float>(mb * o);
  const float inv_a = average ? 1.0f / static_cast<float>(a) : 1.0f;
  for (std::int64_t j = 0; j < a; ++j) {
    const float* xj = x + j * mb * f;
    const float* yj = y + j * mb * o;
    for (std::int64_t r = 0; r < mb; ++r)
      for (std::int64_t c = 0; c < o; ++c) {
        float acc = 0;
        for (std::int64_t k = 0; k < f; ++k) acc += xj[r * f + k] * w[k * o + c];
        e[static_cast<std::size_t>(r * o + c)] = acc - yj[r * o + c];
      }
    for (std::int64_t i = 0; i < f; ++i)
      for (std::int64_t c = 0; c < o; ++c) {
        float acc = 0;
        for (std::int64_t r = 0; r < mb; ++r) acc += xj[r * f + i] * e[static_cast<std::size_t>(r * o + c)];
        g[i * o + c] += (scale * acc) * inv_a;
      }
  }
  return ok_status();
}

Status slerp_fp32(Call& call, bool linear) {
  const float* a = call.t("a").data<float>();
  const float* b = call.t("b").data<float>();
  float* y = call.t("y").data<float>();
  const std::int64_t n = call.t("a").numel();
  const auto t = static_cast<float>(call.get_double("t", 0.5));
  // The cosine from the vectors scaled by a power of two to a largest entry in
  // [1, 2) (std::ldexp: exact, no 2^-e formed): the squares of tiny entries
  // would underflow (b = [0, 1.4e-45] has a 0 norm in FP32, the cosine turns
  // NaN and slerp silently becomes lerp) and those of huge ones overflow.
  auto exponent = [n](const float* x) {
    float mx = 0;
    for (std::int64_t i = 0; i < n; ++i) mx = std::max(mx, std::fabs(x[i]));
    return mx > 0 && std::isfinite(mx) ? std::ilogb(mx) : 0;
  };
  const int ea = exponent(a), eb = exponent(b);
  float na = 0, nb = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float as = std::ldexp(a[i], -ea), bs = std::ldexp(b[i], -eb);
    na += as * as;
    nb += bs * bs;
  }
  na = std::sqrt(na);
  nb = std::sqrt(nb);
  float d = 0;
  for (std::int64_t i = 0; i < n; ++i) d += (std::ldexp(a[i], -ea) / na) * (std::ldexp(b[i], -eb) / nb);
  d = std::clamp(d, -1.0f, 1.0f);
  float c0 = 1 - t, c1 = t;
  if (!linear && std::fabs(d) <= 0.9995f) {
    const float theta = std::acos(d), s = std::sin(theta);
    c0 = std::sin((1 - t) * theta) / s;
    c1 = std::sin(t * theta) / s;
  }
  for (std::int64_t i = 0; i < n; ++i) y[i] = c0 * a[i] + c1 * b[i];
  return ok_status();
}

Status prune_fp32(Call& call, bool magnitude_only, float kept_scale) {
  const Tensor& tw = call.t("W");
  const std::int64_t rows = tw.dim(0), cols = tw.dim(1);
  const float* w = tw.data<float>();
  const float* act = call.has("act_sq") && !magnitude_only ? call.t("act_sq").data<float>() : nullptr;
  float* y = call.t("y").data<float>();
  const auto k = static_cast<std::int64_t>(std::floor(call.get_double("sparsity", 0.5) * static_cast<double>(cols)));
  std::vector<float> score(static_cast<std::size_t>(cols));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c)
      score[static_cast<std::size_t>(c)] = act ? std::fabs(w[r * cols + c]) * std::sqrt(act[c]) : std::fabs(w[r * cols + c]);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t p, std::int64_t q) {
      return score[static_cast<std::size_t>(p)] < score[static_cast<std::size_t>(q)];
    });
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = w[r * cols + c] * kept_scale;
    for (std::int64_t j = 0; j < k; ++j) y[r * cols + idx[static_cast<std::size_t>(j)]] = 0;
  }
  return ok_status();
}

Status train_loop_fp32(Call& call, const ops::TrainLoopFaults& faults, bool zero_state) {
  const ops::TrainLoopShape sh{call.t("X").dim(0), call.t("X").dim(1), call.get_int("ff", 16), call.get_int("classes", 8)};
  ops::TrainLoopHyper hy;
  hy.steps = call.get_int("steps", 3);
  hy.warmup_steps = call.get_int("warmup_steps", 0);
  hy.lr = static_cast<float>(call.get_double("lr", 1e-3));
  hy.beta1 = static_cast<float>(call.get_double("beta1", 0.9));
  hy.beta2 = static_cast<float>(call.get_double("beta2", 0.999));
  hy.eps = static_cast<float>(call.get_double("eps", 1e-8));
  hy.weight_decay = static_cast<float>(call.get_double("weight_decay", 0.01));
  const std::int64_t n = sh.params();
  if (call.t("theta").numel() != n || call.t("loss").numel() != hy.steps)
    return Status(StatusCode::kKernelRaised, "train_loop: tensor sizes do not match the shape parameters");
  const float* px = call.t("X").data<float>();
  std::vector<float> x(px, px + sh.batch * sh.dim);
  const std::int64_t* pt = call.t("target").data<std::int64_t>();
  std::vector<std::int64_t> target(pt, pt + sh.batch);
  for (std::int64_t t : target)
    if (t < 0 || t >= sh.classes) return Status(StatusCode::kKernelRaised, "train_loop: target out of range");
  const float* pth = call.t("theta").data<float>();
  std::vector<float> theta(pth, pth + n), m(static_cast<std::size_t>(n), 0.0f), v(static_cast<std::size_t>(n), 0.0f);
  float* pm = call.t("m").data<float>();
  float* pv = call.t("v").data<float>();
  if (!zero_state) {  // the defect: the state buffers are used as they come
    m.assign(pm, pm + n);
    v.assign(pv, pv + n);
  }
  std::vector<float> loss;
  ops::train_loop_run<float>(sh, hy, x, target, theta, m, v, loss, faults);
  std::copy(loss.begin(), loss.end(), call.t("loss").data<float>());
  std::copy(theta.begin(), theta.end(), call.t("theta_out").data<float>());
  std::copy(m.begin(), m.end(), pm);
  std::copy(v.begin(), v.end(), pv);
  return ok_status();
}

std::vector<RefKernel> train_ref_kernels() {
  return {
      {"cross_entropy", "max-subtracted fp32 log-sum-exp; dz = softmax - onehot", run_cross_entropy},
      {"kd_loss", "fp32 alpha T^2 KL(p_t || p_s) + (1 - alpha) CE, max-subtracted", run_kd_loss},
      {"adamw_step", "fp32 AdamW in torch.optim.AdamW's order (decoupled decay, bias correction)", run_adamw},
      {"grad_accum", "fp32 micro-batch gradients, each scaled by 1 / A, summed in order",
       [](Call& c) { return grad_accum_fp32(c, true); }},
      {"slerp", "fp32 mergekit slerp (lerp when |cos| > 0.9995)", [](Call& c) { return slerp_fp32(c, false); }},
      {"prune_magnitude", "fp32 per-row stable sort of |W|, smallest floor(s cols) zeroed",
       [](Call& c) { return prune_fp32(c, false, 1.0f); }},
      {"prune_wanda", "fp32 per-row stable sort of |W| sqrt(act_sq), smallest floor(s cols) zeroed",
       [](Call& c) { return prune_fp32(c, false, 1.0f); }},
      {"train_loop", "fp32 rmsnorm/rope/swiglu/cross-entropy forward and backward, AdamW, state from zero",
       [](Call& c) { return train_loop_fp32(c); }},
      {"bpe_roundtrip", "byte-level BPE (136 merges learned from the built-in corpus): decode(encode(x))", run_bpe_roundtrip},
  };
}

}  // namespace kc::backends
