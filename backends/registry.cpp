// kc — Impl's default can_implement, the backend registry, and the one table
// of built-in backends.
#include <fnmatch.h>

#include <algorithm>
#include <functional>
#include <string>

#include "blas/blas_backend.h"
#include "compilers/compilers_backend.h"
#include "cuda/cuda_backend.h"
#include "eigen/eigen_backend.h"
#include "hwy/hwy_backend.h"
#include "onednn/onednn_backend.h"
#include "torch/torch_backend.h"
#include "kc/backend.h"
#include "mpi/mpi_backend.h"
#include "opencl/opencl_backend.h"
#include "plugin/plugin_backend.h"
#include "ref/ref_backend.h"
#include "sleef/sleef_backend.h"
#include "calibration/calibration_backend.h"

namespace kc {

Status Impl::can_implement(const Call& call) const {
  const Declaration& d = declaration();
  if (call.op != d.op) {
    return unimplemented(d.name + " implements " + d.op + ", not " + call.op);
  }
  if (std::find(d.dtypes.begin(), d.dtypes.end(), call.config.dtype) == d.dtypes.end()) {
    return unimplemented(d.name + " does not support " +
                         std::string(dtype_name(call.config.dtype)));
  }
  return check_increments(d, call);
}

Status check_increments(const Declaration& d, const Call& call) {
  // Only impls declaring increments = BLAS pass the signed increment on.
  for (const char* key : {"incx", "incy"}) {
    if (call.config.params.count(key) && call.config.get_int(key, 1) < 1 && d.get("increments") != "BLAS") {
      return unimplemented(d.name + " takes positive increments only (" + key + " = " + call.config.get(key) +
                           "; increments = BLAS not declared)");
    }
  }
  return ok_status();
}

Status BackendRegistry::add(std::unique_ptr<Backend> backend) {
  if (!backend) return invalid_argument("null backend");
  if (find_backend(backend->name())) {
    return invalid_argument("duplicate backend name '" + std::string(backend->name()) + "'");
  }
  backends_.push_back(std::move(backend));
  return ok_status();
}

std::vector<Backend*> BackendRegistry::backends() const {
  std::vector<Backend*> out;
  out.reserve(backends_.size());
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

Backend* BackendRegistry::find_backend(std::string_view name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

void BackendRegistry::probe_all() {
  // Backends added after the last probe are probed now; the others keep their
  // cached results, so every backend is probed (and its library loaded) once.
  for (std::size_t i = probed_.size(); i < backends_.size(); ++i) {
    BackendInfo info = backends_[i]->probe();
    std::vector<std::shared_ptr<const Impl>> impls;
    if (info.available) impls = backends_[i]->impls();
    probed_.push_back({std::move(info), std::move(impls)});
  }
}

std::vector<std::shared_ptr<const Impl>> BackendRegistry::impls() {
  probe_all();
  std::vector<std::shared_ptr<const Impl>> out;
  for (const auto& p : probed_) out.insert(out.end(), p.impls.begin(), p.impls.end());
  return out;
}

std::shared_ptr<const Impl> BackendRegistry::find_impl(std::string_view name) {
  probe_all();
  for (const auto& p : probed_)
    for (const auto& impl : p.impls)
      if (impl->declaration().name == name) return impl;
  return nullptr;
}

std::vector<BackendInfo> BackendRegistry::infos() {
  probe_all();
  std::vector<BackendInfo> out;
  out.reserve(probed_.size());
  for (const auto& p : probed_) out.push_back(p.info);
  return out;
}

Status register_builtin_backends(BackendRegistry& registry, const BackendOptions& options) {
  using Factory = std::function<std::unique_ptr<Backend>()>;
  // The one table of built-in backends, in `kc backends` order. Registration is
  // explicit: static self-registration is dropped by linkers (STYLE.md).
  const Factory table[] = {
      backends::make_ref_backend,
      backends::make_openblas_backend,
      backends::make_blis_backend,
      backends::make_refblas_backend,
      backends::make_calibration_backend,
      backends::make_cuda_backend,
      backends::make_eigen_backend,
      backends::make_compilers_backend,
      [] { return backends::make_mpi_backend(); },
      backends::make_opencl_backend,
      backends::make_onednn_backend,
      backends::make_torch_backend,
      backends::make_sleef_backend,
      backends::make_hwy_backend,
      [&options] { return backends::make_opencl_user_backend(options.opencl_sources); },
      [&options] { return backends::make_plugin_backend(options.plugin_paths); },
  };
  for (const Factory& make : table) {
    std::unique_ptr<Backend> b = make();
    bool wanted = options.only.empty();
    for (const auto& glob : options.only) wanted = wanted || fnmatch(glob.c_str(), std::string(b->name()).c_str(), 0) == 0;
    if (wanted) KC_RETURN_IF_ERROR(registry.add(std::move(b)));
  }
  return ok_status();
}

}  // namespace kc
