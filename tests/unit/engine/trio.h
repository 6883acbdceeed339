// Shared by the class calibration tests: a contract's trio run through
// `kc calibrate`'s engine, with every state asserted (test the tester),
// and one class contract run against one impl.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kc/backend.h"
#include "kc/calibrate.h"
#include "kc/engine.h"

namespace kc::engine::trio {

inline std::string contract_path(const std::string& id) {
  return std::string(KC_SOURCE_DIR) + "/contracts/classes/" + id + ".kc";
}

struct Expected {
  const char* contract;
  const char* signature;  ///< name the bad impl's first signature must have
};

/// The baseline fails the visible test; the bad impl passes it and is caught
/// with `e.signature`, listed by the contract, with a repro; the good impl
/// passes both.
inline void expect_three_states(const Expected& e) {
  CheckRequest request;
  request.paths = {contract_path(e.contract)};
  const CalibrationResult result = run_calibration(request);
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  EXPECT_TRUE(result.missing.empty());
  ASSERT_EQ(result.rows.size(), 3u) << render_calibration(result, false);

  const CalibrationRow& baseline = result.rows[0];
  const CalibrationRow& bad = result.rows[1];
  const CalibrationRow& good = result.rows[2];
  ASSERT_EQ(baseline.role, TrioRole::kBaseline);
  ASSERT_EQ(bad.role, TrioRole::kBad);
  ASSERT_EQ(good.role, TrioRole::kGood);

  EXPECT_FALSE(baseline.visible.pass) << baseline.impl;

  EXPECT_TRUE(bad.visible.pass) << bad.impl << ": " << bad.visible.detail;
  EXPECT_EQ(bad.contract_result.verdict, Verdict::kViolation) << bad.contract_result.reason;
  ASSERT_FALSE(bad.contract_result.signatures.empty()) << bad.contract_result.reason;
  EXPECT_EQ(bad.contract_result.signatures.front().name, e.signature) << bad.contract_result.reason;
  EXPECT_TRUE(bad.contract_result.signature_expected);
  EXPECT_FALSE(bad.contract_result.repro.empty());

  EXPECT_TRUE(good.visible.pass) << good.impl << ": " << good.visible.detail;
  EXPECT_EQ(good.contract_result.verdict, Verdict::kConforming) << good.contract_result.reason;

  for (const auto& row : result.rows) EXPECT_TRUE(row.state_ok) << row.impl << ": " << row.problem;
  EXPECT_EQ(result.exit_code(), 0) << render_calibration(result, false);
}

/// Test names from contract ids: C-PRC-01 -> C_PRC_01.
inline std::string param_name(const ::testing::TestParamInfo<Expected>& info) {
  std::string name = info.param.contract;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

/// Whether this build and CPU offer the impl (the backends' registry, built once).
inline bool impl_available(const std::string& name) {
  static BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;
    (void)register_builtin_backends(*r);
    return r;
  }();
  return registry->find_impl(name) != nullptr;
}

/// Runs one contract (a file path) against one impl.
inline CaseResult check_one_in(const std::string& path, const std::string& contract, const std::string& impl) {
  CheckRequest request;
  request.paths = {path};
  if (!contract.empty()) request.contracts = {contract};
  request.impls = {impl};
  const CheckResult r = run_check(request);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& c : r.cases)
    if (c.impl == impl && (contract.empty() || c.contract_id == contract)) return c;
  ADD_FAILURE() << impl << " was not run against " << path << " " << contract;
  return {};
}

/// Runs one class contract against one calibration impl.
inline CaseResult check_one(const std::string& contract, const std::string& impl) {
  return check_one_in(contract_path(contract), contract, impl);
}

}  // namespace kc::engine::trio
