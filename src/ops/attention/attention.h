// kc — scaled dot-product attention with causal masking and grouped-query heads.
#pragma once

#include <cstdint>
#include <memory>

#include "kc/op.h"

namespace kc::ops {

/// `attention`: out = softmax(scale q k^T [+ causal mask]) v per (batch, head).
std::unique_ptr<Op> make_attention_op();

/// The geometry of an attention call, read from its tensors and config.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = false;
  double scale = 0;
  /// The kv head query head h reads: h / (heads / kv_heads) (consecutive query heads share one).
  std::int64_t kv_head(std::int64_t h) const { return h / (heads / kv_heads); }
  /// Flat offset of (b, head, t, 0) in a {batch, nh, seq, head_dim} tensor.
  std::int64_t at(std::int64_t b, std::int64_t nh, std::int64_t head, std::int64_t t) const {
    return ((b * nh + head) * seq + t) * head_dim;
  }
};
AttentionShape attention_shape(const Call& call);

}  // namespace kc::ops
