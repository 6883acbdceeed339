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

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/cpu_features.h"
#include "kc/declaration.h"
#include "kc/op.h"
#include "kc/status.h"
#include "kc/tensor.h"

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

/// Placement: a call may ask for a tensor's first element to start a given
/// number of bytes past a kPlacementBase-byte boundary, with the config key
/// `misalign_<tensor>` (misalign_A = 4: A one FP32 element off a 64-byte
/// line). The worker places the tensor so inside its guarded buffer (guard
/// pages and canaries still around it); a kernel run in kc's process gets a
/// copy so placed for the call. A tensor without the key starts where kc puts
/// it by default: 16-byte aligned (guard.h; operator new in-process).
inline constexpr std::size_t kPlacementBase = 64;
inline constexpr std::size_t kDefaultAlignment = 16;
inline constexpr char kPlacementPrefix[] = "misalign_";

/// Whether `key` is a placement key (misalign_<TENSOR>) of one of `tensors`.
bool is_placement_key(std::string_view key, const std::vector<std::string>& tensors);
/// The placement the call asks for its k-th tensor (bytes past a
/// kPlacementBase boundary), nullopt where it asks none; a value that is not
/// an integer in [0, kPlacementBase) is kInvalidArgument.
Result<std::optional<std::size_t>> requested_placement(const Call& call, std::size_t k);
/// The alignment (bytes, a power of two) a tensor so placed is guaranteed:
/// the largest power of two dividing the placement (kPlacementBase for 0);
/// kDefaultAlignment without one.
std::size_t placed_alignment(std::optional<std::size_t> placement);

/// For a kernel run in kc's own process: while it lives, every tensor of the
/// call with a placement key is a view of a copy at that placement; at the
/// end what the kernel left there is copied back and the call's own tensors
/// return. status() is the first bad placement value (nothing moved then).
class PlacedTensors {
 public:
  explicit PlacedTensors(Call& call);
  ~PlacedTensors();
  PlacedTensors(const PlacedTensors&) = delete;
  PlacedTensors& operator=(const PlacedTensors&) = delete;
  const Status& status() const { return status_; }

 private:
  struct Moved {
    std::size_t k;
    Tensor own;
    std::byte* block;
  };
  Call& call_;
  Status status_;
  std::vector<Moved> moved_;
};

/// Workspace: a call with the config key `workspace_bytes = N` carries one more
/// tensor, `workspace` (role kInOut, N one-byte elements), in its own guarded
/// buffer: a kernel that writes past it is GUARD_OVERWRITTEN(workspace, after).
/// An impl declares what it needs with `workspace = EXPR` (bytes): a constant
/// or a product of integers and config sizes, `4 * M * N`. Kernels find the
/// tensor with call_workspace; a call without the key carries none (the
/// kernel then provides its own).
inline constexpr char kWorkspaceKey[] = "workspace_bytes";
inline constexpr char kWorkspaceTensor[] = "workspace";

/// Appends the workspace tensor the call's config asks for (none without the
/// key); a value that is not a non-negative integer is kInvalidArgument.
Status add_workspace(Call& call);
/// The call's workspace tensor, or nullptr.
Tensor* call_workspace(Call& call);
/// The bytes the impl's declared workspace expression needs for this call;
/// nullopt where it declares none. An expression kc cannot read, or one
/// naming a size the call does not set, is kInvalidArgument.
Result<std::optional<std::int64_t>> declared_workspace(const Declaration& decl, const Call& call);

/// A CUDA architecture a kernel needs, as nvcc names it: sm_80 is compute
/// capability 8.0 or newer (SASS for the major, PTX that the driver compiles
/// for later devices); sm_90a, an architecture-specific target, is 9.0 exactly
/// (CUDA C++ Programming Guide, "Compute Capabilities": code using
/// architecture-specific features runs only on that capability).
struct GpuArch {
  int cc = 0;                ///< major * 10 + minor: 80, 90, 100
  bool exact = false;        ///< the `a` suffix
  std::string name() const;  ///< "sm_80", "sm_90a"
  /// Whether a device of compute capability `device_cc` (same encoding) runs it.
  bool runs_on(int device_cc) const { return exact ? device_cc == cc : device_cc >= cc; }
};

/// What the impl's declared device_capability needs: `any` (or no
/// declaration) is nothing; otherwise CPU feature names of kc/cpu_features.h
/// and at most one CUDA architecture (sm_XY or sm_XYa), joined by `and` or
/// commas ("avx2 and fma", "sm_80"). A name kc does not know is kInvalidArgument.
struct DeviceNeeds {
  std::vector<CpuFeature> cpu;
  std::optional<GpuArch> gpu;
  bool empty() const { return cpu.empty() && !gpu; }
};
Result<DeviceNeeds> declared_device_capability(const Declaration& decl);

/// Where a call falls outside a declared capability.
struct CapabilityGap {
  std::string key;  ///< the key it is outside of: shape_class, layouts, alignment, workspace or
                    ///< device_capability; empty: inside
  std::string why;  ///< one line: "K = 17 is not a multiple of 16 (shape_class multiple_of(16))"
  bool inside() const { return key.empty(); }
};

/// Whether `call` is inside the capability `decl` declares (shape_class,
/// layouts, alignment, workspace, and this CPU against device_capability), and if not, why. A shape class kc cannot
/// parse, or one naming a size the call does not set, an alignment that is neither `any` nor a power of two up to
/// kPlacementBase, or a bad placement value, is kInvalidArgument.
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
