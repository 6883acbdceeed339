// End-to-end: the kc binary on the shipped contracts and the example plugin.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace {

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun kc(const std::string& args) {
  CliRun r;
  const std::string cmd = std::string(KC_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string src(const std::string& rel) { return std::string(KC_SOURCE_DIR) + "/" + rel; }

std::string temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("kc_cli_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(Cli, HelpDocumentsExitCodes) {
  CliRun r = kc("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("exit codes"), std::string::npos);
  for (const char* line : {"0  every judged case", "1  at least one violation", "2  usage error",
                           "3  internal error", "4  no case was judged"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

// A selection that matches nothing is a usage error with a suggestion, never a green run.
TEST(CliSelection, AnImplThatMatchesNothingExits2WithTheNearestName) {
  CliRun r = kc("check " + src("contracts/blas/KC-GEMM-01.kc") + " --impl ref.matmull");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no impl matches 'ref.matmull'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean 'ref.matmul'"), std::string::npos) << r.out;
  CliRun none = kc("check " + src("contracts/blas/KC-GEMM-01.kc") + " --impl nosuch --format json");
  EXPECT_EQ(none.code, 2) << none.out;
}

TEST(CliSelection, AContractThatMatchesNothingExits2WithTheNearestId) {
  CliRun r = kc("check " + src("contracts/blas") + " --contract KC-GEMM-1 --impl ref.matmul");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no contract matches 'KC-GEMM-1'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean 'KC-GEMM-0"), std::string::npos) << r.out;
}

TEST(CliSelection, APluginThatDoesNotLoadExits2) {
  CliRun r = kc("check " + src("contracts/blas/KC-GEMM-01.kc") + " --plugin ./no-such-plugin.so");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--plugin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot load"), std::string::npos) << r.out;
}

TEST(CliSelection, APathWithoutContractsExits2) {
  const std::string dir = temp_dir("empty");
  CliRun r = kc("check " + dir + " --impl ref.matmul");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no contract found here"), std::string::npos) << r.out;
}

TEST(CliSelection, ARunThatJudgesNothingExits4UnlessAllowed) {
  // An indexing contract against a matmul impl: every case not applicable.
  const std::string args = "check " + src("contracts/classes/C-EXC-02.kc") + " --impl ref.matmul";
  CliRun r = kc(args);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("no case was judged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not_applicable"), std::string::npos) << r.out;
  CliRun allowed = kc(args + " --allow-empty");
  EXPECT_EQ(allowed.code, 0) << allowed.out;
}

TEST(CliSelection, ADependencyCycleIsAContractErrorForCheckAsForLint) {
  const std::string dir = temp_dir("cycle");
  const std::string body =
      "  scope      matmul\n  pre        precision(A, B, C) in {FP32}\n"
      "  post       output C satisfies elementwise_close(C, ref(C))\n  tolerance  relative 1e-3\n"
      "  reference  higher_precision FP64\n  measure    sample 1 random inputs per config\n"
      "  violation  signature TOLERANCE_EXCEEDED\n";
  std::ofstream(dir + "/cycle.kc") << "contract U-A-01 {\n  depends U-B-01\n" << body << "}\n"
                                   << "contract U-B-01 {\n  depends U-A-01\n" << body << "}\n";
  CliRun lint = kc("lint " + dir + "/cycle.kc");
  ASSERT_EQ(lint.code, 2) << lint.out;
  CliRun r = kc("check " + dir + "/cycle.kc --impl ref.matmul");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cycle"), std::string::npos) << r.out;
}

TEST(CliSelection, CalibrateFailsOnAContractWithoutATrio) {
  const std::string dir = temp_dir("notrio");
  std::ofstream(dir + "/u.kc") << "contract U-NOTRIO-01 {\n  scope      matmul\n"
                                  "  pre        precision(A, B, C) in {FP32}\n"
                                  "  post       output C satisfies elementwise_close(C, ref(C))\n"
                                  "  tolerance  relative 1e-3\n  reference  higher_precision FP64\n"
                                  "  measure    sample 1 random inputs per config\n"
                                  "  violation  signature TOLERANCE_EXCEEDED\n}\n";
  CliRun r = kc("calibrate " + dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("U-NOTRIO-01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without a trio"), std::string::npos) << r.out;
}

TEST(Cli, JobsNeedsANumber) {
  CliRun r = kc("check contracts --jobs many");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--jobs needs a number"), std::string::npos) << r.out;
}

// --fast-probes / --fast-samples reach the fast verifier (the case's note names
// the counts it ran with) and are refused without --fast or out of range.
TEST(Cli, FastProbesAndSamplesReachTheVerifier) {
  const std::string gemm = src("contracts/blas/KC-GEMM-01.kc");
  CliRun r = kc("check " + gemm + " --impl ref.matmul --fast --fast-probes 3 --fast-samples 16 --format json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Freivalds, 3 Rademacher probes, + 16 sampled elements"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"method\": \"freivalds+sampled\""), std::string::npos) << r.out;
  CliRun alone = kc("check " + gemm + " --fast-probes 3");
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.out.find("need --fast"), std::string::npos) << alone.out;
  for (const char* bad : {"--fast-probes 0", "--fast-probes 65", "--fast-samples 0", "--fast-samples x"}) {
    CliRun b = kc("check " + gemm + " --fast " + bad);
    EXPECT_EQ(b.code, 2) << bad;
    EXPECT_NE(b.out.find("needs a number"), std::string::npos) << bad << ": " << b.out;
  }
}

// A repro line from a --fast run re-runs the case with the same verifier
// settings, and reproduces the violation.
TEST(Cli, FastRunReproCarriesTheVerifierSettings) {
  CliRun r = kc("check " + src("contracts/classes/C-PRC-01.kc") + " --plugin " KC_PLUGIN +
                " --impl example.matmul_fp16acc --fast --fast-probes 3 --fast-samples 16 --no-color");
  EXPECT_EQ(r.code, 1) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("repro: kc (check [^\\n]*)"))) << r.out;
  const std::string repro = m[1];
  EXPECT_NE(repro.find(" --fast --fast-probes 3 --fast-samples 16"), std::string::npos) << repro;
  CliRun again = kc(repro + " --no-color");
  EXPECT_EQ(again.code, 1) << repro << "\n" << again.out;
  EXPECT_NE(again.out.find("SATURATION(65504)"), std::string::npos) << again.out;
  // Default counts are not spelled out.
  CliRun d = kc("check " + src("contracts/classes/C-PRC-01.kc") + " --plugin " KC_PLUGIN +
                " --impl example.matmul_fp16acc --fast --no-color");
  ASSERT_TRUE(std::regex_search(d.out, m, std::regex("repro: kc (check [^\\n]*)"))) << d.out;
  EXPECT_NE(m[1].str().find(" --fast "), std::string::npos) << m[1];
  EXPECT_EQ(m[1].str().find("--fast-probes"), std::string::npos) << m[1];
}

TEST(Cli, UnknownCommandSuggestsNearest) {
  CliRun r = kc("chek");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("did you mean 'check'"), std::string::npos) << r.out;
}

TEST(Cli, BackendsListsTheThreeBlasLibrariesSideBySide) {
  CliRun r = kc("backends");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* b : {"ref", "openblas", "blis", "refblas"}) {
    std::regex line(std::string("(^|\\n)") + b + "\\s+available");
    EXPECT_TRUE(std::regex_search(r.out, line)) << b << " not available:\n" << r.out;
  }
}

TEST(Cli, LintAcceptsTheStandardSuite) {
  CliRun r = kc("lint " + src("contracts"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 descriptive"), std::string::npos) << r.out;
}

TEST(Cli, LintRejectsMalformedContractWithLocationAndSuggestion) {
  const std::string dir = temp_dir("lint");
  std::ofstream(dir + "/bad.kc") << "contract C-X-01 {\n  scope      matmull\n  post       raise E\n}\n";
  CliRun r = kc("lint " + dir + "/bad.kc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("bad.kc:2:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^"), std::string::npos) << r.out;
}

TEST(Cli, GemmBoundContractHoldsOnAllFourBackends) {
  CliRun r = kc("check " + src("contracts/blas/KC-GEMM-01.kc") +
              " --impl 'ref.*' --impl 'openblas.*' --impl 'blis.*' --impl 'refblas.*' --format json");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* impl : {"ref.matmul", "openblas.sgemm", "blis.sgemm", "refblas.sgemm"}) {
    std::regex rec(std::string("\"impl\":\\s*\"") + impl + "\"[^}]*?\"verdict\":\\s*\"conforming\"");
    EXPECT_TRUE(std::regex_search(r.out, rec)) << impl << " not conforming:\n" << r.out.substr(0, 4000);
  }
}

TEST(Cli, Fp16AccumulatingPluginIsASaturationViolationWithWorkingRepro) {
  const std::string trace = temp_dir("repro") + "/trace.jsonl";
  CliRun r = kc("check " + src("contracts/classes/C-PRC-01.kc") + " --plugin " KC_PLUGIN +
              " --impl 'example.*' --no-color --trace " + trace);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("SATURATION(65504)"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("repro: kc (check [^\\n]*)"))) << r.out;
  const std::string repro = m[1];
  EXPECT_NE(repro.find("--impl example.matmul_fp16acc"), std::string::npos) << repro;
  // Running the repro line reproduces the violation and its signature.
  CliRun again = kc(repro + " --no-color");
  EXPECT_EQ(again.code, 1) << again.out;
  EXPECT_NE(again.out.find("SATURATION(65504)"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("example.matmul_fp16acc"), std::string::npos);
  // The good plugin impl conforms to the same contract.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("example\\.matmul_fp32[^\\n]*conforming"))) << r.out;
  // Every recorded verdict is in a valid hash chain.
  CliRun v = kc("verify-trace " + trace);
  EXPECT_EQ(v.code, 0) << v.out;
}

TEST(Cli, GradeWritesReportsAndMatrix) {
  const std::string out = temp_dir("grade");
  CliRun r = kc("grade " + src("contracts/blas/KC-GEMM-01.kc") + " --impl 'ref.*' --impl 'refblas.*' --out " + out +
              " --no-color");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("KC-GEMM-01"), std::string::npos) << r.out;
  for (const char* f : {"report.json", "report.junit.xml", "report.md", "report.html", "trace.jsonl"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
}

TEST(Cli, FmtRoundTripsThroughYaml) {
  const std::string dir = temp_dir("fmt");
  CliRun kc1 = kc("fmt " + src("contracts/classes/C-PRC-01.kc"));
  ASSERT_EQ(kc1.code, 0) << kc1.out;
  CliRun y = kc("fmt " + src("contracts/classes/C-PRC-01.kc") + " --to yaml");
  ASSERT_EQ(y.code, 0) << y.out;
  std::ofstream(dir + "/c.yaml") << y.out;
  CliRun back = kc("fmt " + dir + "/c.yaml --to kc");
  ASSERT_EQ(back.code, 0) << back.out;
  EXPECT_EQ(back.out, kc1.out);
}

TEST(Cli, ExplainDescribesAContract) {
  CliRun r = kc("explain C-PRC-01");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SATURATION(65504)"), std::string::npos) << r.out;
  CliRun bad = kc("explain C-PRC-1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("did you mean 'C-PRC-01'"), std::string::npos) << bad.out;
}

}  // namespace

namespace {

// kc vet: a generated kernel file is built against the plugin ABI, graded
// against the standard suite in worker processes, and its two defects are
// named; a file that does not compile is a clear error, not a crash.
TEST(CliVet, GeneratedKernelsAreBuiltGradedAndCaught) {
  const std::string out = temp_dir("vet");
  CliRun r = kc("vet " + src("examples/vet/generated_kernels.c") + " " + src("contracts/classes") + " --out " + out +
                " --no-color");
  EXPECT_EQ(r.code, 1) << r.out;  // violations found
  EXPECT_NE(r.out.find("built: cc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gen.sgemm_tiled16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TILE_REMAINDER"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NAN_SWALLOWED"), std::string::npos) << r.out;
  // Only the vetted file's impls are graded.
  EXPECT_EQ(r.out.find("openblas."), std::string::npos) << r.out;
  for (const char* f : {"report.json", "report.md", "trace.jsonl"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
}

TEST(CliVet, AFileThatDoesNotCompileIsAClearError) {
  const std::string dir = temp_dir("vet_bad");
  const std::string file = dir + "/broken.c";
  std::ofstream(file) << "this is not C\n";
  CliRun r = kc("vet " + file + " --out " + dir + "/out");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("building " + file + " failed"), std::string::npos) << r.out;
  CliRun missing = kc("vet " + dir + "/nope.cu");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_NE(missing.out.find("no such file"), std::string::npos) << missing.out;
}

// `--format html` prints one HTML document; the repro line it carries for a
// violation, unescaped, reproduces the violation.
TEST(Cli, HtmlReportCarriesAWorkingRepro) {
  CliRun r = kc("check " + src("contracts/classes/C-ORD-03.kc") + " --impl 'calib.allreduce_fp*' --format html");
  EXPECT_EQ(r.code, 1) << r.out;
  ASSERT_EQ(r.out.rfind("<!DOCTYPE html>", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("WIRE_PRECISION"), std::string::npos);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("<pre><code>kc (check [^<]*)</code></pre>"))) << r.out;
  std::string repro = m[1];
  for (std::size_t p; (p = repro.find("&#39;")) != std::string::npos;) repro.replace(p, 5, "'");
  for (std::size_t p; (p = repro.find("&amp;")) != std::string::npos;) repro.replace(p, 5, "&");
  CliRun again = kc(repro + " --no-color");
  EXPECT_EQ(again.code, 1) << repro << "\n" << again.out;
  EXPECT_NE(again.out.find("WIRE_PRECISION"), std::string::npos) << again.out;
}

}  // namespace

TEST(CliConfigCheck, GoodConfigPassesAndTooFewEpochsIsPlaced) {
  CliRun good = kc("config-check " + src("examples/train-config/good.yaml"));
  EXPECT_EQ(good.code, 0) << good.out;
  EXPECT_NE(good.out.find("config ok"), std::string::npos) << good.out;
  CliRun bad = kc("config-check " + src("examples/train-config/too-few-epochs.yaml"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("too-few-epochs.yaml:12:11: error: [TOO_FEW_EPOCHS]"), std::string::npos) << bad.out;
  CliRun missing = kc("config-check " + src("examples/train-config/no-such-file.yaml"));
  EXPECT_EQ(missing.code, 2) << missing.out;
}

// ---- verification ladder: graph, --affected, ladder + status

TEST(CliLadder, GraphPrintsTheDependencyDag) {
  CliRun r = kc("graph --format dot " + src("contracts"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"KC-GEMM-01\" -> \"C-CMP-03\";"), std::string::npos) << r.out;
  r = kc("graph " + src("contracts"));
  EXPECT_NE(r.out.find("KC_GEMM_01 --> C_CMP_01"), std::string::npos) << r.out;
}

TEST(CliLadder, CheckAffectedRunsTheContractAndItsDownstream) {
  // Three contracts: B depends on KC-UNARY-01, KC-EXP-01 on nothing.
  const std::string dir = temp_dir("affected");
  std::filesystem::copy(src("contracts/elementwise/KC-UNARY-01.kc"), dir + "/a.kc");
  std::filesystem::copy(src("contracts/elementwise/KC-EXP-01.kc"), dir + "/c.kc");
  {
    std::ifstream in(src("contracts/elementwise/KC-UNARY-01.kc"));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    text.replace(text.find("contract KC-UNARY-01 {"), 22, "contract KC-UNARY-DEP {\n  depends    KC-UNARY-01");
    std::ofstream(dir + "/b.kc") << text;
  }
  CliRun r = kc("check --affected KC-UNARY-01 --impl ref.relu --impl ref.exp " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("affected by KC-UNARY-01: KC-UNARY-01 KC-UNARY-DEP\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KC-UNARY-DEP "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("KC-EXP-01 "), std::string::npos) << "an unrelated contract is not re-run:\n" << r.out;
  r = kc("check --affected KC-UNARY-1 " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("did you mean 'KC-UNARY-01'"), std::string::npos) << r.out;
}

TEST(CliLadder, ShippedGraphCarriesTheTransformerAndTrainingChains) {
  // softmax <- attention <- gqa; the loop's ops <- gradient; AdamW <- optimizer
  // state and hyper-parameters <- the training run (docs/training-stability.md).
  CliRun r = kc("graph --format dot " + src("contracts"));
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* edge :
       {"\"KC-SOFTMAX-01\" -> \"KC-ATTN-01\";", "\"KC-ATTN-01\" -> \"KC-ATTN-GQA\";",
        "\"KC-ATTN-01\" -> \"KC-ATTN-CAUSAL\";", "\"KC-NORM-01\" -> \"KC-TRAIN-02\";", "\"KC-ROPE-01\" -> \"KC-TRAIN-02\";",
        "\"KC-MATMUL-LINEAR\" -> \"KC-TRAIN-02\";", "\"KC-SWIGLU-01\" -> \"KC-TRAIN-02\";",
        "\"KC-XENT-01\" -> \"KC-TRAIN-02\";", "\"KC-ADAMW-01\" -> \"KC-TRAIN-03\";", "\"KC-ADAMW-04\" -> \"KC-TRAIN-04\";",
        "\"KC-TRAIN-02\" -> \"KC-TRAIN-01\";", "\"KC-TRAIN-04\" -> \"KC-TRAIN-01\";"})
    EXPECT_NE(r.out.find(edge), std::string::npos) << edge << " missing from\n" << r.out;
  // A change to softmax re-verifies attention's contracts, and nothing unrelated.
  r = kc("check --affected KC-SOFTMAX-01 --impl ref.softmax --impl ref.attention " + src("contracts"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("affected by KC-SOFTMAX-01: KC-SOFTMAX-01 KC-ATTN-01 KC-ATTN-CAUSAL KC-ATTN-GQA KC-ATTN-HULL\n"),
            std::string::npos)
      << r.out;
  for (const std::string id : {"KC-ATTN-01 ", "KC-ATTN-CAUSAL ", "KC-ATTN-HULL ", "KC-ATTN-GQA "}) {
    const std::size_t at = r.out.find("\n" + id);
    ASSERT_NE(at, std::string::npos) << id << "was not run:\n" << r.out;
    const std::string row = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(row.find("ref.attention"), std::string::npos) << row;
    EXPECT_NE(row.find("conforming"), std::string::npos) << row;
  }
  EXPECT_EQ(r.out.find("KC-TRAIN-"), std::string::npos) << r.out;
}

TEST(CliLadder, LadderRecordsEvidenceThatStatusPrints) {
  const std::string dir = temp_dir("ladder");
  CliRun r = kc("ladder --impl ref.relu --level 2 --out " + dir + " " + src("contracts/elementwise/KC-UNARY-01.kc"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("KC-UNARY-01 x ref.relu (relu): reached L2 falsification"), std::string::npos) << r.out;
  r = kc("status --dir " + dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 records, chain intact"), std::string::npos) << r.out;  // the plan record and two rungs
  std::regex row("KC-UNARY-01\\s+ref\\.relu\\s+L2\\s");
  EXPECT_TRUE(std::regex_search(r.out, row)) << r.out;
  EXPECT_NE(r.out.find("L2 passed"), std::string::npos) << r.out;
  r = kc("status --dir " + dir + "/missing");
  EXPECT_EQ(r.code, 2);
}

// A ladder whose selection matches no contract x impl pair is a usage error
// (exit 2), not a green climb: a typo'd --impl shows.
TEST(CliLadder, ASelectionThatMatchesNothingIsAUsageError) {
  const std::string dir = temp_dir("ladder-empty");
  const CliRun r = kc("ladder --impl ref.rleu --out " + dir + " " + src("contracts/elementwise/KC-UNARY-01.kc"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no contract x impl pair selected"), std::string::npos) << r.out;
}

namespace {

// kc vet on an OpenCL .cl file (kc_<op> convention, docs/backends/opencl.md):
// built by the OpenCL runtime, graded as backend opencl_user; the correct
// tiled kernel conforms and the one that drops the K remainder is caught.
// Skipped where `kc backends` reports no usable OpenCL.
TEST(CliVet, OpenclKernelFilesAreBuiltGradedAndCaught) {
  const CliRun backends = kc("backends");
  if (!std::regex_search(backends.out, std::regex("(^|\\n)opencl\\s+available")))
    GTEST_SKIP() << "opencl unavailable:\n" << backends.out;
  const std::string good = temp_dir("vet_cl_good");
  CliRun r = kc("vet " + src("examples/vet/tiled_matmul.cl") + " " + src("contracts/blas/KC-GEMM-01.kc") +
                " --out " + good + " --no-color");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("built: clBuildProgram"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tiled_matmul.matmul"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(good + "/report.json"));

  const std::string bad = temp_dir("vet_cl_bad");
  // C-CMP-03 interleaves tile multiples with tile + 1 sizes: there the dropped remainder is named.
  r = kc("vet " + src("examples/vet/tiled_matmul_remainder_bug.cl") + " " + src("contracts/blas/KC-GEMM-01.kc") +
         " " + src("contracts/classes/C-CMP-03.kc") + " --out " + bad + " --no-color");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("C-CMP-03 × tiled_matmul_remainder_bug.matmul: TILE_REMAINDER(16)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("openblas."), std::string::npos) << r.out;  // only the file's impls

  const std::string file = bad + "/broken.cl";
  std::ofstream(file) << "__kernel void kc_relu(int n, __global float* y) { y[0] = nope; }\n";
  r = kc("vet " + file + " --out " + bad + "/out");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("building " + file + " failed"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// --compute-sanitizer: the tool name is validated, and where the binary or
// an NVIDIA GPU is missing the run is refused with the reason (exit 2).
TEST(CliSanitizer, ToolNameIsValidated) {
  CliRun r = kc("check " + src("contracts/classes/C-PRC-01.kc") + " --impl cuda.matmul_tiled --compute-sanitizer synccheck");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("expected memcheck, initcheck or racecheck"), std::string::npos) << r.out;
  r = kc("check --compute-sanitizer");
  EXPECT_EQ(r.code, 2) << r.out;
}

bool sanitizer_usable() {
  return std::filesystem::exists("/dev/nvidiactl") &&
         (std::filesystem::exists("/usr/local/cuda/bin/compute-sanitizer") ||
          std::system("command -v compute-sanitizer >/dev/null 2>&1") == 0);
}

TEST(CliSanitizer, RefusedWithAReasonWithoutGpuOrBinary) {
  if (sanitizer_usable()) GTEST_SKIP() << "compute-sanitizer and a GPU are present";
  CliRun r = kc("check " + src("contracts/classes/C-PRC-01.kc") + " --impl cuda.matmul_tiled --compute-sanitizer memcheck");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--compute-sanitizer memcheck: not run:"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find("compute-sanitizer not found") != std::string::npos ||
              r.out.find("no NVIDIA GPU") != std::string::npos)
      << r.out;
  r = kc("grade " + src("contracts/classes/C-PRC-01.kc") + " --compute-sanitizer memcheck");
  EXPECT_EQ(r.code, 2) << r.out;
}

// GPU only: one cuda case under memcheck conforms and says it ran.
TEST(CliSanitizer, OneCudaCaseUnderMemcheck) {
  if (!sanitizer_usable()) GTEST_SKIP() << "needs an NVIDIA GPU and compute-sanitizer";
  CliRun r = kc("check " + src("contracts/classes/C-PRC-01.kc") +
                " --impl cuda.matmul_tiled --samples 1 --format json --compute-sanitizer memcheck");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("compute-sanitizer memcheck: 0 errors"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("SANITIZER("), std::string::npos) << r.out;
}

// GPU only, the sanitizer's calibration: a CUDA plugin whose SGEMM is right
// but writes one float past its own device copy of C. kc sees a correct C, so
// the case conforms; under memcheck it is SANITIZER(memcheck, N errors) with
// the invalid write as its first finding.
TEST(CliSanitizer, APlantedOutOfBoundsWriteIsNamed) {
  if (!sanitizer_usable()) GTEST_SKIP() << "needs an NVIDIA GPU and compute-sanitizer";
  if (!std::filesystem::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "needs /usr/local/cuda/bin/nvcc";
  const std::string lib =
      (std::filesystem::temp_directory_path() / ("kc_oob_" + std::to_string(getpid()) + ".so")).string();
  const std::string build = "/usr/local/cuda/bin/nvcc -O2 -shared -Xcompiler -fPIC -lcudart -I" + src("include") +
                            " " + src("tests/cli/data/oob_sgemm.cu") + " -o " + lib;
  ASSERT_EQ(std::system(build.c_str()), 0) << build;
  const std::string one_case = "check " + src("contracts/blas/KC-GEMM-01.kc") + " --plugin " + lib +
                               " --impl oob.sgemm --config 'dtype=FP32 K=33 M=17 N=24 alpha=1 beta=0 lda_pad=0 "
                               "ldb_pad=0 ldc_pad=0 trans_a=N trans_b=N' --sample 0 --format md";
  CliRun plain = kc(one_case);
  EXPECT_EQ(plain.code, 0) << plain.out;
  CliRun r = kc(one_case + " --compute-sanitizer memcheck");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("SANITIZER(memcheck, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Invalid __global__ write of size 4 bytes"), std::string::npos) << r.out;
  std::filesystem::remove(lib);
}

TEST(Cli, ColourFollowsNoColorAndTheFlags) {
  const std::string args = "check " + src("contracts/blas/KC-GEMM-01.kc") + " --impl ref.matmul";
  EXPECT_EQ(kc(args).out.find("\033["), std::string::npos);  // not a terminal: plain
  EXPECT_NE(kc(args + " --color").out.find("\033["), std::string::npos);
  EXPECT_EQ(kc(args + " --color --no-color").out.find("\033["), std::string::npos);
  // NO_COLOR turns off the terminal default; an explicit --color still wins.
  const std::string env = "NO_COLOR=1 ";
  FILE* p = popen((env + KC_BIN + " " + args + " --color 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
  pclose(p);
  EXPECT_NE(out.find("\033["), std::string::npos);
}

}  // namespace
