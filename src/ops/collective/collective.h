// kc — simulated collectives over K ranks: all_reduce, reduce_scatter, all_gather (C-ORD-03).
//
// Input x {ranks, n}: row r is rank r's buffer.
//   all_reduce      out {ranks, n}:          every row = Σ_r x_r
//   reduce_scatter  out {ranks, n / ranks}:  row r = chunk r of Σ_r x_r (n divisible by ranks)
//   all_gather      out {ranks, ranks * n}:  every row = x_0 | x_1 | ... | x_{ranks-1}
// Params: ranks (4), n (1024), schedule (ring | tree | recursive_doubling). The
// oracle is the FP64 (long double) sum whatever the schedule: the contract says a
// collective matches a single-rank reduction for every K and every schedule.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kc/dtype.h"
#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::ops {

enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather };

std::unique_ptr<Op> make_collective_op(CollectiveKind kind);

/// All-reduce of `ranks` buffers of `n` floats (in: ranks * n, row r = rank r)
/// into out (ranks * n, row r = what rank r ends with), performed in FP32 in
/// the schedule's actual order of pairwise additions:
///   ring                reduce-scatter then all-gather around the ring 0 -> 1 -> ... ;
///                       chunk c (of `ranks` near-equal chunks) is summed starting at
///                       rank c + 1 and ends complete on rank c (NCCL's order);
///   tree                binomial tree: at stride 1, 2, 4, ... rank r (r % 2s == 0)
///                       adds rank r + s's partial sum; rank 0 broadcasts the total;
///   recursive_doubling  at stride 1, 2, 4, ... every rank adds its partner r ^ s's
///                       partial sum (lower rank's value first); ranks beyond the largest
///                       power of two fold into r - 2^k first and receive the result last.
/// Every value sent between ranks is rounded to `wire` first (FP32 = no compression;
/// BF16/FP16 model a compressing transport); a rank's own data is never rounded.
/// An unknown schedule is a bug (KC_CHECK).
void simulate_all_reduce(std::span<const float> in, int ranks, int n, std::string_view schedule, DType wire,
                         std::span<float> out);

/// Wire precision of a collective (all_reduce, reduce_scatter, all_gather):
/// names the widest format t (FP16, then BF16) whose rounding of every message
/// explains the error, |got - ref| <= gamma(K + 1, t) * sum_r |x_r| + u(t) |ref|
/// for every element (K - 1 reduce messages plus one forwarding message on an
/// element's path, each rounded once; the FP32 additions, (K - 1) u(FP32),
/// fit inside one u(t)). The collectives' classifier, run before the generic
/// accumulator-precision test (a rounded wire puts the outputs on t's grid too).
void classify_wire_precision(const Op& op, const Call& inputs, const Observation& obs,
                             std::vector<Signature>* signatures, std::vector<std::string>* notes);

}  // namespace kc::ops
