// kc — the arithmetic of train_loop (see train_loop.h), one template over the
// scalar type: long double for the op's oracle, float for the `ref` kernel and
// the calibration kernels, which switch the documented defects on through
// TrainLoopFaults. Header-only so that the kernels (backends/, calibration/)
// and the oracle (src/ops/train/) run the same sequence of operations.
//
// The model, for row b of X {batch, dim} (row b is the token at position b):
//   xh = x / sqrt(mean(x²) + 1e-6),  h = xh ⊙ gamma                     rmsnorm
//   q  = rope(h, position b): pairs (2k, 2k+1) rotated by b·10000^(-2k/dim)
//   a  = q W_gate,  c = q W_up                       {ff}                matmul
//   s  = silu(a) ⊙ c                                                      swiglu
//   z  = s W_out                                     {classes}            matmul
//   loss_b = logsumexp(z) - z[target_b],  L = mean_b loss_b               cross-entropy
// and its backward pass (dz = (softmax(z) - onehot) / batch, through W_out,
// the gate, rope's inverse rotation and the norm's gain), then one AdamW step
// on every parameter (torch.optim.AdamW: decoupled decay, bias corrections,
// linear warmup lr_t = lr min(1, t / warmup_steps) when warmup_steps > 0).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kc::ops {

/// Parameter layout of theta: the segments in order.
struct TrainLoopShape {
  std::int64_t batch = 8, dim = 8, ff = 16, classes = 8;
  std::int64_t gamma() const { return 0; }                       ///< {dim}
  std::int64_t w_gate() const { return dim; }                    ///< {dim, ff}
  std::int64_t w_up() const { return dim + dim * ff; }           ///< {dim, ff}
  std::int64_t w_out() const { return dim + 2 * dim * ff; }      ///< {ff, classes}
  std::int64_t params() const { return dim + 2 * dim * ff + ff * classes; }
};

/// The optimizer's hyper-parameters as the loop applies them.
struct TrainLoopHyper {
  std::int64_t steps = 3, warmup_steps = 0;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

/// Defects a calibration kernel switches on (all off: the honest loop).
struct TrainLoopFaults {
  bool naive_softmax = false;       ///< softmax and log-sum-exp without the max subtracted
  int frozen_segment = -1;          ///< this segment's gradient is never computed (stays 0)
  double fixed_weight_decay = -1;   ///< >= 0: used in place of the configured weight_decay
  double fixed_beta2 = -1;          ///< >= 0: used in place of the configured beta2
  bool ignore_warmup = false;       ///< the full lr from step 1, whatever warmup_steps says
  bool summed_loss = false;         ///< the reported loss is the batch sum, not the mean
};

/// Runs `hy.steps` steps. theta, m, v hold the parameters and the optimizer
/// state on entry (the caller zeroes m and v, or does not: a defect) and on
/// return; loss gets one value per step (the loss before that step's update).
/// first_grad, when given, receives the gradient of step 1.
template <class T>
void train_loop_run(const TrainLoopShape& sh, const TrainLoopHyper& hy, const std::vector<T>& x,
                    const std::vector<std::int64_t>& target, std::vector<T>& theta, std::vector<T>& m,
                    std::vector<T>& v, std::vector<T>& loss, const TrainLoopFaults& faults = {},
                    std::vector<T>* first_grad = nullptr) {
  const std::int64_t B = sh.batch, D = sh.dim, F = sh.ff, C = sh.classes;
  const T one = 1, zero = 0;
  const T lr = static_cast<T>(hy.lr), b1 = static_cast<T>(hy.beta1);
  const T b2 = static_cast<T>(faults.fixed_beta2 >= 0 ? faults.fixed_beta2 : hy.beta2);
  const T eps = static_cast<T>(hy.eps);
  const T wd = static_cast<T>(faults.fixed_weight_decay >= 0 ? faults.fixed_weight_decay : hy.weight_decay);
  const T norm_eps = static_cast<T>(1e-6);
  const std::int64_t n = sh.params();
  std::vector<T> grad(static_cast<std::size_t>(n));
  std::vector<T> xh(D), q(D), cs(D / 2), sn(D / 2), a(F), c(F), sg(F), sl(F), z(C), p(C), ds(F), da(F), dc(F), dq(D);
  loss.assign(static_cast<std::size_t>(hy.steps), zero);
  for (std::int64_t t = 1; t <= hy.steps; ++t) {
    std::fill(grad.begin(), grad.end(), zero);
    const T* gamma = theta.data() + sh.gamma();
    const T* wg = theta.data() + sh.w_gate();
    const T* wu = theta.data() + sh.w_up();
    const T* wo = theta.data() + sh.w_out();
    T total = 0;
    for (std::int64_t b = 0; b < B; ++b) {
      const T* xr = x.data() + b * D;
      // rmsnorm
      T ss = 0;
      for (std::int64_t i = 0; i < D; ++i) ss += xr[i] * xr[i];
      const T r = one / std::sqrt(ss / static_cast<T>(D) + norm_eps);
      for (std::int64_t i = 0; i < D; ++i) xh[i] = xr[i] * r;
      // rope at position b
      for (std::int64_t k = 0; k < D / 2; ++k) {
        const T freq = std::pow(static_cast<T>(10000), -static_cast<T>(2 * k) / static_cast<T>(D));
        const T ang = static_cast<T>(b) * freq;
        cs[k] = std::cos(ang);
        sn[k] = std::sin(ang);
        const T h0 = xh[2 * k] * gamma[2 * k], h1 = xh[2 * k + 1] * gamma[2 * k + 1];
        q[2 * k] = h0 * cs[k] - h1 * sn[k];
        q[2 * k + 1] = h0 * sn[k] + h1 * cs[k];
      }
      // swiglu
      for (std::int64_t j = 0; j < F; ++j) {
        T aj = 0, cj = 0;
        for (std::int64_t i = 0; i < D; ++i) {
          aj += q[i] * wg[i * F + j];
          cj += q[i] * wu[i * F + j];
        }
        a[j] = aj;
        c[j] = cj;
        sg[j] = one / (one + std::exp(-aj));
        sl[j] = aj * sg[j];
      }
      // logits and cross-entropy
      for (std::int64_t o = 0; o < C; ++o) {
        T zo = 0;
        for (std::int64_t j = 0; j < F; ++j) zo += sl[j] * c[j] * wo[j * C + o];
        z[o] = zo;
      }
      const std::int64_t tb = target[static_cast<std::size_t>(b)];
      T mx = 0;
      if (!faults.naive_softmax) {
        mx = z[0];
        for (std::int64_t o = 1; o < C; ++o) mx = std::max(mx, z[o]);
      }
      T sum = 0;
      for (std::int64_t o = 0; o < C; ++o) sum += std::exp(z[o] - mx);
      total += mx + std::log(sum) - z[tb];
      for (std::int64_t o = 0; o < C; ++o) p[o] = std::exp(z[o] - mx) / sum;
      // backward: dz = (p - onehot) / B
      for (std::int64_t j = 0; j < F; ++j) ds[j] = 0;
      for (std::int64_t o = 0; o < C; ++o) {
        const T dz = (p[o] - (o == tb ? one : zero)) / static_cast<T>(B);
        for (std::int64_t j = 0; j < F; ++j) {
          grad[sh.w_out() + j * C + o] += sl[j] * c[j] * dz;
          ds[j] += dz * wo[j * C + o];
        }
      }
      for (std::int64_t j = 0; j < F; ++j) {
        dc[j] = ds[j] * sl[j];
        da[j] = ds[j] * c[j] * (sg[j] * (one + a[j] * (one - sg[j])));
      }
      for (std::int64_t i = 0; i < D; ++i) {
        T dqi = 0;
        for (std::int64_t j = 0; j < F; ++j) {
          grad[sh.w_gate() + i * F + j] += q[i] * da[j];
          grad[sh.w_up() + i * F + j] += q[i] * dc[j];
          dqi += da[j] * wg[i * F + j] + dc[j] * wu[i * F + j];
        }
        dq[i] = dqi;
      }
      // rope's inverse rotation, then the gain's gradient dh ⊙ xh
      for (std::int64_t k = 0; k < D / 2; ++k) {
        const T dh0 = dq[2 * k] * cs[k] + dq[2 * k + 1] * sn[k];
        const T dh1 = -dq[2 * k] * sn[k] + dq[2 * k + 1] * cs[k];
        grad[sh.gamma() + 2 * k] += dh0 * xh[2 * k];
        grad[sh.gamma() + 2 * k + 1] += dh1 * xh[2 * k + 1];
      }
    }
    loss[static_cast<std::size_t>(t - 1)] = faults.summed_loss ? total : total / static_cast<T>(B);
    if (faults.frozen_segment >= 0) {
      const std::int64_t lo[] = {sh.gamma(), sh.w_gate(), sh.w_up(), sh.w_out(), n};
      const int s = faults.frozen_segment;
      std::fill(grad.begin() + lo[s], grad.begin() + lo[s + 1], zero);
    }
    if (t == 1 && first_grad) *first_grad = grad;
    // AdamW step t
    T lr_t = lr;
    if (!faults.ignore_warmup && hy.warmup_steps > 0 && t < hy.warmup_steps) lr_t = lr * (static_cast<T>(t) / static_cast<T>(hy.warmup_steps));
    const T bc1 = one - std::pow(b1, static_cast<T>(t)), bc2 = one - std::pow(b2, static_cast<T>(t));
    for (std::int64_t i = 0; i < n; ++i) {
      const T g = grad[static_cast<std::size_t>(i)];
      T& pi = theta[static_cast<std::size_t>(i)];
      T& mi = m[static_cast<std::size_t>(i)];
      T& vi = v[static_cast<std::size_t>(i)];
      pi = pi * (one - lr_t * wd);
      mi = b1 * mi + (one - b1) * g;
      vi = b2 * vi + (one - b2) * g * g;
      pi = pi - lr_t * (mi / bc1) / (std::sqrt(vi / bc2) + eps);
    }
  }
}

}  // namespace kc::ops
