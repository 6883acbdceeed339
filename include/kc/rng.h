// kc — a small, portable, seeded random generator (xoshiro256**).
//
// Repro lines carry a seed; the same seed must give the same inputs on every
// compiler and standard library, so kc does not use <random>'s distributions.
#pragma once

#include <cstdint>

namespace kc {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0x6b63u);
  std::uint64_t next_u64();
  /// Uniform in [0, 1).
  double uniform();
  /// Uniform in [a, b).
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  /// Uniform integer in [lo, hi].
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);
  /// Standard normal (Box-Muller, no cached second value: stateless per call pair).
  double normal();
  double normal(double mean, double stddev) { return mean + stddev * normal(); }

 private:
  std::uint64_t s_[4];
};

/// Mixes a base seed with a case index into an independent stream seed.
std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index);

}  // namespace kc
