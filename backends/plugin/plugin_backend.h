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

/// Impls and the "<name> <version>, ABI 1" line of one loaded plugin.
struct LoadedPlugin {
  std::vector<std::shared_ptr<const Impl>> impls;
  std::string version;
  std::string plugin_version;  ///< the plugin's own version field, as given
};

/// Loads one plugin (dlopen(RTLD_NOW | RTLD_LOCAL), then kc_plugin_init) and
/// describes its impls, each with `backend` as its backend name. The library
/// stays mapped while any of its impls lives. A `source = TEXT` item in an
/// impl's `declares` becomes its Declaration::source. Backends built from plugin
/// libraries of their own (eigen, compilers: backends/variants; torch) share this path.
Result<LoadedPlugin> load_plugin(const PluginSource& src, const std::string& backend);

/// One backend named "plugin" holding the impls of every source. If any source
/// fails to load or describes itself malformedly (wrong ABI version, missing
/// kc_plugin_init, unknown dtype, bad `declares`), the backend is unavailable
/// and its reason names the source and the problem. With no sources it is
/// unavailable with reason "no --plugin given".
std::unique_ptr<Backend> make_plugin_backend(std::vector<PluginSource> sources);

/// Convenience: one PluginSource per path.
std::unique_ptr<Backend> make_plugin_backend(const std::vector<std::string>& paths);

}  // namespace kc::backends
