// kc — OpenCL device buffers with canary bands (kc/canary.h).
//
// One allocation is [front band | payload | back band]; the payload a kernel
// sees is a sub-buffer at origin canary::kBandBytes, so a kernel (in-project,
// CLBlast or a user's) gets an ordinary cl_mem and a write past either end of
// it lands in a band. The bands are written before the run and compared after.
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kc/op.h"
#include "kc/status.h"
#include "kc/tensor.h"

namespace kc::backends::opencl {

class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept;
  ~GuardedBuffer();

  /// clCreateBuffer of bytes + 2 bands, bands written, payload unset.
  static Result<GuardedBuffer> allocate(std::size_t bytes, std::string name);

  /// The payload as a sub-buffer (what kernels get).
  cl_mem mem() const { return sub_; }
  std::size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }

  Status write(const void* host, std::size_t bytes);
  Status read(void* host, std::size_t bytes) const;
  /// OK when both bands are intact, else canary::guard_overwritten(name, side, ...).
  Status check_guards() const;

 private:
  void release();

  cl_mem whole_ = nullptr;
  cl_mem sub_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
};

/// A host tensor's device copy.
struct DeviceTensor {
  std::string name;
  Tensor* host = nullptr;
  bool copy_back = false;  ///< an output or in/out (finish() reads every buffer back; inputs to catch writes)
  GuardedBuffer buffer;
};

/// Uploads every storage byte of `host`; with poison_output, its logical
/// elements are uploaded as kc's output poison instead (kc/poison.h: a NaN
/// with a payload no computed NaN has) while any padding keeps the host's
/// bytes, so an element the kernel never writes comes back bit for bit as the poison.
Result<DeviceTensor> to_device(const std::string& name, Tensor& host, bool poison_output, bool copy_back);

/// Pushes the device copy of call tensor `name` onto `dev`.
Status add_device(std::vector<DeviceTensor>& dev, Call& call, const char* name, bool poison, bool copy_back);

/// Pushes the device copies of the call's `inputs` (uploaded as they are, not
/// copied back) and then of its `outputs` (poisoned, copied back) onto `dev`,
/// in that order.
Status add_devices(std::vector<DeviceTensor>& dev, Call& call, std::initializer_list<const char*> inputs,
                   std::initializer_list<const char*> outputs);

/// After the kernel: checks every buffer's bands, checks that read-only
/// buffers still hold what was uploaded (a kernel writing its inputs is
/// reported as kCrashed "INPUT_MUTATED on the device: ..."), then reads the
/// copy_back buffers into their host tensors. Nothing is written to the host
/// when a check fails.
Status finish(std::vector<DeviceTensor>& tensors);

}  // namespace kc::backends::opencl
