// kc — host tensors: dtype, shape, strides, owned storage.
//
// Storage by dtype: F64 double, F32/TF32 float, F16/BF16 uint16 bit patterns,
// FP8 uint8 bit patterns, I32 int32, I64 int64. Strides are in elements and
// row-major by default; a matrix with a leading dimension ld > cols has
// strides {ld, 1} and storage for rows * ld elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kc/dtype.h"

namespace kc {

class Tensor {
 public:
  Tensor() = default;
  /// Contiguous row-major tensor filled with zeros.
  Tensor(DType dtype, std::vector<std::int64_t> shape);
  /// Strided tensor; storage covers the largest reachable offset.
  Tensor(DType dtype, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides);
  /// A non-owning view of external storage laid out as `like` (same dtype,
  /// shape, strides, like.nbytes() bytes at `data`). The caller keeps the
  /// storage alive; copies of a view alias the same bytes. Used by the worker
  /// process (kc/isolate.h) to run kernels on guarded buffers.
  static Tensor view(const Tensor& like, std::byte* data);
  /// The same, for a layout given as dtype, shape and strides (storage as the
  /// strided constructor computes it). `data` may be null: a layout only.
  static Tensor view(DType dtype, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                     std::byte* data);
  bool is_view() const { return viewing_; }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  /// Number of logical elements (product of shape).
  std::int64_t numel() const;
  /// Number of storage elements (>= numel for padded strides).
  std::int64_t storage_elems() const { return storage_elems_; }
  std::size_t nbytes() const { return viewing_ ? view_bytes_ : bytes_.size(); }

  template <typename T>
  T* data() { return reinterpret_cast<T*>(raw()); }
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(raw()); }
  std::byte* raw() { return viewing_ ? view_ : bytes_.data(); }
  const std::byte* raw() const { return viewing_ ? view_ : bytes_.data(); }

  /// Storage element at offset (not logical index), converted to double.
  double load(std::int64_t offset) const;
  /// Rounds v to the dtype and stores it at storage offset.
  void store(std::int64_t offset, double v);

  /// Storage offset of a logical multi-index.
  std::int64_t offset(std::span<const std::int64_t> index) const;
  /// Storage offset of the i-th element in row-major logical order.
  std::int64_t offset_of_flat(std::int64_t flat) const;

  /// Logical element i in row-major order.
  double at(std::int64_t flat) const { return load(offset_of_flat(flat)); }
  void set(std::int64_t flat, double v) { store(offset_of_flat(flat), v); }

  /// All logical elements as doubles in row-major order.
  std::vector<double> to_doubles() const;
  /// Contiguous tensor from doubles (rounded to dtype).
  static Tensor from_doubles(DType dtype, std::vector<std::int64_t> shape,
                             std::span<const double> values);

  /// Fills every storage byte (padding included) with a repeated pattern.
  void fill_bytes(std::uint8_t pattern);
  /// Fills every storage element (padding included) with v.
  void fill_storage(double v);

  /// FNV-1a 64 over the storage bytes; used for input checksums and trace hashes.
  std::uint64_t hash() const;

  std::string shape_string() const;  ///< "(64, 128)"

 private:
  static std::int64_t storage_for(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides);

  DType dtype_ = DType::kF32;
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> strides_;
  std::int64_t storage_elems_ = 0;
  std::vector<std::byte> bytes_;
  std::byte* view_ = nullptr;  ///< external storage of a view (bytes_ is then empty)
  std::size_t view_bytes_ = 0;
  bool viewing_ = false;  ///< a view (of view_, which may be null: a layout with no storage yet)
};

}  // namespace kc
