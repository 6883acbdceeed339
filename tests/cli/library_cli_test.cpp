// End-to-end: `--library` grades another build of a BLAS library, in place of
// the installed one or beside it, and `kc diff` of the two runs names what
// changed upstream. The other build is BLIS from the next Debian release,
// fetched into a private prefix (scripts/fetch-next-release.sh); the tests
// skip when it cannot be fetched (no network) or does not load here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_util.h"

namespace {

using kc_cli_test::CommandRun;
CommandRun sh(const std::string& cmd) { return kc_cli_test::run_command(cmd); }

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }
std::string kc(const std::string& args) { return std::string(KC_BIN) + " " + args; }

class NextBlis : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (std::filesystem::temp_directory_path() / ("kc_library_cli_" + std::to_string(getpid()))).string();
    const CommandRun fetched = sh(src("scripts/fetch-next-release.sh") + " " + dir_ + " libblis4-openmp");
    const std::string lib = dir_ + "/root/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4";
    if (fetched.code == 0 && std::filesystem::exists(lib)) lib_ = lib;
    else why_ = "the next release's BLIS could not be fetched: " + fetched.out;
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void SetUp() override {
    if (lib_.empty()) GTEST_SKIP() << why_;
    const CommandRun b = sh(kc("backends --library blis@next=" + lib_));
    if (b.out.find("blis@next    available") == std::string::npos) GTEST_SKIP() << "it does not load here: " << b.out;
  }
  static std::string dir_, lib_, why_;
};
std::string NextBlis::dir_, NextBlis::lib_, NextBlis::why_;

const char* kSelect = " --backend 'blis*' --impl 'blis*.?nrm2' --no-color";

TEST_F(NextBlis, BothBuildsAreGradedSideBySideInOneRun) {
  const CommandRun r = sh(kc("check " + src("contracts/blas/KC-NRM2-03.kc") + kSelect + " --library blis@next=" + lib_));
  EXPECT_EQ(r.code, 1) << r.out;  // BLIS 0.9.0 turns two infinities into NaN; 1.1 does not
  EXPECT_NE(r.out.find("violation KC-NRM2-03 × blis.snrm2: NAN_INTRODUCED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("violation KC-NRM2-03 × blis@next."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blis@next.snrm2  conforming"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--library blis@next=" + lib_), std::string::npos) << "the repro line must carry it";
}

TEST_F(NextBlis, TheDiffOfTheTwoRunsNamesWhatUpstreamFixed) {
  const std::string old_dir = dir_ + "/old", new_dir = dir_ + "/new";
  std::filesystem::remove_all(old_dir);
  std::filesystem::remove_all(new_dir);
  const std::string c = "check " + src("contracts/blas/KC-NRM2-03.kc") + kSelect;
  EXPECT_EQ(sh(kc(c + " --out " + old_dir)).code, 1);
  const CommandRun next = sh(kc(c + " --library blis=" + lib_ + " --out " + new_dir));
  EXPECT_EQ(next.code, 0) << next.out;
  const CommandRun d = sh(kc("diff " + old_dir + " " + new_dir));
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("BLIS 0.9.0"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("-> BLIS 1.1"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("KC-NRM2-03 × blis.snrm2: violation -> conforming"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("KC-NRM2-03 × blis.dnrm2: violation -> conforming"), std::string::npos) << d.out;
  // Backwards, the same change is a regression.
  EXPECT_EQ(sh(kc("diff " + new_dir + " " + old_dir)).code, 1);
}

TEST(LibraryCli, ABuildThatDoesNotLoadOrAnUnknownNameIsAUsageError) {
  CommandRun r = sh(kc("check " + src("contracts/blas/KC-NRM2-03.kc") + " --backend 'blis*' --library blis@x=/nonexistent.so"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--library blis@x=/nonexistent.so: error: cannot load"), std::string::npos) << r.out;
  r = sh(kc("backends --library mkl=/x.so"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no backend 'mkl' loads a library path"), std::string::npos) << r.out;
  EXPECT_EQ(sh(kc("backends --library 'blis@a.b=/x.so'")).code, 2);
}

}  // namespace
