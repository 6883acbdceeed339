// kc — the torch backend: libtorch (ATen) CPU ops as impls.
//
// The kernels live in libkc_torch.so, a module speaking the plugin C ABI
// (kc/kc_plugin.h) built from torch_module.cc when CMake finds libtorch. This
// backend loads it on first probe, so only runs that grade torch pay for
// loading libtorch (~0.5 s and ~160 MB per process on the build machine).
#pragma once

#include <memory>

#include "kc/backend.h"

namespace kc::backends {

/// The torch backend. probe() reports unavailable, with the reason, when kc was
/// built without libtorch or the module cannot be loaded. KC_TORCH_MODULE
/// overrides the module path recorded at build time.
std::unique_ptr<Backend> make_torch_backend();

}  // namespace kc::backends
