// kc — train_loop: a few AdamW steps of a one-block model built from kc's
// transformer ops (docs/training-stability.md). The arithmetic is in
// train_loop_math.h.
//
// Tensors: X {batch, dim} and target {batch} (I64 class indices) are the
// fixed training batch; theta {n} (kIn) the initial parameters, laid out as
// gamma {dim} | W_gate {dim, ff} | W_up {dim, ff} | W_out {ff, classes};
// outputs loss {steps} (the mean cross-entropy before each step's update),
// theta_out {n} (the parameters after the last step) and m, v {n} (the AdamW
// moments after the last step: the optimizer state the impl keeps, which it
// must start from zero). Params: steps, lr, beta1, beta2, eps, weight_decay,
// warmup_steps (the optimizer section of a training config, kc config-check),
// init_scale and the shape.
//
// The oracle runs the same loop in long double from the same P values (the
// hyper-parameters rounded to P first, like adamw_step's) and answers loss
// and theta_out; m and v are judged by the training-stability properties
// (src/ops/train/train_loop_properties.cpp), not by comparison.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"
#include "kc/ops/train_loop_math.h"

namespace kc::ops {

std::unique_ptr<Op> make_train_loop_op();

/// The shape of a train_loop call (from its tensors).
TrainLoopShape train_loop_shape(const Call& call);
/// The call's hyper-parameters as values of its precision P.
TrainLoopHyper train_loop_hyper(const Call& call);

/// One named parameter segment of theta.
struct ParamSegment {
  std::string name;
  std::int64_t offset = 0, size = 0;
};
std::vector<ParamSegment> train_loop_segments(const TrainLoopShape& sh);

/// The exact (long double) gradient of the mean loss at the call's initial
/// theta: the gradient of step 1.
std::vector<double> train_loop_gradient(const Call& call);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of train_loop, training stability (ops/train/train_loop_properties.cpp).
void add_train_loop_properties(std::vector<Property>& out);

}  // namespace kc::obligation
