// kc — one BLAS shared library loaded side by side with the others.
//
// openblas, blis and refblas are all loaded into one process with
// dlopen(RTLD_NOW | RTLD_LOCAL): each handle keeps its own `sgemm_`, and we
// reach it with dlsym on that handle, never through the global namespace.
// RTLD_DEEPBIND is deliberately not used: it breaks AddressSanitizer's
// interposition of malloc/free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kc/cpu_features.h"
#include "kc/declaration.h"
#include "kc/status.h"

namespace kc::backends {

/// The gfortran calling convention of the reference BLAS (as built by Debian for
/// all three libraries): every argument by pointer, INTEGER is int32 (the LP64
/// interface), REAL FUNCTION returns float in a register, and each CHARACTER
/// argument adds a hidden trailing length argument (size_t since gfortran 8).
using FortranInt = std::int32_t;
using SgemmFn = void (*)(const char* transa, const char* transb, const FortranInt* m,
                         const FortranInt* n, const FortranInt* k, const float* alpha,
                         const float* a, const FortranInt* lda, const float* b,
                         const FortranInt* ldb, const float* beta, float* c, const FortranInt* ldc,
                         std::size_t transa_len, std::size_t transb_len);
using SdotFn = float (*)(const FortranInt* n, const float* x, const FortranInt* incx,
                         const float* y, const FortranInt* incy);
using SasumFn = float (*)(const FortranInt* n, const float* x, const FortranInt* incx);
using Snrm2Fn = float (*)(const FortranInt* n, const float* x, const FortranInt* incx);
using SscalFn = void (*)(const FortranInt* n, const float* alpha, float* x, const FortranInt* incx);
using IsamaxFn = FortranInt (*)(const FortranInt* n, const float* x, const FortranInt* incx);

/// How the version of a library is discovered once it is loaded.
enum class BlasFlavor { kOpenBlas, kBlis, kNetlib };

/// Everything that differs between the three libraries: data, not code.
struct BlasLibrarySpec {
  std::string name;  ///< backend name: "openblas"
  BlasFlavor flavor = BlasFlavor::kNetlib;
  std::string env_var;                  ///< overrides the candidates: "KC_OPENBLAS_LIB"
  std::vector<std::string> candidates;  ///< tried in order
  std::string description;              ///< one line for `kc backends`
  /// What every impl of this library declares, and the documents it is taken from.
  Determinism determinism = Determinism::kBitwise;
  std::string source;
};

/// A loaded BLAS library and its resolved Fortran entry points.
/// Instances are never unloaded (see the note in blas_library.cpp).
class BlasLibrary {
 public:
  /// Loads the first candidate path (or the env override) that dlopen accepts and
  /// that exports every required symbol. kUnavailable otherwise, naming every
  /// path tried with its dlerror() text.
  static Result<std::shared_ptr<const BlasLibrary>> open(const BlasLibrarySpec& spec);

  /// Loads a second, private copy of the library at `path` into a new link-map
  /// namespace (dlmopen(LM_ID_NEWLM)) with the environment variable `var` set to
  /// `value` while it initialises, then restores the variable. A fresh copy runs
  /// its constructors again, so knobs read once at load (OPENBLAS_CORETYPE) take
  /// effect. kUnavailable when dlmopen refuses (glibc allows only a few
  /// namespaces per process) or a symbol is missing.
  static Result<std::shared_ptr<const BlasLibrary>> open_fresh(const BlasLibrarySpec& spec,
                                                               const std::string& path,
                                                               const std::string& var,
                                                               const std::string& value);

  /// openblas_get_corename(): the kernel set this copy dispatches to ("Haswell");
  /// empty for other libraries.
  std::string core_name() const;

  /// BLIS: bli_arch_query_id(), the arch_t id of the sub-configuration this
  /// instance dispatches to (after bli_init, see adopt); -1 for other libraries.
  int arch_id() const;
  /// BLIS: bli_arch_string(id), the sub-configuration's name ("zen3"); empty
  /// for other libraries or an id outside the library's table.
  std::string arch_name(int id) const;
  /// BLIS: the arch_t ids and names this library's build of BLIS knows, read
  /// from bli_arch_string() up to "generic" (the enum's last entry). Knowing
  /// an id is not carrying it: only the configured sub-configurations can be
  /// selected (blis_arch_probe says which). Empty for other libraries.
  std::vector<std::pair<int, std::string>> arch_table() const;

  const BlasLibrarySpec& spec() const { return spec_; }
  const std::string& path() const { return path_; }  ///< the path dlopen accepted
  const std::string& version() const { return version_; }

  /// Address of a symbol in this library's handle (nullptr if absent).
  void* symbol(const char* name) const;

  SgemmFn sgemm = nullptr;
  SdotFn sdot = nullptr;
  SasumFn sasum = nullptr;
  Snrm2Fn snrm2 = nullptr;
  SscalFn sscal = nullptr;
  IsamaxFn isamax = nullptr;

  /// Whether the library has a runtime thread-count knob
  /// (openblas_set_num_threads, bli_thread_set_num_threads).
  bool has_thread_knob() const { return set_threads_ && get_threads_; }
  /// The library's current thread setting; 0 when it has no knob.
  std::int64_t threads() const;
  /// Sets the library's process-wide thread count (no-op without a knob).
  void set_threads(std::int64_t n) const;

 private:
  BlasLibrary() = default;
  /// Resolves the entry points of an opened handle; kUnavailable (and the
  /// handle closed) when a required symbol is missing.
  static Result<std::shared_ptr<const BlasLibrary>> adopt(const BlasLibrarySpec& spec,
                                                          const std::string& path, void* handle);
  std::string describe_version() const;

  BlasLibrarySpec spec_;
  std::string path_;
  std::string version_;
  void* handle_ = nullptr;
  // The knobs differ in integer type (OpenBLAS int, BLIS dim_t = int64_t), so
  // they are kept untyped and cast by flavor in threads()/set_threads().
  void* set_threads_ = nullptr;
  void* get_threads_ = nullptr;
};

using kc::CpuFeature;
using kc::missing_cpu_features;

/// One sub-configuration of BLIS's x86_64 configuration family, and the CPU
/// features BLIS's own detection requires before it selects it.
struct BlisSubconfig {
  const char* name;  ///< bli_arch_string's name: "zen3"
  std::vector<CpuFeature> needs;
};

/// The sub-configurations of BLIS's x86_64 family (intel64: skx, knl, haswell,
/// sandybridge, penryn; amd64: zen3, zen2, zen, excavator, steamroller,
/// piledriver, bulldozer; and generic), with their feature requirements.
const std::vector<BlisSubconfig>& blis_x86_64_subconfigs();
/// The named sub-configuration of that family, or nullptr.
const BlisSubconfig* find_blis_subconfig(const std::string& name);
/// The features of `sc` this CPU (and its OS) lacks, named ("FMA4, AVX512PF");
/// empty when it can run the sub-configuration (kc/cpu_features.h for any list).
std::string missing_cpu_features(const BlisSubconfig& sc);

/// Whether the BLIS library `lib` (its file) carries arch id `id` and this
/// CPU runs it: a probe child (plugin/load_probe.h) loads a fresh copy with
/// BLIS_ARCH_TYPE=<id>, initialises it, reads back the arch, and runs one small
/// sgemm with an exact answer. The sub-configuration's name on success; an
/// error naming what happened otherwise (BLIS aborts when the id is not
/// carried; SIGILL when the kernels need an instruction the CPU lacks).
/// Probed once per process and file.
Result<std::string> blis_arch_probe(const BlasLibrary& lib, int id);

/// The three built-in library specs (candidate paths for Debian 12 x86_64).
BlasLibrarySpec openblas_spec();
BlasLibrarySpec blis_spec();
BlasLibrarySpec refblas_spec();

}  // namespace kc::backends
