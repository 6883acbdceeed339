#include "device_buffer.h"

#include <vector>

#include "kc/poison.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "cuda_status.h"
#include "kc/canary.h"

namespace kc::backends::cuda {

using canary::kBandBytes;

namespace {

const std::vector<std::uint8_t>& front_pattern() {
  static const std::vector<std::uint8_t> p = canary::band_pattern(false);
  return p;
}
const std::vector<std::uint8_t>& back_pattern() {
  static const std::vector<std::uint8_t> p = canary::band_pattern(true);
  return p;
}

}  // namespace

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      name_(std::move(other.name_)) {}

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    name_ = std::move(other.name_);
  }
  return *this;
}

GuardedBuffer::~GuardedBuffer() { release(); }

void GuardedBuffer::release() {
  // A failed free (e.g. after a sticky error) leaks nothing we could recover.
  if (base_) (void)cudaFree(base_);
  base_ = nullptr;
}

Result<GuardedBuffer> GuardedBuffer::allocate(std::size_t bytes, std::string name) {
  GuardedBuffer buf;
  buf.name_ = std::move(name);
  buf.bytes_ = bytes;
  void* p = nullptr;
  KC_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, bytes + 2 * kBandBytes),
                                 "cudaMalloc for device buffer '" + buf.name_ + "'"));
  buf.base_ = static_cast<std::byte*>(p);
  KC_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(buf.base_, front_pattern().data(), kBandBytes, cudaMemcpyHostToDevice));
  KC_CUDA_RETURN_IF_ERROR(cudaMemcpy(buf.base_ + kBandBytes + bytes, back_pattern().data(),
                                     kBandBytes, cudaMemcpyHostToDevice));
  return buf;
}

Status GuardedBuffer::upload(const void* host, std::size_t bytes) {
  bytes = std::min(bytes, bytes_);
  if (bytes == 0) return ok_status();
  return cuda_status(cudaMemcpy(data(), host, bytes, cudaMemcpyHostToDevice),
                     "upload of '" + name_ + "'");
}

Status GuardedBuffer::download(void* host, std::size_t bytes) const {
  bytes = std::min(bytes, bytes_);
  if (bytes == 0) return ok_status();
  return cuda_status(cudaMemcpy(host, data(), bytes, cudaMemcpyDeviceToHost),
                     "download of '" + name_ + "'");
}

Status GuardedBuffer::fill(std::uint8_t byte) {
  if (bytes_ == 0) return ok_status();
  return cuda_status(cudaMemset(data(), byte, bytes_), "fill of '" + name_ + "'");
}

Status GuardedBuffer::fill_2d(std::uint8_t byte, std::size_t pitch, std::size_t row_bytes,
                              std::size_t rows) {
  if (rows == 0 || row_bytes == 0) return ok_status();
  KC_CHECK(pitch >= row_bytes && (rows - 1) * pitch + row_bytes <= bytes_);
  return cuda_status(cudaMemset2D(data(), pitch, byte, row_bytes, rows), "fill of '" + name_ + "'");
}

Status GuardedBuffer::check_guards() const {
  if (!base_) return ok_status();
  std::vector<std::uint8_t> got(kBandBytes);
  for (bool back : {false, true}) {
    const std::byte* band = back ? base_ + kBandBytes + bytes_ : base_;
    KC_RETURN_IF_ERROR(cuda_status(cudaMemcpy(got.data(), band, kBandBytes, cudaMemcpyDeviceToHost),
                                   "reading the canaries of '" + name_ + "'"));
    KC_RETURN_IF_ERROR(canary::check_band(got.data(), back, name_, bytes_));
  }
  return ok_status();
}

Result<DeviceTensor> to_device(const std::string& name, Tensor& host, bool poison_output,
                               bool copy_back) {
  DeviceTensor dt;
  dt.name = name;
  dt.host = &host;
  dt.copy_back = copy_back;
  KC_ASSIGN_OR_RETURN(dt.buffer, GuardedBuffer::allocate(host.nbytes(), name));
  if (!poison_output || host.numel() == 0) {
    KC_RETURN_IF_ERROR(dt.buffer.upload(host.raw(), host.nbytes()));
    return dt;
  }
  // The logical elements as kc's output poison, or the fill the host copy
  // carries (kc/poison.h), padding as the host has it.
  std::vector<std::byte> staged(host.raw(), host.raw() + host.nbytes());
  fill_logical(staged.data(), host, logical_fill(host).value_or(Fill::kPoison));
  KC_RETURN_IF_ERROR(dt.buffer.upload(staged.data(), staged.size()));
  return dt;
}

Status finish(std::vector<DeviceTensor>& tensors) {
  for (const DeviceTensor& t : tensors) KC_RETURN_IF_ERROR(t.buffer.check_guards());
  // Read-only inputs are downloaded too: a kernel that wrote one then shows up
  // in the engine's input checksum as INPUT_MUTATED, as a host kernel (and the
  // opencl backend's) would.
  for (DeviceTensor& t : tensors) KC_RETURN_IF_ERROR(t.buffer.download(t.host->raw(), t.host->nbytes()));
  return ok_status();
}

}  // namespace kc::backends::cuda
