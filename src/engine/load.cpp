#include <algorithm>
#include <filesystem>

#include "kc/engine.h"

namespace kc::engine {

namespace fs = std::filesystem;

namespace {
bool is_contract_file(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".kc" || ext == ".yaml" || ext == ".yml";
}
}  // namespace

LoadedContracts load_contracts(const std::vector<std::string>& paths) {
  LoadedContracts out;
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
           it.increment(ec)) {
        if (it->is_regular_file(ec) && is_contract_file(it->path())) files.push_back(it->path().string());
      }
    } else {
      files.push_back(path);  // a missing file becomes a diagnostic from parse_file
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    lang::ParseResult parsed = lang::parse_file(file);
    for (auto& d : parsed.diagnostics) out.diagnostics.push_back(std::move(d));
    for (auto& c : parsed.document.contracts) {
      out.contracts.push_back(std::move(c));
      out.files.push_back(file);
    }
    for (auto& i : parsed.document.impls) out.impls.push_back(std::move(i));
    for (auto& c : parsed.document.calibrations) out.calibrations.push_back(std::move(c));
    for (auto& s : parsed.document.suites) out.suites.push_back(std::move(s));
  }
  return out;
}

}  // namespace kc::engine
