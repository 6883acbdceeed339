#include "cl_buffer.h"

#include "kc/poison.h"

#include <utility>

#include "cl_runtime.h"
#include "kc/canary.h"

namespace kc::backends::opencl {

using canary::kBandBytes;

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept
    : whole_(std::exchange(other.whole_, nullptr)),
      sub_(std::exchange(other.sub_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      name_(std::move(other.name_)) {}

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    whole_ = std::exchange(other.whole_, nullptr);
    sub_ = std::exchange(other.sub_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    name_ = std::move(other.name_);
  }
  return *this;
}

GuardedBuffer::~GuardedBuffer() { release(); }

void GuardedBuffer::release() {
  // A failed release leaks nothing we could recover.
  if (sub_) (void)clReleaseMemObject(sub_);
  if (whole_) (void)clReleaseMemObject(whole_);
  sub_ = whole_ = nullptr;
}

Result<GuardedBuffer> GuardedBuffer::allocate(std::size_t bytes, std::string name) {
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  if (kBandBytes % rt->base_align() != 0) {
    return unimplemented("the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN (" + std::to_string(rt->base_align()) +
                         " bytes) does not divide the canary band");
  }
  GuardedBuffer buf;
  buf.name_ = std::move(name);
  buf.bytes_ = bytes;
  // A sub-buffer cannot be empty: a 0-byte payload gets a 1-byte region that
  // overlaps the back band's first byte (a kernel that writes it is caught).
  const std::size_t region = bytes == 0 ? 1 : bytes;
  cl_int err = CL_SUCCESS;
  buf.whole_ = clCreateBuffer(rt->context(), CL_MEM_READ_WRITE, bytes + 2 * kBandBytes, nullptr, &err);
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateBuffer for device buffer '" + buf.name_ + "'"));
  const cl_buffer_region r{kBandBytes, region};
  buf.sub_ = clCreateSubBuffer(buf.whole_, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
  KC_RETURN_IF_ERROR(cl_status(err, "clCreateSubBuffer for device buffer '" + buf.name_ + "'"));
  const std::vector<std::uint8_t> front = canary::band_pattern(false), back = canary::band_pattern(true);
  KC_CL_RETURN_IF_ERROR(clEnqueueWriteBuffer(rt->queue(), buf.whole_, CL_TRUE, 0, kBandBytes, front.data(), 0,
                                             nullptr, nullptr));
  KC_CL_RETURN_IF_ERROR(clEnqueueWriteBuffer(rt->queue(), buf.whole_, CL_TRUE, kBandBytes + bytes, kBandBytes,
                                             back.data(), 0, nullptr, nullptr));
  return buf;
}

Status GuardedBuffer::write(const void* host, std::size_t bytes) {
  bytes = std::min(bytes, bytes_);
  if (bytes == 0) return ok_status();
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  return cl_status(clEnqueueWriteBuffer(rt->queue(), sub_, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                   "upload of '" + name_ + "'");
}

Status GuardedBuffer::read(void* host, std::size_t bytes) const {
  bytes = std::min(bytes, bytes_);
  if (bytes == 0) return ok_status();
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  return cl_status(clEnqueueReadBuffer(rt->queue(), sub_, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr),
                   "download of '" + name_ + "'");
}

Status GuardedBuffer::check_guards() const {
  if (!whole_) return ok_status();
  KC_ASSIGN_OR_RETURN(Runtime * rt, Runtime::get());
  std::vector<std::uint8_t> got(kBandBytes);
  for (bool back : {false, true}) {
    KC_RETURN_IF_ERROR(cl_status(clEnqueueReadBuffer(rt->queue(), whole_, CL_TRUE, back ? kBandBytes + bytes_ : 0,
                                                     kBandBytes, got.data(), 0, nullptr, nullptr),
                                 "reading the canaries of '" + name_ + "'"));
    KC_RETURN_IF_ERROR(canary::check_band(got.data(), back, name_, bytes_));
  }
  return ok_status();
}

Result<DeviceTensor> to_device(const std::string& name, Tensor& host, bool poison_output, bool copy_back) {
  DeviceTensor dt;
  dt.name = name;
  dt.host = &host;
  dt.copy_back = copy_back;
  KC_ASSIGN_OR_RETURN(dt.buffer, GuardedBuffer::allocate(host.nbytes(), name));
  if (!poison_output || host.numel() == 0) {
    KC_RETURN_IF_ERROR(dt.buffer.write(host.raw(), host.nbytes()));
    return dt;
  }
  std::vector<std::byte> staged(host.raw(), host.raw() + host.nbytes());
  fill_logical(staged.data(), host, logical_fill(host).value_or(Fill::kPoison));
  KC_RETURN_IF_ERROR(dt.buffer.write(staged.data(), staged.size()));
  return dt;
}

Status add_device(std::vector<DeviceTensor>& dev, Call& call, const char* name, bool poison, bool copy_back) {
  if (!call.has(name)) return invalid_argument(std::string("call has no tensor '") + name + "'");
  KC_ASSIGN_OR_RETURN(DeviceTensor d, to_device(name, call.t(name), poison, copy_back));
  dev.push_back(std::move(d));
  return ok_status();
}

Status add_devices(std::vector<DeviceTensor>& dev, Call& call, std::initializer_list<const char*> inputs,
                   std::initializer_list<const char*> outputs) {
  for (const char* name : inputs) KC_RETURN_IF_ERROR(add_device(dev, call, name, false, false));
  for (const char* name : outputs) KC_RETURN_IF_ERROR(add_device(dev, call, name, true, true));
  return ok_status();
}

Status finish(std::vector<DeviceTensor>& tensors) {
  for (const DeviceTensor& t : tensors) KC_RETURN_IF_ERROR(t.buffer.check_guards());
  // Read-only inputs are read back too: a kernel that wrote one then shows up
  // in the engine's input checksum as INPUT_MUTATED, as a host kernel would.
  for (DeviceTensor& t : tensors) KC_RETURN_IF_ERROR(t.buffer.read(t.host->raw(), t.host->nbytes()));
  return ok_status();
}

}  // namespace kc::backends::opencl
