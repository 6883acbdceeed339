// kc — the torch backend's loader (see torch_backend.h). Compiled into
// kc_backends on every machine; without libtorch it reports why.
#include "torch_backend.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kc/install_layout.h"
#include "plugin/plugin_backend.h"

namespace kc::backends {
namespace {

class TorchBackend final : public Backend {
 public:
  std::string_view name() const override { return "torch"; }

  BackendInfo probe() override {
    load();
    BackendInfo info;
    info.name = "torch";
    info.description = "libtorch (ATen) CPU ops: addmm/matmul, softmax, gelu, indexing, sum/var";
    info.available = error_.empty();
    info.version = version_;
    info.reason = error_.empty() ? "loaded from " + path_ : error_;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    load();
    return error_.empty() ? impls_ : std::vector<std::shared_ptr<const Impl>>{};
  }

 private:
  void load() {
    if (loaded_) return;
    loaded_ = true;
    if (const char* env = std::getenv("KC_TORCH_MODULE"); env && *env) {
      path_ = env;
    } else {
#ifdef KC_TORCH_MODULE_PATH
      // An installed kc's copy (<prefix>/lib/kc) first, else where it was built.
      path_ = installed_or(kInstallPrivateLibDir, "libkc_torch.so", "");
      path_ = path_.empty() ? std::string(KC_TORCH_MODULE_PATH) : path_ + "/libkc_torch.so";
#else
      error_ =
          "built without libtorch (CMake's find_package(Torch) failed at configure time, or KC_WITH_TORCH=OFF; "
          "Debian: libtorch-dev)";
      return;
#endif
    }
    // Probed in a child; kc maps it (never to unload it) only before forking
    // the first worker of a torch impl, which then inherit it: loading libtorch
    // takes about a second, too much to repeat in every worker.
    auto plugin = load_plugin(PluginSource{path_, nullptr, LoadPolicy::kBeforeFork, {}}, "torch");
    if (!plugin.ok()) {
      error_ = path_ + ": " + plugin.status().message();
      return;
    }
    impls_ = std::move(plugin->impls);
    version_ = std::move(plugin->version);
  }

  bool loaded_ = false;
  std::string path_;
  std::string error_;
  std::string version_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

std::unique_ptr<Backend> make_torch_backend() { return std::make_unique<TorchBackend>(); }

}  // namespace kc::backends
