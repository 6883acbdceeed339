// kc — the opencl backend: in-project OpenCL C kernels (tiled matmul, tree and
// atomic sums, softmax/log_softmax, gather, elementwise) built with default
// options, -cl-fast-relaxed-math and -cl-denorms-are-zero; CLBlast routines;
// and (backend `opencl_user`) a user's .cl file for `kc vet`.
// docs/backends/opencl.md describes the impls and their declarations.
//
// This header needs no OpenCL headers: kc_backends includes it on every machine.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kc/backend.h"

namespace kc::backends {

/// The opencl backend. probe() runs in a short-lived child process (kc's own
/// process never initialises OpenCL, so worker processes can): it reports the
/// platform, device, OpenCL version, CLBlast version and the time PoCL took to
/// build the in-project programs; unavailable with the reason when kc was built
/// without OpenCL or no platform/device exists.
std::unique_ptr<Backend> make_opencl_backend();

/// Backend `opencl_user`: the kernels of users' .cl files that follow the
/// convention in docs/backends/opencl.md ("Vetting a .cl file"): kernels named
/// kc_<op> with a fixed argument list per op. Unavailable when `sources` is
/// empty or a file does not build.
std::unique_ptr<Backend> make_opencl_user_backend(std::vector<std::string> sources);

// build_opencl_source (kc vet of a .cl file) is declared in kc/backend.h.

}  // namespace kc::backends
