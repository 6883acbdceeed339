// kc — host tensors (see kc/tensor.h).
#include "kc/tensor.h"

#include <cmath>
#include <cstring>

#include "kc/status.h"

namespace kc {
namespace {

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

}  // namespace

Tensor::Tensor(DType dtype, std::vector<std::int64_t> shape)
    : Tensor(dtype, shape, row_major_strides(shape)) {}

/// Storage elements of a strided layout: its largest reachable offset plus one,
/// 1 + sum (shape_i - 1) * stride_i (0 for an empty tensor).
std::int64_t Tensor::storage_for(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
  KC_CHECK_MSG(shape.size() == strides.size(), "tensor shape and strides differ in rank");
  std::int64_t last = 0;
  bool empty = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    KC_CHECK_MSG(shape[i] >= 0 && strides[i] >= 0, "negative tensor extent or stride");
    if (shape[i] == 0) empty = true;
    else last += (shape[i] - 1) * strides[i];
  }
  return empty ? 0 : last + 1;
}

Tensor::Tensor(DType dtype, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides)
    : dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)) {
  storage_elems_ = storage_for(shape_, strides_);
  bytes_.assign(static_cast<std::size_t>(storage_elems_) *
                    static_cast<std::size_t>(dtype_info(dtype_).storage_bytes),
                std::byte{0});
}

Tensor Tensor::view(DType dtype, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                    std::byte* data) {
  Tensor t;
  t.storage_elems_ = storage_for(shape, strides);
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.view_bytes_ = static_cast<std::size_t>(t.storage_elems_) * static_cast<std::size_t>(dtype_info(dtype).storage_bytes);
  t.view_ = data;
  t.viewing_ = true;
  return t;
}

Tensor Tensor::view(const Tensor& like, std::byte* data) {
  Tensor t;
  t.dtype_ = like.dtype_;
  t.shape_ = like.shape_;
  t.strides_ = like.strides_;
  t.storage_elems_ = like.storage_elems_;
  t.view_bytes_ = like.nbytes();
  t.view_ = data;
  t.viewing_ = true;
  return t;
}

std::int64_t Tensor::numel() const {
  // A default-constructed Tensor has no storage and no elements; a rank-0
  // tensor built from an empty shape is a scalar with one.
  if (shape_.empty()) return storage_elems_ > 0 ? 1 : 0;
  std::int64_t n = 1;
  for (auto d : shape_) n *= d;
  return n;
}

double Tensor::load(std::int64_t offset) const {
  KC_DCHECK(offset >= 0 && offset < storage_elems_);
  switch (dtype_) {
    case DType::kF64: return data<double>()[offset];
    case DType::kF32:
    case DType::kTF32: return data<float>()[offset];
    case DType::kF16: return f16_bits_to_f32(data<std::uint16_t>()[offset]);
    case DType::kBF16: return bf16_bits_to_f32(data<std::uint16_t>()[offset]);
    case DType::kFP8E4M3:
    case DType::kFP8E5M2: return fp8_bits_to_double(data<std::uint8_t>()[offset], dtype_);
    case DType::kI32: return data<std::int32_t>()[offset];
    case DType::kI64: return static_cast<double>(data<std::int64_t>()[offset]);
  }
  return 0;
}

void Tensor::store(std::int64_t offset, double v) {
  KC_DCHECK(offset >= 0 && offset < storage_elems_);
  // Every narrow format is rounded once, from double (round_to); the rounded
  // value is exact in float, so the bit conversions below do not round again.
  switch (dtype_) {
    case DType::kF64: data<double>()[offset] = v; return;
    case DType::kF32: data<float>()[offset] = static_cast<float>(v); return;
    case DType::kTF32: data<float>()[offset] = static_cast<float>(round_to(v, DType::kTF32)); return;
    case DType::kF16:
      data<std::uint16_t>()[offset] = f32_to_f16_bits(static_cast<float>(round_to(v, DType::kF16)));
      return;
    case DType::kBF16:
      data<std::uint16_t>()[offset] = f32_to_bf16_bits(static_cast<float>(round_to(v, DType::kBF16)));
      return;
    case DType::kFP8E4M3:
    case DType::kFP8E5M2: data<std::uint8_t>()[offset] = to_fp8_bits(v, dtype_); return;
    case DType::kI32:
      data<std::int32_t>()[offset] = std::isnan(v) ? 0 : static_cast<std::int32_t>(round_to(v, dtype_));
      return;
    case DType::kI64:
      data<std::int64_t>()[offset] = std::isnan(v) ? 0 : static_cast<std::int64_t>(round_to(v, dtype_));
      return;
  }
}

std::int64_t Tensor::offset(std::span<const std::int64_t> index) const {
  KC_DCHECK(index.size() == shape_.size());
  std::int64_t off = 0;
  for (std::size_t i = 0; i < index.size(); ++i) off += index[i] * strides_[i];
  return off;
}

std::int64_t Tensor::offset_of_flat(std::int64_t flat) const {
  std::int64_t off = 0;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    const std::int64_t d = shape_[i];
    off += (flat % d) * strides_[i];
    flat /= d;
  }
  return off;
}

std::vector<double> Tensor::to_doubles() const {
  const std::int64_t n = numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  // Row-major and dense (no padding): element i is at offset i.
  bool dense = true;
  std::int64_t expect = 1;
  for (std::size_t d = shape_.size(); d-- > 0 && dense;) {
    dense = shape_[d] == 1 || strides_[d] == expect;
    expect *= shape_[d];
  }
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = dense ? load(i) : at(i);
  return out;
}

Tensor Tensor::from_doubles(DType dtype, std::vector<std::int64_t> shape,
                            std::span<const double> values) {
  Tensor t(dtype, std::move(shape));
  KC_CHECK_MSG(static_cast<std::int64_t>(values.size()) == t.numel(),
               "from_doubles: value count differs from the shape");
  for (std::size_t i = 0; i < values.size(); ++i) t.store(static_cast<std::int64_t>(i), values[i]);
  return t;
}

void Tensor::fill_bytes(std::uint8_t pattern) {
  if (nbytes() > 0) std::memset(raw(), pattern, nbytes());
}

void Tensor::fill_storage(double v) {
  for (std::int64_t i = 0; i < storage_elems_; ++i) store(i, v);
}

std::uint64_t Tensor::hash() const {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  const std::byte* p = raw();
  for (std::size_t i = 0, n = nbytes(); i < n; ++i) {
    h ^= static_cast<std::uint8_t>(p[i]);
    h *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  return h;
}

std::string Tensor::shape_string() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + ")";
}

}  // namespace kc
