// kc — the `calibration` backend: for every contract class, a trio of impls
// (baseline, bad, good) that proves the contract can tell bad from good
// (docs/classes/). These kernels are deliberately wrong in
// documented ways; they exist to calibrate kc, never to be used.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kc/backend.h"

namespace kc::backends {

std::unique_ptr<Backend> make_calibration_backend();

}  // namespace kc::backends

namespace kc::calibration {

using ImplList = std::vector<std::shared_ptr<const Impl>>;

/// An impl whose kernel is a function over the call.
class FnImpl : public Impl {
 public:
  using Kernel = std::function<Status(Call&)>;
  FnImpl(Declaration decl, Kernel kernel) : decl_(std::move(decl)), kernel_(std::move(kernel)) {}
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override { return kernel_(call); }

 private:
  Declaration decl_;
  Kernel kernel_;
};

/// A declaration for a calibration impl: backend "calibration", FP32,
/// FP32 accumulator, BITWISE, IEEE_PROPAGATE, IEEE denormals, oob UNDEFINED
/// unless the caller changes them; broken_on_purpose set.
Declaration calib_decl(std::string name, std::string op, std::string description);

/// Adds an impl to `out`.
void add(ImplList& out, Declaration decl, FnImpl::Kernel kernel);

// One function per family, each in its own file.
void add_precision_impls(ImplList& out);    ///< C-PRC-01..04   (precision.cpp)
void add_ordering_impls(ImplList& out);     ///< C-ORD-01..03   (ordering.cpp)
void add_compiler_impls(ImplList& out);     ///< C-CMP-01..03   (compiler.cpp)
void add_exceptional_impls(ImplList& out);  ///< C-EXC-01..02   (exceptional.cpp)
void add_incident_impls(ImplList& out);     ///< incident replays (incidents.cpp)
void add_transformer_impls(ImplList& out);  ///< transformer seeded bugs, FA3 replay (transformer.cpp)
void add_train_impls(ImplList& out);        ///< training contracts, contracts/transformer (train.cpp)
void add_ladder_impls(ImplList& out);       ///< verification-ladder seeded bugs (ladder.cpp)
void add_blas_impls(ImplList& out);         ///< BLAS-level seeded bugs: GEMM rules, iamax, sum (blas.cpp)
void add_blas1_policy_impls(ImplList& out); ///< level-1 rules: scal alpha = 0, iamax NaN, nrm2 range (blas1_policy.cpp)
void add_gemv_impls(ImplList& out);         ///< KC-GEMV-01 trio (gemv.cpp)
void add_complex_impls(ImplList& out);      ///< complex BLAS trios: KC-CDOT, KC-CSCAL, KC-CIAMAX, KC-CGEMV, KC-CGEMM (complex.cpp)
void add_elementwise_impls(ImplList& out);  ///< exp, tanh, gated activations, swiglu (elementwise.cpp)
void add_elementwise_edge_impls(ImplList& out);  ///< elementwise exactness trios (elementwise_edge.cpp)
void add_softmax_impls(ImplList& out);      ///< softmax / log_softmax seeded bugs (softmax.cpp)
void add_lowprec_impls(ImplList& out);      ///< bf16 GEMM trio (lowprec.cpp)
void add_gemm_numerics_impls(ImplList& out);  ///< GEMM arithmetic trios, KC-GEMM-NUMERICS (gemm_numerics.cpp)
void add_lowprec_op_impls(ImplList& out);   ///< FP16/FP8 GEMM, softmax, norms, gelu, sum/mean trios (lowprec_ops.cpp)
void add_range_impls(ImplList& out);        ///< extreme-magnitude trios, contracts/range (range.cpp)
void add_capability_impls(ImplList& out);   ///< capability and path trios, contracts/capability (capability.cpp)

}  // namespace kc::calibration
