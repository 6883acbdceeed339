#include "plugin_backend.h"

#include <dlfcn.h>
#include <elf.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "kc/capability.h"
#include "kc/child.h"
#include "plugin/load_probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace kc::backends {

namespace {

bool abi_supported(std::uint32_t version) {
  return version >= KC_PLUGIN_ABI_OLDEST && version <= KC_PLUGIN_ABI_VERSION;
}

/// kc_call::report_path (ABI 2): the plugin's kernel says which path served the call.
void report_path_from_plugin(void*, const char* path, const char* reason) {
  report_selected_path(path ? path : "", reason ? reason : "");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// The comma-separated items of `s`; a comma inside parentheses belongs to its
/// item ("shape_class = multiple_of(16, M, N, K)").
std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '(') ++depth;
    if (i < s.size() && s[i] == ')' && depth > 0) --depth;
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      parts.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
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

std::uint32_t read_mxcsr() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#else
  return 0;
#endif
}

void write_mxcsr(std::uint32_t v) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(v);
#else
  (void)v;
#endif
}

/// A plugin's table as text can carry it: what kc_plugin_init returned, each
/// string kept apart from a null pointer.
struct ImplRow {
  std::optional<std::string> name, op, dtypes, declares, description;
  bool has_run = false;
};
struct Table {
  bool null_table = false;  ///< kc_plugin_init returned NULL
  std::uint32_t abi_version = 0;
  std::optional<std::string> name, version;
  std::int32_t num_impls = 0;
  bool impls_null = false;
  std::vector<ImplRow> rows;  ///< num_impls rows when the table is well formed
  std::string device_runtime;
  std::map<std::string, std::string> info;
  std::uint32_t mxcsr_before = 0, mxcsr_after = 0;
};

std::optional<std::string> opt(const char* s) { return s ? std::optional<std::string>(s) : std::nullopt; }

/// Reads the plugin's table (in the probe child, or in kc for an init linked into it).
Table read_table(const kc_plugin* p) {
  Table t;
  if (!p) {
    t.null_table = true;
    return t;
  }
  t.abi_version = p->abi_version;
  t.name = opt(p->name);
  t.version = opt(p->version);
  t.num_impls = p->num_impls;
  t.impls_null = p->impls == nullptr;
  if (!abi_supported(p->abi_version) || p->num_impls < 0 || t.impls_null) return t;
  for (std::int32_t i = 0; i < p->num_impls; ++i) {
    const kc_impl_desc& d = p->impls[i];
    t.rows.push_back({opt(d.name), opt(d.op), opt(d.dtypes), opt(d.declares), opt(d.description), d.run != nullptr});
  }
  return t;
}

void write_opt(FieldWriter& w, const std::optional<std::string>& s) {
  if (s) w.add(*s);
  else w.add_optional(nullptr);
}

std::string encode(const Table& t) {
  FieldWriter w;
  w.add(t.null_table ? "null" : "table");
  w.add(std::to_string(t.abi_version));
  write_opt(w, t.name);
  write_opt(w, t.version);
  w.add(std::to_string(t.num_impls));
  w.add(t.impls_null ? "1" : "0");
  w.add(std::to_string(t.rows.size()));
  for (const ImplRow& r : t.rows) {
    for (const auto* f : {&r.name, &r.op, &r.dtypes, &r.declares, &r.description}) write_opt(w, *f);
    w.add(r.has_run ? "1" : "0");
  }
  w.add(t.device_runtime);
  w.add(std::to_string(t.info.size()));
  for (const auto& [k, v] : t.info) {
    w.add(k);
    w.add(v);
  }
  w.add(std::to_string(t.mxcsr_before));
  w.add(std::to_string(t.mxcsr_after));
  return w.text();
}

Result<Table> decode(const std::string& text) {
  FieldReader r(text);
  const Status bad = internal_error("the probe child's answer is malformed");
  std::string f;
  bool present = false;
  auto number = [&](auto* out) -> bool {
    if (!r.next(&f) || f.empty()) return false;
    long long v = 0;
    if (std::sscanf(f.c_str(), "%lld", &v) != 1) return false;
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(v);
    return true;
  };
  auto optional = [&](std::optional<std::string>* out) -> bool {
    if (!r.next(&f, &present)) return false;
    *out = present ? std::optional<std::string>(f) : std::nullopt;
    return true;
  };
  Table t;
  if (!r.next(&f)) return bad;
  t.null_table = f == "null";
  std::size_t rows = 0, info = 0;
  if (!number(&t.abi_version) || !optional(&t.name) || !optional(&t.version) || !number(&t.num_impls) ||
      !r.next(&f))
    return bad;
  t.impls_null = f == "1";
  if (!number(&rows) || rows > (1u << 20)) return bad;
  for (std::size_t i = 0; i < rows; ++i) {
    ImplRow row;
    for (auto* field : {&row.name, &row.op, &row.dtypes, &row.declares, &row.description})
      if (!optional(field)) return bad;
    if (!r.next(&f)) return bad;
    row.has_run = f == "1";
    t.rows.push_back(std::move(row));
  }
  if (!r.next(&t.device_runtime) || !number(&info) || info > 1024) return bad;
  for (std::size_t i = 0; i < info; ++i) {
    std::string k, v;
    if (!r.next(&k) || !r.next(&v)) return bad;
    t.info[k] = v;
  }
  if (!number(&t.mxcsr_before) || !number(&t.mxcsr_after)) return bad;
  return t;
}

/// One plugin library as one process maps it: loaded there on first need
/// (dlopen, kc_plugin_init) and never unloaded, since its constructors have
/// run and a kernel of it may still be running on another thread. The names
/// the probe saw are checked against what the library describes this time.
class LibrarySlot {
 public:
  LibrarySlot(std::string path, kc_plugin_init_fn init, std::vector<std::string> names)
      : path_(std::move(path)), init_(init), names_(std::move(names)) {}

  /// The plugin's table in this process, loading the library if needed.
  Result<const kc_plugin*> ensure() const {
    const Mapped* m = mapped_.load(std::memory_order_acquire);
    if (!m) {
      // No lock: a worker is forked while other threads of kc run, and a lock
      // held by one of them then would stay held in the worker for ever. Two
      // threads loading at once both dlopen (the second only adds a reference).
      const Mapped* fresh = new Mapped(load_here());
      const Mapped* expected = nullptr;
      if (mapped_.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
        m = fresh;
      } else {
        delete fresh;
        m = expected;
      }
    }
    if (!m->error.empty()) return unavailable(m->error);
    return m->table;
  }

 private:
  struct Mapped {
    const kc_plugin* table = nullptr;
    std::string error;
  };

  Mapped load_here() const {
    Mapped m;
    const kc_plugin* p = nullptr;
    if (init_) {
      p = init_(KC_PLUGIN_ABI_VERSION);
    } else {
      // Through the descriptor the sandbox opened, when the path itself is out of its sight.
      void* h = dlopen(library_path(path_).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (!h) {
        const char* e = dlerror();
        m.error = "cannot load " + path_ + ": " + (e ? e : "dlopen failed");
        return m;
      }
      auto init = reinterpret_cast<kc_plugin_init_fn>(dlsym(h, KC_PLUGIN_INIT_SYMBOL));
      if (!init) {
        m.error = path_ + ": no symbol " + KC_PLUGIN_INIT_SYMBOL;
        return m;
      }
      p = init(KC_PLUGIN_ABI_VERSION);
    }
    if (!p || !abi_supported(p->abi_version) || p->num_impls < 0 || (p->num_impls > 0 && !p->impls) ||
        static_cast<std::size_t>(p->num_impls) != names_.size()) {
      m.error = path_ + ": kc_plugin_init described the plugin differently than in its probe";
      return m;
    }
    for (std::size_t i = 0; i < names_.size(); ++i) {
      const char* got = p->impls[i].name;
      if (!got || names_[i] != got || !p->impls[i].run) {
        m.error = path_ + ": impl #" + std::to_string(i) + " is not '" + names_[i] + "' as in its probe";
        return m;
      }
    }
    m.table = p;
    return m;
  }

  std::string path_;
  kc_plugin_init_fn init_;
  std::vector<std::string> names_;
  mutable std::atomic<const Mapped*> mapped_{nullptr};
};

class PluginImpl final : public Impl {
 public:
  PluginImpl(std::shared_ptr<const LibrarySlot> lib, std::size_t index, LoadPolicy policy, Declaration decl)
      : lib_(std::move(lib)), index_(index), policy_(policy), decl_(std::move(decl)) {}

  const Declaration& declaration() const override { return decl_; }

  Status load_in_worker() const override { return lib_->ensure().status(); }

  Status load_before_fork() const override {
    return policy_ == LoadPolicy::kBeforeFork ? lib_->ensure().status() : ok_status();
  }

  Status run(Call& call) const override {
    auto table = lib_->ensure();
    if (!table.ok()) return table.status();
    const kc_impl_desc& desc = (*table)->impls[index_];
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
    c.report_path = &report_path_from_plugin;
    c.host = nullptr;

    std::array<char, 1024> message{};
    const int32_t rc = desc.run(&c, message.data(), message.size(), desc.user_data);
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
                              ", which plugin ABI " + std::to_string(KC_PLUGIN_ABI_VERSION) + " does not define" +
                              (text.empty() ? "" : ": " + text));
    }
  }

 private:
  std::shared_ptr<const LibrarySlot> lib_;
  std::size_t index_;
  LoadPolicy policy_;
  Declaration decl_;
};

Result<LoadedPlugin> describe(const Table& t, const PluginSource& src, const std::string& backend) {
  if (t.null_table)
    return unavailable("kc_plugin_init returned NULL (plugin refused host ABI " +
                       std::to_string(KC_PLUGIN_ABI_VERSION) + ")");
  if (!abi_supported(t.abi_version)) {
    return unavailable("plugin was built against ABI " + std::to_string(t.abi_version) + ", host loads ABI " +
                       std::to_string(KC_PLUGIN_ABI_OLDEST) + " to " + std::to_string(KC_PLUGIN_ABI_VERSION));
  }
  if (t.num_impls < 0 || (t.num_impls > 0 && t.impls_null) ||
      t.rows.size() != static_cast<std::size_t>(t.num_impls)) {
    return invalid_argument("impl table is malformed (num_impls " + std::to_string(t.num_impls) + ")");
  }
  LoadedPlugin out;
  out.version = t.name.value_or("(unnamed)") + " " + t.version.value_or("(no version)") + ", ABI " +
                std::to_string(t.abi_version);
  out.plugin_version = t.version.value_or("");
  out.info = t.info;
  out.mxcsr_before = t.mxcsr_before;
  out.mxcsr_after = t.mxcsr_after;
  std::vector<Declaration> decls;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const ImplRow& d = t.rows[i];
    const std::string where = "impl #" + std::to_string(i) + (d.name ? " '" + *d.name + "'" : "");
    if (!d.name || d.name->empty() || !d.op || d.op->empty() || !d.has_run) {
      return invalid_argument(where + ": name, op and run are required");
    }
    Declaration decl;
    decl.name = *d.name;
    decl.op = *d.op;
    decl.backend = backend;
    decl.description = d.description.value_or("");
    decl.source = "plugin " + t.name.value_or("");
    if (!t.device_runtime.empty()) decl.extra[std::string(kDeviceRuntimeKey)] = t.device_runtime;
    if (Status s = parse_dtypes(d.dtypes ? d.dtypes->c_str() : nullptr, &decl.dtypes); !s.ok())
      return s.with_context(where);
    if (Status s = parse_declares(d.declares ? d.declares->c_str() : nullptr, &decl); !s.ok())
      return s.with_context(where);
    if (auto source = decl.extra.find("source"); source != decl.extra.end()) {
      decl.source = source->second;
      decl.extra.erase(source);
    }
    // A library that starts CUDA itself (kc vet of a .cu file) does so in its
    // worker, after the fork, on a device: no address-space limit (CUDA
    // reserves address space for the GPU's memory), no host peaks.
    if (auto rt = decl.extra.find(std::string(kDeviceRuntimeKey)); rt != decl.extra.end() && rt->second == "cuda")
      decl.runtime = {true, false, "the plugin starts CUDA in its worker process"};
    names.push_back(decl.name);
    decls.push_back(std::move(decl));
  }
  auto lib = std::make_shared<const LibrarySlot>(src.path, src.init, std::move(names));
  for (std::size_t i = 0; i < decls.size(); ++i)
    out.impls.push_back(std::make_shared<PluginImpl>(lib, i, src.policy, std::move(decls[i])));
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

/// The probe child's work: load the library, ask it for its table, and send
/// the table back as text. Runs only in the child.
Result<std::string> probe_in_child(const PluginSource& src) {
  const std::uint32_t mxcsr_before = read_mxcsr();
  const std::string path = library_path(src.path);  // the probe's sandbox may hide src.path
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return unavailable(e ? e : "dlopen failed");
  }
  dlerror();
  auto init = reinterpret_cast<kc_plugin_init_fn>(dlsym(h, KC_PLUGIN_INIT_SYMBOL));
  if (!init) {
    const char* e = dlerror();
    return unavailable(std::string("no symbol ") + KC_PLUGIN_INIT_SYMBOL + (e ? std::string(": ") + e : ""));
  }
  Table t = read_table(init(KC_PLUGIN_ABI_VERSION));
  t.mxcsr_before = mxcsr_before;
  t.mxcsr_after = read_mxcsr();
  t.device_runtime = device_runtime_of(h, path);
  for (const std::string& symbol : src.info_symbols) {
    using InfoFn = const char* (*)();
    if (auto fn = reinterpret_cast<InfoFn>(dlsym(h, symbol.c_str()))) {
      const char* text = fn();
      t.info[symbol] = text ? text : "";
    }
  }
  return encode(t);
}

std::string probe_key(const PluginSource& src) {
  std::string key = "plugin";
  for (const std::string& s : src.info_symbols) key += "|" + s;
  return file_key(key, src.path);
}

Result<LoadedPlugin> from_text(const Result<std::string>& text, const PluginSource& src, const std::string& backend) {
  if (!text.ok()) return text.status();
  auto table = decode(*text);
  if (!table.ok()) return table.status();
  return describe(*table, src, backend);
}

}  // namespace

Result<LoadedPlugin> load_plugin(const PluginSource& src, const std::string& backend, bool* died) {
  if (died) *died = false;
  if (src.init) return describe(read_table(src.init(KC_PLUGIN_ABI_VERSION)), src, backend);
  note_library_file(src.path);  // opened by the probe's and the workers' sandboxes (kc/child.h)
  return from_text(probe_load(probe_key(src), src.path, [&] { return probe_in_child(src); }, died), src, backend);
}

std::vector<Result<LoadedPlugin>> load_plugins(const std::vector<PluginSource>& sources, const std::string& backend) {
  std::vector<Result<LoadedPlugin>> out;
  bool together = sources.size() > 1;
  for (const PluginSource& src : sources) together = together && !src.init;
  for (const PluginSource& src : sources)
    if (!src.init) note_library_file(src.path);
  if (together) {
    std::string key = "plugins";
    for (const PluginSource& src : sources) key += "||" + probe_key(src);
    auto text = probe_load_together(key, std::to_string(sources.size()) + " libraries", [&]() -> Result<std::string> {
      // Each library from the same MXCSR, as in a child of its own: a
      // fast-math build's constructor must not pass as the next one's.
      const std::uint32_t mxcsr = read_mxcsr();
      FieldWriter w;
      for (const PluginSource& src : sources) {
        write_mxcsr(mxcsr);
        const Result<std::string> one = probe_in_child(src);
        w.add(std::to_string(one.ok() ? 0 : static_cast<int>(one.status().code())));
        w.add(one.ok() ? *one : one.status().message());
      }
      return w.text();
    });
    if (text && text->ok()) {
      FieldReader r(**text);
      for (const PluginSource& src : sources) {
        std::string code, body;
        if (!r.next(&code) || !r.next(&body)) break;
        const int c = std::atoi(code.c_str());
        const StatusCode sc =
            c > static_cast<int>(StatusCode::kInternal) ? StatusCode::kInternal : static_cast<StatusCode>(c);
        out.push_back(from_text(c == 0 ? Result<std::string>(body) : Result<std::string>(Status(sc, body)), src,
                                backend));
      }
      if (out.size() == sources.size()) return out;
      out.clear();
    }
  }
  // One child per library: also what names the one that died in a joint probe.
  for (const PluginSource& src : sources) out.push_back(load_plugin(src, backend));
  return out;
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
    info.load_died = load_died_;
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
      bool died = false;
      auto plugin = load_plugin(src, "plugin", &died);
      load_died_ = load_died_ || died;
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
  bool load_died_ = false;  ///< a source aborted, crashed, exited or hung in its probe
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
