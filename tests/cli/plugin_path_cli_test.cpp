// End-to-end: a C-ABI plugin's kernel says which path served each call
// (kc_call::report_path, plugin ABI 2), and KC-CAP-PATH-01 judges it against
// the plugin's declared path and fallback, as it does for kc's built-in
// backends: a dispatch that sends supported shapes to the fallback is a
// SILENT_FALLBACK with the plugin's own reason; the honest dispatch conforms.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"

namespace {

using kc_cli_test::CommandRun;
using kc_cli_test::run_kc;

TEST(PluginPathCli, APluginsReportedPathIsJudgedAgainstItsDeclaration) {
  const CommandRun r = run_kc(std::string("check ") + KC_SOURCE_DIR + "/contracts/capability/KC-CAP-PATH-01.kc --plugin " +
                              KC_PATH_PLUGIN + " --impl pathdemo.sgemm_dispatch --impl pathdemo.sgemm_misrouted");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("violation KC-CAP-PATH-01 × pathdemo.sgemm_misrouted: SILENT_FALLBACK(scalar)"),
            std::string::npos)
      << r.out;
  // The plugin's reason comes through with the path.
  EXPECT_NE(r.out.find("are not all multiples of 32"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("violation KC-CAP-PATH-01 × pathdemo.sgemm_dispatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 conforming, 1 violation"), std::string::npos) << r.out;
}

// The same plugin under --isolate none: the path comes back from kc's own
// process as it does from a worker.
TEST(PluginPathCli, TheReportedPathComesBackInProcessToo) {
  const CommandRun r = run_kc(std::string("check ") + KC_SOURCE_DIR + "/contracts/capability/KC-CAP-PATH-01.kc --plugin " +
                              KC_PATH_PLUGIN + " --impl pathdemo.sgemm_misrouted --isolate none");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("SILENT_FALLBACK(scalar)"), std::string::npos) << r.out;
}

// kc latency: a kernel that reports no path but does four times the work off
// multiples of 16 in K, while declaring one path for every shape. The jump
// shows in every block and contradicts the declaration: exit 1, with the
// figures. Across K = 256 -> 272 (both on the tile) no jump is inferred.
TEST(LatencyCli, ALatencyJumpContradictsASinglePathDeclaration) {
  const std::string base = std::string("latency pathdemo.sgemm_silent_slow --plugin ") + KC_PATH_PLUGIN +
                           " --inside \"dtype=FP32 M=96 N=96 K=256\"";
  const CommandRun jump = run_kc(base + " --outside \"dtype=FP32 M=96 N=96 K=257\"");
  EXPECT_EQ(jump.code, 1) << jump.out;
  EXPECT_NE(jump.out.find("a latency jump in each of 3 blocks"), std::string::npos) << jump.out;
  EXPECT_NE(jump.out.find("contradicts the declaration"), std::string::npos) << jump.out;
  EXPECT_NE(jump.out.find("path (not reported)"), std::string::npos) << jump.out;

  const CommandRun same = run_kc(base + " --outside \"dtype=FP32 M=96 N=96 K=272\"");
  EXPECT_EQ(same.code, 0) << same.out;
  EXPECT_NE(same.out.find("no path change inferred"), std::string::npos) << same.out;
}

// Bad input is a usage error that says what to do: an unknown impl (with the
// nearest name), a malformed config, a flag latency does not read.
TEST(LatencyCli, BadInputIsAUsageError) {
  const std::string plugin = std::string(" --plugin ") + KC_PATH_PLUGIN;
  const CommandRun typo = run_kc("latency pathdemo.sgemm_silent_slw" + plugin +
                                 " --inside \"M=96 N=96 K=256\" --outside \"M=96 N=96 K=257\"");
  EXPECT_EQ(typo.code, 2) << typo.out;
  EXPECT_NE(typo.out.find("did you mean 'pathdemo.sgemm_silent_slow'"), std::string::npos) << typo.out;
  const CommandRun bad = run_kc("latency pathdemo.sgemm_silent_slow" + plugin + " --inside M96 --outside \"K=257\"");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--inside"), std::string::npos) << bad.out;
  const CommandRun missing = run_kc("latency pathdemo.sgemm_silent_slow" + plugin + " --inside \"K=256\"");
  EXPECT_EQ(missing.code, 2) << missing.out;
  const CommandRun scope = run_kc("check --inside \"K=256\"");
  EXPECT_EQ(scope.code, 2) << scope.out;
}

}  // namespace
