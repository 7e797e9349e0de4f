// Device: where kernels run. Each has a full TensorFlow-style name, a type used to find
// kernels, an allocator, a resource manager (variables live there across Session::Run calls)
// and the pool its kernels parallelise on.
//
//   std::unique_ptr<pf::Device> cpu = pf::NewCpuDevice(0);
//   cpu->name() == "/job:localhost/replica:0/task:0/device:CPU:0";
//   pf::Tensor t(cpu->GetAllocator(), pf::DT_FLOAT, {4});
//
// Optional parts and their defaults: Sync() (default: nothing to wait for), CopyWithinDevice()
// (default: memcpy), Description()
// (default: empty), priority() (CPU 100, GPUs higher so soft placement prefers them).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "placeflow/core/allocator.h"
#include "placeflow/core/device_name.h"
#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/core/thread_pool.h"

namespace pf {

inline constexpr char kDeviceCpu[] = "CPU";
inline constexpr char kDeviceGpu[] = "GPU";

// A variable's storage, owned by the device's ResourceMgr.
struct VarState {
  std::mutex mu;
  Tensor value;  // uninitialised until the first Assign
  bool initialized() const { return value.IsInitialized(); }
};

// Shared state other than variables (queues, gradient accumulators): found by name by every
// kernel of the device that names it, alive as long as the device.
class Resource {
 public:
  virtual ~Resource() = default;
};

class ResourceMgr {
 public:
  VarState* LookupOrCreateVar(const std::string& name);
  VarState* LookupVar(const std::string& name) const;  // nullptr when absent
  std::vector<std::string> VarNames() const;
  // The resource called `name`, made by `make` on first use. The caller checks its kind.
  std::shared_ptr<Resource> LookupOrCreate(const std::string& name,
                                           const std::function<std::shared_ptr<Resource>()>& make);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<VarState>> vars_;
  std::map<std::string, std::shared_ptr<Resource>> resources_;
};

class Device {
 public:
  Device(std::string type, int id, std::string job = "localhost", int replica = 0, int task = 0);
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  // Renames the device into a cluster task ("/job:ps/replica:0/task:1/device:CPU:0"); only
  // before the device joins a DeviceSet.
  void SetTask(const std::string& job, int replica, int task);
  const DeviceName& parsed_name() const { return parsed_; }
  const std::string& device_type() const { return parsed_.type; }
  virtual Allocator* GetAllocator() = 0;
  virtual ThreadPool* intra_op_pool() { return ThreadPool::Default(); }
  virtual Status Sync() { return Status::OK(); }
  // Copies bytes within this device's memory, ordered with its kernels (default: memcpy).
  virtual Status CopyWithinDevice(void* dst, const void* src, size_t bytes);
  virtual std::string Description() const { return ""; }
  virtual int priority() const = 0;
  // Whether the tensors this device's kernels make live in host memory (the CPU; not a GPU).
  // Decides where data must be staged: a device with its own memory gets feeds copied in,
  // and its kernels' HostMemory arguments a host-memory copy.
  virtual bool uses_host_memory() const = 0;
  ResourceMgr* resource_mgr() { return &resources_; }
  // Changes when the device's process restarts: a cluster task's devices carry their server's
  // random incarnation; 0 in one process. _Send/_Recv keys carry the sender's, so that a
  // restarted task rejects requests for tensors of its previous life.
  virtual uint64_t incarnation() const { return incarnation_; }
  // Only before the device joins a DeviceSet.
  void set_incarnation(uint64_t incarnation) { incarnation_ = incarnation; }

 private:
  uint64_t incarnation_ = 0;
  std::string name_;
  DeviceName parsed_;
  ResourceMgr resources_;
};

// `pool` (default: the process-wide pool) runs the device's intra-op loops; `allocator` (default:
// the process-wide host allocator, CpuAllocator()) hands out its memory and must outlive every
// tensor it allocates.
std::unique_ptr<Device> NewCpuDevice(int id, ThreadPool* pool = nullptr,
                                     Allocator* allocator = nullptr);

}  // namespace pf
