// --shard: I/N parsing, the schedulers' variables, and the split itself.
#include "kc/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

namespace {

using kc::shard::Shard;

kc::shard::Getenv env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(Shard, ParsesIndexOfCountFromZero) {
  auto s = kc::shard::parse("2/5");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  EXPECT_EQ(s->text(), "2/5");
  for (const char* bad : {"5/5", "-1/4", "1/0", "a/4", "1", "1/4x", "/4", ""}) {
    auto b = kc::shard::parse(bad);
    EXPECT_FALSE(b.ok()) << bad;
  }
  EXPECT_NE(kc::shard::parse("4/4").status().message().find("numbered from 0"), std::string::npos);
}

TEST(Shard, ReadsSlurmArraysFromTheirFirstId) {
  auto s = kc::shard::from_environment(env({{"SLURM_ARRAY_TASK_ID", "7"},
                                            {"SLURM_ARRAY_TASK_MIN", "5"},
                                            {"SLURM_ARRAY_TASK_MAX", "8"},
                                            {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->text(), "2/4");
  EXPECT_EQ(s->source, "SLURM_ARRAY_TASK_ID");
  // A stepped array has ids that are not min + 0..count-1.
  auto stepped = kc::shard::from_environment(env({{"SLURM_ARRAY_TASK_ID", "3"},
                                                  {"SLURM_ARRAY_TASK_MIN", "1"},
                                                  {"SLURM_ARRAY_TASK_MAX", "7"},
                                                  {"SLURM_ARRAY_TASK_STEP", "2"},
                                                  {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  EXPECT_FALSE(stepped.ok());
  auto sparse = kc::shard::from_environment(env({{"SLURM_ARRAY_TASK_ID", "9"},
                                                 {"SLURM_ARRAY_TASK_MIN", "1"},
                                                 {"SLURM_ARRAY_TASK_MAX", "9"},
                                                 {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_FALSE(sparse.ok());
}

TEST(Shard, ReadsGoogleTestKubernetesAndItsOwnVariables) {
  auto g = kc::shard::from_environment(
      env({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "3"}, {"GTEST_SHARD_STATUS_FILE", "/tmp/x"}}));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->text(), "1/3");
  EXPECT_EQ(g->status_file, "/tmp/x");
  auto k = kc::shard::from_environment(env({{"JOB_COMPLETION_INDEX", "0"}, {"KC_SHARD_COUNT", "2"}}));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->text(), "0/2");
  auto k_no_count = kc::shard::from_environment(env({{"JOB_COMPLETION_INDEX", "0"}}));
  ASSERT_FALSE(k_no_count.ok());
  EXPECT_NE(k_no_count.status().message().find("KC_SHARD_COUNT"), std::string::npos);
  auto own = kc::shard::from_environment(env({{"KC_SHARD_INDEX", "3"}, {"KC_SHARD_COUNT", "4"}}));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->text(), "3/4");
  auto none = kc::shard::from_environment(env({}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("SLURM_ARRAY_TASK_ID"), std::string::npos);
  EXPECT_FALSE(kc::shard::from_environment(env({{"GTEST_SHARD_INDEX", "x"}, {"GTEST_TOTAL_SHARDS", "2"}})).ok());
}

TEST(Shard, RoundRobinWithoutDurations) {
  const auto owner = kc::shard::assign(std::vector<double>(7, -1.0), 3);
  EXPECT_EQ(owner, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(kc::shard::assign(std::vector<double>(4, -1.0), 1), (std::vector<int>(4, 0)));
}

TEST(Shard, DurationsBalanceTheShards) {
  // One long case and many short ones: round robin would put the long one
  // beside a third of the rest; the balanced split gives it a shard to itself.
  std::vector<double> d(13, 1.0);
  d[4] = 12.0;
  const auto owner = kc::shard::assign(d, 2);
  std::vector<double> load(2, 0.0);
  for (std::size_t i = 0; i < d.size(); ++i) load[static_cast<std::size_t>(owner[i])] += d[i];
  EXPECT_DOUBLE_EQ(load[0], 12.0);
  EXPECT_DOUBLE_EQ(load[1], 12.0);
  // Deterministic, and every case placed once.
  EXPECT_EQ(owner, kc::shard::assign(d, 2));
  // Unknown durations count as the median of the known ones.
  std::vector<double> part = {4.0, -1.0, 4.0, -1.0};
  const auto o2 = kc::shard::assign(part, 2);
  EXPECT_EQ(std::count(o2.begin(), o2.end(), 0), 2);
}

}  // namespace
