// kc — indexing ops: gather, index_select, embedding, scatter_add (C-EXC-02).
//
//   gather        table {rows, dim} kIn, index I64 {n} kIn -> out {n, dim}: out[i] = table[index[i]]
//   index_select  the same math, with param axis (only axis=0 is defined here)
//   embedding     the same math, with param padding_idx (default -1 = none)
//   scatter_add   out {rows, dim} kInOut, index I64 {n} kIn, src {n, dim} kIn:
//                 out[index[i]] += src[i]
//
// The oracle honours OracleOptions::oob (default UNDEFINED):
//   RAISE      OracleResult::raises is set when any index is out of [0, rows);
//              the outputs of out-of-range positions are NaN (no value exists).
//   CLAMP      indices are clamped to [0, rows-1].
//   ZERO       gather: the output row of an out-of-range index is zero;
//              scatter_add: an out-of-range contribution is dropped (adds zero).
//   UNDEFINED  raises nothing; outputs at out-of-range positions are unconstrained
//              and set to NaN in the reference. Which output rows those are is
//              oob_rows(): the engine must not judge them.
#pragma once

#include <memory>
#include <vector>

#include "kc/op.h"

namespace kc::ops {

enum class IndexKind { kGather, kIndexSelect, kEmbedding, kScatterAdd };

std::unique_ptr<Op> make_indexing_op(IndexKind kind);

/// Which output rows an out-of-range index leaves unconstrained under UNDEFINED:
/// gather/index_select/embedding: row i of out {n, dim} iff index[i] is out of range;
/// scatter_add: every row of out {rows, dim} when any index is out of range (an
/// unchecked scatter may write to any row), none otherwise. Empty for other ops.
std::vector<bool> oob_rows(const Call& call);

}  // namespace kc::ops
