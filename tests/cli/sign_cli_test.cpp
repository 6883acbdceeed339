// Signed traces and certificates: a trace rewritten and re-chained keeps a
// valid chain but fails its signature; a certificate verifies, and fails
// after one byte changes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_util.h"

namespace {

using kc_cli_test::run_command;
using kc_cli_test::run_kc;
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SignCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kc-sign-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const auto k = run_kc("keygen --out " + key());
    if (k.out.find("without libsodium") != std::string::npos) GTEST_SKIP() << k.out;
    ASSERT_EQ(k.code, 0) << k.out;
    const auto g = run_kc("grade " + std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc " + KC_SOURCE_DIR +
                          "/contracts/blas/KC-IAMAX-01.kc --backend ref --backend refblas --sign-key " + key() +
                          " --out " + run().string());
    ASSERT_EQ(g.code, 0) << g.out;
    ASSERT_TRUE(fs::exists(run() / "trace.jsonl.sig"));
    ASSERT_TRUE(fs::exists(run() / "record.json.sig"));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string key() const { return (dir_ / "signer").string(); }
  fs::path run() const { return dir_ / "run"; }
  fs::path dir_;
};

TEST_F(SignCli, KeysAreNeverOverwrittenAndTheSecretIsPrivate) {
  EXPECT_EQ(run_kc("keygen --out " + key()).code, 2);
  EXPECT_EQ(fs::status(key()).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  EXPECT_EQ(slurp(key() + ".pub").size(), 65u);  // 64 hex digits and a newline
  // kc check writes no trace unless asked: signing nothing is a usage error, before anything runs.
  EXPECT_EQ(run_kc("check " + std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc --impl ref.matmul --sign-key " +
                   key())
                .code,
            2);
}

TEST_F(SignCli, ARechainedTraceKeepsItsChainButFailsItsSignature) {
  const std::string trace = (run() / "trace.jsonl").string();
  const auto ok = run_kc("verify-trace " + trace + " --key " + key() + ".pub");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("signature valid: Ed25519"), std::string::npos) << ok.out;
  // The forger's rewrite: a verdict changed, every hash after it recomputed.
  const fs::path script = dir_ / "rechain.py";
  std::ofstream(script) << "import hashlib, sys\n"
                           "path = sys.argv[1]\n"
                           "lines = open(path).read().splitlines()\n"
                           "prev = '0' * 64\n"
                           "out = []\n"
                           "for n, line in enumerate(lines):\n"
                           "    body = '{' + line[len('{\"prev\":\"') + 64 + 2:-(len(',\"hash\":\"') + 64 + 2)] + '}'\n"
                           "    if n == 0:\n"
                           "        body = body.replace('\"verdict\":\"conforming\"', '\"verdict\":\"violation\"', 1)\n"
                           "    h = hashlib.sha256((prev + body).encode()).hexdigest()\n"
                           "    out.append('{\"prev\":\"' + prev + '\",' + body[1:-1] + ',\"hash\":\"' + h + '\"}')\n"
                           "    prev = h\n"
                           "open(path, 'w').write('\\n'.join(out) + '\\n')\n";
  const std::string rechain = "python3 " + script.string() + " " + trace;
  ASSERT_EQ(run_command(rechain).code, 0);
  ASSERT_NE(slurp(trace).find("\"verdict\":\"violation\""), std::string::npos);
  const auto chain = run_kc("verify-trace " + trace);
  EXPECT_EQ(chain.code, 0) << chain.out;  // the chain alone cannot tell
  const auto signed_check = run_kc("verify-trace " + trace + " --key " + key() + ".pub");
  EXPECT_EQ(signed_check.code, 1) << signed_check.out;
  EXPECT_NE(signed_check.out.find("the file changed after signing"), std::string::npos) << signed_check.out;
  // Another signer's key is refused too.
  ASSERT_EQ(run_kc("keygen --out " + (dir_ / "other").string()).code, 0);
  EXPECT_EQ(run_kc("verify-trace " + trace + " --key " + (dir_ / "other.pub").string()).code, 1);
}

TEST_F(SignCli, ACertificateVerifiesAndFailsAfterOneByteChanges) {
  const auto c = run_kc("certify " + run().string() + " --sign-key " + key());
  ASSERT_EQ(c.code, 0) << c.out;
  const fs::path cert = run() / "certificate.json";
  const std::string text = slurp(cert);
  for (const char* want : {"\"kc-certificate/1\"", "\"content_hash\"", "\"KC-GEMM-01\"", "\"last_hash\"",
                           "\"refblas.sgemm\"", "\"library_version\"", "\"level\": \"conforming\"", "\"cpu_model\"",
                           "\"does_not_prove\""})
    EXPECT_NE(text.find(want), std::string::npos) << want;
  EXPECT_TRUE(fs::exists(run() / "certificate.html"));
  const auto v = run_kc("certify verify " + cert.string() + " --key " + key() + ".pub");
  EXPECT_EQ(v.code, 0) << v.out;
  std::string changed = text;
  const std::size_t at = changed.find("conforming");
  ASSERT_NE(at, std::string::npos);
  changed[at] = 'C';
  std::ofstream(cert, std::ios::binary | std::ios::trunc) << changed;
  const auto bad = run_kc("certify verify " + cert.string() + " --key " + key() + ".pub");
  EXPECT_EQ(bad.code, 1) << bad.out;
  // Certifying needs a key; verifying needs the public key.
  EXPECT_EQ(run_kc("certify " + run().string()).code, 2);
  EXPECT_EQ(run_kc("certify verify " + cert.string()).code, 2);
}

}  // namespace
