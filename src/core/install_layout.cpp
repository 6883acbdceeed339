#include "kc/install_layout.h"

#include <filesystem>
#include <system_error>

namespace kc {

std::string install_prefix() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.empty()) return {};
  return self.parent_path().parent_path().string();
}

std::string installed_or(const std::string& relative, const std::string& probe, const std::string& build_path) {
  const std::string prefix = install_prefix();
  if (prefix.empty()) return build_path;
  const std::filesystem::path dir = std::filesystem::path(prefix) / relative;
  std::error_code ec;
  if (std::filesystem::exists(probe.empty() ? dir : dir / probe, ec)) return dir.string();
  return build_path;
}

}  // namespace kc
