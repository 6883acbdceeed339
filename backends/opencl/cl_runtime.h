// kc — the OpenCL runtime as the opencl backend uses it: one context, device
// and in-order queue per process, a program cache keyed by (source, options),
// and vendor error codes turned into Status.
//
// Fork: an OpenCL runtime does not survive fork() (PoCL's pthread device starts
// its worker threads at initialisation; a forked child has none of them and
// waits forever). kc therefore never initialises OpenCL in its own process
// unless a kernel runs there (--isolate none): probing and `kc vet` builds run
// in a short-lived child (kc::run_in_child, kc/child.h), and each worker process initialises
// its own runtime after the fork. A runtime created in a process that then
// forked is refused in the child with a clear error instead of a hang.
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kc/declaration.h"
#include "kc/status.h"

namespace kc::backends::opencl {

/// The runtime every OpenCL impl declares (opencl and opencl_user). OpenCL
/// runtimes start device threads (PoCL's pthread device: one per core) that
/// fork() does not copy, so a child of a process that initialised one cannot
/// use it. These backends therefore never initialise OpenCL in kc's process:
/// they probe and build in a short-lived child, and each worker initialises
/// its own runtime after the fork (docs/backends/opencl.md). Kernels then run
/// isolated like host code; the device may be a GPU, so host peaks do not
/// bound their time.
inline constexpr RuntimeTraits kOpenclRuntime{
    true, false, "OpenCL is initialised only inside worker processes (after fork); device buffers carry canary bands",
    "opencl"};

/// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int err);
/// OK for CL_SUCCESS; otherwise kInternal "<what>: <CL_ERROR_NAME> (code)".
Status cl_status(cl_int err, const std::string& what);

#define KC_CL_RETURN_IF_ERROR(expr) KC_RETURN_IF_ERROR(::kc::backends::opencl::cl_status((expr), #expr))

/// Text of a string-valued clGet*Info query.
std::string device_string(cl_device_id device, cl_device_info what);
std::string platform_string(cl_platform_id platform, cl_platform_info what);

/// One compiled program and how long clBuildProgram took.
struct BuiltProgram {
  cl_program program = nullptr;
  double build_seconds = 0;
};

/// The process's OpenCL runtime.
class Runtime {
 public:
  /// The process's runtime, created on first use: the first platform with a
  /// device (GPU, accelerator or CPU, in that order of preference, within the
  /// first platform that has any). kUnavailable with the reason when there is
  /// none, or when the runtime was created before this process was forked.
  static Result<Runtime*> get();

  cl_platform_id platform() const { return platform_; }
  cl_device_id device() const { return device_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  /// CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes (sub-buffer origins must be multiples).
  std::size_t base_align() const { return base_align_; }
  /// CL_DEVICE_SINGLE_FP_CONFIG.
  cl_device_fp_config single_fp_config() const { return fp_config_; }

  /// The program built from (source, options), built on first request and kept.
  /// A build failure is kInvalidArgument with the compiler's log.
  Result<BuiltProgram> program(const std::string& source, const std::string& options);
  /// A kernel object of a cached program (one per (program, name), kept; runs
  /// are serialised by run_mutex(), so argument state is not shared).
  Result<cl_kernel> kernel(const std::string& source, const std::string& options, const std::string& name);

  /// Builds so far in this process: count and total clBuildProgram seconds.
  std::pair<int, double> build_stats() const;

  /// Serialises runs: kernels keep their arguments between clSetKernelArg and launch.
  std::mutex& run_mutex() { return run_mu_; }

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

 private:
  Runtime() = default;
  Status init();

  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::size_t base_align_ = 128;
  cl_device_fp_config fp_config_ = 0;

  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, BuiltProgram> programs_;
  std::map<std::pair<cl_program, std::string>, cl_kernel> kernels_;
  int builds_ = 0;
  double build_seconds_ = 0;
  std::mutex run_mu_;
};

/// Enqueues an NDRange launch and waits for the queue to finish
/// (clFinish), so every launch is checked and synchronised in the harness.
/// `local` empty lets the runtime choose.
Status launch(cl_kernel kernel, const std::vector<std::size_t>& global, const std::vector<std::size_t>& local,
              const std::string& what);

/// Sets kernel argument i from a value (a scalar or a cl_mem).
template <typename T>
Status set_arg(cl_kernel k, cl_uint i, const T& v) {
  return cl_status(clSetKernelArg(k, i, sizeof(T), &v), "clSetKernelArg(" + std::to_string(i) + ")");
}

/// Sets kernel arguments 0, 1, ... from `args` in order, stopping at the
/// first error. Each is passed with its own size, so each must have its
/// kernel parameter's type: int, long, float or a buffer.
template <typename... T>
Status set_args(cl_kernel k, const T&... args) {
  static_assert(((std::is_same_v<T, cl_int> || std::is_same_v<T, cl_long> || std::is_same_v<T, cl_float> ||
                  std::is_same_v<T, cl_mem>) && ...),
                "a kernel argument must be cl_int, cl_long, cl_float or cl_mem (convert bool and size_t first)");
  cl_uint i = 0;
  Status s;
  (void)((s = set_arg(k, i++, args)).ok() && ...);
  return s;
}

/// Seconds since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace kc::backends::opencl
