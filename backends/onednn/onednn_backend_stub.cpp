// kc — the onednn backend when kc is built without oneDNN.
//
// The one .cpp file under backends/onednn/: the kc_backends glob picks it up on
// every machine, so registry.cpp names make_onednn_backend() unconditionally.
// With oneDNN, kc_onednn defines KC_HAVE_ONEDNN for everything that links it,
// this file compiles to nothing, and the factory in onednn_backend.cc is used.
#ifndef KC_HAVE_ONEDNN

#include <string>
#include <vector>

#include "onednn_backend.h"

namespace kc::backends {
namespace {

class UnavailableOnednnBackend final : public Backend {
 public:
  std::string_view name() const override { return "onednn"; }
  BackendInfo probe() override {
    BackendInfo info;
    info.name = "onednn";
    info.available = false;
    info.reason =
        "built without oneDNN (CMake package 'dnnl' not found at configure time, or KC_WITH_ONEDNN=OFF; "
        "Debian: libdnnl-dev)";
    info.description = "oneDNN CPU primitives";
    return info;
  }
  std::vector<std::shared_ptr<const Impl>> impls() override { return {}; }
};

}  // namespace

std::unique_ptr<Backend> make_onednn_backend() { return std::make_unique<UnavailableOnednnBackend>(); }

}  // namespace kc::backends

#endif  // KC_HAVE_ONEDNN
