// Resources that live as long as one step (TensorFlow's per-step container): the stacks in
// which a while loop's gradient keeps its forward values (ops/control/stack_ops.cc). A
// StepGroup owns one, freed with it, so a failed step leaks nothing; kernels reach it through
// OpKernelContext::step_container() and name what they keep by an int64 handle.
//
//   int64_t h = ctx->step_container()->Add(std::make_shared<Stack>());
//   auto stack = std::static_pointer_cast<Stack>(ctx->step_container()->Find(h));  // or null
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace pf {

class StepContainer {
 public:
  // Keeps `r` for the rest of the step under a new handle (1, 2, ...).
  int64_t Add(std::shared_ptr<void> r) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.emplace(next_, std::move(r));
    return next_++;
  }
  // The resource under `handle`, or null.
  std::shared_ptr<void> Find(int64_t handle) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(handle);
    return it == items_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::shared_ptr<void>> items_;
  int64_t next_ = 1;
};

}  // namespace pf
