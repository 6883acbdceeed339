// kc — ref unary elementwise kernels (see ref_elementwise.h).
//
// The formulas avoid the cancellations a naive kernel has in the tails, which
// the L4 sweeps (docs/ladder.md) would otherwise expose in bf16:
// - gelu_tanh: 0.5 x (1 + tanh u) = x * sigmoid(2u): 1 + tanh u cancels to 0
//   for u < -9 in fp32 while the result is still far above bf16's smallest value;
// - silu: x * e^x / (1 + e^x) for x < 0, so e^-x never overflows to inf
//   (x / (1 + e^-x) is -0 for x < -88.7, where silu(x) is still ~1e-37).
// glibc float functions used (glibc manual, "Errors in Math Functions"):
// expf, tanhf, erff, erfcf, logf, each within a few fp32 ulps; one rounding of
// such a value into FP16/BF16 lands on the correctly rounded value or its
// neighbour (KC-UNARY-01's derivation).
#include "ref_elementwise.h"

#include <cmath>
#include <string>

#include "ops/elementwise/elementwise.h"

namespace kc::backends {
namespace {

using ops::UnaryFn;

float sigmoidf_stable(float z) {
  if (z >= 0) return 1.0f / (1.0f + std::exp(-z));
  const float e = std::exp(z);
  return e / (1.0f + e);
}

float eval(UnaryFn fn, float x) {
  if (std::isnan(x)) return x;
  switch (fn) {
    case UnaryFn::kRelu:
      return x > 0 ? x : 0.0f;
    case UnaryFn::kGeluErf:
      if (std::isinf(x)) return x > 0 ? x : 0.0f;
      return 0.5f * x * std::erfc(-x * 0.70710678118654752f);
    case UnaryFn::kGeluTanh: {
      if (std::isinf(x)) return x > 0 ? x : 0.0f;
      const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return x * sigmoidf_stable(2.0f * u);
    }
    case UnaryFn::kSilu:
      if (std::isinf(x)) return x > 0 ? x : 0.0f;
      return x * sigmoidf_stable(x);
    case UnaryFn::kIdentity:
      return x;
    case UnaryFn::kExp:
      return std::exp(x);
    case UnaryFn::kLog:
      return std::log(x);
    case UnaryFn::kTanh:
      return std::tanh(x);
    case UnaryFn::kErf:
      return std::erf(x);
  }
  return x;
}

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
  for (UnaryFn fn : ops::elementwise_fns()) out.push_back(std::make_shared<RefUnary>(fn));
  return out;
}

}  // namespace kc::backends
