// kc — a ladder counterexample pinned into a regression contract: the
// contract as it was, its config fixed to the counterexample's and its inputs
// to the counterexample's values (`inject values(...)`), so the failure is
// checked on every later run against every impl in scope.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "kc/ladder.h"
#include "kc/lang.h"

namespace kc::ladder {

namespace {

/// The shortest decimal that reads back as v (nan, inf, -inf spelled so).
std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

/// FNV-1a, 64 bits: a stable id suffix for the same counterexample.
std::string short_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(h >> 32));
  return buf;
}

}  // namespace

Result<PinnedContract> pin_counterexample(const Contract& contract, const Counterexample& cx,
                                         const std::string& impl) {
  Contract p = contract;
  std::ostringstream full;
  full << impl << "|" << cx.config;
  for (const auto& [name, values] : cx.inputs) {
    full << "|" << name;
    for (double v : values) full << "," << number_text(v);
  }
  p.id = contract.id + "-PIN-" + short_hash(full.str());
  p.meta["title"] = "regression: the shrunk counterexample of " + impl + " for " + contract.id;
  p.meta["retest"] = "always";
  p.comment = "Pinned by `kc ladder --pin` from the verification ladder's shrunk counterexample of " + impl +
              " (L3): " + cx.text() + ". The contract is " + contract.id +
              " with its config and inputs fixed to that counterexample.";
  p.depends.clear();
  p.depends_locs.clear();

  // The config: the dtype fixes the precision conjuncts, every other key a
  // `KEY in {v}` axis (an existing one narrowed, or a new one).
  std::istringstream words(cx.config);
  for (std::string kv; words >> kv;) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) return invalid_argument("counterexample config '" + cx.config + "' is not KEY=VALUE ...");
    const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (key == "dtype") {
      const auto dt = parse_dtype(value);
      if (!dt) return invalid_argument("counterexample dtype '" + value + "' is not a precision kc knows");
      for (auto& pred : p.pre)
        if (pred.kind == Predicate::Kind::kPrecision) pred.dtypes = {*dt};
      continue;
    }
    bool pinned = false;
    for (auto& pred : p.pre) {
      if (pred.kind == Predicate::Kind::kParamIn && pred.key == key) {
        pred.values = {value};
        pinned = true;
      }
      if (pred.kind == Predicate::Kind::kShape)
        for (auto& [dim, sizes] : pred.dim_sets)
          if (dim == key) {
            sizes = {value};
            pinned = true;
          }
    }
    if (!pinned) {
      Predicate axis;
      axis.kind = Predicate::Kind::kParamIn;
      axis.key = key;
      axis.values = {value};
      axis.text = key + " in {" + value + "}";
      p.pre.push_back(axis);
    }
  }

  // The inputs: exactly the counterexample's values, one sample.
  Protocol& m = p.measure;
  m.kind = Protocol::Kind::kInject;
  m.anomaly = "values";
  m.anomaly_args.clear();
  for (const auto& [name, values] : cx.inputs) {
    m.anomaly_args.push_back(name);
    for (double v : values) m.anomaly_args.push_back(number_text(v));
  }
  m.count = 0;
  m.per = "config";
  m.param.clear();
  m.values.clear();
  m.density.reset();
  m.positions.clear();

  // Printed and read back: what is written is what kc will run.
  const std::string text = lang::print_contract_kc(p);
  const auto parsed = lang::parse_kc(text, p.id + ".kc");
  for (const auto& d : parsed.diagnostics)
    if (d.severity == lang::Diagnostic::Severity::kError)
      return invalid_argument("the pinned contract does not parse: " + d.render());
  if (parsed.document.contracts.size() != 1 || !parsed.document.contracts[0].executable())
    return invalid_argument("the pinned contract of " + contract.id + " is not executable");
  return PinnedContract{p.id, text};
}

}  // namespace kc::ladder
