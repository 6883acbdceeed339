// kc — training losses over logits (docs/transformer-training.md).
//
// cross_entropy: logits z {rows, cols}, target {rows} (I64 class indices) ->
//   loss {rows}   loss_i = logsumexp(z_i) - z_i[t_i]     (per row, no reduction)
//   dz {rows, cols}  d loss_i / d z_i = softmax(z_i) - onehot(t_i)
// kd_loss: student logits zs, teacher logits zt {rows, cols}, target {rows} ->
//   loss {rows}   α T² KL(σ(zt/T) ‖ σ(zs/T)) + (1 - α) CE(t, zs)
//   params alpha (α) and T (temperature).
//
// Oracle options (`reference higher_precision FP64 with k = v`), each a
// documented alternative semantics the signature classifier also uses to name
// a failure (their classifiers, ops/semantic_classify.h):
//   cross_entropy  gradient = softmax_minus_onehot (default) | logits_minus_onehot
//   kd_loss        t2_scaling = on (default) | off;  kl_direction = teacher_student
//                  (default, KL(p_t ‖ p_s)) | student_teacher
#pragma once

#include <memory>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_cross_entropy_op();
std::unique_ptr<Op> make_kd_loss_op();

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of cross_entropy and kd_loss (ops/loss/properties.cpp).
void add_loss_properties(std::vector<Property>& out);

}  // namespace kc::obligation
