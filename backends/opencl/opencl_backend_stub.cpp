// kc — the opencl backends when kc is built without OpenCL.
//
// The one .cpp file under backends/opencl/: the kc_backends glob picks it up
// on every machine, so registry.cpp can name the factories unconditionally.
// With OpenCL, kc_opencl defines KC_HAVE_OPENCL for everything that links it,
// this file compiles to nothing, and opencl_backend.cc provides the factories.
#ifndef KC_HAVE_OPENCL

#include <string>
#include <utility>
#include <vector>

#include "opencl_backend.h"

namespace kc::backends {
namespace {

constexpr const char* kWhy = "built without OpenCL (no OpenCL headers/ICD loader at configure time, or KC_WITH_OPENCL=OFF)";

class UnavailableOpenclBackend final : public Backend {
 public:
  explicit UnavailableOpenclBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = name_;
    info.available = false;
    info.reason = kWhy;
    info.description = "OpenCL C kernels and CLBlast on an OpenCL platform (PoCL)";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override { return {}; }

 private:
  std::string name_;
};

}  // namespace

std::unique_ptr<Backend> make_opencl_backend() { return std::make_unique<UnavailableOpenclBackend>("opencl"); }
std::unique_ptr<Backend> make_opencl_user_backend(std::vector<std::string>) {
  return std::make_unique<UnavailableOpenclBackend>("opencl_user");
}
Result<std::string> build_opencl_source(const std::string&) { return unavailable(kWhy); }

}  // namespace kc::backends

#endif  // KC_HAVE_OPENCL
