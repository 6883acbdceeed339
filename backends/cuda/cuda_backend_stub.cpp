// kc — the cuda backend when kc is built without CUDA.
//
// This is the one .cpp file under backends/cuda/: kc_backends takes it (with the
// other stubs) on every machine, so registry.cpp can name make_cuda_backend()
// unconditionally. With CUDA, kc_cuda defines KC_HAVE_CUDA for everything that
// links it (kc_backends included), this file compiles to nothing, and the real
// factory in cuda_backend.cc is used.
#ifndef KC_HAVE_CUDA

#include <string>
#include <vector>

#include "cuda_backend.h"

namespace kc::backends {
namespace {

class UnavailableCudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "cuda";
    info.available = false;
    info.reason = "built without CUDA (no nvcc found at configure time, or KC_WITH_CUDA=OFF)";
    info.description = "cuBLAS, cuDNN and in-project CUDA kernels";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override { return {}; }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<UnavailableCudaBackend>(); }

}  // namespace kc::backends

#endif  // KC_HAVE_CUDA
