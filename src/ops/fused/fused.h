// kc — fused matmul + bias + activation, and its sequential composition (C-CMP-01).
//
// fused_matmul:      C = act(A·B + bias), row-major, A {M,K}, B {K,N}, bias {N}, C {M,N}.
//                    Oracle: the exact composition in long double, rounded once; with
//                    `reference ... with intermediates = FP32` it is the sequential
//                    answer below instead (how C-CMP-01 reaches it for a fused impl).
// sequential_matmul: same signature; the oracle is what an unfused pipeline with FP32
//                    intermediates computes: T = fp32(A·B) (exact dot, rounded to FP32),
//                    U = fp32(T + bias), C = act(U) in FP64, rounded to the output dtype.
//                    C-CMP-01 states "the fused op matches the sequential composition with
//                    fp32 intermediates", so the reference for that contract is the
//                    sequential answer, with its two intermediate roundings, not the exact
//                    composition; an honest fused kernel differs from it by about those
//                    roundings (u |z| |act'|), far below the erf/tanh-GELU gap it must catch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/model.h"
#include "kc/observation.h"
#include "kc/op.h"

namespace kc::ops {

/// `sequential` = false: fused_matmul; true: sequential_matmul.
std::unique_ptr<Op> make_fused_matmul_op(bool sequential);

/// Alternative semantics: re-runs the oracle with another value of a
/// semantic parameter (e.g. activation gelu_tanh where gelu_erf is
/// configured) and names the one that explains the output.
void classify_alternatives(const Op& op, const Call& inputs, const OracleOptions& options, const Observation& obs,
                           std::vector<Signature>* signatures, std::vector<std::string>* notes);

}  // namespace kc::ops
