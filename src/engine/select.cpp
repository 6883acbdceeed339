#include "engine/select.h"

#include <set>

namespace kc::engine {

namespace {

lang::Diagnostic selection_error(const std::string& what, const std::string& message, const std::string& suggestion,
                                 lang::Diagnostic::Severity severity = lang::Diagnostic::Severity::kError) {
  lang::Diagnostic d;
  d.severity = severity;
  d.loc.file = what;
  d.message = message;
  d.suggestion = suggestion;
  return d;
}

bool any_match(const std::string& filter, const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (glob_match(filter, n)) return true;
  return false;
}

/// The backend an impl glob names by its prefix ("cuda.*" -> "cuda"), if the
/// prefix has no wildcard.
std::string backend_prefix(const std::string& filter) {
  const auto dot = filter.find('.');
  const std::string prefix = filter.substr(0, dot);
  return prefix.find_first_of("*?") == std::string::npos ? prefix : std::string();
}

void check_impl_filters(const CheckRequest& request, const std::vector<std::shared_ptr<const Impl>>& impls,
                        const std::vector<BackendInfo>& backends, std::vector<lang::Diagnostic>* out) {
  std::vector<std::string> names;
  for (const auto& impl : impls) names.push_back(impl->declaration().name);
  for (const auto& f : request.impls) {
    if (any_match(f, names)) continue;
    const std::string prefix = backend_prefix(f);
    const BackendInfo* down = nullptr;
    for (const auto& b : backends)
      if (!b.available && (b.name == prefix || glob_match(f, b.name))) down = &b;
    if (down) {
      out->push_back(selection_error("--impl", "'" + f + "' selects impls of backend " + down->name +
                                                   ", unavailable here: " + down->reason,
                                     "", lang::Diagnostic::Severity::kWarning));
      continue;
    }
    out->push_back(selection_error("--impl", "no impl matches '" + f + "' (`kc list impls` lists them)",
                                   lang::nearest_word(f, names)));
  }
}

}  // namespace

bool any_error(const std::vector<lang::Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics)
    if (d.severity == lang::Diagnostic::Severity::kError) return true;
  return false;
}

bool selected(const std::vector<std::string>& filters, const std::string& name) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (glob_match(f, name)) return true;
  return false;
}

std::vector<lang::Diagnostic> check_selection(const CheckRequest& request, const LoadedContracts& loaded,
                                              const std::vector<std::shared_ptr<const Impl>>& impls,
                                              const std::vector<BackendInfo>& backends) {
  std::vector<lang::Diagnostic> out;
  // Paths: every one given must contribute a contract (a missing file is
  // already a parse diagnostic).
  std::set<std::string> files(loaded.files.begin(), loaded.files.end());
  for (const auto& p : request.paths) {
    bool found = false;
    for (const auto& f : files)
      if (f == p || f.rfind(p + (p.ends_with("/") ? "" : "/"), 0) == 0) found = true;
    bool parse_problem = false;
    for (const auto& d : loaded.diagnostics) parse_problem = parse_problem || d.loc.file == p;
    if (!found && !parse_problem) out.push_back(selection_error(p, "no contract found here", ""));
  }
  std::vector<std::string> ids;
  for (const auto& c : loaded.contracts) ids.push_back(c.id);
  for (const auto& f : request.contracts)
    if (!any_match(f, ids))
      out.push_back(selection_error("--contract", "no contract matches '" + f + "' in the given paths",
                                    lang::nearest_word(f, ids)));
  check_impl_filters(request, impls, backends, &out);
  // A library given to load must load: its impls are what the user asked about.
  auto loaded_ok = [&](const std::string& backend, const std::string& flag, const std::vector<std::string>& given) {
    if (given.empty()) return;
    for (const auto& b : backends)
      if (b.name == backend && !b.available)
        out.push_back(selection_error(flag, "cannot load: " + b.reason, ""));
  };
  loaded_ok("plugin", "--plugin", request.plugin_paths);
  loaded_ok("opencl_user", "kc vet (.cl)", request.opencl_sources);
  // Cross-file contract errors `kc lint` rejects (a depends id outside the
  // given files is not one: the file that defines it may not be loaded).
  for (auto& d : lang::resolve_depends(loaded.contracts))
    if (d.severity == lang::Diagnostic::Severity::kError && d.message.find("unknown contract") == std::string::npos)
      out.push_back(std::move(d));
  return out;
}

}  // namespace kc::engine
