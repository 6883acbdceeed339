// kc — seeded bugs of elementwise kernels: exp and tanh (contracts/elementwise/),
// the gated activations gelu_tanh and silu and the swiglu gate
// (contracts/transformer/KC-ACT.kc). Each bad kernel is exact or within a
// few ulps on a visible test's normal(0, 1) inputs and wrong on a region the
// contract's inputs reach:
//   calib.exp_poly4              a fast exp: range reduction and a degree-4
//                                Taylor polynomial, 4e-5 relative error
//   calib.tanh_fp16_exp          tanh as (e - 1)/(e + 1) with e = exp(2x) held in
//                                fp16: cancels for small |x|
//   calib.silu_bf16_gate         silu with sigmoid(x) rounded to bf16 before
//                                the product: s(x) + s(-x) != 1
//   calib.gelu_tanh_rational     gelu_tanh with Eigen's [13/6] rational tanh
//                                without its clamp to [-9, 9]
//   calib.gelu_tanh_quotient     gelu_tanh with tanh(w) = (e^{2w} - 1)/(e^{2w} + 1):
//                                inf / inf = NaN once e^{2w} overflows
//   calib.swiglu_clamp_up        swiglu with up clamped to [-7, 7]
//   calib.swiglu_clamp_gate      swiglu with the gate clamped to <= 7
// plus the trios' baselines (grossly wrong formulas).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "calibration/calibration_backend.h"
#include "calibration/unary.h"

namespace kc::calibration {
namespace {

// ---------------------------------------------------------------- tanh

/// Eigen's fast tanh (Eigen/src/Core/MathFunctionsImpl.h, generic_fast_tanh_float):
/// a [13/6] rational approximation, accurate to ~2.6e-8 on [-9, 9], where
/// Eigen clamps its argument. Without the clamp the polynomials run away: the
/// quotient turns and crosses -1 at |w| ~ 30 (and +1 at w ~ -30).
float rational_tanh(float w) {
  constexpr float a1 = 4.89352455891786e-03f, a3 = 6.37261928875436e-04f, a5 = 1.48572235717979e-05f,
                  a7 = 5.12229709037114e-08f, a9 = -8.60467152213735e-11f, a11 = 2.00018790482477e-13f,
                  a13 = -2.76076847742355e-16f;
  constexpr float b0 = 4.89352518554385e-03f, b2 = 2.26843463243900e-03f, b4 = 1.18534705686654e-04f,
                  b6 = 1.19825839466702e-06f;
  const float w2 = w * w;
  float p = a13;
  for (const float c : {a11, a9, a7, a5, a3, a1}) p = p * w2 + c;
  float q = b6;
  for (const float c : {b4, b2, b0}) q = q * w2 + c;
  return w * p / q;
}

/// tanh(w) = (e^{2w} - 1) / (e^{2w} + 1): e^{2w} overflows FP32 at w > 44.4,
/// and inf / inf is NaN.
float quotient_tanh(float w) {
  const float e = std::exp(2.0f * w);
  return (e - 1.0f) / (e + 1.0f);
}

/// gelu_tanh(x) = 0.5 x (1 + tanh(w)), w = sqrt(2/pi) (x + 0.044715 x^3), with
/// the given tanh.
template <typename Tanh>
float gelu_tanh_with(float x, Tanh tanh_fn) {
  const float w = 0.7978845608f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanh_fn(w));
}

// ---------------------------------------------------------------- swiglu

/// y = silu(min(gate, gate_max)) * clamp(up, -up_limit, up_limit): the clamps
/// are GPT-OSS's SwiGLU variant (limit 7), not the op's plain silu(gate) * up.
Status swiglu_clamped(Call& call, float gate_max, float up_limit) {
  const Tensor& g = call.t("gate");
  const Tensor& u = call.t("up");
  Tensor& y = call.t("y");
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto gv = std::min(static_cast<float>(g.at(i)), gate_max);
    const auto uv = std::clamp(static_cast<float>(u.at(i)), -up_limit, up_limit);
    y.set(i, siluf(gv) * uv);
  }
  return ok_status();
}

}  // namespace

void add_elementwise_impls(ImplList& out) {
  // KC-EXP-01
  add(out, calib_decl("calib.exp_taylor2", "exp", "baseline: exp as its second-order Taylor polynomial 1 + x + x²/2"),
      [](Call& call) { return unary_kernel(call, [](float v) { return 1.0f + v + 0.5f * v * v; }); });
  // exp(x) = 2^k p(r), r = x - k ln 2 in [-ln2/2, ln2/2], with p the degree-4
  // Taylor polynomial: truncation error r^5/120 <= 4.2e-5 relative, ~350 ulps,
  // invisible to an allclose at 1e-2. It declares glibc's 1-ulp bound (KC-EXP-01
  // applies to impls that declare it): a fast exp swapped in for expf behind
  // callers that rely on libm's documented accuracy.
  Declaration poly4 =
      calib_decl("calib.exp_poly4", "exp",
                 "seeded bug: a fast exp declared within 1 ulp (as the expf it replaces): range reduction then a "
                 "degree-4 Taylor polynomial (4e-5 relative error)");
  poly4.extra["ulp_bound"] = "1";
  add(out, std::move(poly4),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          const float k = std::nearbyint(v * 1.44269504088896341f);
          const float r = v - k * 0.693147180559945309f;
          const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f + r * (1.0f / 24.0f))));
          return std::ldexp(p, static_cast<int>(k));
        });
      });

  // KC-UNARY-01
  add(out, sixteen_bit(calib_decl("calib.tanh_as_sigmoid", "tanh", "baseline: the logistic sigmoid shipped as tanh")),
      [](Call& call) { return unary_kernel(call, sigmoidf); });
  // (e - 1) / (e + 1) with e = exp(2x) held in fp16: e - 1 cancels for small
  // |x|, leaving e's fp16 rounding (2^-11 absolute): 2.4e-4 absolute in tanh,
  // within an allclose at 1e-2, but many fp16/bf16 ulps wherever |x| < ~0.5.
  add(out,
      sixteen_bit(calib_decl("calib.tanh_fp16_exp", "tanh",
                             "seeded bug: tanh as (e - 1)/(e + 1) with e = exp(2x) held in fp16 (cancels near 0)")),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          const auto e = static_cast<float>(round_to(std::exp(2.0f * v), DType::kF16));
          return (e - 1.0f) / (e + 1.0f);
        });
      });

  // KC-ACT-ODD, KC-ACT-BOUND, KC-ACT-MONO
  add(out, calib_decl("calib.silu_no_x", "silu", "baseline: silu returning the gate sigmoid(x) without the factor x"),
      [](Call& call) { return unary_kernel(call, sigmoidf); });
  add(out,
      calib_decl("calib.silu_bf16_gate", "silu",
                 "seeded bug: silu with the gate sigmoid(x) rounded to bf16 before x * gate (a bf16 gate buffer)"),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          return std::isinf(v) ? (v > 0 ? v : 0.0f) : v * static_cast<float>(round_to(sigmoidf(v), DType::kBF16));
        });
      });
  add(out, calib_decl("calib.gelu_tanh_no_half", "gelu_tanh", "baseline: gelu_tanh without the 0.5, x (1 + tanh(w))"),
      [](Call& call) {
        return unary_kernel(call, [](float v) { return 2.0f * gelu_tanh_with(v, [](float w) { return std::tanh(w); }); });
      });
  add(out,
      calib_decl("calib.gelu_tanh_rational", "gelu_tanh",
                 "seeded bug: gelu_tanh with Eigen's rational fast tanh, its clamp to [-9, 9] left out"),
      [](Call& call) { return unary_kernel(call, [](float v) { return gelu_tanh_with(v, rational_tanh); }); });
  add(out,
      calib_decl("calib.gelu_tanh_quotient", "gelu_tanh",
                 "seeded bug: gelu_tanh with tanh(w) = (e^2w - 1)/(e^2w + 1), NaN once e^2w overflows (x > 9.3)"),
      [](Call& call) { return unary_kernel(call, [](float v) { return gelu_tanh_with(v, quotient_tanh); }); });

  // KC-SWIGLU-01, KC-SWIGLU-LINEAR, KC-SWIGLU-ODD
  add(out, calib_decl("calib.swiglu_glu", "swiglu", "baseline: GLU, sigmoid(gate) * up, shipped as swiglu"),
      [](Call& call) {
        const Tensor& g = call.t("gate");
        const Tensor& u = call.t("up");
        Tensor& y = call.t("y");
        for (std::int64_t i = 0; i < y.numel(); ++i) y.set(i, sigmoidf(static_cast<float>(g.at(i))) * static_cast<float>(u.at(i)));
        return ok_status();
      });
  add(out,
      calib_decl("calib.swiglu_clamp_up", "swiglu",
                 "seeded bug: swiglu clamping up to [-7, 7] (GPT-OSS's variant shipped as plain swiglu)"),
      [](Call& call) { return swiglu_clamped(call, INFINITY, 7.0f); });
  add(out,
      calib_decl("calib.swiglu_clamp_gate", "swiglu",
                 "seeded bug: swiglu clamping the gate to <= 7 (GPT-OSS's variant shipped as plain swiglu)"),
      [](Call& call) { return swiglu_clamped(call, 7.0f, INFINITY); });
}

}  // namespace kc::calibration
