// kc — the `plugin` backend: impls from shared libraries speaking kc_plugin.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/kc_plugin.h"

namespace kc::backends {

/// Where one plugin comes from: a shared library to dlopen, or (for plugins
/// linked into the host, and for tests) an init function called directly, in
/// which case `path` is only a label.
struct PluginSource {
  std::string path;
  kc_plugin_init_fn init = nullptr;
};

/// One backend named "plugin" holding the impls of every source. If any source
/// fails to load or describes itself malformedly (wrong ABI version, missing
/// kc_plugin_init, unknown dtype, bad `declares`), the backend is unavailable
/// and its reason names the source and the problem. With no sources it is
/// unavailable with reason "no --plugin given".
std::unique_ptr<Backend> make_plugin_backend(std::vector<PluginSource> sources);

/// One plugin library's impls, each labelled with `backend` (its
/// Declaration::backend). A `source = TEXT` item in an impl's `declares`
/// becomes its Declaration::source (where the declaration comes from).
/// Backends that ship their kernels as a plugin-ABI module (torch) use this.
struct PluginImpls {
  std::vector<std::shared_ptr<const Impl>> impls;
  std::string version;  ///< "<name> <version>, ABI 1"
};
Result<PluginImpls> load_plugin(const PluginSource& source, const std::string& backend);

/// Convenience: one PluginSource per path.
std::unique_ptr<Backend> make_plugin_backend(const std::vector<std::string>& paths);

}  // namespace kc::backends
