#include "placeflow/train/replica_device_setter.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "placeflow/graph/graph.h"

namespace pf::train {

struct ReplicaDeviceSetter::State {
  std::mutex mu;
  std::string ps_job;
  PsStrategy strategy;
  int next = 0;                // round robin
  std::vector<int64_t> bytes;  // per ps task, greedy
};

ReplicaDeviceSetter::ReplicaDeviceSetter(int ps_tasks, std::string worker_device,
                                         PsStrategy strategy, std::string ps_job)
    : state_(std::make_shared<State>()), worker_device_(std::move(worker_device)) {
  if (ps_tasks < 1) {
    throw Error(
        errors::InvalidArgument("ReplicaDeviceSetter needs at least one ps task, got ", ps_tasks));
  }
  ThrowIfError(DeviceName::TryParse(worker_device_).status());
  state_->ps_job = std::move(ps_job);
  state_->strategy = strategy;
  state_->bytes.assign(ps_tasks, 0);
}

std::string ReplicaDeviceSetter::NextPsDevice(int64_t bytes) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<int64_t>& load = state_->bytes;
  int task = 0;
  if (state_->strategy == PsStrategy::kRoundRobin) {
    task = state_->next;
    state_->next = (state_->next + 1) % static_cast<int>(load.size());
  } else {
    task = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
  }
  load[task] += bytes;
  return fmt::format("/job:{}/task:{}/device:CPU:0", state_->ps_job, task);
}

CustomGetter ReplicaDeviceSetter::getter() const {
  ReplicaDeviceSetter self = *this;
  return [self](const VariableRequest& r, const VariableGetterFn& next) {
    const std::string full =
        r.scope.variable_scope().empty() ? r.name : r.scope.variable_scope() + "/" + r.name;
    if (r.scope.graph()->FindNode(full) != nullptr) return next(r);  // reuse: already placed
    VariableRequest on_ps = r;
    const int64_t bytes = r.shape.IsFullyDefined()
                              ? r.shape.num_elements() * static_cast<int64_t>(DTypeSize(r.dtype))
                              : 0;
    on_ps.scope = r.scope.WithDevice(self.NextPsDevice(bytes));
    return next(on_ps);
  };
}

Scope ReplicaDeviceSetter::Apply(const Scope& scope) const {
  return scope.WithDevice(worker_device_).WithCustomGetter(getter());
}

}  // namespace pf::train
