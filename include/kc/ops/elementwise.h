// kc — unary elementwise ops: relu, gelu_erf, gelu_tanh, silu, exp, log, tanh, erf
// (C-EXC-01 NaN propagation, ULP contracts, C-CMP-01 activations).
//
// y {n} = f(x {n}). One op class parameterised by the function, registered under
// each name. The oracle evaluates f in long double; the engine rounds it into the
// output format before measuring ULP distance.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

enum class UnaryFn { kRelu, kGeluErf, kGeluTanh, kSilu, kIdentity, kExp, kLog, kTanh, kErf };

/// Canonical name: "relu", "gelu_erf", ..., "identity".
std::string_view unary_fn_name(UnaryFn fn);
/// Parses a canonical name; nullopt when unknown.
std::optional<UnaryFn> parse_unary_fn(std::string_view name);
/// The functions registered as elementwise ops (identity is an activation only).
std::span<const UnaryFn> elementwise_fns();

/// f(x) in long double. NaN in gives NaN out for every f (relu included:
/// relu(x) = x > 0 ? x : +0, but NaN propagates, as IEEE max(x, 0) with
/// NaN-propagating semantics does). relu(-0) = +0: the oracle follows
/// `x > 0 ? x : 0`; a kernel returning -0 is 0 ULP away under the engine's
/// ±0 handling and differs only in the sign bit under bitwise observation.
long double eval_unary(UnaryFn fn, long double x);

/// What an impl declares f(±inf) to be, as `inf_policy` (Declaration::extra),
/// for the gated activations x g(x) whose gate has g(-inf) = 0:
///  LIMIT    the limit of f: gelu(-inf) = silu(-inf) = 0, f(+inf) = +inf
///           (eval_unary's values);
///  FORMULA  the defining formula evaluated in IEEE 754 arithmetic:
///           -inf * g(-inf) = -inf * 0 = NaN, +inf * 1 = +inf.
/// The two differ only at x = -inf, and only for gelu_erf, gelu_tanh, silu.
inline constexpr const char* kInfPolicyKey = "inf_policy";
inline constexpr const char* kInfPolicyLimit = "LIMIT";
inline constexpr const char* kInfPolicyFormula = "FORMULA";
/// f(x) under inf_policy = FORMULA: eval_unary except where the formula in
/// IEEE arithmetic gives another value at ±inf (NaN at -inf for the gated
/// activations).
long double eval_unary_formula(UnaryFn fn, long double x);
/// f'(x) in long double (relu'(0) = 0; log'(x) = 1/x). Used by error models
/// of ops that apply f after an accumulation (fused_matmul).
long double eval_unary_derivative(UnaryFn fn, long double x);

/// The op for one function.
std::unique_ptr<Op> make_elementwise_op(UnaryFn fn);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of the gated activations gelu_erf, gelu_tanh, silu
/// (ops/elementwise/activation_properties.cpp).
void add_activation_properties(std::vector<Property>& out);
/// The algebraic properties of the ranges of exp, tanh, erf (ops/elementwise/properties.cpp).
void add_elementwise_properties(std::vector<Property>& out);

}  // namespace kc::obligation
