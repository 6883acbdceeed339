// kc — the compilers backend: the variant loader over the reference-kernel builds.
//
// KC_COMPILERS_VARIANT_DIR is defined for kc_backend_compilers by
// backends/compilers/CMakeLists.txt; the builds and their manifest live there.
#include "compilers_backend.h"

#include "kc/install_layout.h"
#include "variants/variant_backend.h"

namespace kc::backends {

std::unique_ptr<Backend> make_compilers_backend() {
  VariantBackendSpec spec;
  spec.name = "compilers";
  spec.description = "in-project reference kernels built by g++ and clang++ under several flag sets";
  spec.env_var = "KC_COMPILERS_DIR";
#ifdef KC_COMPILERS_VARIANT_DIR
  // An installed kc's copy (<prefix>/lib/kc/kc-compilers) first, else the build tree's.
  spec.directory = installed_or(std::string(kInstallPrivateLibDir) + "/kc-compilers", "variants.tsv", KC_COMPILERS_VARIANT_DIR);
#endif
  spec.not_built = "built without the compilers backend (KC_WITH_COMPILERS=OFF, or no C++ compiler found)";
  // Every build declares what the source promises (reference_kernels.cc); the
  // per-variant note says what the compiler documentation lets the flags change.
  spec.source = "reference_kernels.cc: the source's IEEE semantics (ISO C++, float accumulators in index order, "
                "NaN-passing relu, no MXCSR writes)";
  return make_variant_backend(std::move(spec));
}

}  // namespace kc::backends
