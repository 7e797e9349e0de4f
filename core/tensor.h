// Tensor: a dtype, a shape and a reference-counted buffer. Copies share the buffer.
//
//   pf::Tensor t(pf::DT_FLOAT, {2, 3});                 // host memory, 64-byte aligned
//   auto v = t.flat<float>();  v[0] = 1.f;               // std::span<float>
//   pf::Tensor s = pf::Tensor::Scalar<int32_t>(7);
//   pf::Tensor m = pf::Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
//   std::vector<float> copy = m.ToVector<float>();       // owned values
//   m.scalar<int32_t>();                                 // throws pf::Error: m holds float
//   fmt::print("{}", t.DebugString());                   // Tensor<float [2,3]> [[1, 0, 0], ...]
//   pf::Tensor names(pf::DT_STRING, {2});                // two empty std::strings, host only
//   names.flat<std::string>()[0] = "cat";
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "placeflow/core/allocator.h"
#include "placeflow/core/dtype.h"
#include "placeflow/core/shape.h"

namespace pf {

class Tensor {
 public:
  Tensor() = default;  // uninitialised: no dtype, no buffer
  // Allocates host memory (zero-filled; DT_STRING: empty strings) for a fully defined shape.
  // Throws pf::Error:
  // ResourceExhausted ("OOM when allocating tensor with shape ...") when the memory cannot be
  // had, InvalidArgument for a shape that is not fully defined or has more than 2^63-1 elements.
  Tensor(DType dtype, const Shape& shape);
  // Allocates from `allocator` (uninitialised memory; DT_STRING: empty strings, and only from a
  // host-accessible allocator) and never throws: on any failure the tensor has no buffer and
  // `IsInitialized()` is false. Prefer Allocate, which says why.
  Tensor(Allocator* allocator, DType dtype, const Shape& shape);
  // Allocates from `allocator`, with the error Tensor(dtype, shape) would throw.
  static StatusOr<Tensor> Allocate(Allocator* allocator, DType dtype, const Shape& shape);
  // Shares `buffer` (which must hold at least shape.num_elements() elements; for DT_STRING,
  // constructed strings).
  Tensor(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer);

  template <typename T>
  static Tensor Scalar(T v) {
    Tensor t(DataTypeOf<T>(), Shape{});
    t.flat<T>()[0] = std::move(v);
    return t;
  }
  // Throws pf::Error when `values` does not hold exactly shape.num_elements() values.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape) {
    if (!shape.IsFullyDefined() || static_cast<int64_t>(values.size()) != shape.num_elements()) {
      ThrowSizeMismatch(values.size(), shape);
    }
    Tensor t(DataTypeOf<T>(), shape);
    std::copy(values.begin(), values.end(), t.flat<T>().begin());
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector<T>(values, Shape{static_cast<int64_t>(values.size())});
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return num_elements_; }
  // Bytes of the buffer the elements take. For DT_STRING (n * sizeof(std::string)) this is no
  // size to memcpy: code that copies raw bytes must refuse DT_STRING (DTypeIsPod).
  size_t TotalBytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }
  bool IsInitialized() const {
    return buffer_ != nullptr || (dtype_ != DT_INVALID && num_elements_ == 0);
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  bool SharesBufferWith(const Tensor& o) const { return buffer_ && buffer_ == o.buffer_; }
  // False for device (GPU) memory: such a tensor's data() must not be read on the host.
  bool InHostMemory() const { return buffer_ == nullptr || buffer_->on_host(); }

  // Unchecked: the buffer as T*, in whatever memory it lives (kernels, device pointers).
  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  // Checked host access: throw pf::Error when T is not the tensor's dtype or the tensor is in
  // device memory, instead of reading garbage.
  template <typename T>
  std::span<T> flat() const {
    CheckAccess(DataTypeOf<T>());
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  // The one value of a tensor with one element (any rank, as a [1] batch of losses).
  template <typename T>
  T scalar() const {
    CheckAccess(DataTypeOf<T>());
    if (num_elements_ != 1) ThrowNotScalar();
    return data<T>()[0];
  }
  // A copy of the values, in row-major order.
  template <typename T>
  std::vector<T> ToVector() const {
    std::span<T> v = flat<T>();
    return std::vector<T>(v.begin(), v.end());
  }
  // Values as int64 (for int32/int64 shape-like tensors).
  std::vector<int64_t> AsInt64Vector() const;
  // Same buffer, new shape with the same number of elements.
  StatusOr<Tensor> Reshaped(const Shape& shape) const;
  // Rows [begin, end) of dimension 0, sharing this buffer (no copy; rank >= 1).
  StatusOr<Tensor> SliceRows(int64_t begin, int64_t end) const;
  // A deep copy in host memory (of a tensor in host memory); DT_STRING copies the strings.
  Tensor Clone() const;
  // True when dtype, shape and bytes match (DT_STRING: the strings' values).
  bool BitwiseEqual(const Tensor& o) const;

  // "Tensor<float [2,3]> [[1, 2, 3], [4, 5, 6]]", eliding after `max_entries` values. Strings
  // are quoted with C escapes and cut after 64 bytes ("abc"...).
  std::string DebugString(int max_entries = 20) const;

 private:
  void CheckAccess(DType requested) const {
    if (requested != dtype_ || !InHostMemory()) [[unlikely]]
      ThrowBadAccess(requested);
  }
  [[noreturn]] void ThrowBadAccess(DType requested) const;
  [[noreturn]] void ThrowNotScalar() const;
  [[noreturn]] static void ThrowSizeMismatch(size_t values, const Shape& shape);

  DType dtype_ = DT_INVALID;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace pf
