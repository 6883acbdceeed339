// kc — the per-element form of a `bound` tolerance, shared by every
// elementwise judge (the engine's oracle comparison, kc::verify's sampled rows).
#pragma once

#include "kc/op.h"

namespace kc {

/// The per-element form of a `bound E` tolerance, as every elementwise judge
/// applies it (the engine's oracle comparison, kc::verify's sampled rows):
///   allowed = E * magnitude + u |ref| + underflow,
/// E the contract's expression evaluated for the call (e.g. gamma(L, P)),
/// magnitude the op's error-model term (Op::magnitude), u |ref| the rounding of
/// a correct result into the output format (so a correctly rounded result is
/// never beyond the bound), underflow = Op::underflow_allowance(call).
struct BoundAllowance {
  double factor = 0;     ///< E evaluated for the call
  double rounding = 0;   ///< unit_roundoff of the call's precision
  double underflow = 0;  ///< Op::underflow_allowance(call)
  /// Defined out of line: one compiled expression for every caller (a caller
  /// built with -ffp-contract=fast would otherwise be free to fuse it).
  double allowed(double magnitude, double ref) const;
};
/// The allowance of a `bound` tolerance whose expression evaluated to `factor` for `call`.
BoundAllowance bound_allowance(const Op& op, const Call& call, double factor);

/// Gradual underflow in C = alpha op(A) op(B) + beta C0 computed in precision
/// p (Op::underflow_allowance for matmul; kc::verify's GEMM bounds): each of
/// the K products may err by lambda = underflow_unit(p) absolute, and their sum
/// is scaled by alpha; the alpha and beta scalings and the final rounding add
/// lambda each. (max(1, |alpha|) K + 4) lambda: (K + 4) lambda for |alpha| <= 1,
/// which also covers a kernel that scales A by alpha before multiplying.
double gemm_underflow_allowance(double k, double alpha, DType p);

}  // namespace kc
