#include "plugin_backend.h"

#include <dlfcn.h>
#include <elf.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "kc/child.h"

namespace kc::backends {

namespace {

/// A dlopen handle closed when the last impl using it goes away.
class LibraryHandle {
 public:
  explicit LibraryHandle(void* h) : h_(h) {}
  ~LibraryHandle() {
    if (h_) dlclose(h_);
  }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;

 private:
  void* h_;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  while (true) {
    const std::size_t comma = s.find(',');
    parts.push_back(trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return parts;
}

Status parse_dtypes(const char* text, std::vector<DType>* out) {
  if (!text || !*text) return invalid_argument("empty dtypes");
  for (std::string_view part : split_commas(text)) {
    auto t = parse_dtype(part);
    if (!t) return invalid_argument("unknown dtype '" + std::string(part) + "' in dtypes");
    out->push_back(*t);
  }
  return ok_status();
}

// "key = VALUE, key = VALUE" (kc_plugin.h); an empty or null string declares nothing.
Status parse_declares(const char* text, Declaration* decl) {
  if (!text || trim(text).empty()) return ok_status();
  for (std::string_view item : split_commas(text)) {
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument("declares item '" + std::string(item) + "' is not key = VALUE");
    }
    const std::string key(trim(item.substr(0, eq)));
    const std::string value(trim(item.substr(eq + 1)));
    if (key.empty() || value.empty()) {
      return invalid_argument("declares item '" + std::string(item) + "' is not key = VALUE");
    }
    std::string error;
    if (!decl->set(key, value, &error)) {
      return invalid_argument("declares " + key + " = " + value + ": " + error);
    }
  }
  return ok_status();
}

// kc_dtype mirrors DType's order; the table makes that a checked fact, not an assumption.
constexpr std::array<std::pair<DType, kc_dtype>, 9> kDTypeMap{{
    {DType::kF64, KC_DTYPE_F64},
    {DType::kF32, KC_DTYPE_F32},
    {DType::kTF32, KC_DTYPE_TF32},
    {DType::kBF16, KC_DTYPE_BF16},
    {DType::kF16, KC_DTYPE_F16},
    {DType::kFP8E4M3, KC_DTYPE_FP8E4M3},
    {DType::kFP8E5M2, KC_DTYPE_FP8E5M2},
    {DType::kI32, KC_DTYPE_I32},
    {DType::kI64, KC_DTYPE_I64},
}};

int32_t to_c_dtype(DType t) {
  for (const auto& [d, c] : kDTypeMap)
    if (d == t) return c;
  return -1;
}

int32_t to_c_role(Role r) {
  switch (r) {
    case Role::kIn:
      return KC_ROLE_IN;
    case Role::kOut:
      return KC_ROLE_OUT;
    case Role::kInOut:
      return KC_ROLE_INOUT;
  }
  return KC_ROLE_IN;
}

class PluginImpl final : public Impl {
 public:
  PluginImpl(std::shared_ptr<LibraryHandle> lib, const kc_impl_desc& desc, Declaration decl)
      : lib_(std::move(lib)), run_(desc.run), user_data_(desc.user_data), decl_(std::move(decl)) {}

  const Declaration& declaration() const override { return decl_; }

  Status run(Call& call) const override {
    // Attribute and tensor arrays point into `call` and these locals; the
    // plugin must not keep them past run (kc_plugin.h).
    std::vector<kc_attr> attrs;
    attrs.reserve(call.config.params.size() + 1);
    for (const auto& [k, v] : call.config.params) attrs.push_back({k.c_str(), v.c_str()});
    const std::string dtype(dtype_name(call.config.dtype));
    attrs.push_back({"dtype", dtype.c_str()});

    std::vector<kc_tensor> tensors(call.tensors.size());
    for (std::size_t i = 0; i < call.tensors.size(); ++i) {
      Tensor& t = call.tensors[i];
      kc_tensor& ct = tensors[i];
      ct.name = i < call.names.size() ? call.names[i].c_str() : "";
      ct.dtype = to_c_dtype(t.dtype());
      ct.role = i < call.roles.size() ? to_c_role(call.roles[i]) : KC_ROLE_IN;
      ct.rank = static_cast<int32_t>(t.rank());
      ct.shape = t.shape().data();
      ct.strides = t.strides().data();
      ct.data = t.raw();
      ct.storage_elems = t.storage_elems();
    }
    kc_call c{};
    c.op = call.op.c_str();
    c.num_tensors = static_cast<int32_t>(tensors.size());
    c.tensors = tensors.data();
    c.num_attrs = static_cast<int32_t>(attrs.size());
    c.attrs = attrs.data();

    std::array<char, 1024> message{};
    const int32_t rc = run_(&c, message.data(), message.size(), user_data_);
    message.back() = '\0';  // a plugin that fills the buffer need not terminate it
    const std::string text = message.data();
    switch (rc) {
      case KC_OK:
        return ok_status();
      case KC_RAISED:
        return kernel_raised(text.empty() ? decl_.name + " raised (no message)" : text);
      case KC_UNSUPPORTED:
        return unimplemented(decl_.name + " does not support this call" +
                             (text.empty() ? "" : ": " + text));
      default:
        return internal_error(decl_.name + " returned status " + std::to_string(rc) +
                              ", which plugin ABI 1 does not define" +
                              (text.empty() ? "" : ": " + text));
    }
  }

 private:
  std::shared_ptr<LibraryHandle> lib_;  // keeps run_ mapped
  kc_run_fn run_;
  void* user_data_;
  Declaration decl_;
};

Result<LoadedPlugin> describe(const kc_plugin* p, std::shared_ptr<LibraryHandle> lib,
                              const std::string& backend, const std::string& device_runtime) {
  if (!p)
    return unavailable("kc_plugin_init returned NULL (plugin refused host ABI " +
                       std::to_string(KC_PLUGIN_ABI_VERSION) + ")");
  if (p->abi_version != KC_PLUGIN_ABI_VERSION) {
    return unavailable("plugin was built against ABI " + std::to_string(p->abi_version) +
                       ", host speaks ABI " + std::to_string(KC_PLUGIN_ABI_VERSION));
  }
  if (p->num_impls < 0 || (p->num_impls > 0 && !p->impls)) {
    return invalid_argument("impl table is malformed (num_impls " + std::to_string(p->num_impls) +
                            ")");
  }
  LoadedPlugin out;
  out.version = std::string(p->name ? p->name : "(unnamed)") + " " +
                (p->version ? p->version : "(no version)") + ", ABI " +
                std::to_string(p->abi_version);
  out.plugin_version = p->version ? p->version : "";
  for (int32_t i = 0; i < p->num_impls; ++i) {
    const kc_impl_desc& d = p->impls[i];
    const std::string where =
        "impl #" + std::to_string(i) + (d.name ? std::string(" '") + d.name + "'" : "");
    if (!d.name || !*d.name || !d.op || !*d.op || !d.run) {
      return invalid_argument(where + ": name, op and run are required");
    }
    Declaration decl;
    decl.name = d.name;
    decl.op = d.op;
    decl.backend = backend;
    decl.description = d.description ? d.description : "";
    decl.source = std::string("plugin ") + (p->name ? p->name : "");
    if (!device_runtime.empty()) decl.extra[std::string(kDeviceRuntimeKey)] = device_runtime;
    if (Status s = parse_dtypes(d.dtypes, &decl.dtypes); !s.ok()) return s.with_context(where);
    if (Status s = parse_declares(d.declares, &decl); !s.ok()) return s.with_context(where);
    if (auto src = decl.extra.find("source"); src != decl.extra.end()) {
      decl.source = src->second;
      decl.extra.erase(src);
    }
    out.impls.push_back(std::make_shared<PluginImpl>(lib, d, std::move(decl)));
  }
  return out;
}

/// Whether the ELF file holds CUDA device code: nvcc puts the kernels' fat
/// binary in a section .nv_fatbin (and its descriptor in .nvFatBinSegment),
/// also when cudart is linked statically and exports nothing.
bool has_cuda_fatbin(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return false;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum)
    return false;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  f.seekg(static_cast<std::streamoff>(eh.e_shoff));
  if (!f.read(reinterpret_cast<char*>(sections.data()),
              static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr))))
    return false;
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  if (names.sh_size > (std::uint64_t{1} << 24)) return false;
  std::string table(names.sh_size, '\0');
  f.seekg(static_cast<std::streamoff>(names.sh_offset));
  if (!f.read(table.data(), static_cast<std::streamsize>(table.size()))) return false;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_name >= table.size()) continue;
    const std::string_view name(table.c_str() + sh.sh_name);
    if (name == ".nv_fatbin" || name == ".nvFatBinSegment") return true;
  }
  return false;
}

/// "cuda" when the library starts CUDA itself: it holds CUDA device code, or it
/// reaches the CUDA runtime or driver API through its own dependencies (dlsym
/// on a dlopen handle searches that library and its dependencies only, not
/// kc's: a plugin that calls cuBLAS). Such a plugin starts CUDA in its worker.
std::string device_runtime_of(void* handle, const std::string& path) {
  if (has_cuda_fatbin(path)) return "cuda";
  for (const char* symbol : {"cudaGetDeviceCount", "cuInit"}) {
    dlerror();
    if (dlsym(handle, symbol)) return "cuda";
  }
  dlerror();
  return "";
}

}  // namespace

Result<LoadedPlugin> load_plugin(const PluginSource& src, const std::string& backend) {
  if (src.init) return describe(src.init(KC_PLUGIN_ABI_VERSION), nullptr, backend, "");
  void* h = dlopen(src.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return unavailable(e ? e : "dlopen failed");
  }
  auto lib = std::make_shared<LibraryHandle>(h);
  dlerror();
  auto init = reinterpret_cast<kc_plugin_init_fn>(dlsym(h, KC_PLUGIN_INIT_SYMBOL));
  if (!init) {
    const char* e = dlerror();
    return unavailable(std::string("no symbol ") + KC_PLUGIN_INIT_SYMBOL +
                       (e ? std::string(": ") + e : ""));
  }
  return describe(init(KC_PLUGIN_ABI_VERSION), std::move(lib), backend, device_runtime_of(h, src.path));
}

namespace {

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::vector<PluginSource> sources) : sources_(std::move(sources)) {}

  std::string_view name() const override { return "plugin"; }

  BackendInfo probe() override {
    load_all();
    BackendInfo info;
    info.name = "plugin";
    info.description = "impls from shared libraries speaking kc_plugin.h (ABI " +
                       std::to_string(KC_PLUGIN_ABI_VERSION) + ")";
    info.available = error_.empty();
    info.version = version_;
    info.reason = error_.empty() ? "loaded from " + paths_ : error_;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    load_all();
    return error_.empty() ? impls_ : std::vector<std::shared_ptr<const Impl>>{};
  }

 private:
  void load_all() {
    if (loaded_) return;
    loaded_ = true;
    if (sources_.empty()) {
      error_ = "no --plugin given";
      return;
    }
    std::set<std::string> names;
    for (const PluginSource& src : sources_) {
      auto plugin = load_plugin(src, "plugin");
      if (!plugin.ok()) {
        error_ += (error_.empty() ? "" : "; ") + src.path + ": " + plugin.status().message();
        continue;
      }
      for (const auto& impl : plugin->impls) {
        if (!names.insert(impl->declaration().name).second) {
          error_ += (error_.empty() ? "" : "; ") + src.path + ": duplicate impl name '" +
                    impl->declaration().name + "'";
        }
        impls_.push_back(impl);
      }
      version_ += (version_.empty() ? "" : "; ") + plugin->version;
      paths_ += (paths_.empty() ? "" : ", ") + src.path;
    }
    // All or nothing: the user named every plugin on purpose.
    if (!error_.empty()) impls_.clear();
  }

  std::vector<PluginSource> sources_;
  bool loaded_ = false;
  std::string error_;
  std::string version_;
  std::string paths_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

std::unique_ptr<Backend> make_plugin_backend(std::vector<PluginSource> sources) {
  return std::make_unique<PluginBackend>(std::move(sources));
}

std::unique_ptr<Backend> make_plugin_backend(const std::vector<std::string>& paths) {
  std::vector<PluginSource> sources;
  for (const auto& p : paths) sources.push_back({p, nullptr});
  return make_plugin_backend(std::move(sources));
}

}  // namespace kc::backends
