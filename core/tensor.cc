#include "placeflow/core/tensor.h"

#include <cassert>
#include <limits>
#include <optional>

namespace pf {

namespace {

// The bytes a tensor needs, or nullopt when they do not fit in size_t.
std::optional<size_t> BytesFor(int64_t num_elements, DType dtype) {
  size_t bytes = 0;
  if (num_elements < 0 ||
      __builtin_mul_overflow(static_cast<size_t>(num_elements), DTypeSize(dtype), &bytes))
    return std::nullopt;
  return bytes;
}

}  // namespace

Tensor::Tensor(DType dtype, const Shape& shape) {
  *this = Allocate(CpuAllocator(), dtype, shape).ValueOrThrow();
  if (buffer_ && dtype != DT_STRING) std::memset(buffer_->data(), 0, buffer_->bytes());
}

Tensor::Tensor(Allocator* allocator, DType dtype, const Shape& shape)
    : dtype_(dtype), shape_(shape), num_elements_(shape.num_elements()) {
  // A shape that is not fully defined, or a size that overflows, gets no buffer (and is not
  // initialised, since num_elements_ is then -1 or nonzero).
  std::optional<size_t> bytes = BytesFor(num_elements_, dtype);
  if (dtype == DT_STRING && !allocator->host_accessible()) return;  // strings live on the host
  if (bytes) buffer_ = Buffer::Allocate(allocator, *bytes);
  if (buffer_ && dtype == DT_STRING) buffer_->ConstructStrings(static_cast<size_t>(num_elements_));
}

StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DType dtype, const Shape& shape) {
  if (!shape.IsFullyDefined()) {
    return errors::InvalidArgument("Cannot allocate a tensor of shape ", shape.ToString(),
                                   ": not fully defined");
  }
  if (shape.num_elements() < 0) {
    return errors::InvalidArgument("Cannot allocate a tensor of shape ", shape.ToString(),
                                   ": more than ", std::numeric_limits<int64_t>::max(),
                                   " elements");
  }
  if (dtype == DT_STRING && !allocator->host_accessible()) {
    return errors::InvalidArgument("Cannot allocate a string tensor of shape ", shape.ToString(),
                                   " with allocator ", allocator->Name(),
                                   ": DT_STRING tensors live in host memory only");
  }
  Tensor t(allocator, dtype, shape);
  if (!t.IsInitialized()) {
    std::optional<size_t> bytes = BytesFor(shape.num_elements(), dtype);
    std::string why = bytes ? allocator->DescribeFailure(*bytes) : "";
    return errors::ResourceExhausted(
        "OOM when allocating tensor with shape ", shape.ToString(), " and type ", DTypeName(dtype),
        " (", bytes ? std::to_string(*bytes) : std::string("over 2^64"), " bytes) by allocator ",
        allocator->Name(), why.empty() ? "" : ": ", why);
  }
  return t;
}

Tensor::Tensor(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype),
      shape_(shape),
      num_elements_(shape.num_elements()),
      buffer_(std::move(buffer)) {}

std::vector<int64_t> Tensor::AsInt64Vector() const {
  std::vector<int64_t> out(num_elements_);
  if (dtype_ == DT_INT32) {
    for (int64_t i = 0; i < num_elements_; ++i) out[i] = data<int32_t>()[i];
  } else if (dtype_ == DT_INT64) {
    for (int64_t i = 0; i < num_elements_; ++i) out[i] = data<int64_t>()[i];
  }
  return out;
}

StatusOr<Tensor> Tensor::Reshaped(const Shape& shape) const {
  if (shape.num_elements() != num_elements_) {
    return errors::InvalidArgument("Cannot reshape a tensor with ", num_elements_,
                                   " elements to shape ", shape.ToString(), " (",
                                   shape.num_elements(), " elements)");
  }
  return Tensor(dtype_, shape, buffer_);
}

StatusOr<Tensor> Tensor::SliceRows(int64_t begin, int64_t end) const {
  if (rank() < 1 || begin < 0 || end < begin || end > dim(0)) {
    return errors::InvalidArgument("Cannot take rows [", begin, ", ", end,
                                   ") of a tensor of shape ", shape_.ToString());
  }
  Shape out = shape_;
  out.set_dim(0, end - begin);
  const size_t row_bytes = dim(0) == 0 ? 0 : TotalBytes() / static_cast<size_t>(dim(0));
  // A view: a Buffer that frees nothing, kept alive together with the buffer it points into.
  struct View {
    View(std::shared_ptr<Buffer> p, void* data, size_t bytes)
        : parent(std::move(p)), view(data, bytes, parent->on_host()) {}
    std::shared_ptr<Buffer> parent;
    Buffer view;
  };
  auto holder = std::make_shared<View>(buffer_, static_cast<char*>(raw_data()) + begin * row_bytes,
                                       (end - begin) * row_bytes);
  return Tensor(dtype_, out, std::shared_ptr<Buffer>(holder, &holder->view));
}

Tensor Tensor::Clone() const {
  assert(InHostMemory() && "Clone copies host memory; copy device tensors with the CopyRegistry");
  Tensor t(dtype_, shape_);
  if (dtype_ == DT_STRING) {
    if (num_elements_ > 0) std::copy_n(data<std::string>(), num_elements_, t.data<std::string>());
  } else if (TotalBytes() > 0 && raw_data() != nullptr) {
    std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

bool Tensor::BitwiseEqual(const Tensor& o) const {
  if (dtype_ != o.dtype_ || shape_ != o.shape_) return false;
  if (TotalBytes() == 0) return true;
  if (dtype_ == DT_STRING)
    return std::equal(data<std::string>(), data<std::string>() + num_elements_,
                      o.data<std::string>());
  return std::memcmp(raw_data(), o.raw_data(), TotalBytes()) == 0;
}

namespace {

// "abc\n\x01" with C escapes, cut after kMaxStringBytes bytes ("...).
void AppendQuoted(std::string* s, const std::string& v) {
  constexpr size_t kMaxStringBytes = 64;
  *s += '"';
  for (size_t i = 0; i < std::min(v.size(), kMaxStringBytes); ++i) {
    const unsigned char c = static_cast<unsigned char>(v[i]);
    switch (c) {
      case '\n':
        *s += "\\n";
        break;
      case '\r':
        *s += "\\r";
        break;
      case '\t':
        *s += "\\t";
        break;
      case '"':
        *s += "\\\"";
        break;
      case '\\':
        *s += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          fmt::format_to(std::back_inserter(*s), "\\x{:02x}", c);
        } else {
          *s += static_cast<char>(c);
        }
    }
  }
  *s += '"';
  if (v.size() > kMaxStringBytes) *s += "...";
}

template <typename T>
void AppendValue(std::string* s, const Tensor& t, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    *s += t.data<bool>()[i] ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    AppendQuoted(s, t.data<std::string>()[i]);
  } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
    fmt::format_to(std::back_inserter(*s), "{}", static_cast<int>(t.data<T>()[i]));
  } else {
    fmt::format_to(std::back_inserter(*s), "{}", t.data<T>()[i]);
  }
}

}  // namespace

std::string Tensor::DebugString(int max_entries) const {
  std::string s = fmt::format("Tensor<{} {}>", DTypeName(dtype_), shape_.ToString());
  if (!IsInitialized()) return s + " <uninitialized>";
  if (!InHostMemory()) return s + " <device memory>";
  // The computable types, and the two storage types whose values print.
  auto visit = [this](auto&& fn) {
    if (dtype_ == DT_STRING) {
      fn(std::string{});
      return true;
    }
    if (dtype_ == DT_UINT8) {
      fn(uint8_t{});
      return true;
    }
    if (dtype_ == DT_INT8 || dtype_ == DT_INT16) {
      dtype_ == DT_INT8 ? fn(int8_t{}) : fn(int16_t{});
      return true;
    }
    return VisitDType(dtype_, fn);
  };
  if (!visit([](auto) {})) return s;
  s += ' ';
  const int rank = shape_.rank();
  // block[d]: elements spanned by one index of dim d-1, i.e. by one bracket pair at depth d.
  std::vector<int64_t> block(rank, 1);
  for (int d = rank - 1; d >= 0; --d) block[d] = (d + 1 < rank ? block[d + 1] : 1) * shape_.dim(d);
  if (rank == 0) {
    visit([&](auto v) { AppendValue<decltype(v)>(&s, *this, 0); });
    return s;
  }
  int64_t shown = std::min<int64_t>(num_elements_, max_entries);
  for (int64_t i = 0; i < shown; ++i) {
    for (int d = 0; d < rank; ++d) {
      if (i % block[d] == 0) s += '[';
    }
    visit([&](auto v) { AppendValue<decltype(v)>(&s, *this, i); });
    int closed = 0;
    for (int d = 0; d < rank; ++d) {
      if ((i + 1) % block[d] == 0) ++closed;
    }
    s.append(closed, ']');
    if (i + 1 < shown) s += ", ";
  }
  if (shown < num_elements_) s += "...";
  return s;
}

void Tensor::ThrowBadAccess(DType requested) const {
  if (requested != dtype_) {
    throw Error(errors::InvalidArgument("Tensor of dtype ", DTypeName(dtype_), " and shape ",
                                        shape_.ToString(), " read as ", DTypeName(requested)));
  }
  throw Error(errors::InvalidArgument("Tensor ", shape_.ToString(),
                                      " is in device memory: copy it to the host to read it"));
}

void Tensor::ThrowNotScalar() const {
  throw Error(errors::InvalidArgument("scalar() of a tensor of shape ", shape_.ToString(), " (",
                                      num_elements_, " elements); expected one element"));
}

void Tensor::ThrowSizeMismatch(size_t values, const Shape& shape) {
  throw Error(errors::InvalidArgument("FromVector: ", values, " values for shape ",
                                      shape.ToString(), " of ", shape.num_elements(), " elements"));
}

}  // namespace pf
