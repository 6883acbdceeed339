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

}  // namespace
