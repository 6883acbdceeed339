// kc — calibration impls of the training-stability contracts
// (contracts/transformer/KC-TRAIN.kc, docs/training-stability.md). Each is
// the FP32 train_loop kernel (backends/ref/train_kernels.cpp) with one defect
// seen in real training code. The loop's default run (3 steps at lr 1e-3)
// moves each weight by at most ~3e-3, under a 1e-2 allclose: a visible test
// on the loss curve and the final weights cannot see a parameter that does
// not train, a state that did not start at zero or a decay that is not the
// configured one. The contracts can.
//   calib.train_loop_naive_softmax     log-sum-exp and softmax without the max
//                                      subtracted: exp(z) overflows FP32 past
//                                      z = 88.7, the loss and every weight NaN
//   calib.train_loop_frozen_gain       the norm's gain never gets a gradient
//                                      (left out of the backward pass)
//   calib.train_loop_state_from_buffers  AdamW's m and v start from whatever the
//                                      state buffers hold (uninitialised memory
//                                      that is zero on a fresh allocation)
//   calib.train_loop_default_weight_decay  weight_decay fixed at the default
//                                      0.01: the configured value never
//                                      reaches the optimizer
//   calib.train_loop_fixed_beta2       beta2 fixed at torch's default 0.999
//   calib.train_loop_no_warmup         the full lr from step 1: warmup_steps
//                                      never reaches the schedule
//   calib.train_loop_summed_loss       the trios' baseline: the loss reported
//                                      as the batch sum, 8x the mean
#include "backends/ref/train_kernels.h"
#include "calibration/calibration_backend.h"

namespace kc::calibration {

void add_train_loop_impls(ImplList& out);

void add_train_loop_impls(ImplList& out) {
  using Faults = ops::TrainLoopFaults;
  add(out, calib_decl("calib.train_loop_naive_softmax", "train_loop",
                      "train_loop whose cross-entropy exponentiates the logits without subtracting their max"),
      [](Call& c) {
        Faults f;
        f.naive_softmax = true;
        return backends::train_loop_fp32(c, f);
      });
  add(out, calib_decl("calib.train_loop_frozen_gain", "train_loop",
                      "train_loop whose backward pass never reaches the rmsnorm gain (gamma's gradient stays 0)"),
      [](Call& c) {
        Faults f;
        f.frozen_segment = 0;
        return backends::train_loop_fp32(c, f);
      });
  add(out, calib_decl("calib.train_loop_state_from_buffers", "train_loop",
                      "train_loop that starts AdamW from the m and v buffers as it finds them, not from zero"),
      [](Call& c) { return backends::train_loop_fp32(c, {}, /*zero_state=*/false); });
  add(out, calib_decl("calib.train_loop_default_weight_decay", "train_loop",
                      "train_loop whose optimizer is built with weight_decay = 0.01 whatever the config says"),
      [](Call& c) {
        Faults f;
        f.fixed_weight_decay = 0.01;
        return backends::train_loop_fp32(c, f);
      });
  add(out, calib_decl("calib.train_loop_fixed_beta2", "train_loop",
                      "train_loop whose optimizer keeps beta2 = 0.999 whatever the config says"),
      [](Call& c) {
        Faults f;
        f.fixed_beta2 = 0.999;
        return backends::train_loop_fp32(c, f);
      });
  add(out, calib_decl("calib.train_loop_no_warmup", "train_loop",
                      "train_loop that applies the full lr from step 1, ignoring warmup_steps"),
      [](Call& c) {
        Faults f;
        f.ignore_warmup = true;
        return backends::train_loop_fp32(c, f);
      });
  add(out, calib_decl("calib.train_loop_summed_loss", "train_loop",
                      "train_loop reporting the batch sum of the loss where the mean is specified"),
      [](Call& c) {
        Faults f;
        f.summed_loss = true;
        return backends::train_loop_fp32(c, f);
      });
}

}  // namespace kc::calibration
