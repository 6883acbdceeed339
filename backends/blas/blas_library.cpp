#include "blas_library.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "kc/child.h"
#include "plugin/load_probe.h"

namespace kc::backends {

namespace {

constexpr const char* kLibDir = "/usr/lib/x86_64-linux-gnu/";

std::string dl_error_text() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

template <typename Fn>
Fn lookup(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

// Text returned by a library's `char* f(void)` info function, if it exports one.
std::string call_string_fn(void* handle, const char* name) {
  auto fn = lookup<const char* (*)()>(handle, name);
  const char* s = fn ? fn() : nullptr;
  return s ? s : "";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

}  // namespace

Result<std::shared_ptr<const BlasLibrary>> BlasLibrary::open(const BlasLibrarySpec& spec) {
  std::vector<std::string> paths = spec.candidates;
  if (!spec.env_var.empty()) {
    if (const char* env = std::getenv(spec.env_var.c_str()); env && *env) paths = {env};
  }
  std::string tried;
  for (const std::string& path : paths) {
    if (!tried.empty()) tried += "; ";
    // First in a probe child: a library that aborts or hangs while loading
    // (BLIS with an invalid BLIS_ARCH_TYPE aborts in its constructor) is
    // unavailable, and kc goes on. Only one that loaded cleanly there, with
    // every symbol, is loaded here, where the worker forks inherit it.
    bool ended = false;
    // The probe's and the workers' sandbox hides /tmp and directories nobody
    // cannot search: a build given with --library may live there (kc/child.h).
    note_library_file(path);
    auto probed = probe_load(file_key("blas|" + spec.name, path), path,
                             [&]() -> Result<std::string> {
                               void* h = dlopen(library_path(path).c_str(), RTLD_NOW | RTLD_LOCAL);
                               if (!h) return unavailable(dl_error_text());
                               auto lib = adopt(spec, path, h);
                               if (!lib.ok()) return lib.status();
                               return (*lib)->version();
                             },
                             &ended);
    if (!probed.ok()) {
      if (ended) {
        // It did not survive loading: the next candidate would meet the same
        // environment, so the library is unavailable as it stands.
        return unavailable(path + ": " + probed.status().message());
      }
      tried += probed.status().message();
      continue;
    }
    // RTLD_LOCAL keeps this library's sgemm_ out of the global namespace, so the
    // next library we load does not bind to it.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += dl_error_text();
      continue;
    }
    auto lib = adopt(spec, path, handle);
    if (lib.ok()) return lib;
    tried += lib.status().message();
  }
  return unavailable("tried " + (tried.empty() ? std::string("no paths") : tried));
}

Result<std::shared_ptr<const BlasLibrary>> BlasLibrary::adopt(const BlasLibrarySpec& spec,
                                                               const std::string& path,
                                                               void* handle) {
  std::shared_ptr<BlasLibrary> lib(new BlasLibrary());
  lib->spec_ = spec;
  lib->path_ = path;
  lib->handle_ = handle;
  lib->sgemm = lookup<SgemmFn>(handle, "sgemm_");
  lib->sdot = lookup<SdotFn>(handle, "sdot_");
  lib->sasum = lookup<SasumFn>(handle, "sasum_");
  lib->snrm2 = lookup<Snrm2Fn>(handle, "snrm2_");
  lib->sscal = lookup<SscalFn>(handle, "sscal_");
  lib->isamax = lookup<IsamaxFn>(handle, "isamax_");
  if (!lib->sgemm || !lib->sdot || !lib->sasum || !lib->snrm2 || !lib->sscal || !lib->isamax) {
    // Not a BLAS for us; nothing of it has run yet, so unloading is safe.
    dlclose(handle);
    return unavailable(path +
                       ": missing a Fortran BLAS symbol (sgemm_, sdot_, sasum_, snrm2_, sscal_, "
                       "isamax_)");
  }
  if (spec.flavor == BlasFlavor::kOpenBlas) {
    lib->set_threads_ = dlsym(handle, "openblas_set_num_threads");
    lib->get_threads_ = dlsym(handle, "openblas_get_num_threads");
  } else if (spec.flavor == BlasFlavor::kBlis) {
    lib->set_threads_ = dlsym(handle, "bli_thread_set_num_threads");
    lib->get_threads_ = dlsym(handle, "bli_thread_get_num_threads");
    // BLIS 0.9 reads BLIS_ARCH_TYPE the first time the arch is queried
    // (bli_arch_query_id, once per instance) and then checks that the global
    // kernel structure holds a context for that id; the structure is filled by
    // bli_init. Querying first, as describe_version does, with the variable
    // set aborts even for the id BLIS would pick itself ("Accessed
    // uninitialized context in gks"). Initialising first makes every id the
    // build carries work; one it does not carry still aborts, in the probe
    // child. Any BLAS call would run bli_init anyway.
    if (auto init = lookup<void (*)()>(handle, "bli_init")) init();
  }
  lib->version_ = lib->describe_version();
  // The handle is never dlclose'd: OpenBLAS and BLIS start thread pools whose
  // teardown runs from the library's destructors, and unloading while another
  // backend's impl may still run is not worth the address space we would save.
  return std::shared_ptr<const BlasLibrary>(std::move(lib));
}

Result<std::shared_ptr<const BlasLibrary>> BlasLibrary::open_fresh(const BlasLibrarySpec& spec,
                                                                   const std::string& path,
                                                                   const std::string& var,
                                                                   const std::string& value) {
  const char* old = std::getenv(var.c_str());
  const std::optional<std::string> previous =
      old ? std::optional<std::string>(old) : std::nullopt;
  setenv(var.c_str(), value.c_str(), 1);
  // A new namespace gets its own copy of the library and of its dependencies
  // (libgfortran, libgomp), whose constructors run now and read `var`. The
  // variable stays set through adopt: BLIS reads BLIS_ARCH_TYPE in bli_init,
  // which adopt calls, not in a constructor.
  void* handle = dlmopen(LM_ID_NEWLM, library_path(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  const std::string error = handle ? std::string() : dl_error_text();
  auto lib = handle ? adopt(spec, path, handle)
                    : Result<std::shared_ptr<const BlasLibrary>>(
                          unavailable("dlmopen(LM_ID_NEWLM, " + path + ") failed: " + error));
  if (previous) {
    setenv(var.c_str(), previous->c_str(), 1);
  } else {
    unsetenv(var.c_str());
  }
  return lib;
}

std::string BlasLibrary::core_name() const {
  if (spec_.flavor != BlasFlavor::kOpenBlas) return "";
  return trim(call_string_fn(handle_, "openblas_get_corename"));
}

int BlasLibrary::arch_id() const {
  if (spec_.flavor != BlasFlavor::kBlis) return -1;
  auto query = lookup<int (*)()>(handle_, "bli_arch_query_id");
  return query ? query() : -1;
}

// bli_arch_string(id) indexes a static table of names without checking the id,
// so only ids found by walking the table from 0 up to "generic" (BLIS keeps
// BLIS_ARCH_GENERIC last: "BLIS_NUM_ARCHS ... assumes that the previous enum
// value (BLIS_ARCH_GENERIC) is given index num_archs-1", blis.h) are asked.
std::vector<std::pair<int, std::string>> BlasLibrary::arch_table() const {
  std::vector<std::pair<int, std::string>> table;
  if (spec_.flavor != BlasFlavor::kBlis) return table;
  auto name = lookup<const char* (*)(int)>(handle_, "bli_arch_string");
  if (!name) return table;
  constexpr int kMaxArchs = 64;  // BLIS 0.9 has 26; a table without "generic" is not trusted
  for (int id = 0; id < kMaxArchs; ++id) {
    const char* s = name(id);
    if (!s) break;
    table.emplace_back(id, s);
    if (std::string_view(s) == "generic") return table;
  }
  return {};
}

std::string BlasLibrary::arch_name(int id) const {
  for (const auto& [i, n] : arch_table())
    if (i == id) return n;
  return "";
}

void* BlasLibrary::symbol(const char* name) const { return dlsym(handle_, name); }

// openblas.h: void openblas_set_num_threads(int); int openblas_get_num_threads(void).
// blis.h: void bli_thread_set_num_threads(dim_t); dim_t bli_thread_get_num_threads(void),
// with dim_t = int64_t in Debian's build.
std::int64_t BlasLibrary::threads() const {
  if (!has_thread_knob()) return 0;
  if (spec_.flavor == BlasFlavor::kBlis)
    return reinterpret_cast<std::int64_t (*)()>(get_threads_)();
  return reinterpret_cast<int (*)()>(get_threads_)();
}

void BlasLibrary::set_threads(std::int64_t n) const {
  if (!has_thread_knob()) return;
  if (spec_.flavor == BlasFlavor::kBlis) {
    reinterpret_cast<void (*)(std::int64_t)>(set_threads_)(n);
  } else {
    reinterpret_cast<void (*)(int)>(set_threads_)(static_cast<int>(n));
  }
}

std::string BlasLibrary::describe_version() const {
  switch (spec_.flavor) {
    case BlasFlavor::kOpenBlas: {
      // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64";
      // openblas_get_corename(): the kernel set DYNAMIC_ARCH picked for this CPU.
      std::string v = trim(call_string_fn(handle_, "openblas_get_config"));
      std::string core = trim(call_string_fn(handle_, "openblas_get_corename"));
      if (v.empty()) v = "OpenBLAS (version unknown)";
      if (!core.empty()) v += ", core " + core;
      return v;
    }
    case BlasFlavor::kBlis: {
      std::string v = call_string_fn(handle_, "bli_info_get_version_str");
      v = v.empty() ? "BLIS (version unknown)" : "BLIS " + v;
      // bli_arch_query_id() returns the arch_t enum of the sub-configuration the
      // runtime dispatcher chose; bli_arch_string() names it ("haswell", "zen3").
      const int id = arch_id();
      const std::string arch = arch_name(id);
      if (!arch.empty()) {
        v += ", arch " + arch + " (id " + std::to_string(id);
        if (const char* forced = std::getenv("BLIS_ARCH_TYPE"); forced && *forced)
          v += std::string(", BLIS_ARCH_TYPE=") + forced;
        v += ")";
      }
      return v;
    }
    case BlasFlavor::kNetlib: {
      // The netlib reference BLAS has no version function; Debian installs it as
      // libblas.so.3.<lapack version>, so the resolved file name carries it.
      std::error_code ec;
      std::string real = std::filesystem::canonical(path_, ec).filename().string();
      constexpr std::string_view kPrefix = "libblas.so.";
      if (!ec && real.rfind(kPrefix, 0) == 0 && real.size() > kPrefix.size()) {
        return "netlib reference BLAS " + real.substr(kPrefix.size());
      }
      return "netlib reference";
    }
  }
  return "";
}

// --- BLIS sub-configurations.
//
// The requirements are those of BLIS's own runtime detection (frame/base/
// bli_cpuid.c, bli_cpuid_is_<arch>: the `expected` feature mask of each),
// without its family/model tests, which choose among sub-configurations a CPU
// can run rather than decide whether it can run them. With BLIS_ARCH_TYPE set,
// BLIS 0.9 checks none of this and runs the kernels it is told to (an
// unsupported instruction then kills the process with SIGILL), so kc checks.

const std::vector<BlisSubconfig>& blis_x86_64_subconfigs() {
  using F = CpuFeature;
  static const std::vector<BlisSubconfig> table = {
      {"skx", {F::kAvx, F::kFma, F::kAvx2, F::kAvx512F, F::kAvx512Dq, F::kAvx512Bw, F::kAvx512Vl}},
      {"knl", {F::kAvx, F::kFma, F::kAvx2, F::kAvx512F, F::kAvx512Pf}},
      {"haswell", {F::kAvx, F::kFma, F::kAvx2}},
      {"sandybridge", {F::kAvx}},
      {"penryn", {F::kSse3, F::kSsse3}},
      {"zen3", {F::kAvx, F::kFma, F::kAvx2}},
      {"zen2", {F::kAvx, F::kFma, F::kAvx2}},
      {"zen", {F::kAvx, F::kFma, F::kAvx2}},
      {"excavator", {F::kAvx, F::kFma, F::kAvx2}},
      {"steamroller", {F::kAvx, F::kFma, F::kFma4}},
      {"piledriver", {F::kAvx, F::kFma, F::kFma4}},
      {"bulldozer", {F::kAvx, F::kFma4}},
      {"generic", {}},
  };
  return table;
}

const BlisSubconfig* find_blis_subconfig(const std::string& name) {
  for (const BlisSubconfig& sc : blis_x86_64_subconfigs())
    if (name == sc.name) return &sc;
  return nullptr;
}

namespace {

/// One small sgemm_ with small integer entries, whose FP32 result is exact:
/// "" when the copy computes it, else what differed.
std::string exact_sgemm_check(const BlasLibrary& lib, FortranInt n) {
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size(), 1.0f);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
    b[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  }
  const float one = 1.0f;
  const char no = 'N';
  lib.sgemm(&no, &no, &n, &n, &n, &one, a.data(), &n, b.data(), &n, &one, c.data(), &n, 1, 1);
  for (FortranInt j = 0; j < n; ++j) {
    for (FortranInt i = 0; i < n; ++i) {
      double want = 1.0;
      for (FortranInt p = 0; p < n; ++p) want += double(a[i + p * n]) * double(b[p + j * n]);
      if (double(c[i + j * n]) != want) {
        return "sgemm " + std::to_string(n) + "^3 with integer entries gave " +
               std::to_string(c[i + j * n]) + " for " + std::to_string(want) + " at (" +
               std::to_string(i) + ", " + std::to_string(j) + ")";
      }
    }
  }
  return "";
}

}  // namespace

std::string missing_cpu_features(const BlisSubconfig& sc) { return missing_cpu_features(sc.needs); }

Result<std::string> blis_arch_probe(const BlasLibrary& lib, int id) {
  const std::string key = file_key("blis-arch|" + std::to_string(id), lib.path());
  const BlasLibrarySpec spec = lib.spec();
  const std::string path = lib.path();
  return probe_load(key, path, [&]() -> Result<std::string> {
    // In the probe child: a fresh copy (the inherited one is initialised
    // already and would ignore the variable).
    KC_ASSIGN_OR_RETURN(auto copy, BlasLibrary::open_fresh(spec, path, "BLIS_ARCH_TYPE", std::to_string(id)));
    const int got = copy->arch_id();
    if (got != id) {
      return unimplemented("BLIS_ARCH_TYPE=" + std::to_string(id) + " was not honoured: the copy runs arch " +
                           std::to_string(got) + " (" + copy->arch_name(got) + ")");
    }
    // 8 stays in the small-matrix paths, 96 reaches the packed microkernels.
    for (FortranInt n : {8, 96}) {
      if (std::string wrong = exact_sgemm_check(*copy, n); !wrong.empty()) return unimplemented(wrong);
    }
    return copy->arch_name(got);
  });
}

// --- The three specs. Declarations common to every impl of a library, with their sources.
//
// Shared by all three: FP32 data with an FP32 accumulator (the reference sgemm.f
// declares TEMP as REAL; OpenBLAS and BLIS sgemm kernels accumulate in single
// precision FMA registers); NaN/Inf propagate as IEEE arithmetic does (none of
// them tests for NaN); subnormals kept (none of them sets FTZ/DAZ in MXCSR).

BlasLibrarySpec openblas_spec() {
  BlasLibrarySpec s;
  s.name = "openblas";
  s.flavor = BlasFlavor::kOpenBlas;
  s.env_var = "KC_OPENBLAS_LIB";
  s.candidates = {std::string(kLibDir) + "openblas-pthread/libopenblas.so.0", "libopenblas.so.0"};
  s.description = "OpenBLAS Fortran BLAS interface (sgemm_, sdot_, ...)";
  // RUN_TO_RUN, not BITWISE: OpenBLAS picks its thread count per call from the
  // problem size and the current thread setting (interface/gemm.c,
  // get_gemm_optimal_nthreads / num_cpu_avail), and level-1 reductions such as
  // sdot split the vector across threads; a different split reorders the sum.
  // Users seeking determinism are told to pin threads (OpenMathLib/OpenBLAS
  // issue #5806, "results are still nondeterministic").
  s.determinism = Determinism::kRunToRun;
  s.source =
      "OpenBLAS docs (https://github.com/OpenMathLib/OpenBLAS/wiki, FAQ on threads); "
      "issue OpenMathLib/OpenBLAS#5806 on thread count and determinism";
  return s;
}

BlasLibrarySpec blis_spec() {
  BlasLibrarySpec s;
  s.name = "blis";
  s.flavor = BlasFlavor::kBlis;
  s.env_var = "KC_BLIS_LIB";
  const std::string dir = kLibDir;
  s.candidates = {dir + "blis-openmp/libblis.so.4", dir + "blis-pthread/libblis.so.4",
                  dir + "blis-serial/libblis.so.4", "libblis.so.4"};
  s.description = "BLIS BLAS compatibility layer (sgemm_, sdot_, ...)";
  // BITWISE: BLIS docs/Multithreading.md — multithreading is off at runtime
  // unless requested, and even then only four of the five gemm loops are
  // parallelised, never the k (pc) loop, so each C element is reduced by one
  // thread in a fixed order for a given sub-configuration.
  s.determinism = Determinism::kBitwise;
  s.source =
      "BLIS docs/Multithreading.md (k loop not parallelised); docs/BLISTypedAPI.md "
      "(beta = 0 overwrites C)";
  return s;
}

BlasLibrarySpec refblas_spec() {
  BlasLibrarySpec s;
  s.name = "refblas";
  s.flavor = BlasFlavor::kNetlib;
  s.env_var = "KC_REFBLAS_LIB";
  s.candidates = {std::string(kLibDir) + "blas/libblas.so.3"};
  s.description = "netlib reference BLAS (Fortran 77 loops)";
  // BITWISE: single-threaded straight loops in a fixed order (sgemm.f, sdot.f).
  s.determinism = Determinism::kBitwise;
  s.source =
      "netlib reference BLAS sgemm.f (\"when BETA is supplied as zero then C need not be set "
      "on input\"), sdot.f, sasum.f, snrm2.f, sscal.f, isamax.f";
  return s;
}

}  // namespace kc::backends
