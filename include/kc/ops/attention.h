// kc — scaled dot-product attention with causal masking and grouped-query heads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kc/obligation.h"
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

/// One query row of the oracle, out[b, h, t, :], from FP64 inputs in long
/// double arithmetic with a max-subtracted softmax; with `mag_row`, also the
/// error model's magnitude of each element (AttentionOp::magnitude). `q_row`
/// is q[b, h, t, :]; `k_head` and `v_head` are the seq x head_dim rows of the
/// kv head h reads, k[b, g, :, :] and v[b, g, :, :], contiguous. The oracle
/// and kc::verify::verify_attention both evaluate rows here, so a sampled row
/// is bit-identical to the oracle's.
/// `mode` carries the contract's `with` options (ops/oracle_options.h): FP32
/// running sums (scores, softmax sum, the weighted sum of v) and the naive,
/// unstabilised exp. The defaults are the oracle's own arithmetic.
struct AttentionMode {
  bool fp32_accumulator = false;
  bool max_subtraction = true;
};
void attention_row(const AttentionShape& s, std::int64_t t, const double* q_row, const double* k_head,
                   const double* v_head, double* out_row, double* mag_row, const AttentionMode& mode = {});

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of attention (ops/attention/properties.cpp).
void add_attention_properties(std::vector<Property>& out);

}  // namespace kc::obligation
