// kc — capability declarations and the implementation path a call ran.
//
// An impl declares what it supports (declaration keys shape_class, layouts),
// what it does outside that (unsupported = RAISE | FALLBACK | UNDEFINED, and
// the fallback path's name) and which implementation path it runs (path).
// This header reads those declarations against a call, and carries the path
// a library reports for a call (oneDNN's impl_info_str, OpenBLAS's core name)
// from the kernel to the engine: the kernel calls report_selected_path during
// Impl::run, the worker takes it when run returns (kc/isolate.h, Outcome::path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kc/declaration.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc {

/// One condition of a shape class: every named size (or, with no names, every
/// dimension of every tensor of the call) is a multiple of / at most / at least n.
struct ShapeCondition {
  enum class Kind { kMultipleOf, kAtMost, kAtLeast };
  Kind kind = Kind::kMultipleOf;
  std::int64_t n = 1;
  std::vector<std::string> sizes;  ///< config keys (M, K, head_dim); empty: every tensor dimension
};

/// A declared shape class: "any" (no conditions) or conditions joined by `and`:
/// `multiple_of(16)`, `multiple_of(16, M, N) and at_most(4096, K)`.
struct ShapeClass {
  std::vector<ShapeCondition> conditions;
  bool any() const { return conditions.empty(); }
};

/// Parses a shape_class declaration; the error names the offending part and
/// what is expected.
Result<ShapeClass> parse_shape_class(std::string_view text);

/// Where a call falls outside a declared capability.
struct CapabilityGap {
  std::string key;  ///< the declaration key it is outside of: "shape_class" or "layouts"; empty: inside
  std::string why;  ///< one line: "K = 17 is not a multiple of 16 (shape_class multiple_of(16))"
  bool inside() const { return key.empty(); }
};

/// Whether `call` is inside the capability `decl` declares (shape_class,
/// layouts), and if not, why. A shape class kc cannot parse, or one naming a
/// size the call does not set, is kInvalidArgument.
Result<CapabilityGap> capability_gap(const Declaration& decl, const Call& call);

/// Whether `path` matches a declared path pattern: alternatives separated by
/// '|', each matched whole, '*' standing for any text (case-insensitive).
bool path_matches(std::string_view patterns, std::string_view path);

/// The implementation path a library reports for one call, and why it chose a
/// path other than the one requested (empty when it says nothing).
struct SelectedPath {
  std::string path;
  std::string reason;
};

/// Called by a kernel during Impl::run: the path its library selected for this
/// call. A later report in the same call replaces an earlier one.
void report_selected_path(std::string_view path, std::string_view reason = {});
/// The path reported since the last take on this thread (empty if none), cleared.
SelectedPath take_selected_path();

}  // namespace kc
