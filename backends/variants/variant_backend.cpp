// kc — the variant loader shared by the eigen and compilers backends (see variant_backend.h).
#include "variant_backend.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "kc/cpu_features.h"
#include "plugin/plugin_backend.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KC_HAVE_MXCSR 1
#else
#define KC_HAVE_MXCSR 0
#endif

namespace kc::backends {

namespace {

std::uint32_t read_mxcsr() {
#if KC_HAVE_MXCSR
  return _mm_getcsr();
#else
  return 0;
#endif
}

void write_mxcsr(std::uint32_t v) {
#if KC_HAVE_MXCSR
  _mm_setcsr(v);
#else
  (void)v;
#endif
}

// MXCSR bits (Intel SDM vol. 1, §10.2.3): FZ (bit 15) flushes results, DAZ
// (bit 6) reads subnormal inputs as zero; bits 13-14 are the rounding control.
constexpr std::uint32_t kFtz = 1u << 15;
constexpr std::uint32_t kDaz = 1u << 6;
constexpr std::uint32_t kRoundingControl = 3u << 13;
// Bits 0-5 are sticky exception flags; they change with any arithmetic and
// are not part of the control state a library could set for its host.
constexpr std::uint32_t kControlBits = ~0x3fu;

std::string describe_mxcsr_change(std::uint32_t before, std::uint32_t after) {
  std::string s;
  auto add = [&](std::string_view what) { s += (s.empty() ? "" : "|") + std::string(what); };
  if ((after & kFtz) && !(before & kFtz)) add("FTZ");
  if ((after & kDaz) && !(before & kDaz)) add("DAZ");
  if ((after & kRoundingControl) != (before & kRoundingControl)) add("rounding mode");
  if (s.empty()) add("other control bits");
  char buf[64];
  std::snprintf(buf, sizeof buf, " (MXCSR 0x%04x -> 0x%04x)", before, after);
  return s + buf;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (true) {
    const std::size_t at = s.find(sep);
    out.emplace_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

/// One impl of one variant: the loaded plugin impl, or (when the variant could
/// not be loaded) a declaration copied from a sibling build and no kernel.
class VariantImpl final : public Impl {
 public:
  VariantImpl(std::shared_ptr<const Impl> inner, Declaration decl, std::uint32_t load_mxcsr, bool replay,
              std::string unavailable_reason)
      : inner_(std::move(inner)),
        decl_(std::move(decl)),
        load_mxcsr_(load_mxcsr),
        replay_(replay),
        unavailable_(std::move(unavailable_reason)) {}

  const Declaration& declaration() const override { return decl_; }

  Status can_implement(const Call& call) const override {
    // kUnavailable (not kUnimplemented): the engine reports the case as
    // skipped, not as outside the impl's scope.
    if (!unavailable_.empty()) return unavailable(decl_.name + ": " + unavailable_);
    return inner_->can_implement(call);
  }

  // The variant's library is loaded where the inner plugin impl loads it: in the worker.
  Status load_in_worker() const override { return unavailable_.empty() ? inner_->load_in_worker() : ok_status(); }
  Status load_before_fork() const override {
    return unavailable_.empty() ? inner_->load_before_fork() : ok_status();
  }

  Status run(Call& call) const override {
    if (!unavailable_.empty()) return unavailable(decl_.name + ": " + unavailable_);
    if (!replay_) return inner_->run(call);
    // Behave as in a process that loaded the library: its constructor's MXCSR
    // setting is in force while its code runs, and kc's own setting after.
    const std::uint32_t saved = read_mxcsr();
    write_mxcsr((saved & ~kControlBits) | (load_mxcsr_ & kControlBits));
    Status s = inner_->run(call);
    write_mxcsr(saved);
    return s;
  }

  std::optional<std::uint32_t> load_mxcsr() const {
    return replay_ ? std::optional<std::uint32_t>(load_mxcsr_) : std::nullopt;
  }

 private:
  std::shared_ptr<const Impl> inner_;
  Declaration decl_;
  std::uint32_t load_mxcsr_;
  bool replay_;
  std::string unavailable_;
};

class VariantBackend final : public Backend {
 public:
  explicit VariantBackend(VariantBackendSpec spec) : spec_(std::move(spec)) {}

  std::string_view name() const override { return spec_.name; }

  BackendInfo probe() override {
    load();
    BackendInfo info;
    info.name = spec_.name;
    info.description = spec_.description;
    info.available = available_;
    info.version = version_;
    info.reason = reason_;
    return info;
  }

  std::vector<std::shared_ptr<const Impl>> impls() override {
    load();
    return available_ ? impls_ : std::vector<std::shared_ptr<const Impl>>{};
  }

 private:
  struct Loaded {
    const VariantSpec* spec;
    LoadedPlugin plugin;
    std::uint32_t mxcsr_after = 0;
    bool mxcsr_changed = false;
    std::string mxcsr_note;  ///< "FTZ|DAZ (MXCSR 0x1f80 -> 0x9fc0)" when loading changed it
  };

  void load() {
    if (loaded_) return;
    loaded_ = true;
    std::string dir = spec_.directory;
    if (const char* env = std::getenv(spec_.env_var.c_str()); env && *env) dir = env;
    if (dir.empty()) {
      reason_ = spec_.not_built;
      return;
    }
    const std::string manifest_path = dir + "/variants.tsv";
    std::ifstream in(manifest_path);
    if (!in) {
      reason_ = "no variant manifest at " + manifest_path + " (build the kc_" + spec_.name +
                "_variants target, or set " + spec_.env_var + ")";
      return;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto specs = parse_variant_manifest(text.str());
    if (!specs.ok()) {
      reason_ = manifest_path + ": " + specs.status().message();
      return;
    }
    variants_ = std::move(specs).value();

    // Load every variant the CPU can run; note why the others are not loaded.
    std::vector<Loaded> loaded;
    std::map<std::string, std::string> not_loaded;  // label -> why
    std::vector<std::string> findings;
    std::vector<std::string> missing(variants_.size());
    std::vector<PluginSource> sources;
    std::vector<std::size_t> source_of(variants_.size(), 0);
    for (std::size_t i = 0; i < variants_.size(); ++i) {
      for (const std::string& f : variants_[i].cpu_features) {
        auto has = cpu_has(f);
        if (!has.ok()) {
          missing[i] += (missing[i].empty() ? "" : ", ") + f + " (unknown feature name)";
        } else if (!*has) {
          missing[i] += (missing[i].empty() ? "" : ", ") + f;
        }
      }
      if (!missing[i].empty()) continue;
      source_of[i] = sources.size();
      sources.push_back({dir + "/" + variants_[i].library, nullptr, LoadPolicy::kWorkerOnly, {"kc_variant_simd"}});
    }
    // Probed in a child, all in one (load_plugins): kc's process never loads a
    // variant, its workers do; MXCSR is read there before and after each load.
    std::vector<Result<LoadedPlugin>> probed = load_plugins(sources, spec_.name);
    for (std::size_t i = 0; i < variants_.size(); ++i) {
      const VariantSpec& v = variants_[i];
      if (!missing[i].empty()) {
        not_loaded[v.label] = "this CPU lacks " + missing[i] + "; the library is not loaded";
        findings.push_back(v.label + ": skipped, CPU lacks " + missing[i]);
        continue;
      }
      const std::string& path = sources[source_of[i]].path;
      Result<LoadedPlugin>& plugin = probed[source_of[i]];
      if (!plugin.ok()) {
        not_loaded[v.label] = "cannot load " + path + ": " + plugin.status().message();
        findings.push_back(v.label + ": load failed: " + plugin.status().message());
        continue;
      }
      const std::uint32_t before = plugin->mxcsr_before, after = plugin->mxcsr_after;
      const bool changed = (after & kControlBits) != (before & kControlBits);
      Loaded l{&v, std::move(plugin).value(), after, changed, changed ? describe_mxcsr_change(before, after) : ""};
      const std::string prefix = spec_.name + "." + v.label + ".";
      std::string bad_name;
      for (const auto& impl : l.plugin.impls)
        if (impl->declaration().name.rfind(prefix, 0) != 0) bad_name = impl->declaration().name;
      if (!bad_name.empty()) {
        not_loaded[v.label] = "impl '" + bad_name + "' is not named " + prefix + "<op>";
        findings.push_back(v.label + ": " + not_loaded[v.label]);
        continue;
      }
      std::string finding = v.label + ": loaded";
      // A build may say what it vectorizes with (eigen: SimdInstructionSetsInUse()).
      if (auto simd = l.plugin.info.find("kc_variant_simd"); simd != l.plugin.info.end())
        finding += " (SIMD: " + simd->second + ")";
      if (l.mxcsr_changed) finding += ", loading sets " + l.mxcsr_note + " (replayed per call)";
      findings.push_back(finding);
      loaded.push_back(std::move(l));
    }
    if (loaded.empty()) {
      reason_ = "no variant could be loaded from " + dir + ": ";
      for (std::size_t i = 0; i < findings.size(); ++i) reason_ += (i ? "; " : "") + findings[i];
      return;
    }

    // Impls: the loaded variants' own, then, for each variant not loaded, a
    // loaded sibling's impls renamed to that variant, marked unavailable.
    std::set<std::string> versions;
    for (const Loaded& l : loaded) {
      versions.insert(l.plugin.plugin_version);
      for (const auto& impl : l.plugin.impls) add_impl(*l.spec, impl, l.mxcsr_after, l.mxcsr_note, "");
    }
    for (const VariantSpec& v : variants_) {
      auto it = not_loaded.find(v.label);
      if (it == not_loaded.end()) continue;
      // The sibling with the most impls (a build may leave an op out).
      const Loaded* best = &loaded.front();
      for (const Loaded& l : loaded)
        if (l.plugin.impls.size() > best->plugin.impls.size()) best = &l;
      const Loaded& sibling = *best;
      const std::string from = spec_.name + "." + sibling.spec->label + ".";
      for (const auto& impl : sibling.plugin.impls) {
        Declaration d = impl->declaration();
        d.name = spec_.name + "." + v.label + "." + d.name.substr(from.size());
        d.description = impl->declaration().description;
        add_impl(v, std::make_shared<SiblingDecl>(std::move(d)), 0, "", it->second);
      }
    }
    available_ = true;
    for (const auto& s : versions) version_ += (version_.empty() ? "" : "; ") + s;
    reason_ = "loaded from " + dir + ": ";
    for (std::size_t i = 0; i < findings.size(); ++i) reason_ += (i ? "; " : "") + findings[i];
  }

  /// A declaration without a kernel (for impls of a variant that is not loaded).
  class SiblingDecl final : public Impl {
   public:
    explicit SiblingDecl(Declaration d) : d_(std::move(d)) {}
    const Declaration& declaration() const override { return d_; }
    Status run(Call&) const override { return unavailable(d_.name + " is not loaded"); }

   private:
    Declaration d_;
  };

  /// `mxcsr_note` is non-empty when loading the variant changed MXCSR to `mxcsr`.
  void add_impl(const VariantSpec& v, std::shared_ptr<const Impl> inner, std::uint32_t mxcsr,
                const std::string& mxcsr_note, const std::string& unavailable_reason) {
    const bool replay = !mxcsr_note.empty();
    Declaration d = inner->declaration();
    d.backend = spec_.name;
    d.extra["variant"] = v.label;
    d.extra["compiler"] = v.compiler;
    d.extra["flags"] = v.flags;
    // An impl's own `source = ...` (e.g. the header lines behind an FP16
    // declaration) comes first; the backend's sources follow.
    const std::string own = d.source;
    d.source = spec_.source + (v.note.empty() ? "" : "; " + v.label + ": " + v.note);
    if (!own.empty()) d.source = own + "; " + d.source;
    d.description += " [" + v.label + ": " + v.flags + "]";
    if (replay) d.description += " (loading sets " + mxcsr_note + ")";
    if (!unavailable_reason.empty()) d.description += " (unavailable: " + unavailable_reason + ")";
    impls_.push_back(std::make_shared<VariantImpl>(std::move(inner), std::move(d), mxcsr, replay, unavailable_reason));
  }

  VariantBackendSpec spec_;
  bool loaded_ = false;
  bool available_ = false;
  std::string reason_;
  std::string version_;
  std::vector<VariantSpec> variants_;
  std::vector<std::shared_ptr<const Impl>> impls_;
};

}  // namespace

Result<std::vector<VariantSpec>> parse_variant_manifest(std::string_view text) {
  std::vector<VariantSpec> out;
  std::set<std::string> labels;
  int line_no = 0;
  for (const std::string& line : split(text, '\n')) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = split(line, '\t');
    if (f.size() != 6) {
      return invalid_argument("line " + std::to_string(line_no) + ": expected 6 tab-separated fields " +
                              "(label, library, cpu features, compiler, flags, note), got " +
                              std::to_string(f.size()));
    }
    VariantSpec v;
    v.label = f[0];
    v.library = f[1];
    if (f[2] != "-" && !f[2].empty())
      for (const std::string& feat : split(f[2], ',')) v.cpu_features.push_back(feat);
    v.compiler = f[3];
    v.flags = f[4];
    v.note = f[5];
    if (v.label.empty() || v.library.empty())
      return invalid_argument("line " + std::to_string(line_no) + ": empty label or library");
    if (v.label.find('.') != std::string::npos)
      return invalid_argument("line " + std::to_string(line_no) + ": label '" + v.label + "' contains '.'");
    if (!labels.insert(v.label).second)
      return invalid_argument("line " + std::to_string(line_no) + ": duplicate label '" + v.label + "'");
    out.push_back(std::move(v));
  }
  if (out.empty()) return invalid_argument("no variants listed");
  return out;
}

Result<bool> cpu_has(std::string_view f) {
  const std::optional<CpuFeature> feature = find_cpu_feature(f);
  if (!feature) return invalid_argument("unknown CPU feature '" + std::string(f) + "'");
  return kc::cpu_has(*feature);
}

std::unique_ptr<Backend> make_variant_backend(VariantBackendSpec spec) {
  return std::make_unique<VariantBackend>(std::move(spec));
}

std::optional<std::uint32_t> variant_load_mxcsr(const Impl& impl) {
  if (const auto* v = dynamic_cast<const VariantImpl*>(&impl)) return v->load_mxcsr();
  return std::nullopt;
}

}  // namespace kc::backends
