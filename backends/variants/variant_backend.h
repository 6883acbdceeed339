// kc — backends whose impls are one kernel source built several ways (eigen:
// one build per SIMD level; compilers: one build per toolchain and flag set).
//
// Each build ("variant") is a shared library of its own speaking the plugin C
// ABI (include/kc/kc_plugin.h), built with -fvisibility=hidden and loaded with
// dlopen(RTLD_NOW | RTLD_LOCAL), so two builds of the same templates or
// functions never resolve to each other's copies (linking them into one binary
// would be an ODR violation: the linker keeps one COMDAT copy of each template
// instance, whatever -m flags it was compiled with).
//
// The builds are listed in a manifest, `variants.tsv`, written by CMake next
// to the libraries (backends/variants/variants.cmake): one line per variant,
//     label <TAB> library <TAB> cpu features <TAB> compiler <TAB> flags <TAB> note
// so the build system is the one place a variant is defined.
//
// Loading is guarded three ways:
//  - a variant whose code needs CPU features this CPU lacks (avx512f, ...) is
//    never dlopen'ed (its constructors could already execute such code); its
//    impls are still listed, with the declarations of a sibling build of the
//    same source, and every case reports `skipped` with the reason;
//  - the others are loaded first in a probe child (plugin/load_probe.h), which
//    sends back their impls; kc's own process never loads a variant, each of
//    its impls' workers does. A variant that aborts or hangs while loading is
//    reported so, and the backend goes on with the rest;
//  - MXCSR (the SSE rounding/FTZ/DAZ control) is read in the probe child
//    before and after the load: a library linked with crtfastmath.o sets
//    FTZ|DAZ from a constructor. The change is recorded and replayed around
//    each of that variant's calls, so its impls behave as they do in any
//    process that loads them (and an in-process run leaves kc's own MXCSR as it was).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kc/backend.h"
#include "kc/status.h"

namespace kc::backends {

/// One build of the kernel source (one line of variants.tsv).
struct VariantSpec {
  std::string label;                      ///< "sse2", "gcc_O2"; impl names are <backend>.<label>.<op>
  std::string library;                    ///< file name, relative to the manifest's directory
  std::vector<std::string> cpu_features;  ///< what the code needs: "avx2", "fma", "avx512f", ...
  std::string compiler;                   ///< compiler command that built it
  std::string flags;                      ///< the flags that make this variant (exactly as passed)
  std::string note;                       ///< what the documentation says these flags change
};

/// Parses variants.tsv text. Blank lines and lines starting with '#' are skipped.
Result<std::vector<VariantSpec>> parse_variant_manifest(std::string_view text);

/// Whether this CPU has `feature` (a name of kc/cpu_features.h's table:
/// sse4.2, avx2, fma, avx512f, ...). kInvalidArgument for a name kc does not know.
Result<bool> cpu_has(std::string_view feature);

/// What a variant backend is.
struct VariantBackendSpec {
  std::string name;         ///< "eigen"
  std::string description;  ///< one line for `kc backends`
  std::string env_var;      ///< overrides `directory`: "KC_EIGEN_DIR"
  std::string directory;    ///< where the build put variants.tsv (empty: not built)
  std::string not_built;    ///< the reason shown when `directory` is empty
  std::string source;       ///< documentation the declarations are taken from
};

/// The backend. Unavailable (with the reason) when no variant could be loaded;
/// otherwise every variant's impls, the loaded ones runnable and the others
/// skipped, with per-variant findings (SIMD in use, MXCSR side effects, load
/// errors, CPU features missing) in BackendInfo::reason.
std::unique_ptr<Backend> make_variant_backend(VariantBackendSpec spec);

/// The MXCSR bits set by loading each variant (0 when loading changed nothing),
/// by impl name: what `kc list impls` and the tests report. Exposed for tests.
std::optional<std::uint32_t> variant_load_mxcsr(const Impl& impl);

}  // namespace kc::backends
