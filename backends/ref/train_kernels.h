// kc — `ref` kernels of the training ops (docs/transformer-training.md): cross_entropy, kd_loss,
// adamw_step, grad_accum, slerp, prune_magnitude, prune_wanda, bpe_roundtrip.
// Plain FP32 loops in natural order, like every ref kernel; the ref backend
// wraps each in its RefImpl (backends/ref/ref_backend.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kc/op.h"
#include "kc/ops/train_loop_math.h"
#include "kc/status.h"

namespace kc::backends {

struct RefKernel {
  const char* op;
  const char* description;
  Status (*run)(Call&);
};

/// The training-op kernels, in `kc list impls` order.
std::vector<RefKernel> train_ref_kernels();

// Shared with the calibration trios (calibration/train.cpp), which reuse the
// honest pieces of these kernels around their deliberate defects.

/// AdamW in FP32 (torch.optim.AdamW's order of operations). `coupled`: L2
/// weight decay folded into the gradient (Adam with weight_decay) instead of
/// decoupled; `bias_correction` off divides by 1; `beta2_override` >= 0 is
/// used in place of the call's beta2.
Status adamw_fp32(Call& call, bool coupled, bool bias_correction, double beta2_override);
/// cross_entropy in FP32 (row log-sum-exp with the max subtracted);
/// `softmax_gradient` false writes dz = z - onehot, the softmax left out.
Status cross_entropy_fp32(Call& call, bool softmax_gradient);
/// kd_loss in FP32; `t2` false omits the T² factor.
Status kd_loss_fp32(Call& call, bool t2);
/// grad_accum in FP32: micro-batch gradients scaled by 1 / A and summed;
/// `average` false leaves out the 1 / A; `factor` is the 2 of d(e²)/de (1:
/// the forgotten factor).
Status grad_accum_fp32(Call& call, bool average, float factor = 2.0f);
/// slerp in FP32 (mergekit's algorithm); `linear` always interpolates linearly.
Status slerp_fp32(Call& call, bool linear);
/// prune_magnitude / prune_wanda in FP32 (scores as the op specifies);
/// `magnitude_only` ranks by |W| even for WANDA; kept weights are multiplied
/// by `kept_scale` (1: unchanged).
Status prune_fp32(Call& call, bool magnitude_only, float kept_scale);
/// train_loop in FP32 (ops/train/train_loop_math.h) with `faults` switched
/// on; `zero_state` false starts AdamW from whatever the m and v output
/// buffers hold instead of zeroing them.
Status train_loop_fp32(Call& call, const ops::TrainLoopFaults& faults = {}, bool zero_state = true);
/// bpe_roundtrip: `roundtrip` maps each row's bytes to what the tokenizer
/// gives back; the rows are written as bytes then -1. A result longer than
/// the row's room is a kernel error.
Status bpe_roundtrip_rows(Call& call, const std::function<Result<std::string>(const std::string&)>& roundtrip);

}  // namespace kc::backends
