// kc — inputs and oracle answers shared by the impls of one check run
// (docs/verify.md, "Suite throughput").
//
// A sample's inputs depend only on the contract, the config, the sample index
// and the run's seed (plan.h case_seed: independent of the impl), so every impl
// graded against a contract sees the same inputs, and an FP64 oracle's answer
// to them is the same for all of them too (given the same oracle options: an
// impl's declared OOB policy changes what gather's oracle emulates). The cache
// keeps both, keyed by exactly those things, so a suite over N impls generates
// each sample once and runs each oracle once per distinct option set instead
// of N times. Entries are evicted least-recently-used beyond a byte budget.
//
// Oracle answers are the one thing a kernel under test must never find in its
// memory (a worker is a fork of kc; docs/isolation.md, isolate::OracleScope). The
// cache keeps their values in mappings advised MADV_WIPEONFORK: a worker
// forked while they are cached sees zeros there. Where the kernel refuses the
// advice, answers are not cached (inputs still are: the kernel gets them anyway).
//
// Thread-safe: --jobs runs cases on several threads. Two threads that miss the
// same key both compute it (the answers are identical); nothing waits on
// another case's computation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kc/engine.h"
#include "kc/op.h"

namespace kc::engine {

class SampleCache {
 public:
  /// 512 MiB by default: a 4096^2 FP32 GEMM sample with its FP64 answer is ~330 MiB.
  explicit SampleCache(std::size_t max_bytes = std::size_t{512} << 20) : max_bytes_(max_bytes) {}

  /// Key of a sample's inputs: the op (a contract may scope several, e.g.
  /// layernorm and rmsnorm, whose calls differ for the same config), contract
  /// content hash, config, sample index, seed, and the plan's fill and probe
  /// (which the key text spells out).
  static std::string inputs_key(std::string_view op, const std::string& contract_hash, const std::string& config,
                                std::int64_t sample, std::uint64_t seed, const FillSpec& fill,
                                const std::optional<Probe>& probe);
  /// Key of an oracle answer: the inputs key plus the oracle options.
  static std::string oracle_key(const std::string& inputs_key, const OracleOptions& options);

  /// A copy of the cached inputs (the call after fill and probe), if present.
  std::optional<Call> find_inputs(const std::string& key);
  void put_inputs(const std::string& key, const Call& call);
  std::optional<OracleResult> find_oracle(const std::string& key);
  void put_oracle(const std::string& key, const OracleResult& answer);

  SampleCacheStats stats() const;

 private:
  class Sealed;  // an answer's values in wipe-on-fork memory
  struct Entry {
    std::string key;
    std::optional<Call> call;
    std::optional<OracleResult> oracle;  ///< names and raises; values only in `sealed`
    std::shared_ptr<const Sealed> sealed;
    std::size_t bytes = 0;
  };
  using List = std::list<Entry>;
  void insert(Entry entry);  // caller holds mu_
  List::iterator touch(std::unordered_map<std::string, List::iterator>::iterator it);

  mutable std::mutex mu_;
  std::size_t max_bytes_;
  List lru_;  // most recent first
  std::unordered_map<std::string, List::iterator> index_;
  SampleCacheStats stats_;
};

}  // namespace kc::engine
