// End-to-end: `--suite NAME` selects a suite block's contracts and impls, and
// `kc retest-plan` lists what a library update must run again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.h"

namespace {

kc_cli_test::CommandRun kc(const std::string& args) { return kc_cli_test::run_kc(args); }

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("kc_suite_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kSuites = R"(suite tiny {
  tier       smoke
  contracts  C-EXC-01
  impls      ref.*
}

suite typo {
  tier       ci
  contracts  C-EXC-99
  impls      ref.*
}
)";

TEST(SuiteCli, ASuiteSelectsItsContractsAndImplsOnly) {
  const std::string suites = write_temp("suites.kc", kSuites);
  const auto r = kc("check " + src("contracts/classes") + " " + suites + " --suite tiny --format json --no-color");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"C-EXC-01\""), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"C-EXC-02\""), std::string::npos) << "a contract outside the suite ran";
  EXPECT_NE(r.out.find("\"ref."), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"eigen."), std::string::npos) << "an impl outside the suite ran";
  EXPECT_NE(r.out.find("suite tiny (tier smoke"), std::string::npos) << r.out;
}

TEST(SuiteCli, AnUnknownSuiteOrAGlobMatchingNothingIsAUsageError) {
  const std::string suites = write_temp("suites.kc", kSuites);
  auto r = kc("check " + src("contracts/classes") + " " + suites + " --suite tinny");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("did you mean 'tiny'"), std::string::npos) << r.out;
  r = kc("check " + src("contracts/classes") + " " + suites + " --suite typo");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(suites + ":7:7: error: suite typo: no contract matches 'C-EXC-99'"), std::string::npos)
      << r.out;
}

TEST(SuiteCli, AFlagTheCommandDoesNotReadIsRefused) {
  auto r = kc("calibrate " + src("contracts/classes/C-EXC-01.kc") + " --suite ci");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--suite belongs to kc check or kc grade, not kc calibrate"), std::string::npos) << r.out;
  EXPECT_EQ(kc("check " + src("contracts/classes/C-EXC-01.kc") + " --pin /tmp/x.kc").code, 2);
  EXPECT_EQ(kc("check " + src("contracts/classes/C-EXC-01.kc") + " --from 1.0").code, 2);
}

TEST(SuiteCli, TheShippedSuitesAreListed) {
  const auto r = kc("list suites");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("smoke"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("full"), std::string::npos) << r.out;
}

TEST(RetestPlanCli, APatchReleaseRunsTheAlwaysContractsAndWhatItsNotesName) {
  const std::string notes = write_temp("notes.txt", "- fixed a Softmax overflow on AVX-512\n");
  const auto r = kc("retest-plan --from 0.3.21 --to 0.3.29 --notes " + notes + " " + src("contracts/classes"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto line = [&](const std::string& id) {
    const auto at = r.out.find("\n" + id + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line("C-PRC-01").find(" run "), std::string::npos) << r.out;   // always
  EXPECT_NE(line("C-PRC-02").find(" run "), std::string::npos) << r.out;   // the notes name softmax
  EXPECT_NE(line("C-CMP-01").find(" skip "), std::string::npos) << r.out;  // they name no fusion
  EXPECT_NE(line("C-ORD-02").find(" skip "), std::string::npos) << r.out;  // same major version 0.3
  EXPECT_NE(r.out.find("7 of 12 contracts to run"), std::string::npos) << r.out;
}

TEST(RetestPlanCli, AMajorUpdateWithoutNotesRunsEverything) {
  const auto r = kc("retest-plan --from 0.9.0 --to 1.1 " + src("contracts/classes"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("12 of 12 contracts to run"), std::string::npos) << r.out;
  EXPECT_EQ(kc("retest-plan --from 0.9.0").code, 2);
  EXPECT_EQ(kc("retest-plan --from 1 --to 2 --notes /nonexistent/notes.txt").code, 2);
}

}  // namespace
