// kc — capability declarations read against a call, and the selected-path
// channel from a kernel to the engine (see kc/capability.h).
#include "kc/capability.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "kc/enum_table.h"

namespace kc {

namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

/// The text split at `sep` (a word surrounded by spaces, or one character).
std::vector<std::string> split(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    out.push_back(trim(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start)));
    if (at == std::string_view::npos) break;
    start = at + sep.size();
  }
  return out;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

/// Glob match with '*' only, case-insensitive.
bool glob(std::string_view p, std::string_view s) {
  std::size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && lower(p[pi]) == lower(s[si])) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

const char* kind_word(ShapeCondition::Kind k) {
  switch (k) {
    case ShapeCondition::Kind::kMultipleOf: return "a multiple of";
    case ShapeCondition::Kind::kAtMost: return "at most";
    case ShapeCondition::Kind::kAtLeast: return "at least";
  }
  return "";
}

bool holds(const ShapeCondition& c, std::int64_t v) {
  switch (c.kind) {
    case ShapeCondition::Kind::kMultipleOf: return v % c.n == 0;
    case ShapeCondition::Kind::kAtMost: return v <= c.n;
    case ShapeCondition::Kind::kAtLeast: return v >= c.n;
  }
  return true;
}

/// Dense row-major strides for `shape`.
bool contiguous(const Tensor& t) {
  std::int64_t expect = 1;
  for (std::size_t d = t.rank(); d-- > 0;) {
    if (t.dim(d) != 1 && t.strides()[d] != expect) return false;
    expect *= t.dim(d);
  }
  return true;
}

/// The declared alignment: 0 for `any`, else a power of two in bytes.
Result<std::size_t> declared_alignment(const std::string& text) {
  std::string v = trim(text);
  for (char& ch : v) ch = lower(ch);
  if (v == "any") return std::size_t{0};
  std::size_t n = 0, used = 0;
  try {
    n = static_cast<std::size_t>(std::stoull(v, &used));
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || n == 0 || (n & (n - 1)) != 0 || n > kPlacementBase)
    return invalid_argument("alignment = " + text + ": expected any, or the bytes the impl needs its pointers "
                            "aligned to: a power of two up to " + std::to_string(kPlacementBase) +
                            " (kc places tensors at most " + std::to_string(kPlacementBase) + "-byte aligned)");
  return n;
}

}  // namespace

bool is_placement_key(std::string_view key, const std::vector<std::string>& tensors) {
  const std::string_view prefix = kPlacementPrefix;
  if (key.substr(0, prefix.size()) != prefix) return false;
  const std::string_view name = key.substr(prefix.size());
  for (const std::string& t : tensors)
    if (t == name) return true;
  return false;
}

Result<std::optional<std::size_t>> requested_placement(const Call& call, std::size_t k) {
  const std::string key = kPlacementPrefix + call.names.at(k);
  const auto it = call.config.params.find(key);
  if (it == call.config.params.end()) return std::optional<std::size_t>{};
  const std::string v = trim(it->second);
  std::size_t n = 0, used = 0;
  try {
    n = static_cast<std::size_t>(std::stoull(v, &used));
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || v[0] == '-' || n >= kPlacementBase)
    return invalid_argument(key + " = " + it->second + ": expected the bytes past a " +
                            std::to_string(kPlacementBase) + "-byte boundary the tensor starts at, 0 to " +
                            std::to_string(kPlacementBase - 1));
  return std::optional<std::size_t>{n};
}

std::size_t placed_alignment(std::optional<std::size_t> placement) {
  if (!placement) return kDefaultAlignment;
  if (*placement == 0) return kPlacementBase;
  return *placement & (~*placement + 1);  // the lowest set bit
}

PlacedTensors::PlacedTensors(Call& call) : call_(call) {
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    auto p = requested_placement(call, k);
    if (!p.ok()) {
      status_ = p.status();
      return;
    }
  }
  for (std::size_t k = 0; k < call.tensors.size(); ++k) {
    const std::optional<std::size_t> p = *requested_placement(call, k);
    if (!p) continue;
    Tensor& t = call.tensors[k];
    const std::size_t n = t.nbytes();
    auto* block = static_cast<std::byte*>(std::aligned_alloc(kPlacementBase, (n / kPlacementBase + 2) * kPlacementBase));
    if (!block) {
      status_ = Status{StatusCode::kResourceExhausted, "cannot place " + call.names[k] + " for the call"};
      return;
    }
    if (n > 0) std::memcpy(block + *p, t.raw(), n);
    Tensor view = Tensor::view(t, block + *p);
    moved_.push_back({k, std::move(t), block});
    t = std::move(view);
  }
}

PlacedTensors::~PlacedTensors() {
  for (Moved& m : moved_) {
    Tensor& now = call_.tensors[m.k];
    // What the kernel left in the placed copy (or in a tensor it put there
    // itself, if it has the same size) is the call's.
    if (now.nbytes() == m.own.nbytes() && m.own.nbytes() > 0) std::memcpy(m.own.raw(), now.raw(), m.own.nbytes());
    now = std::move(m.own);
    std::free(m.block);
  }
}

Status add_workspace(Call& call) {
  const auto it = call.config.params.find(kWorkspaceKey);
  if (it == call.config.params.end() || call.has(kWorkspaceTensor)) return ok_status();
  const std::string v = trim(it->second);
  std::size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || n < 0)
    return invalid_argument(std::string(kWorkspaceKey) + " = " + it->second +
                            ": expected the bytes of workspace the call gives, an integer >= 0");
  call.names.push_back(kWorkspaceTensor);
  call.roles.push_back(Role::kInOut);
  // One-byte elements: the workspace is bytes to the kernel.
  call.tensors.push_back(Tensor(DType::kFP8E4M3, {static_cast<std::int64_t>(n)}));
  return ok_status();
}

Tensor* call_workspace(Call& call) { return call.has(kWorkspaceTensor) ? &call.t(kWorkspaceTensor) : nullptr; }

Result<std::optional<std::int64_t>> declared_workspace(const Declaration& decl, const Call& call) {
  const std::string text = decl.get("workspace");
  if (text.empty()) return std::optional<std::int64_t>{};
  std::int64_t bytes = 1;
  for (const std::string& factor : split(text, "*")) {
    if (factor.empty())
      return invalid_argument("workspace = " + text + ": expected a constant or a product of integers and config "
                              "sizes (4 * M * N)");
    if (std::isdigit(static_cast<unsigned char>(factor[0]))) {
      std::size_t used = 0;
      std::int64_t n = 0;
      try {
        n = std::stoll(factor, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != factor.size())
        return invalid_argument("workspace = " + text + ": '" + factor + "' is neither an integer nor a size name");
      bytes *= n;
      continue;
    }
    if (call.config.get(factor).empty())
      return invalid_argument("workspace = " + text + " names size '" + factor + "', which the call (" +
                              call.config.to_string() + ") does not set");
    bytes *= call.config.get_int(factor);
  }
  return std::optional<std::int64_t>{bytes};
}

Result<ShapeClass> parse_shape_class(std::string_view text) {
  ShapeClass sc;
  const std::string all = trim(text);
  if (all.empty() || all == "any") return sc;
  const char* expected = "expected any, or multiple_of(k[, SIZE, ...]), at_most(n[, SIZE, ...]) or "
                         "at_least(n[, SIZE, ...]) joined by `and`";
  for (const std::string& part : split(all, " and ")) {
    const std::size_t open = part.find('(');
    if (open == std::string::npos || part.back() != ')')
      return invalid_argument("shape_class '" + all + "': '" + part + "': " + expected);
    const std::string head = trim(part.substr(0, open));
    ShapeCondition c;
    if (head == "multiple_of") c.kind = ShapeCondition::Kind::kMultipleOf;
    else if (head == "at_most") c.kind = ShapeCondition::Kind::kAtMost;
    else if (head == "at_least") c.kind = ShapeCondition::Kind::kAtLeast;
    else return invalid_argument("shape_class '" + all + "': unknown condition '" + head + "': " + expected);
    const std::vector<std::string> args = split(std::string_view(part).substr(open + 1, part.size() - open - 2), ",");
    try {
      std::size_t used = 0;
      c.n = std::stoll(args[0], &used);
      if (used != args[0].size()) throw std::invalid_argument(args[0]);
    } catch (const std::exception&) {
      return invalid_argument("shape_class '" + all + "': '" + args[0] + "' is not an integer in " + part);
    }
    if (c.n < 1)
      return invalid_argument("shape_class '" + all + "': " + part + " needs a positive integer");
    for (std::size_t i = 1; i < args.size(); ++i) {
      if (args[i].empty()) return invalid_argument("shape_class '" + all + "': empty size name in " + part);
      c.sizes.push_back(args[i]);
    }
    sc.conditions.push_back(std::move(c));
  }
  return sc;
}

std::string GpuArch::name() const { return "sm_" + std::to_string(cc) + (exact ? "a" : ""); }

namespace {
/// nvcc's spelling of a real architecture, sm_XY or sm_XYa (minor is the last
/// digit); nullopt for any other word.
std::optional<GpuArch> parse_gpu_arch(std::string_view word) {
  if (word.size() < 5 || !iequals(word.substr(0, 3), "sm_")) return std::nullopt;
  std::string_view digits = word.substr(3);
  GpuArch arch;
  if (digits.back() == 'a' || digits.back() == 'A') {
    arch.exact = true;
    digits.remove_suffix(1);
  }
  if (digits.empty() || digits.size() > 3 || digits.front() == '0') return std::nullopt;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    arch.cc = arch.cc * 10 + (ch - '0');
  }
  return arch;
}
}  // namespace

Result<DeviceNeeds> declared_device_capability(const Declaration& decl) {
  const std::string text = decl.get("device_capability");
  DeviceNeeds needs;
  std::string words = text;
  for (char& ch : words)
    if (ch == ',') ch = ' ';
  std::istringstream in(words);
  std::string word;
  bool any = false;
  while (in >> word) {
    if (iequals(word, "and")) continue;
    if (iequals(word, "any")) {
      any = true;
      continue;
    }
    if (const std::optional<GpuArch> arch = parse_gpu_arch(word)) {
      if (needs.gpu)
        return invalid_argument("device_capability = " + text + ": one CUDA architecture at most (" +
                                needs.gpu->name() + " and " + arch->name() + ")");
      needs.gpu = arch;
      continue;
    }
    const std::optional<CpuFeature> f = find_cpu_feature(word);
    if (!f) {
      std::string known;
      for (const CpuFeatureInfo& i : cpu_feature_table()) known += (known.empty() ? "" : ", ") + std::string(i.name);
      return invalid_argument("device_capability = " + text + ": '" + word + "' is not a CPU feature kc knows (" +
                              known + ") nor a CUDA architecture (sm_80, sm_90a)");
    }
    needs.cpu.push_back(*f);
  }
  if (any && !needs.empty()) return invalid_argument("device_capability = " + text + ": 'any' stands alone");
  return needs;
}

Result<CapabilityGap> capability_gap(const Declaration& decl, const Call& call) {
  KC_ASSIGN_OR_RETURN(const ShapeClass sc, parse_shape_class(decl.shape_class));
  for (const ShapeCondition& c : sc.conditions) {
    const std::string where = " (shape_class " + decl.shape_class + ")";
    if (c.sizes.empty()) {
      for (std::size_t k = 0; k < call.tensors.size(); ++k)
        for (std::size_t d = 0; d < call.tensors[k].rank(); ++d)
          if (!holds(c, call.tensors[k].dim(d)))
            return CapabilityGap{"shape_class", call.names[k] + " dimension " + std::to_string(d) + " = " + std::to_string(call.tensors[k].dim(d)) +
                   " is not " + kind_word(c.kind) + " " + std::to_string(c.n) + where};
      continue;
    }
    for (const std::string& size : c.sizes) {
      const std::string v = call.config.get(size);
      if (v.empty())
        return invalid_argument("shape_class " + decl.shape_class + " names size '" + size + "', which the call (" +
                                call.config.to_string() + ") does not set");
      const std::int64_t n = call.config.get_int(size);
      if (!holds(c, n))
        return CapabilityGap{"shape_class", size + " = " + v + " is not " + kind_word(c.kind) + " " +
                                                std::to_string(c.n) + where};
    }
  }
  std::string layouts = decl.get("layouts");
  for (char& ch : layouts) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (!layouts.empty() && layouts != "STRIDED") {
    if (layouts != "CONTIGUOUS")
      return invalid_argument("layouts = " + layouts + ": expected CONTIGUOUS or STRIDED");
    for (std::size_t k = 0; k < call.tensors.size(); ++k)
      if (!contiguous(call.tensors[k])) {
        std::string strides;
        for (auto s : call.tensors[k].strides()) strides += (strides.empty() ? "" : ", ") + std::to_string(s);
        return CapabilityGap{"layouts",
                             call.names[k] + " has strides (" + strides + "), not dense row-major (layouts = CONTIGUOUS)"};
      }
  }
  const std::string alignment = decl.get("alignment");
  if (!alignment.empty()) {
    KC_ASSIGN_OR_RETURN(const std::size_t need, declared_alignment(alignment));
    for (std::size_t k = 0; k < call.tensors.size(); ++k) {
      KC_ASSIGN_OR_RETURN(const std::optional<std::size_t> p, requested_placement(call, k));
      const std::size_t has = placed_alignment(p);
      const std::size_t element = dtype_info(call.tensors[k].dtype()).storage_bytes;
      const std::string where = p ? call.names[k] + " starts " + std::to_string(*p) + " bytes past a " +
                                        std::to_string(kPlacementBase) + "-byte boundary"
                                  : call.names[k] + " is where kc puts it by default, " +
                                        std::to_string(kDefaultAlignment) + "-byte aligned";
      if (need == 0 && has % element != 0)
        return CapabilityGap{"alignment", where + ", not a multiple of its " + std::to_string(element) +
                                              "-byte element (alignment = any covers element-aligned pointers)"};
      if (need > 0 && has < need)
        return CapabilityGap{"alignment", where + " (" + std::to_string(has) + "-byte aligned), where alignment = " +
                                              alignment + " needs " + std::to_string(need)};
    }
  }
  KC_ASSIGN_OR_RETURN(const DeviceNeeds device, declared_device_capability(decl));
  if (const std::string missing = missing_cpu_features(device.cpu); !missing.empty())
    return CapabilityGap{"device_capability",
                         "this CPU lacks " + missing + " (device_capability = " + decl.get("device_capability") + ")"};
  if (device.gpu) {
    const int has = decl.runtime.device_cc;
    if (has == 0)
      return invalid_argument("device_capability = " + decl.get("device_capability") + " names a CUDA architecture, " +
                              "but the " + decl.backend + " backend reports no CUDA device that runs " + decl.name +
                              "'s kernels");
    if (!device.gpu->runs_on(has))
      return CapabilityGap{"device_capability", "this GPU is sm_" + std::to_string(has) + ", where the kernels need " +
                                                    device.gpu->name() +
                                                    (device.gpu->exact ? " exactly" : " or newer") +
                                                    " (device_capability = " + decl.get("device_capability") + ")"};
  }
  KC_ASSIGN_OR_RETURN(const std::optional<std::int64_t> need, declared_workspace(decl, call));
  if (need && call.has(kWorkspaceTensor)) {
    const std::int64_t given = call.t(kWorkspaceTensor).numel();
    if (given < *need)
      return CapabilityGap{"workspace", "the call gives " + std::to_string(given) + " bytes of workspace, where " +
                                            "workspace = " + decl.get("workspace") + " needs " +
                                            std::to_string(*need)};
  }
  return CapabilityGap{};
}

bool path_matches(std::string_view patterns, std::string_view path) {
  for (const std::string& p : split(patterns, "|"))
    if (!p.empty() && glob(p, path)) return true;
  return false;
}

namespace {
thread_local SelectedPath t_selected;
}  // namespace

void report_selected_path(std::string_view path, std::string_view reason) {
  t_selected.path = std::string(path);
  t_selected.reason = std::string(reason);
}

SelectedPath take_selected_path() {
  SelectedPath out = std::move(t_selected);
  t_selected = {};
  return out;
}

}  // namespace kc
