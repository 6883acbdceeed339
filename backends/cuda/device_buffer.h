// kc — device memory owned by the cuda backend, surrounded by guard canaries.
//
// Layout of one allocation: [front band | user bytes | back band]. Each band is
// canary::kBandBytes of a position-dependent byte pattern written before the kernel
// runs and compared after it (docs/isolation.md: "buffers are surrounded by guard
// canaries"). A kernel that writes past either end of its buffer changes the
// band; check_guards() reports it as kCrashed "GUARD_OVERWRITTEN(<name>,
// before|after): ..." (the band pattern and check are include/kc/canary.h's,
// shared with the opencl backend), which the worker turns into an error
// verdict with that signature.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kc/canary.h"
#include "kc/status.h"
#include "kc/tensor.h"

namespace kc::backends::cuda {

class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept;
  ~GuardedBuffer();

  /// cudaMalloc of bytes + 2 canary::kBandBytes, bands written; user bytes unset.
  static Result<GuardedBuffer> allocate(std::size_t bytes, std::string name);

  /// The user region (256-byte aligned: cudaMalloc alignment plus a 4 KiB band).
  void* data() const { return base_ ? base_ + canary::kBandBytes : nullptr; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data());
  }
  std::size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }

  /// Host -> device copy of min(bytes, size()) bytes into the user region.
  Status upload(const void* host, std::size_t bytes);
  /// Device -> host copy of min(bytes, size()) bytes from the user region.
  Status download(void* host, std::size_t bytes) const;
  /// cudaMemset of the whole user region.
  Status fill(std::uint8_t byte);
  /// cudaMemset2D of rows x row_bytes with the given pitch: the logical
  /// elements of a padded matrix, leaving its padding as uploaded.
  Status fill_2d(std::uint8_t byte, std::size_t pitch, std::size_t row_bytes, std::size_t rows);

  /// OK when both bands are intact; otherwise canary::check_band's kCrashed
  /// "GUARD_OVERWRITTEN(<name>, before|after): ...".
  Status check_guards() const;

 private:
  void release();

  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::string name_;
};

/// A host tensor's device copy: storage bytes uploaded (inputs and in/outs) or
/// its logical elements pre-filled with kc's output poison (kc/poison.h) while
/// any padding keeps the host's values, so the padding of an output can be
/// checked for stray writes and an unwritten element comes back as the poison.
struct DeviceTensor {
  std::string name;
  Tensor* host = nullptr;
  bool copy_back = false;  ///< outputs and in/outs are downloaded after the run
  GuardedBuffer buffer;
};

/// Uploads `host` (all storage bytes), with its logical elements as kc's
/// output poison when poison_output is set.
Result<DeviceTensor> to_device(const std::string& name, Tensor& host, bool poison_output,
                               bool copy_back);

/// After the kernel: checks every buffer's canaries, then downloads every
/// buffer into its host tensor, read-only inputs included (a kernel that wrote
/// an input is then INPUT_MUTATED by the engine's input checksum). Nothing is
/// written to the host when a canary check fails.
Status finish(std::vector<DeviceTensor>& tensors);

}  // namespace kc::backends::cuda
