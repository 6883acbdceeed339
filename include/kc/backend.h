// kc — the implementation boundary: impls, backends, and their registry.
//
// Shape after CUTLASS's Operation (describe / can_implement / run); registry
// after Catch2's reporter registry (explicit, duplicate names rejected).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kc/declaration.h"
#include "kc/op.h"
#include "kc/status.h"

namespace kc {

/// One concrete kernel under test.
class Impl {
 public:
  virtual ~Impl() = default;
  /// What the impl states about itself.
  virtual const Declaration& declaration() const = 0;
  /// kUnimplemented when this impl cannot run the call (dtype, shape class).
  virtual Status can_implement(const Call& call) const;
  /// Runs the kernel on call's tensors, writing its outputs in place.
  /// A kernel that reports an error returns kKernelRaised with its message.
  virtual Status run(Call& call) const = 0;

  /// Maps what run needs into the calling process: a plugin's shared library,
  /// which kc's own process never loads (docs/isolation.md). A worker calls it
  /// once, before its sandbox closes; run calls it on first use anywhere else
  /// (--isolate none). Idempotent. The default has nothing to load.
  virtual Status load_in_worker() const { return ok_status(); }
  /// Called in kc's process before a worker for this impl is forked. An impl
  /// whose library is costly to load (libtorch: about a second) and loaded
  /// cleanly in a probe child maps it here, once, so that every worker inherits
  /// it instead of loading it again. The default has nothing to load.
  virtual Status load_before_fork() const { return ok_status(); }
};

/// kUnimplemented when the call passes a non-positive BLAS increment (incx or
/// incy <= 0; the level-1 ops keep |inc| as the tensor's stride and the sign
/// in the config) to an impl that does not declare increments = BLAS: one
/// that reads only the stride would walk the storage the wrong way. Part of
/// Impl::can_implement's default; the engine checks it for every impl, those
/// that override can_implement included.
Status check_increments(const Declaration& d, const Call& call);

/// What `kc backends` prints for one backend.
struct BackendInfo {
  std::string name;
  bool available = false;
  std::string version;      ///< library version, when known
  std::string reason;       ///< why unavailable, or where it was loaded from
  std::string description;
  /// A library of this backend aborted, crashed, exited or hung while loading
  /// in its probe child (the reason says which): a finding about the library,
  /// not a mistake in how kc was asked to load it.
  bool load_died = false;
};

/// A family of impls sharing a runtime.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  /// Loads/initialises the runtime if needed; never throws.
  virtual BackendInfo probe() = 0;
  /// The impls; empty when unavailable.
  virtual std::vector<std::shared_ptr<const Impl>> impls() = 0;
};

class BackendRegistry {
 public:
  /// Duplicate backend names are rejected.
  Status add(std::unique_ptr<Backend> backend);
  std::vector<Backend*> backends() const;
  Backend* find_backend(std::string_view name) const;

  /// Every impl of every available backend (probing each backend once).
  std::vector<std::shared_ptr<const Impl>> impls();
  std::shared_ptr<const Impl> find_impl(std::string_view name);
  std::vector<BackendInfo> infos();

 private:
  /// One backend's probe result and impls, cached so each backend is probed once.
  struct Probed {
    BackendInfo info;
    std::vector<std::shared_ptr<const Impl>> impls;
  };
  void probe_all();

  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<Probed> probed_;  ///< parallel to the first probed_.size() backends_
};

/// Every library that aborted, crashed, exited or hung while loading in a
/// probe child in this process so far, one line each: "PATH: aborted while
/// loading (SIGABRT); it printed: ...". What kc says on stderr after a run.
std::vector<std::string> library_load_failures();

/// `--library NAME[@LABEL]=PATH`: another build of a library a backend loads.
/// Without a label the backend NAME loads PATH instead of its default; with
/// one, a second backend NAME@LABEL loads PATH beside it, so two builds of one
/// library are graded side by side (impls NAME@LABEL.<routine>).
struct LibraryOverride {
  std::string backend;  ///< openblas | blis | refblas
  std::string label;    ///< empty: replace the default build
  std::string path;
  std::string spec() const { return backend + (label.empty() ? "" : "@" + label) + "=" + path; }
};
/// Parses "NAME[@LABEL]=PATH"; the error says what is wrong and what is expected.
Result<LibraryOverride> parse_library_override(const std::string& text);
/// The backends whose library --library can point elsewhere.
const std::vector<std::string>& overridable_backends();

/// Options for the built-in backend table.
struct BackendOptions {
  std::vector<std::string> plugin_paths;  ///< shared libraries to load as the plugin backend
  std::vector<std::string> opencl_sources;  ///< .cl files for the opencl_user backend (kc vet)
  /// Backend names (globs) to register; empty = every one. A backend left out
  /// is never probed: its libraries are not loaded.
  std::vector<std::string> only;
  /// --library: other builds of the BLAS libraries (replacing or beside the default).
  std::vector<LibraryOverride> libraries;
};

/// The one table of built-in backends: ref, openblas, blis, refblas, calibration, cuda,
/// eigen, compilers, mpi, opencl, onednn, torch, sleef, hwy, opencl_user, plugin.
Status register_builtin_backends(BackendRegistry& registry, const BackendOptions& options = {});

namespace backends {
/// `kc vet file.cl`: builds the file with the OpenCL runtime (in a child
/// process) and lists the impls it defines, one per line ("name op options").
/// kInvalidArgument with the build log when it does not build or defines no
/// kc_<op> kernel; kUnavailable without OpenCL.
Result<std::string> build_opencl_source(const std::string& path);
}  // namespace backends

}  // namespace kc
