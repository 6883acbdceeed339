// kc — a short MLP training run (C-PRC-04, mixed-precision scaling invariance).
//
// mlp_train_step: a two-layer MLP, in 16 -> hidden 32 (tanh) -> out 4, no biases,
// MSE loss, trained for `steps` SGD steps with learning rate `lr` on one fixed
// batch of 32 samples. Tensors: W1 {in, hidden}, W2 {hidden, out}, X {batch, in},
// Y {batch, out} (kIn); W1_out, W2_out (kOut) are the weights after training.
// Params loss_scale s and quant_scale q do not change the true result: the
// oracle is the FP64, unscaled, unquantized run. That is the contract.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kc/dtype.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_mlp_train_op();

/// How a training run is carried out (what a mixed-precision recipe does).
struct TrainPrecision {
  DType compute = DType::kF32;  ///< arithmetic of forward, backward and update: kF32 or kF64
  DType grad = DType::kF32;     ///< gradient tensors (dP, dA, dZ, dW1, dW2) are stored in this: kF32, kF16, kBF16, kF64
  double loss_scale = 1;        ///< s: gradients are computed for s * L
  bool unscale = true;          ///< divide the gradients by s before the update (false: the classic bug)
  bool skip_nonfinite = false;  ///< skip a step whose gradients overflowed (dynamic loss scaling)
  double quant_scale = 1;       ///< q: forward weights are round(W * q, quant) / q
  std::optional<DType> quant;   ///< weight quantization format (kBF16, kFP8E4M3, ...); none = no quantization
};

struct TrainResult {
  std::vector<double> w1, w2;  ///< trained weights, row-major as W1 {in, hidden}, W2 {hidden, out}
  bool overflowed = false;     ///< some step produced a non-finite gradient
  int skipped_steps = 0;       ///< steps skipped for it (skip_nonfinite)
};

/// Runs the training of `call` (an mlp_train_step call: W1, W2, X, Y, with
/// params steps and lr) under precision `p`. The FP64 oracle is
/// train_mlp(call, {.compute = kF64, .grad = kF64}).
TrainResult train_mlp(const Call& call, const TrainPrecision& p);

}  // namespace kc::ops
