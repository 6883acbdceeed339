// End-to-end: `kc lint --strict`, unknown names at lint, `kc list` of the
// language's tables, and docs/language.md generated from those tables.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

struct KcRun {
  int code = -1;
  std::string out;
};

KcRun kc(const std::string& args, bool with_stderr = true) {
  KcRun r;
  const std::string cmd = std::string(KC_BIN) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
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

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("kc_language_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kExecutable = R"(contract T-LINT-01 {
  scope      relu
  pre        precision(x, y) in {FP32}
  post       output y satisfies elementwise_close(y, ref(y))
  tolerance  ulp 0
  reference  higher_precision FP64
  measure    inject nan(x) at density 0.1; observe propagation
  violation  "NaN dropped" signature NAN_SWALLOWED
}
)";

TEST(LanguageCli, TheShippedSuitePassesLintStrict) {
  KcRun r = kc("lint --strict " + src("contracts"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" 0 descriptive"), std::string::npos) << r.out;
}

TEST(LanguageCli, AProseContractFailsLintStrictOnly) {
  std::string text = kExecutable;
  text.replace(text.find("inject nan(x) at density 0.1; observe propagation"), 50,
               "feed it some NaNs and look at what comes out");
  const std::string path = write_temp("prose.kc", text);
  KcRun plain = kc("lint " + path);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("1 descriptive"), std::string::npos) << plain.out;
  KcRun strict = kc("lint --strict " + path);
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_NE(strict.out.find("measure"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("kc lint --strict"), std::string::npos) << strict.out;
  KcRun ok = kc("lint --strict " + write_temp("executable.kc", kExecutable));
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(LanguageCli, ATypoedProbeExits2WithACaretAndTheNearestProbe) {
  std::string text = kExecutable;
  text.replace(text.find("inject nan(x)"), 13, "inject saturaton(x)");
  const std::string path = write_temp("typo.kc", text);
  for (const char* flags : {"lint ", "lint --strict "}) {
    KcRun r = kc(flags + path);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(path + ":7:21: error: unknown probe 'saturaton'"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("inject saturaton(x) at density 0.1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n" + std::string(2 + 20, ' ') + "^\n"), std::string::npos) << r.out;  // under the 's'
    EXPECT_NE(r.out.find("did you mean 'saturation'?"), std::string::npos) << r.out;
  }
  // kc check refuses it too: nothing runs under a contract that names an unknown probe.
  KcRun check = kc("check " + path + " --impl ref.relu");
  EXPECT_EQ(check.code, 2) << check.out;
}

TEST(LanguageCli, ListPrintsTheLanguageTables) {
  KcRun sigs = kc("list signatures");
  EXPECT_EQ(sigs.code, 0);
  for (const char* s : {"SANITIZER", "MEMORY_LIMIT", "GUARD_READ", "WORKER_FAILED", "SATURATION", "DENORMAL_POLICY"})
    EXPECT_NE(sigs.out.find(s), std::string::npos) << s;
  KcRun probes = kc("list probes");
  EXPECT_EQ(probes.code, 0);
  for (const char* p : {"saturation(v)", "mantissa(bits)", "nonfinite", "oob(i, ...)"})
    EXPECT_NE(probes.out.find(p), std::string::npos) << p;
  EXPECT_EQ(kc("list metrics").code, 0);
  KcRun oracles = kc("list oracles");
  EXPECT_EQ(oracles.code, 0);
  EXPECT_NE(oracles.out.find("higher_precision"), std::string::npos);
  EXPECT_NE(oracles.out.find("algebraic softmax.sums_to_one"), std::string::npos);
  KcRun bad = kc("list probez");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("probes"), std::string::npos);
}

std::string contract_with(const std::string& scope, const std::string& tolerance, const std::string& reference,
                          const std::string& measure) {
  return "contract T-REF-01 {\n  scope      " + scope +
         "\n  pre        precision(x) in {FP32}\n  post       output y satisfies elementwise_close(y, ref(y))\n"
         "  tolerance  " + tolerance + "\n  reference  " + reference + "\n  measure    " + measure +
         "\n  violation  \"wrong\" signature TOLERANCE_EXCEEDED\n}\n";
}

// Names only the engine's tables hold (algebraic properties, named oracles)
// are checked at lint too, against those tables.
TEST(LanguageCli, ReferenceNamesAreCheckedAgainstTheEngineTables) {
  const std::string sample = "sample 2 random inputs per config; compute max ratio; pass if <= 1";
  KcRun prop = kc("lint " + write_temp("prop.kc", contract_with("softmax", "relative 1e-5",
                                                                "algebraic softmax.sums_to_onee", sample)));
  EXPECT_EQ(prop.code, 2) << prop.out;
  EXPECT_NE(prop.out.find(":6:24: error: unknown algebraic property 'softmax.sums_to_onee'"), std::string::npos)
      << prop.out;
  EXPECT_NE(prop.out.find("did you mean 'softmax.sums_to_one'?"), std::string::npos) << prop.out;
  KcRun stable = kc("lint " + write_temp("stable.kc", contract_with("sum", "relative 1e-5",
                                                                    "stable_algorithm kahan_summ", sample)));
  EXPECT_EQ(stable.code, 2) << stable.out;
  EXPECT_NE(stable.out.find("unknown stable_algorithm 'kahan_summ'"), std::string::npos) << stable.out;
  EXPECT_NE(stable.out.find("did you mean 'kahan_sum'?"), std::string::npos) << stable.out;
  // A known name for none of the scope's ops: the contract could never be judged.
  KcRun misfit = kc("lint " + write_temp("misfit.kc", contract_with("softmax", "relative 1e-5",
                                                                    "stable_algorithm kahan_sum", sample)));
  EXPECT_EQ(misfit.code, 2) << misfit.out;
  // A phrase is prose, not a name: descriptive, so --strict fails it.
  const std::string phrase =
      write_temp("phrase.kc", contract_with("sum", "relative 1e-5", "spec the sum as the paper defines it", sample));
  KcRun plain = kc("lint " + phrase);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("1 descriptive"), std::string::npos) << plain.out;
  EXPECT_EQ(kc("lint --strict " + phrase).code, 1);
}

// `compute max ulp` under `tolerance relative`: kc judges the relative error,
// whatever the clause says. A warning, and a failure under --strict.
TEST(LanguageCli, AMetricKcDoesNotMeasureAsWrittenFailsStrict) {
  const std::string path = write_temp(
      "unit.kc", contract_with("relu", "relative 1e-5", "higher_precision FP64",
                               "sample 2 random inputs per config; compute max ulp; pass if <= 1"));
  KcRun plain = kc("lint " + path);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("warning: metric 'ulp' is not what kc measures"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("expected one of: ratio, rel_error"), std::string::npos) << plain.out;
  KcRun strict = kc("lint --strict " + path);
  EXPECT_EQ(strict.code, 1) << strict.out;
  // `pass if <= 2` on a unit metric: kc judges ulp / tolerance <= 1, the 2 is unused.
  const std::string bound = write_temp(
      "bound.kc", contract_with("relu", "ulp 4", "higher_precision FP64",
                                "sample 2 random inputs per config; compute max ulp; pass if <= 2"));
  KcRun b = kc("lint " + bound);
  EXPECT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("warning: 'pass if <= 2' is not what kc decides"), std::string::npos) << b.out;
  EXPECT_EQ(kc("lint --strict " + bound).code, 1);
  const std::string fine = write_temp(
      "fine.kc", contract_with("relu", "ulp 4", "higher_precision FP64",
                               "sample 2 random inputs per config; compute max ulp; pass if <= 1"));
  EXPECT_EQ(kc("lint --strict " + fine).code, 0);
}

// `observe policy` names a policy judgement; under an elementwise post kc
// compares with the reference instead: a warning, and --strict fails.
TEST(LanguageCli, AnObservedWordThePostDoesNotJudgeFailsStrict) {
  const std::string path = write_temp(
      "observe.kc", contract_with("relu", "ulp 0", "higher_precision FP64", "inject nan at density 0.02; observe policy"));
  KcRun plain = kc("lint " + path);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find(":7:50: warning: 'observe policy' is not what kc judges"), std::string::npos) << plain.out;
  EXPECT_EQ(kc("lint --strict " + path).code, 1);
  const std::string propagation = write_temp(
      "propagation.kc",
      contract_with("relu", "ulp 0", "higher_precision FP64", "inject nan at density 0.02; observe propagation"));
  EXPECT_EQ(kc("lint --strict " + propagation).code, 0) << kc("lint " + propagation).out;
}

// docs/language.md's tables are `kc list WHAT --format md`, verbatim: the
// reference cannot drift from the tables the parser and engine use.
// scripts/update-language-doc.sh regenerates them.
TEST(LanguageCli, TheLanguageReferenceTablesAreGeneratedFromTheCode) {
  const std::string doc = read(src("docs/language.md"));
  ASSERT_FALSE(doc.empty());
  const std::regex block(R"re(<!-- kc list (\w+) --format md -->\n([\s\S]*?)<!-- end -->)re");
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it) {
    const std::string what = (*it)[1].str();
    seen.insert(what);
    KcRun r = kc("list " + what + " --format md", false);
    ASSERT_EQ(r.code, 0) << what;
    EXPECT_EQ((*it)[2].str(), r.out) << "docs/language.md's `" << what
                                     << "` table is stale: run scripts/update-language-doc.sh";
  }
  for (const char* what :
       {"probes", "aggregates", "metrics", "observe", "signatures", "oracles", "classes", "declarations", "policies",
        "precisions"})
    EXPECT_TRUE(seen.count(what)) << "docs/language.md has no generated `" << what << "` table";
}

// The contract on the README's first screen is a real, executable contract.
TEST(LanguageCli, TheReadmeContractPassesLintStrict) {
  const std::string readme = read(src("README.md"));
  const std::size_t open = readme.find("```kc\n");
  ASSERT_NE(open, std::string::npos) << "README.md shows no ```kc contract";
  EXPECT_LT(open, readme.find("\n## ", readme.find("\n## ") + 1)) << "the contract is not near the top";
  const std::size_t close = readme.find("```", open + 6);
  ASSERT_NE(close, std::string::npos);
  const std::string path = write_temp("readme.kc", readme.substr(open + 6, close - open - 6));
  KcRun r = kc("lint --strict " + path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(readme.find("docs/language.md"), std::string::npos);
}

}  // namespace
