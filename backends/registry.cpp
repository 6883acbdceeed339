// kc — the one table of built-in backends (register_builtin_backends); what
// every backend builds on is in backend.cpp.
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

Status register_builtin_backends(BackendRegistry& registry, const BackendOptions& options) {
  using Factory = std::function<std::unique_ptr<Backend>()>;
  // The one table of built-in backends, in `kc backends` order. Registration is
  // explicit: static self-registration is dropped by linkers.
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
