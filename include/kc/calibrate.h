// kc — three-state calibration: proving a contract can tell bad from good.
//
// Every shipped contract names a trio: a baseline that fails the visible test,
// a bad impl that passes the visible test but violates the contract (with the
// contract's signature), and a good impl that passes both. The visible test is
// defined once: a KernelBench-style check — 3 random normal(0, 1) inputs at
// the op's default (benchmark) shape, allclose against the FP64 oracle with
// atol = rtol = 1e-2 (|got - ref| <= atol + rtol |ref| for every element).
#pragma once

#include <string>
#include <vector>

#include "kc/engine.h"

namespace kc::engine {

struct VisibleTest {
  bool pass = false;
  double max_excess = 0;  ///< max |got - ref| / (atol + rtol |ref|)
  std::string detail;     ///< why it failed
};

constexpr double kVisibleAtol = 1e-2;
constexpr double kVisibleRtol = 1e-2;
constexpr int kVisibleSamples = 3;

/// Runs the visible test of an impl at its op's default config.
VisibleTest run_visible_test(const Impl& impl, std::uint64_t seed);

enum class TrioRole { kBaseline, kBad, kGood };
std::string_view trio_role_name(TrioRole role);

struct CalibrationRow {
  std::string contract;
  TrioRole role = TrioRole::kGood;
  std::string impl;
  VisibleTest visible;
  CaseResult contract_result;
  bool state_ok = false;  ///< the row shows the state its role requires
  std::string problem;    ///< what is wrong when !state_ok
};

struct CalibrationResult {
  std::vector<CalibrationRow> rows;
  std::vector<lang::Diagnostic> diagnostics;
  std::vector<std::string> missing;  ///< contracts without a calibration block
  int exit_code() const;             ///< 0 every state right, 1 some wrong, 2 contract error
};

/// Calibrates every contract (matching request.contracts) that has a calibration block.
CalibrationResult run_calibration(const CheckRequest& request, BackendRegistry& registry);
CalibrationResult run_calibration(const CheckRequest& request);

/// The calibration table for the terminal.
std::string render_calibration(const CalibrationResult& result, bool color);

}  // namespace kc::engine
