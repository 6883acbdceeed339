#include "cl_runtime.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace kc::backends::opencl {

std::string cl_error_name(cl_int err) {
  const char* name = nullptr;
  switch (err) {
#define KC_CL_ERR(e) \
  case e:            \
    name = #e;       \
    break;
    KC_CL_ERR(CL_SUCCESS)
    KC_CL_ERR(CL_DEVICE_NOT_FOUND)
    KC_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    KC_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    KC_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KC_CL_ERR(CL_OUT_OF_RESOURCES)
    KC_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    KC_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KC_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    KC_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    KC_CL_ERR(CL_INVALID_VALUE)
    KC_CL_ERR(CL_INVALID_DEVICE)
    KC_CL_ERR(CL_INVALID_CONTEXT)
    KC_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    KC_CL_ERR(CL_INVALID_MEM_OBJECT)
    KC_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    KC_CL_ERR(CL_INVALID_PROGRAM)
    KC_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    KC_CL_ERR(CL_INVALID_KERNEL_NAME)
    KC_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
    KC_CL_ERR(CL_INVALID_KERNEL)
    KC_CL_ERR(CL_INVALID_ARG_INDEX)
    KC_CL_ERR(CL_INVALID_ARG_VALUE)
    KC_CL_ERR(CL_INVALID_ARG_SIZE)
    KC_CL_ERR(CL_INVALID_KERNEL_ARGS)
    KC_CL_ERR(CL_INVALID_WORK_DIMENSION)
    KC_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    KC_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    KC_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    KC_CL_ERR(CL_INVALID_OPERATION)
    KC_CL_ERR(CL_INVALID_BUFFER_SIZE)
    KC_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    case -1001:  // CL_PLATFORM_NOT_FOUND_KHR (cl_khr_icd): no ICD found
      name = "CL_PLATFORM_NOT_FOUND_KHR";
      break;
#undef KC_CL_ERR
    default:
      break;
  }
  return std::string(name ? name : "CL error") + " (" + std::to_string(err) + ")";
}

Status cl_status(cl_int err, const std::string& what) {
  if (err == CL_SUCCESS) return ok_status();
  return internal_error(what + ": " + cl_error_name(err));
}

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t n = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(device, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t n = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(platform, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

namespace {

struct ProcessRuntime {
  Runtime* runtime = nullptr;  // leaked on purpose: released OpenCL objects at exit race the ICD's own teardown
  pid_t owner = 0;
  Status error;
};

ProcessRuntime& process_runtime() {
  static ProcessRuntime p;
  return p;
}

std::mutex& process_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

Result<Runtime*> Runtime::get() {
  std::lock_guard<std::mutex> lock(process_mutex());
  ProcessRuntime& p = process_runtime();
  if (p.owner != 0 && p.owner != getpid()) {
    return unavailable("OpenCL was initialised in process " + std::to_string(p.owner) +
                       " before this process was forked from it; an OpenCL runtime does not survive fork() "
                       "(run with --isolate none, or do not call OpenCL in kc's process)");
  }
  if (p.owner == getpid()) {
    if (!p.error.ok()) return p.error;
    return p.runtime;
  }
  p.owner = getpid();
  auto* rt = new Runtime();
  p.error = rt->init();
  if (!p.error.ok()) {
    delete rt;
    return p.error;
  }
  p.runtime = rt;
  return rt;
}

Status Runtime::init() {
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    return unavailable("no OpenCL platform (clGetPlatformIDs: " +
                       (err != CL_SUCCESS ? cl_error_name(err) : std::string("0 platforms")) +
                       "; is an ICD such as pocl-opencl-icd installed?)");
  }
  std::vector<cl_platform_id> platforms(np);
  KC_CL_RETURN_IF_ERROR(clGetPlatformIDs(np, platforms.data(), nullptr));
  for (cl_platform_id pl : platforms) {
    for (cl_device_type type : {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CPU}) {
      cl_device_id dev = nullptr;
      cl_uint nd = 0;
      if (clGetDeviceIDs(pl, type, 1, &dev, &nd) == CL_SUCCESS && nd > 0) {
        platform_ = pl;
        device_ = dev;
        break;
      }
    }
    if (device_) break;
  }
  if (!device_) return unavailable("no OpenCL device on " + std::to_string(np) + " platform(s)");
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform_), 0};
  context_ = clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateContext"));
  // An in-order queue (no CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE): commands run
  // in the order enqueued, which the backend's copy-run-check sequence relies on.
  queue_ = clCreateCommandQueue(context_, device_, 0, &err);
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateCommandQueue"));
  cl_uint align_bits = 0;
  if (clGetDeviceInfo(device_, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, nullptr) == CL_SUCCESS &&
      align_bits >= 8)
    base_align_ = align_bits / 8;
  (void)clGetDeviceInfo(device_, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp_config_, &fp_config_, nullptr);
  return ok_status();
}

Result<BuiltProgram> Runtime::program(const std::string& source, const std::string& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_pair(source, options);
  if (auto it = programs_.find(key); it != programs_.end()) return it->second;
  const char* text = source.c_str();
  const std::size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(context_, 1, &text, &len, &err);
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateProgramWithSource"));
  const auto t0 = std::chrono::steady_clock::now();
  err = clBuildProgram(prog, 1, &device_, options.c_str(), nullptr, nullptr);
  const double secs = seconds_since(t0);
  if (err != CL_SUCCESS) {
    std::size_t n = 0;
    std::string log;
    if (clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      log.resize(n);
      (void)clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    (void)clReleaseProgram(prog);
    return invalid_argument("clBuildProgram (options \"" + options + "\") failed: " + cl_error_name(err) +
                            (log.empty() ? std::string() : "\n" + log));
  }
  ++builds_;
  build_seconds_ += secs;
  BuiltProgram b{prog, secs};
  programs_[key] = b;
  return b;
}

Result<cl_kernel> Runtime::kernel(const std::string& source, const std::string& options, const std::string& name) {
  KC_ASSIGN_OR_RETURN(BuiltProgram b, program(source, options));
  std::lock_guard<std::mutex> lock(mu_);
  const auto key = std::make_pair(b.program, name);
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(b.program, name.c_str(), &err);
  if (err == CL_INVALID_KERNEL_NAME) return not_found("the program has no kernel named '" + name + "'");
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateKernel(" + name + ")"));
  kernels_[key] = k;
  return k;
}

std::pair<int, double> Runtime::build_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {builds_, build_seconds_};
}

Status launch(cl_kernel kernel, const std::vector<std::size_t>& global, const std::vector<std::size_t>& local,
              const std::string& what) {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  for (std::size_t g : global)
    if (g == 0) return ok_status();  // nothing to do; a zero NDRange is CL_INVALID_GLOBAL_WORK_SIZE before 2.1
  KC_RETURN_IF_ERROR(cl_status(clEnqueueNDRangeKernel(rt->queue(), kernel, static_cast<cl_uint>(global.size()),
                                                      nullptr, global.data(), local.empty() ? nullptr : local.data(),
                                                      0, nullptr, nullptr),
                               "clEnqueueNDRangeKernel(" + what + ")"));
  return cl_status(clFinish(rt->queue()), "clFinish after " + what);
}

}  // namespace kc::backends::opencl
