// kc — xoshiro256** seeded through splitmix64 (see kc/rng.h).
//
// The generator is Blackman and Vigna's xoshiro256**, written from its
// published recurrence; splitmix64 expands one 64-bit seed into the four
// words of state (the seeding the authors recommend). Distributions are
// computed here, not by <random>, so a seed means the same inputs everywhere.
#include "kc/rng.h"

#include <cmath>

namespace kc {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

// The top 53 bits give every double in [0, 1) with spacing 2^-53.
double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  if (span == 0) return static_cast<std::int64_t>(next_u64());  // the full 64-bit range
  // Rejection sampling removes the modulo bias.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % span + 1) % span;
  std::uint64_t v = next_u64();
  while (v > limit) v = next_u64();
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + v % span);
}

double Rng::normal() {
  // Box-Muller: u1 in (0, 1] so log never sees 0.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index) {
  std::uint64_t x = base ^ (index * 0xd1b54a32d192ed03ull);
  splitmix64(x);
  return splitmix64(x);
}

}  // namespace kc
