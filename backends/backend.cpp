// kc — what every backend builds on: Impl's default can_implement, the
// increments rule, the backend registry and --library overrides. The table of
// built-in backends is in registry.cpp.
#include <algorithm>
#include <cctype>
#include <string>

#include "kc/backend.h"

namespace kc {

Status Impl::can_implement(const Call& call) const {
  const Declaration& d = declaration();
  if (call.op != d.op) {
    return unimplemented(d.name + " implements " + d.op + ", not " + call.op);
  }
  if (std::find(d.dtypes.begin(), d.dtypes.end(), call.config.dtype) == d.dtypes.end()) {
    return unimplemented(d.name + " does not support " +
                         std::string(dtype_name(call.config.dtype)));
  }
  return check_increments(d, call);
}

Status check_increments(const Declaration& d, const Call& call) {
  // Only impls declaring increments = BLAS pass the signed increment on.
  for (const char* key : {"incx", "incy"}) {
    if (call.config.params.count(key) && call.config.get_int(key, 1) < 1 && d.get("increments") != "BLAS") {
      return unimplemented(d.name + " takes positive increments only (" + key + " = " + call.config.get(key) +
                           "; increments = BLAS not declared)");
    }
  }
  return ok_status();
}

Status BackendRegistry::add(std::unique_ptr<Backend> backend) {
  if (!backend) return invalid_argument("null backend");
  if (find_backend(backend->name())) {
    return invalid_argument("duplicate backend name '" + std::string(backend->name()) + "'");
  }
  backends_.push_back(std::move(backend));
  return ok_status();
}

std::vector<Backend*> BackendRegistry::backends() const {
  std::vector<Backend*> out;
  out.reserve(backends_.size());
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

Backend* BackendRegistry::find_backend(std::string_view name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

void BackendRegistry::probe_all() {
  // Backends added after the last probe are probed now; the others keep their
  // cached results, so every backend is probed (and its library loaded) once.
  for (std::size_t i = probed_.size(); i < backends_.size(); ++i) {
    BackendInfo info = backends_[i]->probe();
    std::vector<std::shared_ptr<const Impl>> impls;
    if (info.available) impls = backends_[i]->impls();
    probed_.push_back({std::move(info), std::move(impls)});
  }
}

std::vector<std::shared_ptr<const Impl>> BackendRegistry::impls() {
  probe_all();
  std::vector<std::shared_ptr<const Impl>> out;
  for (const auto& p : probed_) out.insert(out.end(), p.impls.begin(), p.impls.end());
  return out;
}

std::shared_ptr<const Impl> BackendRegistry::find_impl(std::string_view name) {
  probe_all();
  for (const auto& p : probed_)
    for (const auto& impl : p.impls)
      if (impl->declaration().name == name) return impl;
  return nullptr;
}

std::vector<BackendInfo> BackendRegistry::infos() {
  probe_all();
  std::vector<BackendInfo> out;
  out.reserve(probed_.size());
  for (const auto& p : probed_) out.push_back(p.info);
  return out;
}

const std::vector<std::string>& overridable_backends() {
  static const std::vector<std::string> v = {"openblas", "blis", "refblas"};
  return v;
}

Result<LibraryOverride> parse_library_override(const std::string& text) {
  const auto expected = std::string("NAME[@LABEL]=PATH with NAME one of openblas, blis, refblas (e.g. ") +
                        "blis@next=/opt/blis-1.1/lib/libblis.so.4)";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return invalid_argument("--library '" + text + "': expected " + expected);
  LibraryOverride o;
  std::string name = text.substr(0, eq);
  o.path = text.substr(eq + 1);
  if (const auto at = name.find('@'); at != std::string::npos) {
    o.label = name.substr(at + 1);
    name.resize(at);
    if (o.label.empty()) return invalid_argument("--library '" + text + "': empty label after '@'; expected " + expected);
    for (char ch : o.label)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-'))
        return invalid_argument("--library '" + text + "': the label '" + o.label +
                                "' may hold letters, digits, '_' and '-' only (it becomes part of impl names)");
  }
  const auto& known = overridable_backends();
  if (std::find(known.begin(), known.end(), name) == known.end())
    return invalid_argument("--library '" + text + "': no backend '" + name + "' loads a library path; expected " +
                            expected);
  o.backend = name;
  return o;
}

}  // namespace kc
