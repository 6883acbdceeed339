// kc — rotary position embedding (RoPE) of x {seq, dim} by position.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kc/obligation.h"
#include "kc/op.h"

namespace kc::ops {

std::unique_ptr<Op> make_rope_op();

/// The rotated pairs of a call: pair i is (first, second), rotated by angle
/// (offset + row) * base^(-2i/dim). pairing = half: (i, i + dim/2), the
/// GPT-NeoX / LLaMA "rotate_half" layout; interleaved: (2i, 2i + 1), RoFormer's.
struct RopeLayout {
  std::int64_t seq = 0, dim = 0, offset = 0;
  double base = 10000;
  bool interleaved = false;
  std::pair<std::int64_t, std::int64_t> pair(std::int64_t i) const {
    return interleaved ? std::pair{2 * i, 2 * i + 1} : std::pair{i, i + dim / 2};
  }
  /// The rotation angle of pair i at row r, in long double.
  long double angle(std::int64_t r, std::int64_t i) const;
};
RopeLayout rope_layout(const Call& call);

}  // namespace kc::ops

namespace kc::obligation {

/// The algebraic properties of rope (ops/rope/properties.cpp).
void add_rope_properties(std::vector<Property>& out);

}  // namespace kc::obligation
