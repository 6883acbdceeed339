// kc — the `plugin` backend: impls from shared libraries speaking kc_plugin.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"
#include "kc/kc_plugin.h"

namespace kc::backends {

/// Which processes map a plugin's library once its probe came back clean.
enum class LoadPolicy {
  /// Never kc's: each worker loads it before its sandbox closes (and an
  /// in-process run, --isolate none, on first use). For --plugin, kc vet and
  /// the variant builds (eigen, compilers), which load in about a millisecond.
  kWorkerOnly,
  /// kc's process too, before it forks the first worker of one of its impls,
  /// so that workers inherit it mapped: for a library that takes about a
  /// second to load (libtorch), which every worker would otherwise load again.
  kBeforeFork,
};

/// Where one plugin comes from: a shared library, or (for plugins linked into
/// the host, and for tests) an init function called directly, in which case
/// `path` is only a label and nothing is probed.
struct PluginSource {
  std::string path;
  kc_plugin_init_fn init = nullptr;
  LoadPolicy policy = LoadPolicy::kWorkerOnly;
  /// `const char* f(void)` functions the probe calls, if the library exports
  /// them, reported in LoadedPlugin::info ("kc_variant_simd").
  std::vector<std::string> info_symbols = {};
};

/// Impls and the "<name> <version>, ABI 1" line of one probed plugin.
struct LoadedPlugin {
  std::vector<std::shared_ptr<const Impl>> impls;
  std::string version;
  std::string plugin_version;  ///< the plugin's own version field, as given
  std::map<std::string, std::string> info;  ///< each info symbol the library exports, with its text
  /// MXCSR (x86 SSE control and status) in the probe child before the library
  /// was loaded and after kc_plugin_init returned; 0 and 0 elsewhere.
  std::uint32_t mxcsr_before = 0;
  std::uint32_t mxcsr_after = 0;
};

/// Probes one plugin in a child process (backends/plugin/load_probe.h): there
/// it is loaded (dlopen(RTLD_NOW | RTLD_LOCAL), then kc_plugin_init) and its
/// table sent back as text, from which its impls are described here, each with
/// `backend` as its backend name. kc's process does not load the library:
/// an impl's worker does (Impl::load_in_worker), or kc before forking it
/// (LoadPolicy::kBeforeFork). A library that aborts, crashes, exits or hangs
/// while loading is kUnavailable, saying which. A `source = TEXT` item in an
/// impl's `declares` becomes its Declaration::source. Backends built from
/// plugin libraries of their own (eigen, compilers: backends/variants; torch)
/// share this path. A library, once mapped in a process, stays mapped.
/// `died`, when given, says whether the failure was the probe child's death.
Result<LoadedPlugin> load_plugin(const PluginSource& src, const std::string& backend, bool* died = nullptr);

/// load_plugin for each source, loading them all in one probe child (one fork
/// instead of one per library) when none has an init function; if that child
/// dies or hangs, each is probed in a child of its own, which names the one
/// that failed. One result per source, in order.
std::vector<Result<LoadedPlugin>> load_plugins(const std::vector<PluginSource>& sources, const std::string& backend);

/// One backend named "plugin" holding the impls of every source. If any source
/// fails to load (aborts or hangs in its probe included) or describes itself
/// malformedly (wrong ABI version, missing kc_plugin_init, unknown dtype, bad
/// `declares`), the backend is unavailable and its reason names the source and
/// the problem. With no sources it is
/// unavailable with reason "no --plugin given".
std::unique_ptr<Backend> make_plugin_backend(std::vector<PluginSource> sources);

/// Convenience: one PluginSource per path.
std::unique_ptr<Backend> make_plugin_backend(const std::vector<std::string>& paths);

}  // namespace kc::backends
