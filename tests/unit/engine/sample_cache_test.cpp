// The cache of inputs and oracle answers shared across impls
// (engine/sample_cache.h): hits return what was put, the byte budget evicts
// the least recently used, and a forked worker cannot read a cached answer.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "engine/sample_cache.h"

namespace kc::engine {
namespace {

OracleResult answer(double base, std::size_t n) {
  OracleResult r;
  r.output_names = {"C"};
  r.outputs.emplace_back();
  for (std::size_t i = 0; i < n; ++i) r.outputs[0].push_back(base + static_cast<double>(i));
  return r;
}

TEST(SampleCache, ReturnsWhatWasPutAndCountsHits) {
  SampleCache cache;
  const std::string ik = SampleCache::inputs_key("matmul", "h", "M=2", 0, 7, FillSpec{}, std::nullopt);
  EXPECT_NE(SampleCache::inputs_key("layernorm", "h", "M=2", 0, 7, FillSpec{}, std::nullopt),
            SampleCache::inputs_key("rmsnorm", "h", "M=2", 0, 7, FillSpec{}, std::nullopt))
      << "one contract may scope several ops";
  OracleOptions opt;
  const std::string ok = SampleCache::oracle_key(ik, opt);
  opt.oob = OobPolicy::kClamp;
  EXPECT_NE(SampleCache::oracle_key(ik, opt), ok) << "the impl's OOB policy changes the answer";
  EXPECT_NE(SampleCache::inputs_key("matmul", "h", "M=2", 1, 7, FillSpec{}, std::nullopt), ik);
  EXPECT_FALSE(cache.find_oracle(ok));
  cache.put_oracle(ok, answer(1.5, 5));
  const auto hit = cache.find_oracle(ok);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->output_names, std::vector<std::string>{"C"});
  EXPECT_EQ(hit->outputs, answer(1.5, 5).outputs);
  const SampleCacheStats s = cache.stats();
  EXPECT_EQ(s.oracles_computed, 1);
  EXPECT_EQ(s.oracles_reused, 1);
}

TEST(SampleCache, EvictsTheLeastRecentlyUsedBeyondItsBudget) {
  SampleCache cache(3 * 100 * sizeof(double));
  for (int i = 0; i < 3; ++i) cache.put_oracle("k" + std::to_string(i), answer(i, 100));
  EXPECT_TRUE(cache.find_oracle("k0"));  // k0 is now the most recent
  cache.put_oracle("k3", answer(3, 100));
  EXPECT_FALSE(cache.find_oracle("k1"));
  EXPECT_TRUE(cache.find_oracle("k0"));
  EXPECT_TRUE(cache.find_oracle("k3"));
  EXPECT_LE(cache.stats().bytes, 3 * 100 * sizeof(double));
}

// A worker is a fork of kc: the cached answer must not be in its memory.
TEST(SampleCache, AForkedChildSeesNoCachedAnswer) {
  SampleCache cache;
  cache.put_oracle("k", answer(42, 1000));
  ASSERT_TRUE(cache.find_oracle("k")) << "this kernel refused MADV_WIPEONFORK, so nothing was cached";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto seen = cache.find_oracle("k");
    bool leaked = false;
    if (seen)
      for (double v : seen->outputs[0]) leaked = leaked || v != 0;
    _exit(leaked ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child read the cached answer's values";
  EXPECT_EQ(cache.find_oracle("k")->outputs, answer(42, 1000).outputs) << "the parent keeps them";
}

}  // namespace
}  // namespace kc::engine
