// kc — Impl's default can_implement, the backend registry, and the one table
// of built-in backends.
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
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

const std::vector<std::string>& overridable_backends() {
  static const std::vector<std::string> v = {"openblas", "blis", "refblas"};
  return v;
}

Result<LibraryOverride> parse_library_override(const std::string& text) {
  const auto expected = std::string("NAME[@LABEL]=PATH with NAME one of openblas, blis, refblas (e.g. ") +
                        "blis@next=/opt/blis-1.1/lib/libblis.so.4)";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return invalid_argument("--library '" + text + "': expected " + expected);
  LibraryOverride o;
  std::string name = text.substr(0, eq);
  o.path = text.substr(eq + 1);
  if (const auto at = name.find('@'); at != std::string::npos) {
    o.label = name.substr(at + 1);
    name.resize(at);
    if (o.label.empty()) return invalid_argument("--library '" + text + "': empty label after '@'; expected " + expected);
    for (char ch : o.label)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-'))
        return invalid_argument("--library '" + text + "': the label '" + o.label +
                                "' may hold letters, digits, '_' and '-' only (it becomes part of impl names)");
  }
  const auto& known = overridable_backends();
  if (std::find(known.begin(), known.end(), name) == known.end())
    return invalid_argument("--library '" + text + "': no backend '" + name + "' loads a library path; expected " +
                            expected);
  o.backend = name;
  return o;
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
  auto add = [&](std::unique_ptr<Backend> b) -> Status {
    bool wanted = options.only.empty();
    for (const auto& glob : options.only) wanted = wanted || fnmatch(glob.c_str(), std::string(b->name()).c_str(), 0) == 0;
    return wanted ? registry.add(std::move(b)) : ok_status();
  };
  for (const Factory& make : table) {
    std::unique_ptr<Backend> b = make();
    const std::string name(b->name());
    // --library NAME=PATH: this backend loads PATH instead; NAME@LABEL=PATH: a
    // second one, right after it, loads PATH beside the default build.
    std::vector<std::unique_ptr<Backend>> beside;
    for (const LibraryOverride& o : options.libraries) {
      if (o.backend != name) continue;
      auto other = backends::make_blas_backend_at(o.backend, o.label, o.path);
      if (!other) return invalid_argument("--library " + o.spec() + ": backend " + o.backend + " loads no library");
      if (o.label.empty()) b = std::move(other);
      else beside.push_back(std::move(other));
    }
    KC_RETURN_IF_ERROR(add(std::move(b)));
    for (auto& other : beside) KC_RETURN_IF_ERROR(add(std::move(other)));
  }
  return ok_status();
}

}  // namespace kc
