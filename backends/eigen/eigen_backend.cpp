// kc — the eigen backend: the variant loader over the Eigen builds.
//
// KC_EIGEN_VARIANT_DIR is defined for kc_backend_eigen by backends/eigen/CMakeLists.txt
// when Eigen was found; the builds and their manifest live there.
#include "eigen_backend.h"

#include "kc/install_layout.h"
#include "variants/variant_backend.h"

namespace kc::backends {

std::unique_ptr<Backend> make_eigen_backend() {
  VariantBackendSpec spec;
  spec.name = "eigen";
  spec.description = "Eigen 3 (header-only) kernels, one build per SIMD level (sse2, avx2, avx512, novec) and two flag sets people ship with (avx2_Ofast, clang_avx2)";
  spec.env_var = "KC_EIGEN_DIR";
#ifdef KC_EIGEN_VARIANT_DIR
  // An installed kc's copy (<prefix>/lib/kc/kc-eigen) first, else the build tree's.
  spec.directory = installed_or(std::string(kInstallPrivateLibDir) + "/kc-eigen", "variants.tsv", KC_EIGEN_VARIANT_DIR);
#endif
  spec.not_built = "built without Eigen (Eigen3 >= 3.3 not found at configure time: install libeigen3-dev)";
  spec.source =
      "Eigen 3.4 docs: 'Reductions, visitors and broadcasting' (float redux in float), 'Eigen and "
      "multi-threading' (single-threaded without OpenMP: BITWISE), 3.4 release notes 'NaN propagation' "
      "(maxCoeff<PropagateNaN> used); no FTZ/DAZ set (IEEE denormals); eigen_kernels.cc header";
  return make_variant_backend(std::move(spec));
}

}  // namespace kc::backends
