#include "engine/select.h"

#include <algorithm>
#include <cctype>
#include <charconv>
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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool digit(char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }
bool space(char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; }

/// A backend's version line cut into its parts at ';' and ','
/// ("clang++ 14.0.6 ; g++ 12.2.0" -> "clang++ 14.0.6", "g++ 12.2.0").
std::vector<std::string> version_parts(const std::string& line) {
  std::vector<std::string> parts;
  std::string cur;
  for (char ch : line + ";") {
    if (ch != ';' && ch != ',') {
      cur += ch;
      continue;
    }
    const auto b = cur.find_first_not_of(" \t"), e = cur.find_last_not_of(" \t");
    if (b != std::string::npos) parts.push_back(cur.substr(b, e - b + 1));
    cur.clear();
  }
  return parts;
}

/// The numbers that start a word of `text` (or follow a `v` that does:
/// "v4.1.4"): dotted ones ("0.3.21", "3.1" of "3.1+debian") only, unless
/// `bare` also takes plain integers. "SSE4.1", "x86-64" and "THREADS=64" hold none.
std::vector<std::string> numbers_in(const std::string& text, bool bare) {
  std::vector<std::string> out;
  auto starts_word = [&](std::size_t i) { return i == 0 || space(text[i - 1]) || text[i - 1] == '('; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!digit(text[i])) continue;
    const bool after_v = i > 0 && (text[i - 1] == 'v' || text[i - 1] == 'V') && starts_word(i - 1);
    if (!starts_word(i) && !after_v) {
      while (i < text.size() && !space(text[i])) ++i;
      continue;
    }
    std::size_t j = i;
    bool dotted = false;
    while (j < text.size() && (digit(text[j]) || (text[j] == '.' && j + 1 < text.size() && digit(text[j + 1])))) {
      dotted = dotted || text[j] == '.';
      ++j;
    }
    if (dotted || bare) out.push_back(text.substr(i, j - i));
    i = j;
    while (i < text.size() && !space(text[i])) ++i;
  }
  return out;
}

std::string first_word(const std::string& text) {
  const auto e = text.find_first_of(" \t(");
  return text.substr(0, e);
}

/// `flag(fast_math)` and `-ffast-math` name the same flag.
std::string flag_name(std::string_view s) {
  std::string out = lower(s);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

/// on/true/yes/1 and off/false/no/0 are the same values.
std::string flag_value(std::string_view v) {
  const std::string l = lower(v);
  if (l == "on" || l == "true" || l == "yes" || l == "1" || l == "enabled") return "on";
  if (l == "off" || l == "false" || l == "no" || l == "0" || l == "disabled") return "off";
  return l;
}

/// The value of flag F an impl records, from a declared key of that name or
/// from the command-line options it was built with (`flags` of a compiler
/// build, `build_options` of an OpenCL program): -fF / -F / -cl-F is on,
/// -fno-F off, -fF=v v, -O<level> is flag(O); -Ofast and
/// -cl-fast-relaxed-math imply fast_math, which is otherwise off (the
/// compilers' default). The last option naming a flag wins, as on a command line.
std::optional<std::string> recorded_flag(const Declaration& decl, const std::string& flag, std::string* why_not) {
  const std::string name = flag_name(flag);
  for (const auto& [k, v] : decl.extra)
    if (flag_name(k) == name && k != "flags" && k != "build_options") return v;
  for (const char* known : {"accumulator", "determinism", "nan", "denormal", "oob", "shape_class"})
    if (name == known) return decl.get(known);
  std::string options;
  for (const char* key : {"flags", "build_options"})
    if (auto it = decl.extra.find(key); it != decl.extra.end()) options += (options.empty() ? "" : " ") + it->second;
  if (options.empty()) {
    *why_not = "impl does not record flag " + flag + ": " + decl.name +
               " declares no such key and records no build flags";
    return std::nullopt;
  }
  std::optional<std::string> value;
  bool fast = false;
  std::size_t at = 0;
  while (at < options.size()) {
    const auto b = options.find_first_not_of(" \t", at);
    if (b == std::string::npos) break;
    const auto e = std::min(options.find_first_of(" \t", b), options.size());
    const std::string t = lower(options.substr(b, e - b));
    at = e;
    if (t == "-ofast" || t == "-cl-fast-relaxed-math") fast = true;
    if (name == "o" && t.size() > 2 && t.rfind("-o", 0) == 0) value = t.substr(2);
    for (const std::string prefix : {"-f", "-cl-", "-"}) {
      if (t == prefix + name) value = "on";
      else if (t == prefix + "no-" + name) value = "off";
      else if (t.rfind(prefix + name + "=", 0) == 0) value = t.substr(prefix.size() + name.size() + 1);
      else continue;
      break;
    }
  }
  if (!value && name == "fast-math") value = fast ? "on" : "off";
  if (!value)
    *why_not = "impl does not record flag " + flag + ": " + decl.name + " records its build flags (" + options +
               ") and none of them names it";
  return value;
}

bool stack_matches(const std::string& stack, const Declaration& decl, const BackendInfo& backend) {
  const std::string want = lower(stack);
  for (const auto& n : recorded_stack_names(decl, backend))
    if (glob_match(want, lower(n))) return true;
  return false;
}

std::string first_names(const std::vector<std::string>& names, std::size_t most) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < most; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > most) out += ", ...";
  return out;
}

}  // namespace

std::optional<int> compare_versions(std::string_view a, std::string_view b) {
  auto parse = [](std::string_view s) -> std::optional<std::vector<unsigned long long>> {
    std::vector<unsigned long long> out;
    if (s.empty()) return std::nullopt;
    while (true) {
      const auto dot = s.find('.');
      const std::string_view part = s.substr(0, dot);
      unsigned long long v = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      if (part.empty() || ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
      out.push_back(v);
      if (dot == std::string_view::npos) return out;
      s.remove_prefix(dot + 1);
    }
  };
  const auto x = parse(a), y = parse(b);
  if (!x || !y) return std::nullopt;
  for (std::size_t i = 0; i < std::max(x->size(), y->size()); ++i) {
    const unsigned long long p = i < x->size() ? (*x)[i] : 0, q = i < y->size() ? (*y)[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

std::optional<std::string> recorded_version(const Declaration& decl, const BackendInfo& backend,
                                            const std::string& stack_hint, std::string* why_not) {
  if (const std::string declared = decl.get("version"); !declared.empty()) {
    const auto n = numbers_in(declared, true);
    if (!n.empty()) return n.front();
    *why_not = "impl does not record its version: " + decl.name + " declares version = " + declared +
               ", not a dotted number";
    return std::nullopt;
  }
  const std::string who = decl.name + " (backend " + decl.backend + ")";
  if (backend.version.empty()) {
    *why_not = "impl does not record its version: " + who + " records no version";
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> numbered;  // part, its first number
  for (bool bare : {false, true}) {
    for (const auto& part : version_parts(backend.version))
      if (auto n = numbers_in(part, bare); !n.empty()) numbered.emplace_back(part, n.front());
    if (!numbered.empty()) break;
  }
  if (numbered.empty()) {
    *why_not = "impl does not record its version: " + who + " records '" + backend.version + "', with no version number";
    return std::nullopt;
  }
  if (numbered.size() == 1) return numbered.front().second;
  // Several libraries on one line: the part that names the impl's own.
  for (const std::string& name : {decl.get("library"), decl.get("compiler"), stack_hint, decl.backend}) {
    if (name.empty()) continue;
    for (const auto& [part, number] : numbered)
      if (glob_match(lower(name), lower(first_word(part)))) return number;
  }
  *why_not = "impl does not record its version: " + who + " records '" + backend.version +
             "', several versions, and the impl names none of their libraries";
  return std::nullopt;
}

std::vector<std::string> recorded_stack_names(const Declaration& decl, const BackendInfo& backend) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add = [&](const std::string& n) {
    if (!n.empty() && seen.insert(lower(n)).second) names.push_back(n);
  };
  add(decl.backend);
  for (const char* key : {"library", "vendor", "device", "compiler", "variant", "stack"}) add(decl.get(key));
  // Words of the version line: library, vendor and device names ("OpenBLAS",
  // "cuBLAS", "PoCL", "AMD"); a word is letters, digits, '+' and '_', with a letter.
  std::string word;
  for (char ch : backend.version + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '+' || ch == '_') {
      word += ch;
      continue;
    }
    const bool letter = std::any_of(word.begin(), word.end(), [](char w) { return std::isalpha(static_cast<unsigned char>(w)) != 0; });
    if (word.size() >= 2 && letter) add(word);
    word.clear();
  }
  return names;
}

Result<std::string> unmet_precondition(const Contract& contract, const Declaration& decl, const BackendInfo& backend) {
  std::string stack_hint;
  for (const Predicate& p : contract.pre)
    if (p.kind == Predicate::Kind::kStack && !p.values.empty()) stack_hint = p.values.front();
  for (const Predicate& p : contract.pre) {
    if (p.values.empty()) continue;
    const std::string& want = p.values.front();
    switch (p.kind) {
      case Predicate::Kind::kStack: {
        // `stack = X` or `stack in {X, Y, ...}`: met when any one matches.
        bool met = false;
        for (const auto& s : p.values)
          met = met || stack_matches(s, decl, backend) || glob_match(s, decl.name) || glob_match(s + ".*", decl.name);
        if (!met) {
          std::string names;
          for (const auto& s : p.values) names += (names.empty() ? "" : ", ") + s;
          return "contract is for stack " + (p.values.size() > 1 ? "{" + names + "}" : want) + "; " + decl.name +
                 " records " + first_names(recorded_stack_names(decl, backend), 8);
        }
        break;
      }
      case Predicate::Kind::kVersion: {
        if (!compare_versions(want, want))
          return invalid_argument("pre: 'version " + p.cmp + " " + want +
                                  "': a version is a dotted number (version >= 0.3.21)");
        std::string why_not;
        const auto have = recorded_version(decl, backend, stack_hint, &why_not);
        if (!have) return why_not;
        const int c = *compare_versions(*have, want);
        const bool ok = p.cmp == ">=" ? c >= 0 : p.cmp == ">" ? c > 0 : p.cmp == "<=" ? c <= 0 : p.cmp == "<" ? c < 0
                        : p.cmp == "!=" ? c != 0 : c == 0;
        if (!ok)
          return "contract applies to version " + p.cmp + " " + want + "; " + decl.name + " records version " + *have;
        break;
      }
      case Predicate::Kind::kFlag: {
        std::string why_not;
        const auto have = recorded_flag(decl, p.key, &why_not);
        if (!have) return why_not;
        if (flag_value(*have) != flag_value(want))
          return "contract applies to flag(" + p.key + ") = " + want + "; " + decl.name + " records " +
                 (have->empty() ? std::string("nothing") : *have);
        break;
      }
      default:
        break;
    }
  }
  return std::string();
}

std::vector<ReferenceImpl> alternate_stack_impls(const std::string& stack, const Declaration& under_test,
                                                 const std::vector<ReferenceImpl>& available, std::string* why_none) {
  std::vector<ReferenceImpl> out;
  bool only_itself = false;
  for (const ReferenceImpl& r : available) {
    if (!r.impl || !r.backend.available) continue;
    const Declaration& d = r.impl->declaration();
    if (d.op != under_test.op) continue;
    const bool by_name = glob_match(stack, d.name) || glob_match(stack + ".*", d.name);
    if (!by_name && !stack_matches(stack, d, r.backend)) continue;
    if (d.name == under_test.name) {
      only_itself = true;
      continue;
    }
    // Impls wrong on purpose arbitrate nothing unless S names them.
    if (!by_name && !d.broken_on_purpose.empty()) continue;
    out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(), [&](const ReferenceImpl& a, const ReferenceImpl& b) {
    const std::string& x = a.impl->declaration().name;
    const std::string& y = b.impl->declaration().name;
    if ((x == stack) != (y == stack)) return x == stack;
    return x < y;
  });
  if (out.empty())
    *why_none = only_itself ? "alternate stack " + stack + " names only the impl under test (" + under_test.name +
                                  "): an impl is not its own arbiter"
                            : "alternate stack " + stack + " matches no available impl of op " + under_test.op +
                                  " (by name, backend, compiler, library, vendor or device)";
  return out;
}

std::shared_ptr<const std::vector<ReferenceImpl>> available_impls(BackendRegistry& registry) {
  auto out = std::make_shared<std::vector<ReferenceImpl>>();
  const std::vector<BackendInfo> infos = registry.infos();
  for (const auto& impl : registry.impls())
    for (const auto& b : infos)
      if (b.name == impl->declaration().backend && b.available) out->push_back({impl, b});
  return out;
}

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

bool named_by_prefix(const std::vector<std::string>& filters, const std::string& name) {
  const std::string prefix = name.substr(0, name.find('.'));
  for (const auto& f : filters)
    if (!backend_prefix(f).empty() && backend_prefix(f) == prefix && glob_match(f, name)) return true;
  return false;
}

const Suite* resolve_suite(const std::string& name, const LoadedContracts& loaded,
                           const std::vector<std::shared_ptr<const Impl>>& impls,
                           std::vector<lang::Diagnostic>* diagnostics) {
  const Suite* suite = nullptr;
  std::vector<std::string> names;
  for (const auto& s : loaded.suites) {
    names.push_back(s.name);
    if (s.name == name) suite = &s;
  }
  if (!suite) {
    std::string known;
    for (const auto& s : loaded.suites) known += (known.empty() ? "" : ", ") + s.name + " (tier " + s.tier + ")";
    diagnostics->push_back(selection_error(
        "--suite",
        "no suite '" + name + "' in the given paths" +
            (known.empty() ? std::string(" (they hold no suite block)") : " (suites: " + known + ")"),
        lang::nearest_word(name, names)));
    return nullptr;
  }
  std::vector<std::string> ids, impl_names;
  for (const auto& c : loaded.contracts) ids.push_back(c.id);
  for (const auto& impl : impls) impl_names.push_back(impl->declaration().name);
  bool ok = true;
  auto unmatched = [&](const std::string& what, const std::string& glob, const std::vector<std::string>& pool) {
    lang::Diagnostic d;
    d.severity = lang::Diagnostic::Severity::kError;
    d.loc = suite->loc;
    d.message = "suite " + suite->name + ": no " + what + " matches '" + glob + "'";
    d.suggestion = lang::nearest_word(glob, pool);
    diagnostics->push_back(std::move(d));
    ok = false;
  };
  for (const auto& g : suite->contracts)
    if (!any_match(g, ids)) unmatched("contract", g, ids);
  for (const auto& g : suite->impls)
    if (!any_match(g, impl_names)) unmatched("impl", g, impl_names);
  return ok ? suite : nullptr;
}

std::string suite_note(const Suite& suite) {
  std::string contracts, impls;
  for (const auto& c : suite.contracts) contracts += (contracts.empty() ? "" : ", ") + c;
  for (const auto& i : suite.impls) impls += (impls.empty() ? "" : ", ") + i;
  return "suite " + suite.name + " (tier " + suite.tier + ", " + suite.loc.file + ":" + std::to_string(suite.loc.line) +
         "): contracts " + (contracts.empty() ? "all" : contracts) + "; impls " + (impls.empty() ? "all" : impls);
}

std::vector<lang::Diagnostic> check_selection(const CheckRequest& request, const LoadedContracts& loaded,
                                              const std::vector<std::shared_ptr<const Impl>>& impls,
                                              const std::vector<BackendInfo>& backends) {
  std::vector<lang::Diagnostic> out;
  // Paths: every one given must contribute a contract (a missing file is
  // already a parse diagnostic).
  std::set<std::string> files(loaded.files.begin(), loaded.files.end());
  // A file of suite blocks alone holds what --suite selects.
  if (!request.suite.empty())
    for (const auto& s : loaded.suites) files.insert(s.loc.file);
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
  // One that died or hung while loading (in its probe child) is a finding about
  // the library, not a usage error: kc says so and runs the rest.
  auto loaded_ok = [&](const std::string& backend, const std::string& flag, const std::vector<std::string>& given) {
    if (given.empty()) return;
    for (const auto& b : backends)
      if (b.name == backend && !b.available && !b.load_died)
        out.push_back(selection_error(flag, "cannot load: " + b.reason, ""));
  };
  loaded_ok("plugin", "--plugin", request.plugin_paths);
  loaded_ok("opencl_user", "kc vet (.cl)", request.opencl_sources);
  for (const auto& l : request.libraries)
    loaded_ok(l.label.empty() ? l.backend : l.backend + "@" + l.label, "--library " + l.spec(), {l.path});
  // Cross-file contract errors `kc lint` rejects (a depends id outside the
  // given files is not one: the file that defines it may not be loaded).
  for (auto& d : lang::resolve_depends(loaded.contracts))
    if (d.severity == lang::Diagnostic::Severity::kError && d.message.find("unknown contract") == std::string::npos)
      out.push_back(std::move(d));
  return out;
}

}  // namespace kc::engine
