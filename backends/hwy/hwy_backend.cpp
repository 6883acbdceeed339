// kc — the hwy backend: the variant loader over the Highway builds.
//
// KC_HWY_VARIANT_DIR is defined for kc_backend_hwy by backends/hwy/CMakeLists.txt
// when Highway's headers were found; the builds and their manifest live there.
#include "hwy_backend.h"

#include "kc/install_layout.h"
#include "variants/variant_backend.h"

namespace kc::backends {

std::unique_ptr<Backend> make_hwy_backend() {
  VariantBackendSpec spec;
  spec.name = "hwy";
  spec.description = "Highway 1.0 contrib/math (header-only) Exp, Log, Tanh, one build per SIMD target: scalar, sse4, "
                     "avx2, avx3";
  spec.env_var = "KC_HWY_DIR";
#ifdef KC_HWY_VARIANT_DIR
  // An installed kc's copy (<prefix>/lib/kc/kc-hwy) first, else the build tree's.
  spec.directory = installed_or(std::string(kInstallPrivateLibDir) + "/kc-hwy", "variants.tsv", KC_HWY_VARIANT_DIR);
#endif
  spec.not_built = "built without Highway (hwy/contrib/math/math-inl.h not found at configure time: install libhwy-dev)";
  spec.source =
      "Highway 1.0.3 hwy/contrib/math/math-inl.h function comments: Exp 'Max Error: ULP = 1', valid range "
      "float32[-FLT_MAX, +104]; Log 'ULP = 4', (0, +FLT_MAX]; Tanh 'ULP = 4', [-FLT_MAX, +FLT_MAX]; no FTZ/DAZ set; "
      "hwy_kernels.cc header";
  return make_variant_backend(std::move(spec));
}

}  // namespace kc::backends
