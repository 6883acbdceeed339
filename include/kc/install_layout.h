// kc — where an installed kc finds its data: the contracts, the plugin header,
// the backends' private libraries. `cmake --install` lays them out under one
// prefix (docs/install.md); kc finds them from its own executable's location,
// so the tree can be moved, and falls back to the build tree's paths (compiled
// in) when it runs from the build directory.
#pragma once

#include <string>

namespace kc {

/// The directory above the one holding the running executable (<prefix> for
/// <prefix>/bin/kc); empty when /proc/self/exe cannot be read.
std::string install_prefix();

/// <prefix>/<relative> when <prefix>/<relative>/<probe> exists (an installed
/// kc), else `build_path` (where the build tree keeps it). `probe` is a file
/// only the real directory has, so a prefix like /usr, whose include/ exists
/// anyway, is not mistaken for kc's.
std::string installed_or(const std::string& relative, const std::string& probe, const std::string& build_path);

/// Where kc's private libraries go under the prefix: the backends' variant
/// builds and modules (lib/kc).
inline constexpr const char* kInstallPrivateLibDir = "lib/kc";

}  // namespace kc
