// Every shipped contract is three-state calibrated (test the tester):
// `kc calibrate contracts` over the whole standard suite finds a
// calibration block for every contract, every named impl exists, and every
// row shows the state its role requires (the baseline fails the visible
// test, the bad impl passes it and is caught with one of the contract's
// signatures, the good impl passes both). The trios live in the .kc files'
// calibration blocks only; this test lists no contract by hand.
//
// It runs the whole suite (3 x 78 rows), so it is registered under the
// `calibration` label, not `unit` (which CI also runs under ASan).
#include <gtest/gtest.h>

#include <string>

#include "kc/calibrate.h"
#include "kc/engine.h"

namespace kc::engine {
namespace {

TEST(CalibrationSuite, EveryShippedContractSeparatesItsTrio) {
  CheckRequest request;
  request.paths = {std::string(KC_SOURCE_DIR) + "/contracts"};
  const CalibrationResult result = run_calibration(request);
  const std::string table = render_calibration(result, false);
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.render();
  for (const auto& id : result.missing) ADD_FAILURE() << id << " has no calibration block";
  ASSERT_FALSE(result.rows.empty()) << table;
  EXPECT_EQ(result.rows.size() % 3, 0u);
  for (const auto& row : result.rows)
    EXPECT_TRUE(row.state_ok) << row.contract << " " << trio_role_name(row.role) << " " << row.impl << ": "
                              << row.problem;
  EXPECT_EQ(result.exit_code(), 0) << table;
}

}  // namespace
}  // namespace kc::engine
