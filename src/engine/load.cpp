#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kc/engine.h"
#include "kc/oracle_options.h"

namespace kc::engine {

namespace fs = std::filesystem;

namespace {
bool is_contract_file(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".kc" || ext == ".yaml" || ext == ".yml";
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

/// Values of a parameter the scoped ops read as numbers (their default is one)
/// must be numbers: `M in {abc}` would otherwise run every config at the default.
void check_numeric_values(const Contract& c, const std::string& param, const std::vector<std::string>& values,
                          const SourceLoc& loc, const std::string& line_text, std::vector<lang::Diagnostic>* out) {
  for (const auto& scope : c.scope) {
    for (const auto& op_name : ops_for_scope(scope)) {
      const Op* op = builtin_ops().find(op_name);
      if (!op) continue;
      for (const auto& p : op->params()) {
        if (p.name != param || !is_number(p.default_value)) continue;
        for (const auto& v : values) {
          if (is_number(v)) continue;
          lang::Diagnostic d;
          d.loc = loc;
          d.line_text = line_text;
          d.message = "'" + v + "' is not a number; " + param + " of op " + op_name + " is numeric (default " +
                      p.default_value + ")";
          d.expected = param + " in {" + p.default_value + ", ...}";
          out->push_back(std::move(d));
          return;
        }
      }
    }
  }
}

std::string line_of(const std::string& file, int line) {
  std::ifstream in(file);
  std::string s;
  for (int i = 1; std::getline(in, s); ++i)
    if (i == line) return s;
  return {};
}

void check_parameter_values(const Contract& c, const std::string& file, std::vector<lang::Diagnostic>* out) {
  for (const Predicate& p : c.pre)
    if (p.kind == Predicate::Kind::kParamIn)
      check_numeric_values(c, p.key, p.values, p.loc, line_of(file, p.loc.line), out);
  if (c.measure.kind == Protocol::Kind::kSweep)
    check_numeric_values(c, c.measure.param, c.measure.values, c.measure_info.loc,
                         line_of(file, c.measure_info.loc.line), out);
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
      check_parameter_values(c, file, &out.diagnostics);
      out.contracts.push_back(std::move(c));
      out.files.push_back(file);
    }
    for (auto& i : parsed.document.impls) out.impls.push_back(std::move(i));
    for (auto& c : parsed.document.calibrations) out.calibrations.push_back(std::move(c));
    for (auto& s : parsed.document.suites) out.suites.push_back(std::move(s));
  }
  // A higher_precision option (or precision) the scope's op's oracle does not
  // honour makes the reference clause descriptive for every command alike:
  // lint, check, explain and `kc list contracts` agree on what is executable.
  mark_unhonoured_references(&out.contracts, out.files);
  return out;
}

}  // namespace kc::engine
