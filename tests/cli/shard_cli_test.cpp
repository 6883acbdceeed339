// --shard and kc merge end to end: shards of one plan merged give the
// unsharded run's record case by case; other plans, missing shards and
// retried shards are handled as docs/scale-out.md says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"

namespace {

using kc_cli_test::run_command;
using kc_cli_test::run_kc;
namespace fs = std::filesystem;

const std::string kContracts = std::string(KC_SOURCE_DIR) + "/contracts/blas/KC-GEMM-01.kc " + KC_SOURCE_DIR +
                               "/contracts/blas/KC-IAMAX-01.kc " + KC_SOURCE_DIR + "/contracts/blas/KC-CSCAL-01.kc";
const std::string kBackends = "--backend ref --backend refblas";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Each case of a record as one line: contract, impl, verdict, signatures,
/// output hash, bound-ratio max (what must not change by sharding), in order.
std::vector<std::string> case_lines(const fs::path& dir) {
  const std::string text = slurp(dir / "record.json");
  std::vector<std::string> out;
  const std::string start = "\"contract\": ";
  for (std::size_t at = text.find(start); at != std::string::npos; at = text.find(start, at + 1)) {
    const std::size_t end = text.find("\"repro\"", at);
    std::string c = text.substr(at, end - at);
    // Drop what is per machine or per run: the contract file path and the time.
    for (const char* key : {"\"contract_file\"", "\"seconds\""}) {
      const std::size_t k = c.find(key);
      if (k != std::string::npos) c.erase(k, c.find('\n', k) - k);
    }
    out.push_back(c);
  }
  return out;
}

class ShardCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kc-shard-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  kc_cli_test::CommandRun grade(const std::string& extra, const std::string& out) {
    return run_kc("grade " + kContracts + " " + kBackends + " " + extra + " --out " + (dir_ / out).string());
  }
  fs::path dir_;
};

TEST_F(ShardCli, MergedShardsEqualTheUnshardedRun) {
  ASSERT_EQ(grade("", "full").code, 0);
  for (int i = 0; i < 3; ++i) {
    const auto r = grade("--shard " + std::to_string(i) + "/3", "s" + std::to_string(i));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("shard " + std::to_string(i) + "/3"), std::string::npos);
  }
  // Shards partition the plan: their case counts add up, none is empty.
  std::size_t sum = 0;
  for (int i = 0; i < 3; ++i) {
    const auto n = case_lines(dir_ / ("s" + std::to_string(i))).size();
    EXPECT_GT(n, 0u);
    sum += n;
  }
  const auto full = case_lines(dir_ / "full");
  EXPECT_EQ(sum, full.size());
  // Given in any order, the merge gives the plan's order.
  const auto m = run_kc("merge " + (dir_ / "s2").string() + " " + (dir_ / "s0").string() + " " +
                        (dir_ / "s1").string() + " --out " + (dir_ / "merged").string());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_NE(m.out.find("merged 3 shard runs"), std::string::npos) << m.out;
  EXPECT_EQ(case_lines(dir_ / "merged"), full);
  // The merged trace is one valid chain with the judged cases of the full run.
  const auto v = run_kc("verify-trace " + (dir_ / "merged" / "trace.jsonl").string());
  EXPECT_EQ(v.code, 0) << v.out;
  const auto vf = run_kc("verify-trace " + (dir_ / "full" / "trace.jsonl").string());
  // "FILE: N records, chain intact": the count, without the file.
  const auto count = [](const std::string& s) {
    const std::size_t colon = s.find(": ");
    return colon == std::string::npos ? s : s.substr(colon, s.find(" record") - colon);
  };
  EXPECT_EQ(count(v.out), count(vf.out)) << v.out << vf.out;
  // Each shard's machine profile is carried into the merged record.
  const std::string merged = slurp(dir_ / "merged" / "record.json");
  std::size_t profiles = 0;
  for (std::size_t at = merged.find("\"kc_commit\""); at != std::string::npos;
       at = merged.find("\"kc_commit\"", at + 1))
    ++profiles;
  EXPECT_EQ(profiles, 3u);
  // The same matrix as the full run's.
  const auto table = [](const std::string& md) { return md.substr(md.find("## Matrix")); };
  EXPECT_EQ(table(slurp(dir_ / "merged" / "report.md")), table(slurp(dir_ / "full" / "report.md")));
}

TEST_F(ShardCli, ShardsPlacedByBackendMergeIntoTheWholeRun) {
  ASSERT_EQ(grade("", "full").code, 0);
  // ref on one node, refblas split over two: two selections of one plan.
  ASSERT_EQ(run_kc("grade " + kContracts + " --backend ref --out " + (dir_ / "ref").string()).code, 0);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(run_kc("grade " + kContracts + " --backend refblas --shard " + std::to_string(i) + "/2 --out " +
                     (dir_ / ("blas" + std::to_string(i))).string())
                  .code,
              0);
  const auto m = run_kc("merge " + (dir_ / "ref").string() + " " + (dir_ / "blas0").string() + " " +
                        (dir_ / "blas1").string() + " --out " + (dir_ / "merged").string());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(case_lines(dir_ / "merged"), case_lines(dir_ / "full"));
  // A missing shard of a selection is named.
  const auto missing = run_kc("merge " + (dir_ / "ref").string() + " " + (dir_ / "blas1").string() + " --out " +
                              (dir_ / "m2").string());
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("missing shard 0/2 of the selection --backend refblas"), std::string::npos)
      << missing.out;
}

TEST_F(ShardCli, AnotherPlanIsRefusedAndARetriedShardKeepsTheLaterRun) {
  ASSERT_EQ(grade("--shard 0/2", "a0").code, 0);
  ASSERT_EQ(grade("--shard 1/2", "a1").code, 0);
  ASSERT_EQ(grade("--shard 1/2 --seed 7", "b1").code, 0);
  const auto other = run_kc("merge " + (dir_ / "a0").string() + " " + (dir_ / "b1").string() + " --out " +
                            (dir_ / "m").string());
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.out.find("ran another plan"), std::string::npos) << other.out;
  // Shard 1 retried: both given, the later one is kept and the merge says so.
  ASSERT_EQ(grade("--shard 1/2", "a1-retry").code, 0);
  const auto retried = run_kc("merge " + (dir_ / "a0").string() + " " + (dir_ / "a1").string() + " " +
                              (dir_ / "a1-retry").string() + " --out " + (dir_ / "m").string());
  EXPECT_EQ(retried.code, 0) << retried.out;
  EXPECT_NE(retried.out.find("given twice"), std::string::npos) << retried.out;
  // A shard that died before writing its record is left out, and said.
  fs::create_directories(dir_ / "a1-dead");
  const auto dead = run_kc("merge " + (dir_ / "a0").string() + " " + (dir_ / "a1-dead").string() + " " +
                           (dir_ / "a1").string() + " --out " + (dir_ / "m-dead").string());
  EXPECT_EQ(dead.code, 0) << dead.out;
  EXPECT_NE(dead.out.find("no record.json (the run did not finish): left out"), std::string::npos) << dead.out;
  // A merged directory is not merged over.
  const auto again = run_kc("merge " + (dir_ / "a0").string() + " " + (dir_ / "a1").string() + " --out " +
                            (dir_ / "m").string());
  EXPECT_EQ(again.code, 2);
  // A record whose trace was edited is refused (the shard's chain is verified).
  std::string t = slurp(dir_ / "a0" / "trace.jsonl");
  const std::size_t at = t.find("\"conforming\"");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 12, "\"violation\"");
  std::ofstream(dir_ / "a0" / "trace.jsonl") << t;
  const auto forged = run_kc("merge " + (dir_ / "a0").string() + " " + (dir_ / "a1").string() + " --out " +
                             (dir_ / "m3").string());
  EXPECT_EQ(forged.code, 2) << forged.out;
}

TEST_F(ShardCli, SchedulersVariablesGiveTheShard) {
  const fs::path status = dir_ / "gtest-status";
  const auto g = run_command("GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=2 GTEST_SHARD_STATUS_FILE=" + status.string() +
                             " " + KC_BIN + " grade " + kContracts + " " + kBackends + " --shard auto --out " +
                             (dir_ / "g").string());
  EXPECT_EQ(g.code, 0) << g.out;
  EXPECT_NE(g.out.find("shard 1/2 (GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS)"), std::string::npos) << g.out;
  EXPECT_TRUE(fs::exists(status));
  // The record's profile names the machine and the knobs that change code paths.
  const auto p = run_command("OPENBLAS_NUM_THREADS=3 " + std::string(KC_BIN) + " grade " + kContracts + " " +
                             kBackends + " --out " + (dir_ / "p").string());
  EXPECT_EQ(p.code, 0) << p.out;
  const std::string rec = slurp(dir_ / "p" / "record.json");
  for (const char* want : {"\"cpu_model\"", "\"cpu_flags\"", "\"kc_commit\"", "\"fp_ftz\": \"off\"",
                           "\"library_refblas\"", "\"OPENBLAS_NUM_THREADS\": \"3\""})
    EXPECT_NE(rec.find(want), std::string::npos) << want;
  const auto s = run_command("SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_MIN=3 SLURM_ARRAY_TASK_MAX=4 "
                             "SLURM_ARRAY_TASK_COUNT=2 " +
                             std::string(KC_BIN) + " grade " + kContracts + " " + kBackends +
                             " --shard auto --out " + (dir_ / "s").string());
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("shard 1/2 (SLURM_ARRAY_TASK_ID)"), std::string::npos) << s.out;
  EXPECT_EQ(case_lines(dir_ / "g"), case_lines(dir_ / "s"));
  const auto none = run_command("env -u SLURM_ARRAY_TASK_ID " + std::string(KC_BIN) + " grade " + kContracts +
                                " --shard auto --out " + (dir_ / "n").string());
  EXPECT_EQ(none.code, 2) << none.out;
  // A flag the command does not read is refused.
  EXPECT_EQ(run_kc("lint " + kContracts + " --shard 0/2").code, 2);
}

TEST_F(ShardCli, CalibrateShardsSplitTheContractsWithTheirTrios) {
  const std::string blas = std::string(KC_SOURCE_DIR) + "/contracts/blas/";
  const std::string files = blas + "KC-SCAL-01.kc " + blas + "KC-SCAL-02.kc " + blas + "KC-RED-01.kc";
  std::string seen;
  for (int i = 0; i < 2; ++i) {
    const auto r = run_kc("calibrate " + files + " --shard " + std::to_string(i) + "/2");
    ASSERT_EQ(r.code, 0) << r.out;
    for (const char* id : {"KC-SCAL-01 ", "KC-SCAL-02 ", "KC-RED-01 "}) {
      const std::size_t at = r.out.find(id);
      if (at == std::string::npos) continue;
      EXPECT_EQ(seen.find(id), std::string::npos) << id << " in two shards";
      seen += id;
      // The whole trio runs in the shard that has the contract: one row per role.
      std::size_t rows = 0;
      for (std::size_t p = r.out.find("\n" + std::string(id)); p != std::string::npos;
           p = r.out.find("\n" + std::string(id), p + 1))
        ++rows;
      EXPECT_EQ(rows, 3u) << id << "\n" << r.out;
    }
  }
  EXPECT_EQ(seen.size(), std::string("KC-SCAL-01 KC-SCAL-02 KC-RED-01 ").size()) << seen;
}

TEST_F(ShardCli, DurationsOfAnEarlierRunBalanceTheSplit) {
  ASSERT_EQ(grade("", "full").code, 0);
  std::size_t sum = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string out = "b" + std::to_string(i);
    const auto r = grade("--shard " + std::to_string(i) + "/2 --shard-balance " + (dir_ / "full").string(), out);
    ASSERT_EQ(r.code, 0) << r.out;
    sum += case_lines(dir_ / out).size();
  }
  EXPECT_EQ(sum, case_lines(dir_ / "full").size());
  const auto m = run_kc("merge " + (dir_ / "b0").string() + " " + (dir_ / "b1").string() + " --out " +
                        (dir_ / "m").string());
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(case_lines(dir_ / "m"), case_lines(dir_ / "full"));
}

// A real Slurm: a one-machine cluster (deploy/slurm/local-cluster.sh) runs the
// shards as a job array and the merge as a dependent job (deploy/slurm/submit.sh).
TEST_F(ShardCli, ASlurmJobArrayOfShardsMergesIntoTheUnshardedRun) {
  const std::string deploy = std::string(KC_SOURCE_DIR) + "/deploy/slurm";
  const fs::path cluster = dir_ / "cluster";
  const auto up = run_command("bash " + deploy + "/local-cluster.sh start " + cluster.string());
  if (up.code == 77) GTEST_SKIP() << up.out;
  struct Stop {
    std::string cmd;
    ~Stop() { run_command(cmd); }
  } stop{"bash " + deploy + "/local-cluster.sh stop " + cluster.string()};
  ASSERT_EQ(up.code, 0) << up.out;
  ASSERT_EQ(grade("", "full").code, 0);
  const std::string env = "SLURM_CONF=" + (cluster / "slurm.conf").string() + " KC=" + KC_BIN + " ";
  const auto sub = run_command(env + "bash " + deploy + "/submit.sh 3 " + (dir_ / "run").string() + " " + kContracts +
                               " " + kBackends);
  ASSERT_EQ(sub.code, 0) << sub.out;
  const fs::path rc = dir_ / "run" / "merged.rc";
  for (int i = 0; i < 600 && !fs::exists(rc); ++i) ::usleep(200 * 1000);
  ASSERT_TRUE(fs::exists(rc)) << "the merge job did not end in 120 s\n"
                              << run_command(env + "squeue; cat " + (dir_ / "run" / "logs" / "*").string()).out;
  EXPECT_EQ(slurp(rc), "0\n") << slurp(dir_ / "run" / "logs" / "merge.log");
  EXPECT_EQ(case_lines(dir_ / "run" / "merged"), case_lines(dir_ / "full"));
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(slurp(dir_ / "run" / "logs" / ("shard-" + std::to_string(i) + ".log"))
                  .find("shard " + std::to_string(i) + "/3 (SLURM_ARRAY_TASK_ID)"),
              std::string::npos);
}

}  // namespace

namespace {

/// `kc status` of a ladder directory without what is per run: the path line,
/// and each rung's time and seconds.
std::string status_lines(const fs::path& dir) {
  const auto r = run_kc("status --dir " + dir.string());
  EXPECT_EQ(r.code, 0) << r.out;
  std::string out;
  std::istringstream in(r.out);
  const std::regex when(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d+\.\d\d s)");
  for (std::string line; std::getline(in, line);)
    if (line.find("chain intact") == std::string::npos) out += std::regex_replace(line, when, "-") + "\n";
  return out;
}

}  // namespace

TEST_F(ShardCli, LadderShardsMergeIntoTheUnshardedClimb) {
  const std::string contracts = std::string(KC_SOURCE_DIR) + "/contracts/elementwise/KC-UNARY-01.kc " +
                                KC_SOURCE_DIR + "/contracts/elementwise/KC-EXP-01.kc";
  auto ladder = [&](const std::string& env, const std::string& extra, const std::string& out) {
    return run_command(env + " " + KC_BIN + " ladder --impl ref.exp --impl ref.relu --impl ref.tanh --level 2 " + extra + " --out " +
                       (dir_ / out).string() + " " + contracts);
  };
  ASSERT_EQ(ladder("", "", "whole").code, 0);
  // Three shards, their numbers from --shard, Slurm's and GoogleTest's variables.
  ASSERT_EQ(ladder("", "--shard 0/3", "s0").code, 0);
  const auto s1 = ladder("SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3", "--shard auto", "s1");
  ASSERT_EQ(s1.code, 0) << s1.out;
  EXPECT_NE(s1.out.find("shard 1/3 (SLURM_ARRAY_TASK_ID"), std::string::npos) << s1.out;
  ASSERT_EQ(ladder("GTEST_SHARD_INDEX=2 GTEST_TOTAL_SHARDS=3", "--shard auto", "s2").code, 0);
  const std::string s0 = (dir_ / "s0").string(), s1d = (dir_ / "s1").string(), s2 = (dir_ / "s2").string();

  // A missing shard is named; the three merge into the unsharded climb.
  auto r = run_kc("merge " + s0 + " " + s2 + " --out " + (dir_ / "part").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing shard 1/3"), std::string::npos) << r.out;
  r = run_kc("merge " + s2 + " " + s0 + " " + s1d + " --out " + (dir_ / "merged").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("merged 3 ladder shards: 8 rung records of 4 kernels"), std::string::npos) << r.out;
  const std::string whole = status_lines(dir_ / "whole");
  EXPECT_NE(whole.find("KC-UNARY-01"), std::string::npos) << whole;
  EXPECT_EQ(status_lines(dir_ / "merged"), whole);

  // Another plan (another level) is refused; a retried shard: the later run is kept.
  ASSERT_EQ(ladder("", "--shard 1/3 --level 1", "other").code, 0);
  r = run_kc("merge " + s0 + " " + (dir_ / "other").string() + " " + s2 + " --out " + (dir_ / "m2").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("another ladder plan"), std::string::npos) << r.out;
  ASSERT_EQ(ladder("", "--shard 1/3", "s1-retry").code, 0);
  r = run_kc("merge " + s0 + " " + s1d + " " + (dir_ / "s1-retry").string() + " " + s2 + " --out " +
             (dir_ / "m3").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("given twice"), std::string::npos) << r.out;

  // An edited shard (its chain no longer holds) is refused.
  std::string t = slurp(dir_ / "s0" / "ladder.jsonl");
  const std::size_t at = t.find("\"passed\"");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 8, "\"failed\"");
  std::ofstream(dir_ / "s0" / "ladder.jsonl") << t;
  r = run_kc("merge " + s0 + " " + s1d + " " + s2 + " --out " + (dir_ / "m4").string());
  EXPECT_EQ(r.code, 2) << r.out;
}
