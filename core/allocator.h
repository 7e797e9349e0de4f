// Allocators hand out device memory; a Buffer owns one allocation and frees it through its
// allocator when the last Tensor that shares it goes away.
//
//   pf::Allocator* a = pf::CpuAllocator();          // 64-byte aligned host memory
//   auto buf = pf::Buffer::Allocate(a, 1024);       // std::shared_ptr<Buffer>, or null when out of
//   memory
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <string>

namespace pf {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns nullptr when the request cannot be met (never throws, never aborts).
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
  // Whether the host can read the memory directly (CPU and pinned memory).
  virtual bool host_accessible() const { return true; }
  // Why a request of `bytes` failed (free bytes, limit, largest free chunk), for OOM errors.
  virtual std::string DescribeFailure(size_t bytes) const { return ""; }
};

// Process-wide host allocator: 64-byte aligned, thread-safe.
Allocator* CpuAllocator();

class Buffer {
 public:
  Buffer(Allocator* allocator, void* data, size_t bytes)
      : allocator_(allocator),
        data_(data),
        bytes_(bytes),
        on_host_(allocator == nullptr || allocator->host_accessible()) {}
  // A view that frees nothing (allocator null) into memory that is or is not on the host.
  Buffer(void* data, size_t bytes, bool on_host)
      : allocator_(nullptr), data_(data), bytes_(bytes), on_host_(on_host) {}
  ~Buffer() {
    DestroyStrings();
    if (allocator_ != nullptr && data_ != nullptr) allocator_->Free(data_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  static std::shared_ptr<Buffer> Allocate(Allocator* allocator, size_t bytes);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }
  // Whether the host can read the bytes (host or pinned memory), or only a device can.
  bool on_host() const { return on_host_; }

  // DT_STRING storage: placement-constructs `n` empty std::strings at the start of the (host)
  // memory, which must hold them; the buffer destroys them before it frees the memory. Views
  // never own strings.
  void ConstructStrings(size_t n) {
    auto* s = static_cast<std::string*>(data_);
    for (size_t i = 0; i < n; ++i) new (s + i) std::string();
    num_strings_ = n;
  }
  size_t num_strings() const { return num_strings_; }

 private:
  void DestroyStrings() {
    auto* s = static_cast<std::string*>(data_);
    for (size_t i = 0; i < num_strings_; ++i) s[i].~basic_string();
    num_strings_ = 0;
  }

  Allocator* allocator_;
  void* data_;
  size_t bytes_;
  bool on_host_;
  size_t num_strings_ = 0;
};

}  // namespace pf
