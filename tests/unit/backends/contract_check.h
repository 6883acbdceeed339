// Shared by the library-backend tests (onednn, torch): run a contract, written
// inline or shipped under contracts/, against one impl of the built-in
// registry through the engine, in worker processes as `kc check` does.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kc/backend.h"
#include "kc/engine.h"
#include "kc/lang.h"

namespace kc::testing_backends {

inline BackendRegistry& registry() {
  static BackendRegistry* r = [] {
    auto* reg = new BackendRegistry();
    KC_CHECK(register_builtin_backends(*reg).ok());
    return reg;
  }();
  return *r;
}

/// The backend's probe result; `available` false (with the reason) when absent.
inline BackendInfo backend_info(const std::string& name) {
  for (const BackendInfo& info : registry().infos())
    if (info.name == name) return info;
  return BackendInfo{name, false, "", "no such backend", ""};
}

/// Runs the one contract in `text` against `impl`.
inline engine::CaseResult check_text(const std::string& text, const std::string& impl) {
  auto parsed = lang::parse_kc(text, "inline.kc");
  for (const auto& d : parsed.diagnostics) ADD_FAILURE() << d.render();
  if (parsed.document.contracts.size() != 1) {
    ADD_FAILURE() << "expected one contract in the text";
    return {};
  }
  auto i = registry().find_impl(impl);
  if (!i) {
    ADD_FAILURE() << "no impl " << impl;
    return {};
  }
  engine::CheckRequest request;
  return engine::run_case(parsed.document.contracts[0], "inline.kc", *i, backend_info(i->declaration().backend),
                          request);
}

/// Runs shipped contract `id` from `file` (relative to the source tree) against `impl`.
inline engine::CaseResult check_file(const std::string& file, const std::string& id, const std::string& impl) {
  engine::CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/" + file};
  request.contracts = {id};
  request.impls = {impl};
  const engine::CheckResult r = engine::run_check(request, registry());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : r.cases)
    if (c.impl == impl && c.contract_id == id) return c;
  ADD_FAILURE() << impl << " was not run against " << id;
  return {};
}

/// One line for failure messages.
inline std::string describe(const engine::CaseResult& r) {
  std::string s = r.contract_id + " x " + r.impl + ": " + std::string(engine::verdict_name(r.verdict)) + " (" +
                  r.reason + ")";
  for (const auto& c : r.evidence.per_config)
    if (!c.note.empty()) s += "\n  " + c.config + ": " + c.note;
  return s;
}

/// The verdict every smoke test wants, with at least one element compared
/// (a case whose configs were all skipped must not pass as conforming).
inline void expect_conforming(const engine::CaseResult& r) {
  EXPECT_EQ(r.verdict, engine::Verdict::kConforming) << describe(r);
  EXPECT_GT(r.evidence.elements, 0) << describe(r);
}

}  // namespace kc::testing_backends
