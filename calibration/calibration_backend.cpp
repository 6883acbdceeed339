// kc — the calibration backend: collects the per-family trios.
#include "calibration/calibration_backend.h"

namespace kc::calibration {

Declaration calib_decl(std::string name, std::string op, std::string description) {
  Declaration d;
  d.name = std::move(name);
  d.op = std::move(op);
  d.backend = "calibration";
  d.dtypes = {DType::kF32};
  d.accumulator = DType::kF32;
  d.determinism = Determinism::kBitwise;
  d.nan = NanPolicy::kIeeePropagate;
  d.denormal = DenormalPolicy::kIeee;
  d.oob = OobPolicy::kUndefined;
  d.description = std::move(description);
  d.source = "calibration/ (deliberate, documented behaviour; see docs/classes/)";
  d.broken_on_purpose = "calibration impl: wrong on purpose, to calibrate kc (docs/calibration.md)";
  return d;
}

void add(ImplList& out, Declaration decl, FnImpl::Kernel kernel) {
  out.push_back(std::make_shared<FnImpl>(std::move(decl), std::move(kernel)));
}

namespace {

class CalibrationBackend : public Backend {
 public:
  std::string_view name() const override { return "calibration"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "calibration";
    info.available = true;
    info.version = "built-in";
    info.description = "calibration trios (baseline / bad / good) for the contract classes";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override {
    ImplList out;
    add_precision_impls(out);
    add_ordering_impls(out);
    add_compiler_impls(out);
    add_exceptional_impls(out);
    add_incident_impls(out);
    add_transformer_impls(out);
    add_train_impls(out);
    add_ladder_impls(out);
    add_blas_impls(out);
    add_blas1_policy_impls(out);
    add_gemv_impls(out);
    add_complex_impls(out);
    add_elementwise_impls(out);
    add_elementwise_edge_impls(out);
    add_softmax_impls(out);
    add_lowprec_impls(out);
    add_gemm_numerics_impls(out);
    add_lowprec_op_impls(out);
    add_range_impls(out);
    add_capability_impls(out);
    return out;
  }
};

}  // namespace
}  // namespace kc::calibration

namespace kc::backends {
std::unique_ptr<Backend> make_calibration_backend() {
  return std::make_unique<calibration::CalibrationBackend>();
}
}  // namespace kc::backends
