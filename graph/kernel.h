// Kernels: per (op, device type, dtype) implementations, found through the kernel registry.
// Kernels never compute output shapes: the shape function did, the executor allocates outputs
// on first use, the kernel fills them.
//
//   class NegOp : public pf::OpKernel {
//    public:
//     using OpKernel::OpKernel;
//     pf::Status Compute(pf::OpKernelContext* ctx) override {
//       PF_ASSIGN_OR_RETURN(pf::Tensor* out, ctx->AllocateOutput(0));
//       ...
//     }
//   };
//   PF_REGISTER_KERNEL(pf::KernelDef("Neg", "CPU").TypeConstraint("T", {pf::DT_FLOAT}), NegOp);
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/graph/cancellation.h"
#include "placeflow/graph/collectives.h"
#include "placeflow/graph/graph.h"
#include "placeflow/graph/rendezvous.h"
#include "placeflow/graph/step_container.h"

namespace pf {

class Device;
class DeviceSet;
struct VarState;
class ThreadPool;

class OpKernelContext;

class OpKernel {
 public:
  explicit OpKernel(const Node& node) : node_(&node) {}
  virtual ~OpKernel() = default;
  virtual Status Compute(OpKernelContext* ctx) = 0;
  // Cheap kernels run inline on the executor's thread; expensive ones may go to the pool.
  virtual bool IsExpensive() const { return true; }
  // Kernels that wait (Recv, collectives) are asynchronous: the executor calls ComputeAsync and
  // moves on; `done` (from any thread) finishes the node. Default: not asynchronous.
  virtual bool IsAsync() const { return false; }
  virtual void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) {
    done(Compute(ctx));
  }

  const Node& node() const { return *node_; }
  const std::string& name() const { return node_->name(); }

  // Arguments this kernel keeps in host memory on a device that has its own (KernelDef::
  // HostMemory): shape-like inputs it reads on the host, outputs it writes on the host.
  bool host_input(int i) const {
    return i < static_cast<int>(host_inputs_.size()) && host_inputs_[i];
  }
  bool host_output(int i) const {
    return i < static_cast<int>(host_outputs_.size()) && host_outputs_[i];
  }
  void set_memory_types(std::vector<bool> host_inputs, std::vector<bool> host_outputs) {
    host_inputs_ = std::move(host_inputs);
    host_outputs_ = std::move(host_outputs);
  }

 private:
  const Node* node_;
  std::vector<bool> host_inputs_, host_outputs_;
};

// Per-call state a kernel sees. Built by the executor.
class OpKernelContext {
 public:
  struct Params {
    Device* device = nullptr;
    Allocator* allocator = nullptr;  // where outputs are allocated
    ThreadPool* intra_op_pool = nullptr;
    const Tensor* inputs = nullptr;         // num_inputs tensors
    VarState* const* ref_inputs = nullptr;  // per input: the variable behind a ref input, or null
    int num_inputs = 0;
    const Shape* output_shapes = nullptr;  // inferred shapes, fully defined
    Tensor* outputs = nullptr;             // num_outputs slots, filled by the kernel
    int num_outputs = 0;
    const DType* output_dtypes = nullptr;
    int64_t step_id = 0;
    Rendezvous* rendezvous = nullptr;             // this step's, for _Send/_Recv
    CollectiveTable* collectives = nullptr;       // this step's, for all-reduce
    StepContainer* step_container = nullptr;      // this step's resources (stacks)
    CancellationManager* cancellation = nullptr;  // this step's, for kernels that wait
    const DeviceSet* devices = nullptr;           // the session's devices
    const OpKernel* kernel = nullptr;             // for per-argument memory types
    std::string* trace_label = nullptr;           // set only when the step is traced
  };
  explicit OpKernelContext(const Params& p) : p_(p) {}

  Device* device() const { return p_.device; }
  ThreadPool* intra_op_pool() const { return p_.intra_op_pool; }
  int num_inputs() const { return p_.num_inputs; }
  const Tensor& input(int i) const { return p_.inputs[i]; }
  // The variable behind ref input i (Assign, AssignAdd, ...).
  VarState* ref_input(int i) const { return p_.ref_inputs ? p_.ref_inputs[i] : nullptr; }
  int num_outputs() const { return p_.num_outputs; }
  const Shape& output_shape(int i) const { return p_.output_shapes[i]; }
  DType output_dtype(int i) const { return p_.output_dtypes[i]; }
  int64_t step_id() const { return p_.step_id; }
  Rendezvous* rendezvous() const { return p_.rendezvous; }
  CollectiveTable* collectives() const { return p_.collectives; }
  StepContainer* step_container() const { return p_.step_container; }
  CancellationManager* cancellation() const { return p_.cancellation; }
  const OpKernel* kernel() const { return p_.kernel; }
  const DeviceSet* devices() const { return p_.devices; }
  // Whether this step is traced: a kernel may then say how it ran (an algorithm, a fallback
  // path) in its trace event's "label" (NodeExecStats::label). Build the text only if so.
  bool tracing() const { return p_.trace_label != nullptr; }
  std::string* trace_label() const { return p_.trace_label; }
  void SetTraceLabel(std::string label) const {
    if (p_.trace_label != nullptr) *p_.trace_label = std::move(label);
  }

  // Allocates output i with its inferred shape on this device (in host memory when the kernel
  // declared that output HostMemory).
  StatusOr<Tensor*> AllocateOutput(int i);
  // Sets output i to an existing tensor (forwarding, variables); its shape must match.
  Status SetOutput(int i, Tensor t);
  // Output i shares input `in`'s buffer with the inferred output shape (Identity, Reshape).
  Status ForwardInput(int in, int out);
  // Output `out` takes over the buffer of the first input in `candidates` that nothing else
  // holds (TensorFlow's forward_input_or_allocate_output), else is allocated. Taken over: same
  // dtype (numeric) and element count, not a variable's, allocated where the output would be,
  // and its buffer referenced by this input alone (no other consumer, fetch, feed, constant or
  // view). The kernel then writes the output over the input it reads, element for element, so it
  // must read each element before writing it and never read one it has written. It saves the
  // output's allocation and keeps one tensor fewer in memory: the lines being written are the
  // lines just read.
  StatusOr<Tensor*> ForwardInputOrAllocateOutput(std::initializer_list<int> candidates, int out);

  Tensor* mutable_output(int i) { return &p_.outputs[i]; }
  // What the executor handed this call (a kernel that runs another kernel builds its context
  // from it: ops/half_via_float.cc).
  const Params& params() const { return p_; }

 private:
  Allocator* OutputAllocator(int i) const;  // where AllocateOutput(i) allocates

  Params p_;
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const Node&)>;

class KernelDef {
 public:
  KernelDef(std::string op, std::string device_type)
      : op_(std::move(op)), device_type_(std::move(device_type)) {}
  KernelDef& TypeConstraint(std::string attr, std::vector<DType> allowed) {
    constraints_[std::move(attr)] = std::move(allowed);
    return *this;
  }
  // The named argument stays in host memory on this device (shape-like int32 inputs on GPUs).
  KernelDef& HostMemory(std::string arg) {
    host_memory_args_.push_back(std::move(arg));
    return *this;
  }
  // Among the device types with a kernel for a node, the placer prefers the one whose kernel
  // has the highest priority over the device type's own order (TensorFlow's kernel priority).
  KernelDef& Priority(int p) {
    priority_ = p;
    return *this;
  }

  const std::string& op() const { return op_; }
  const std::string& device_type() const { return device_type_; }
  const std::map<std::string, std::vector<DType>>& constraints() const { return constraints_; }
  const std::vector<std::string>& host_memory_args() const { return host_memory_args_; }
  int priority() const { return priority_; }
  // True when the node's type attrs satisfy every constraint.
  bool Matches(const AttrMap& attrs) const;
  std::string DebugString() const;  // "device='CPU'; T in [float, double]"

  KernelFactory factory;

 private:
  std::string op_;
  std::string device_type_;
  std::map<std::string, std::vector<DType>> constraints_;
  std::vector<std::string> host_memory_args_;
  int priority_ = 0;
};

// Thread-safe: a device backend loaded at run time (the CUDA backend, devices/gpu_probe.h)
// registers its kernels while other threads may be placing graphs.
class KernelRegistry {
 public:
  static KernelRegistry* Global();
  void Register(KernelDef def);
  // A kernel for a device type whose backend is loaded at run time: registered when
  // EnableBackend(def.device_type()) runs, never when no such backend loads. A CPU-only process
  // then has no GPU kernels at all, as in TensorFlow's CPU build.
  void RegisterWithBackend(KernelDef def);
  void EnableBackend(std::string_view device_type);
  // The best matching kernel, or nullptr.
  const KernelDef* Find(std::string_view op, std::string_view device_type,
                        const AttrMap& attrs) const;
  // The placer's one question: is there a kernel for this node on this device type?
  bool Supports(const Node& node, std::string_view device_type) const {
    return Find(node.op(), device_type, node.attrs()) != nullptr;
  }
  // The types of `device_types` (in their order of preference) with a kernel for `node`, each
  // with its best kernel's priority, highest kernel priority first; ties keep the given order.
  std::vector<std::pair<std::string, int>> PrioritizedTypes(
      const Node& node, const std::vector<std::string>& device_types) const;
  std::vector<const KernelDef*> KernelsForOp(std::string_view op) const;
  // TensorFlow's text for a missing kernel:
  // "No OpKernel was registered to support Op 'X' used by {{node n}} with these attrs: [T=int32]
  //  Registered devices: [CPU]  Registered kernels: device='CPU'; T in [float]"
  std::string NoKernelMessage(const Node& node, const std::vector<std::string>& device_types) const;
  // That text as NotFound: a kernel asked for at run time (the placer's is InvalidArgument).
  Status NotFoundError(const Node& node, const std::vector<std::string>& device_types) const {
    return errors::NotFound(NoKernelMessage(node, device_types));
  }
  // Which inputs and outputs of `node` stay in host memory on `device_type` (per argument, list
  // arguments expanded); all false when no kernel declares HostMemory.
  void MemoryTypes(const Node& node, std::string_view device_type, std::vector<bool>* host_inputs,
                   std::vector<bool>* host_outputs) const;
  // Creates the kernel for `node` on `device_type`.
  StatusOr<std::unique_ptr<OpKernel>> Create(const Node& node, std::string_view device_type) const;

 private:
  mutable std::shared_mutex mu_;
  std::multimap<std::string, KernelDef, std::less<>> kernels_;
  std::vector<KernelDef> waiting_for_backend_;
  std::set<std::string, std::less<>> enabled_backends_;
};

struct KernelRegistrar {
  KernelRegistrar(KernelDef def, KernelFactory factory, bool with_backend = false) {
    def.factory = std::move(factory);
    if (with_backend) {
      KernelRegistry::Global()->RegisterWithBackend(std::move(def));
    } else {
      KernelRegistry::Global()->Register(std::move(def));
    }
  }
};

}  // namespace pf

// PF_REGISTER_KERNEL(def, KernelClass<Args...>): KernelClass is built from a `const Node&`.
#define PF_REGISTER_KERNEL(def, ...)                                         \
  static ::pf::KernelRegistrar PF_CONCAT(pf_kernel_registrar_, __COUNTER__)( \
      def, [](const ::pf::Node& n) -> std::unique_ptr<::pf::OpKernel> {      \
        return std::make_unique<__VA_ARGS__>(n);                             \
      })

// PF_REGISTER_KERNEL_WITH_BACKEND(def, KernelClass): a kernel of the core library for a device
// whose backend loads at run time (a GPU kernel that only relabels or copies through the
// device's own interface, like Identity): it exists once that backend has loaded.
#define PF_REGISTER_KERNEL_WITH_BACKEND(def, ...)                            \
  static ::pf::KernelRegistrar PF_CONCAT(pf_kernel_registrar_, __COUNTER__)( \
      def,                                                                   \
      [](const ::pf::Node& n) -> std::unique_ptr<::pf::OpKernel> {           \
        return std::make_unique<__VA_ARGS__>(n);                             \
      },                                                                     \
      /*with_backend=*/true)
