// kc — the trios of the elementwise exactness contracts
// (contracts/elementwise/KC-ELEM-EDGE.kc): each contract holds an impl to the
// ULP bound its library documents, on `inject edge_values` (special values,
// subnormals, gradual underflow, saturation). A bad kernel here is within a
// few ulps on a visible test's normal(0, 1) inputs and wrong where a fast
// elementwise kernel typically is:
//   calib.exp_flush_underflow   exp with results below the smallest normal
//                               flushed to +0 (a SIMD exp's clamp at
//                               ln(FLT_MIN)), declared within 1 ulp
//   calib.tanh_one_minus        tanh(x) = 1 - 2/(e^2x + 1): for |x| < ~2^-12
//                               the difference cancels to 0 (tanh(x) ~ x is
//                               lost; -0 comes out +0), declared 1.0001 ulp
//   calib.log_daz               log treating subnormal inputs as 0 (DAZ),
//                               -inf where log(x) ~ -88..-103, declared 3.5 ulp
//   calib.tanh_clamp5           tanh saturating to +-1 from |x| = 5 on
//                               (tanh(5) = 0.99990920), declared 4 ulp
//   calib.erf_scaled_up         erff times (1 + 2^-22): 1.00000024 past x ~ 3.9
//                               (KC-ELEM-RANGE-1), declared 1 ulp
//   calib.tanh_round_away       tanhf stepped one float away from zero:
//                               1 + 2^-23 past x ~ 9 (KC-ELEM-RANGE-2)
// The good kernels evaluate f in FP64 (glibc's double exp, log, tanh) and
// round once into FP32: the double result is within 1 ulp of double, so the
// FP32 result is within 0.5 + 2^-29 FP32 ulps of the exact value, inside every
// documented class they declare (1, 1.0001, 3.5, 4). Each is its own impl,
// one per class, because the contracts select impls by the declared bound.
#include <cmath>
#include <string>

#include "calibration/calibration_backend.h"
#include "calibration/unary.h"

namespace kc::calibration {
namespace {

/// Declares a documented bound over every input (ulp_domain = ALL), as a
/// libm stating C99 special values does.
Declaration with_bound(Declaration d, const char* ulp_bound) {
  d.extra["ulp_bound"] = ulp_bound;
  d.extra["ulp_domain"] = "ALL";
  return d;
}

}  // namespace

void add_elementwise_edge_impls(ImplList& out) {
  // KC-ELEM-EDGE-1 and -F1 (documented 1 ulp)
  add(out,
      with_bound(calib_decl("calib.exp_flush_underflow", "exp",
                            "seeded bug: expf with results below FLT_MIN flushed to +0 (a SIMD exp's clamp at "
                            "ln(FLT_MIN)), declared within 1 ulp"),
                 "1"),
      [](Call& call) {
        return unary_kernel(call, [](float v) { return v < -87.33654475f ? 0.0f : std::exp(v); });
      });
  add(out,
      with_bound(calib_decl("calib.exp_fp64_u1", "exp",
                            "good: exp in FP64 rounded once to FP32 (within 0.5 + 2^-29 ulp), declared 1 ulp"),
                 "1"),
      [](Call& call) { return unary_kernel(call, [](float v) { return static_cast<float>(std::exp(double{v})); }); });
  // KC-ELEM-EDGE-2 (documented 1.0001 ulp, SLEEF's tanhf_u10 class)
  add(out,
      with_bound(calib_decl("calib.tanh_one_minus", "tanh",
                            "seeded bug: tanh(x) = 1 - 2/(exp(2x) + 1) in fp32: cancels to 0 for tiny |x|, declared "
                            "1.0001 ulp"),
                 "1.0001"),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          if (std::isinf(v)) return v > 0 ? 1.0f : -1.0f;
          return 1.0f - 2.0f / (std::exp(2.0f * v) + 1.0f);
        });
      });
  add(out,
      with_bound(calib_decl("calib.tanh_fp64_u10001", "tanh",
                            "good: tanh in FP64 rounded once to FP32 (within 0.5 + 2^-29 ulp), declared 1.0001 ulp"),
                 "1.0001"),
      [](Call& call) { return unary_kernel(call, [](float v) { return static_cast<float>(std::tanh(double{v})); }); });
  // KC-ELEM-EDGE-6 (documented 3.5 ulp, SLEEF's u35 class)
  add(out,
      with_bound(calib_decl("calib.log_daz", "log",
                            "seeded bug: logf with subnormal inputs read as 0 (DAZ): -inf for x < FLT_MIN, declared "
                            "3.5 ulp"),
                 "3.5"),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          return std::fpclassify(v) == FP_SUBNORMAL ? std::log(std::copysign(0.0f, v)) : std::log(v);
        });
      });
  add(out,
      with_bound(calib_decl("calib.log_fp64_u35", "log",
                            "good: log in FP64 rounded once to FP32 (within 0.5 + 2^-29 ulp), declared 3.5 ulp"),
                 "3.5"),
      [](Call& call) { return unary_kernel(call, [](float v) { return static_cast<float>(std::log(double{v})); }); });
  // KC-ELEM-RANGE-1 (documented 1 ulp: |erf| <= 1 follows)
  // erff(x) times (1 + 2^-22), a 2/sqrt(pi) constant rounded up two ulps
  // (a scale folded into the polynomial's leading coefficient): 2.4e-7
  // relative everywhere, but past x ~ 3.9, where erf rounds to 1, the result
  // is 1.00000024.
  add(out,
      with_bound(calib_decl("calib.erf_scaled_up", "erf",
                            "seeded bug: erff(x) * (1 + 2^-22) (a leading constant rounded up): |erf| > 1 in the "
                            "saturation range, declared 1 ulp"),
                 "1"),
      [](Call& call) { return unary_kernel(call, [](float v) { return std::erf(v) * (1.0f + 0x1p-22f); }); });
  // KC-ELEM-RANGE-2 (documented 1.0001 ulp: |tanh| <= 1 follows)
  // tanhf's result stepped one float away from zero (the last operation in
  // round-away mode): one ulp everywhere, 1 + 2^-23 where tanh rounds to 1.
  add(out,
      with_bound(calib_decl("calib.tanh_round_away", "tanh",
                            "seeded bug: tanhf(x) moved one float away from zero (round-away last step): |tanh| > 1 "
                            "in the saturation range, declared 1.0001 ulp"),
                 "1.0001"),
      [](Call& call) {
        return unary_kernel(call, [](float v) {
          const float t = std::tanh(v);
          return std::isnan(t) || t == 0 ? t : std::nextafter(t, std::copysign(INFINITY, t));
        });
      });

  // KC-ELEM-EDGE-7 and -F7 (documented 4 ulp, Highway's Log and Tanh)
  add(out,
      with_bound(calib_decl("calib.tanh_clamp5", "tanh",
                            "seeded bug: tanh saturating to +-1 from |x| = 5 (tanh(5) = 0.9999092), declared 4 ulp"),
                 "4"),
      [](Call& call) {
        return unary_kernel(call, [](float v) { return std::fabs(v) >= 5.0f ? std::copysign(1.0f, v) : std::tanh(v); });
      });
  add(out,
      with_bound(calib_decl("calib.tanh_fp64_u4", "tanh",
                            "good: tanh in FP64 rounded once to FP32 (within 0.5 + 2^-29 ulp), declared 4 ulp"),
                 "4"),
      [](Call& call) { return unary_kernel(call, [](float v) { return static_cast<float>(std::tanh(double{v})); }); });
}

}  // namespace kc::calibration
