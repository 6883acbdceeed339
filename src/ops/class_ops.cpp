// kc — registration table of the contract-class ops (see class_ops.h).
#include "ops/class_ops.h"

#include <functional>
#include <memory>
#include <string>

#include "kc/ops/attention.h"
#include "kc/ops/elementwise.h"
#include "kc/ops/rope.h"
#include "ops/collective/collective.h"
#include "ops/fused/fused.h"
#include "ops/indexing/indexing.h"
#include "ops/loss/loss.h"
#include "ops/merge/merge.h"
#include "ops/norm/norm.h"
#include "ops/optim/adamw.h"
#include "ops/stats/stats.h"
#include "ops/swiglu/swiglu.h"
#include "ops/tokenize/roundtrip.h"
#include "ops/train/grad_accum.h"
#include "ops/train/train.h"
#include "ops/train/train_loop.h"

namespace kc::ops {

Status register_class_ops(OpRegistry& registry) {
  // One table, in the order `kc list ops` shows them.
  const std::function<std::unique_ptr<Op>()> table[] = {
      [] { return make_stats_op(StatKind::kMean); },
      [] { return make_stats_op(StatKind::kVariance); },
      [] { return make_stats_op(StatKind::kNorm2); },
      [] { return make_stats_op(StatKind::kLogSumExp); },
      [] { return make_fused_matmul_op(/*sequential=*/false); },
      [] { return make_fused_matmul_op(/*sequential=*/true); },
      [] { return make_elementwise_op(UnaryFn::kRelu); },
      [] { return make_elementwise_op(UnaryFn::kGeluErf); },
      [] { return make_elementwise_op(UnaryFn::kGeluTanh); },
      [] { return make_elementwise_op(UnaryFn::kSilu); },
      [] { return make_elementwise_op(UnaryFn::kExp); },
      [] { return make_elementwise_op(UnaryFn::kLog); },
      [] { return make_elementwise_op(UnaryFn::kTanh); },
      [] { return make_elementwise_op(UnaryFn::kErf); },
      [] { return make_indexing_op(IndexKind::kGather); },
      [] { return make_indexing_op(IndexKind::kIndexSelect); },
      [] { return make_indexing_op(IndexKind::kEmbedding); },
      [] { return make_indexing_op(IndexKind::kScatterAdd); },
      [] { return make_collective_op(CollectiveKind::kAllReduce); },
      [] { return make_collective_op(CollectiveKind::kReduceScatter); },
      [] { return make_collective_op(CollectiveKind::kAllGather); },
      [] { return make_mlp_train_op(); },
      [] { return make_norm_op(NormKind::kLayerNorm); },
      [] { return make_norm_op(NormKind::kRmsNorm); },
      [] { return make_attention_op(); },
      [] { return make_rope_op(); },
      [] { return make_swiglu_op(); },
      [] { return make_cross_entropy_op(); },
      [] { return make_kd_loss_op(); },
      [] { return make_adamw_op(); },
      [] { return make_bpe_roundtrip_op(); },
      [] { return make_grad_accum_op(); },
      [] { return make_train_loop_op(); },
      [] { return make_slerp_op(); },
      [] { return make_prune_op(/*wanda=*/false); },
      [] { return make_prune_op(/*wanda=*/true); },
  };
  for (const auto& make : table) {
    std::unique_ptr<Op> op = make();
    const std::string name(op->name());
    KC_RETURN_IF_ERROR(registry.add(std::move(op)).with_context("registering op " + name));
  }
  return ok_status();
}

}  // namespace kc::ops
