// kc — ref unary elementwise kernels (see ref_elementwise.h).
//
// glibc float functions (glibc manual, "Errors in Math Functions"): expf,
// tanhf, erff, logf, each within a few fp32 ulps; one rounding of such a value
// into FP16/BF16 lands on the correctly rounded value or its neighbour
// (KC-UNARY-01's derivation). gelu_erf, gelu_tanh and silu have their ref
// kernels with the transformer ops (backends/ref/ref_transformer.cpp on the
// transformer branch), so they are not duplicated here.
#include "ref_elementwise.h"

#include <cmath>
#include <string>

#include "kc/ops/elementwise.h"

namespace kc::backends {
namespace {

using ops::UnaryFn;

float eval(UnaryFn fn, float x) {
  switch (fn) {
    case UnaryFn::kRelu:
      return std::isnan(x) || x > 0 ? x : 0.0f;  // NaN propagates
    case UnaryFn::kExp:
      return std::exp(x);
    case UnaryFn::kLog:
      return std::log(x);
    case UnaryFn::kTanh:
      return std::tanh(x);
    case UnaryFn::kErf:
      return std::erf(x);
    default:
      return std::nanf("");  // not in kFns: never constructed
  }
}

/// The unary ops with a ref kernel here.
constexpr UnaryFn kFns[] = {UnaryFn::kRelu, UnaryFn::kExp, UnaryFn::kLog, UnaryFn::kTanh, UnaryFn::kErf};

class RefUnary final : public Impl {
 public:
  explicit RefUnary(UnaryFn fn) : fn_(fn) {
    const std::string name(ops::unary_fn_name(fn));
    decl_.name = "ref." + name;
    decl_.op = name;
    decl_.backend = "ref";
    decl_.dtypes = {DType::kF32, DType::kF16, DType::kBF16};
    decl_.accumulator = DType::kF32;            // evaluated in fp32 for every storage format
    decl_.determinism = Determinism::kBitwise;  // one sequential loop
    decl_.nan = NanPolicy::kIeeePropagate;      // NaN in, NaN out (relu included)
    decl_.denormal = DenormalPolicy::kIeee;     // no fast-math, no FTZ/DAZ flags set
    decl_.source = "kc in-project reference kernel; glibc float libm";
    // glibc 2.27+ expf (sysdeps/ieee754/flt-32/e_expf.c, header comment):
    // "ULP error: 0.502 (nearest rounding.)" against the exact value, so at
    // most 1 ulp from the correctly rounded value (KC-EXP-01's derivation).
    // The other functions' errors are listed by the glibc manual ("Errors in
    // Math Functions") as measured maxima, not bounds: no ulp_bound declared.
    if (fn == UnaryFn::kExp) decl_.extra["ulp_bound"] = "1";
    decl_.description = "fp32 evaluation, one rounding into the storage format";
  }
  const Declaration& declaration() const override { return decl_; }
  Status run(Call& call) const override {
    KC_RETURN_IF_ERROR(can_implement(call));
    const Tensor& x = call.t("x");
    Tensor& y = call.t("y");
    for (std::int64_t i = 0; i < x.numel(); ++i) y.set(i, eval(fn_, static_cast<float>(x.at(i))));
    return ok_status();
  }

 private:
  UnaryFn fn_;
  Declaration decl_;
};

}  // namespace

std::vector<std::shared_ptr<const Impl>> make_ref_elementwise_impls() {
  std::vector<std::shared_ptr<const Impl>> out;
  for (UnaryFn fn : kFns) out.push_back(std::make_shared<RefUnary>(fn));
  return out;
}

}  // namespace kc::backends
