#include "core/allocator.h"

#include <cstdlib>

namespace pf {
namespace {

class HostAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }
  void* Allocate(size_t bytes) override {
    constexpr size_t kAlign = 64;
    size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    return std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  }
  void Free(void* ptr, size_t) override { std::free(ptr); }
};

}  // namespace

Allocator* CpuAllocator() {
  static HostAllocator* allocator = new HostAllocator();
  return allocator;
}

std::shared_ptr<Buffer> Buffer::Allocate(Allocator* allocator, size_t bytes) {
  void* p = allocator->Allocate(bytes);
  if (p == nullptr) return nullptr;
  return std::make_shared<Buffer>(allocator, p, bytes);
}

}  // namespace pf
