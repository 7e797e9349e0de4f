// Shared queues and gradient accumulators (TensorFlow's data_flow_ops): what synchronous replicas
// are built from (train/sync_replicas_optimizer.h). Each lives in its device's ResourceMgr under
// its `shared_name`, so every session on the device (every worker of a cluster) sees the same
// one. The kernels that wait (QueueDequeue, AccumulatorTakeGradient) are asynchronous: a waiting
// kernel holds no thread, and its step's cancellation (an error elsewhere in the step, an abort,
// RunOptions.timeout_in_ms) wakes it with the reason.
#include <cstring>
#include <deque>
#include <list>
#include <memory>

#include "placeflow/core/logging.h"
#include "placeflow/devices/device.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// A shared resource whose kernels may wait: waiters are served in arrival order, each once the
// resource can satisfy it (Ready), by Take, which fills the waiting kernel's outputs.
class WaitingResource : public Resource, public std::enable_shared_from_this<WaitingResource> {
 public:
  WaitingResource(std::string kind, std::string name, DType dtype, Shape shape)
      : kind_(std::move(kind)), name_(std::move(name)), dtype_(dtype), shape_(shape) {}

  // Same kind, dtype and shape, or an error naming both sides.
  Status CheckMatches(const std::string& kind, DType dtype, const Shape& shape,
                      const Node& node) const {
    if (kind == kind_ && dtype == dtype_ && shape == shape_) return Status::OK();
    return errors::InvalidArgument("Shared ", kind_, " '", name_, "' holds ", DTypeName(dtype_),
                                   " ", shape_.ToString(), ", but node ", node.name(), " (",
                                   node.op(), ") asks for ", kind == "accumulator" ? "an " : "a ",
                                   kind, " of ", DTypeName(dtype), " ", shape.ToString());
  }

  // Queues the kernel of `ctx`; `done` runs (on the device's pool) once Take filled its outputs,
  // or with the step's cancellation.
  void Wait(OpKernelContext* ctx, int64_t num_required, std::function<void(Status)> done) {
    std::vector<Finished> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Waiter w{next_id_++, ctx, std::move(done), ctx->cancellation(), 0, num_required};
      if (w.cm) {
        std::weak_ptr<WaitingResource> self = weak_from_this();
        const uint64_t id = w.id;
        const std::string what = ctx->kernel() ? ctx->kernel()->name() : std::string();
        bool registered = w.cm->Register(
            &w.token,
            [self, id](const Status& s) {
              if (auto r = self.lock()) r->Cancel(id, s);
            },
            [self, what] {
              auto r = self.lock();
              return what + ": " + (r ? r->Describe() : std::string("(gone)"));
            });
        if (!registered) {
          finished.push_back({ctx, std::move(w.done), w.cm->status()});
          Schedule(&finished);
          return;
        }
      }
      waiters_.push_back(std::move(w));
      ServeLocked(&finished);
    }
    Schedule(&finished);
  }

  const std::string& name() const { return name_; }

 protected:
  struct Waiter {
    uint64_t id;
    OpKernelContext* ctx;
    std::function<void(Status)> done;
    CancellationManager* cm;
    CancellationManager::Token token;
    int64_t num_required;
  };
  struct Finished {
    OpKernelContext* ctx;
    std::function<void(Status)> done;
    Status status;
  };

  virtual bool Ready(const Waiter& w) const = 0;
  virtual Status Take(const Waiter& w) = 0;
  // What a waiter waits for, for the timeout message (called with mu_ held).
  virtual std::string DescribeLocked() const = 0;

  std::string Describe() const {
    std::lock_guard<std::mutex> lock(mu_);
    return DescribeLocked();
  }

  // Serves waiters in order while the first one can be served.
  void ServeLocked(std::vector<Finished>* finished) {
    while (!waiters_.empty() && Ready(waiters_.front())) {
      Waiter& w = waiters_.front();
      // A waiter whose step is being cancelled is left to its cancellation callback, which is
      // on its way (and serves the next ones).
      if (w.cm && !w.cm->Deregister(w.token)) return;
      Status s = Take(w);
      finished->push_back({w.ctx, std::move(w.done), s});
      waiters_.pop_front();
    }
  }

  // Runs the finished kernels' callbacks on their devices' pools (never on the thread of the
  // kernel that made them ready, which belongs to another step).
  static void Schedule(std::vector<Finished>* finished) {
    for (Finished& f : *finished) {
      f.ctx->device()->intra_op_pool()->Schedule(
          [done = std::move(f.done), s = std::move(f.status)] { done(s); });
    }
    finished->clear();
  }

  void Cancel(uint64_t id, const Status& s) {
    std::vector<Finished> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
        if (it->id != id) continue;
        finished.push_back({it->ctx, std::move(it->done), s});
        waiters_.erase(it);
        break;
      }
      ServeLocked(&finished);
    }
    Schedule(&finished);
  }

  const std::string kind_, name_;
  const DType dtype_;
  const Shape shape_;
  mutable std::mutex mu_;
  std::list<Waiter> waiters_;
  uint64_t next_id_ = 1;
};

// A FIFO queue of tensors of one dtype and element shape, without a capacity.
class FifoQueue : public WaitingResource {
 public:
  FifoQueue(std::string name, DType dtype, Shape shape)
      : WaitingResource(kKind, std::move(name), dtype, shape) {}
  static constexpr char kKind[] = "queue";

  // Appends each row of `values` (shape [n] + element shape).
  Status EnqueueMany(const Tensor& values) {
    const int64_t n = values.dim(0);
    const size_t row_bytes = n ? values.TotalBytes() / static_cast<size_t>(n) : 0;
    std::vector<Finished> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int64_t i = 0; i < n; ++i) {
        Tensor row(dtype_, shape_);
        std::memcpy(row.raw_data(), static_cast<const char*>(values.raw_data()) + i * row_bytes,
                    row_bytes);
        items_.push_back(std::move(row));
      }
      ServeLocked(&finished);
    }
    Schedule(&finished);
    return Status::OK();
  }
  int32_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int32_t>(items_.size());
  }

 private:
  bool Ready(const Waiter&) const override { return !items_.empty(); }
  Status Take(const Waiter& w) override {
    Tensor t = std::move(items_.front());
    items_.pop_front();
    return w.ctx->SetOutput(0, std::move(t));
  }
  std::string DescribeLocked() const override {
    return fmt::format("dequeue from queue '{}' (empty)", name_);
  }

  std::deque<Tensor> items_;
};

// TensorFlow's ConditionalAccumulator: sums the gradients applied for the current global step,
// drops (and counts) those computed at an older one, and hands out their mean once enough have
// arrived; taking it advances the accumulator's global step.
class Accumulator : public WaitingResource {
 public:
  Accumulator(std::string name, DType dtype, Shape shape)
      : WaitingResource(kKind, std::move(name), dtype, shape), sum_(dtype, shape) {}
  static constexpr char kKind[] = "accumulator";

  Status Apply(int64_t local_step, const Tensor& grad) {
    if (grad.shape() != shape_) {
      return errors::InvalidArgument("Shape mismatch: accumulator '", name_, "' holds ",
                                     shape_.ToString(), ", gradient has ", grad.shape().ToString());
    }
    std::vector<Finished> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (local_step < global_step_) {
        ++dropped_;
        PF_LOG_DEBUG("Accumulator {}: dropped a stale gradient of step {} (now at step {})", name_,
                     local_step, global_step_);
        return Status::OK();
      }
      if (dtype_ == DT_FLOAT) {
        AddTo<float>(grad);
      } else {
        AddTo<double>(grad);
      }
      ++count_;
      ServeLocked(&finished);
    }
    Schedule(&finished);
    return Status::OK();
  }
  void SetGlobalStep(int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    if (step < global_step_) {
      PF_LOG_WARN("Accumulator {}: global step set back from {} to {}", name_, global_step_, step);
    }
    global_step_ = step;
  }
  int32_t num_accumulated() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int32_t>(count_);
  }
  int64_t num_dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }

 private:
  template <typename T>
  void AddTo(const Tensor& grad) {
    T* sum = sum_.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = sum_.num_elements();
    if (count_ == 0) {
      std::copy(g, g + n, sum);
    } else {
      for (int64_t i = 0; i < n; ++i) sum[i] += g[i];
    }
  }
  template <typename T>
  void MeanInto(Tensor* out) const {
    const T* sum = sum_.data<T>();
    T* o = out->data<T>();
    const T scale = T(1) / static_cast<T>(count_);
    for (int64_t i = 0; i < sum_.num_elements(); ++i) o[i] = sum[i] * scale;
  }

  bool Ready(const Waiter& w) const override { return count_ >= w.num_required; }
  Status Take(const Waiter& w) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, w.ctx->AllocateOutput(0));
    if (dtype_ == DT_FLOAT) {
      MeanInto<float>(out);
    } else {
      MeanInto<double>(out);
    }
    count_ = 0;
    ++global_step_;  // as TensorFlow's: taking the mean moves the accumulator on
    return Status::OK();
  }
  std::string DescribeLocked() const override {
    const int64_t required = waiters_.empty() ? 0 : waiters_.front().num_required;
    return fmt::format(
        "take from accumulator '{}' ({} of {} gradients for global step {} have arrived; {} "
        "stale ones dropped so far)",
        name_, count_, required, global_step_, dropped_);
  }

  Tensor sum_;
  int64_t count_ = 0, global_step_ = 0, dropped_ = 0;
};

// The resource a node names: created on first use, checked against the node's dtype and shape.
template <typename R>
StatusOr<std::shared_ptr<R>> Find(OpKernelContext* ctx, const Node& node) {
  const char* kind = R::kKind;
  const std::string& name = node.attr<std::string>("shared_name");
  const DType dtype = node.attr<DType>("dtype");
  const Shape& shape = node.attr<Shape>("shape");
  std::shared_ptr<Resource> r = ctx->device()->resource_mgr()->LookupOrCreate(
      name, [&] { return std::make_shared<R>(name, dtype, shape); });
  auto waiting = std::dynamic_pointer_cast<WaitingResource>(r);
  if (!waiting) {
    return errors::InvalidArgument("Resource '", name, "' on ", ctx->device()->name(),
                                   " is not a shared ", kind, " (node ", node.name(), ")");
  }
  PF_RETURN_IF_ERROR(waiting->CheckMatches(kind, dtype, shape, node));
  return std::static_pointer_cast<R>(r);
}

const std::vector<DType> kQueueTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL};
const std::vector<DType> kGradTypes = {DT_FLOAT, DT_DOUBLE};

// Every op names its resource and what it holds.
OpDef SharedOp(const std::string& op, const std::vector<DType>& types) {
  return OpDef(op)
      .RequiredAttr("shared_name")
      .RequiredAttr("shape")
      .TypeAttr("dtype", types)
      .SetStateful()
      .SetNotDifferentiable();
}

Status ShapeAttrOutput(ShapeContext& c) {
  c.set_output(0, c.attr<Shape>("shape"));
  return Status::OK();
}

// A count a resource keeps (QueueSize, AccumulatorNumAccumulated, AccumulatorNumDropped).
template <typename R, typename T, T (R::*kCount)() const>
class CountOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(auto r, Find<R>(ctx, node()));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    out->data<T>()[0] = ((*r).*kCount)();
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

// --- queue ---

class QueueEnqueueManyOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(auto q, Find<FifoQueue>(ctx, node()));
    const Tensor& v = ctx->input(0);
    Shape rows = v.shape();
    if (rows.rank() >= 1) rows.RemoveDim(0);
    if (v.rank() < 1 || rows != node().attr<Shape>("shape")) {
      return errors::InvalidArgument("QueueEnqueueMany of queue '", q->name(), "' needs [n] + ",
                                     node().attr<Shape>("shape").ToString(), ", got ",
                                     v.shape().ToString());
    }
    return q->EnqueueMany(v);
  }
  bool IsExpensive() const override { return false; }
};

class QueueDequeueOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return errors::Internal("asynchronous"); }
  bool IsAsync() const override { return true; }
  bool IsExpensive() const override { return false; }
  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    auto q = Find<FifoQueue>(ctx, node());
    if (!q.ok()) return done(q.status());
    (*q)->Wait(ctx, 1, std::move(done));
  }
};

PF_REGISTER_OP(SharedOp("QueueEnqueueMany", kQueueTypes)
                   .Input("components", "dtype")
                   .SetShapeFn([](ShapeContext& c) {
                     const Shape& in = c.input(0);
                     if (in.unknown_rank()) return Status::OK();
                     Shape rows = in;
                     if (rows.rank() >= 1) rows.RemoveDim(0);
                     if (in.rank() < 1 || !rows.IsCompatibleWith(c.attr<Shape>("shape"))) {
                       return errors::InvalidArgument("QueueEnqueueMany needs [n] + ",
                                                      c.attr<Shape>("shape").ToString(), ", got ",
                                                      in.ToString());
                     }
                     return Status::OK();
                   }));
PF_REGISTER_OP(
    SharedOp("QueueDequeue", kQueueTypes).Output("component", "dtype").SetShapeFn(ShapeAttrOutput));
PF_REGISTER_OP(SharedOp("QueueSize", kQueueTypes).Output("size", "int32").SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("QueueEnqueueMany", kDeviceCpu), QueueEnqueueManyOp);
PF_REGISTER_KERNEL(KernelDef("QueueDequeue", kDeviceCpu), QueueDequeueOp);
PF_REGISTER_KERNEL(KernelDef("QueueSize", kDeviceCpu),
                   CountOp<FifoQueue, int32_t, &FifoQueue::size>);

// --- accumulator ---

class AccumulatorApplyGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(auto acc, Find<Accumulator>(ctx, node()));
    return acc->Apply(ctx->input(0).scalar<int64_t>(), ctx->input(1));
  }
};

class AccumulatorTakeGradientOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext*) override { return errors::Internal("asynchronous"); }
  bool IsAsync() const override { return true; }
  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    auto acc = Find<Accumulator>(ctx, node());
    if (!acc.ok()) return done(acc.status());
    const int32_t required = ctx->input(0).scalar<int32_t>();
    if (required < 1) {
      return done(errors::InvalidArgument("AccumulatorTakeGradient ", name(),
                                          ": num_required must be at least 1, got ", required));
    }
    (*acc)->Wait(ctx, required, std::move(done));
  }
};

class AccumulatorSetGlobalStepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(auto acc, Find<Accumulator>(ctx, node()));
    acc->SetGlobalStep(ctx->input(0).scalar<int64_t>());
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(SharedOp("AccumulatorApplyGradient", kGradTypes)
                   .Input("local_step", "int64")
                   .Input("gradient", "dtype")
                   .SetShapeFn([](ShapeContext& c) {
                     if (!c.input(1).IsCompatibleWith(c.attr<Shape>("shape"))) {
                       return errors::InvalidArgument("Shape mismatch: accumulator '",
                                                      c.attr<std::string>("shared_name"),
                                                      "' holds ", c.attr<Shape>("shape").ToString(),
                                                      ", gradient has ", c.input(1).ToString());
                     }
                     return NoOutputsShape(c);
                   }));
PF_REGISTER_OP(SharedOp("AccumulatorTakeGradient", kGradTypes)
                   .Input("num_required", "int32")
                   .Output("average", "dtype")
                   .SetShapeFn(ShapeAttrOutput));
PF_REGISTER_OP(SharedOp("AccumulatorSetGlobalStep", kGradTypes)
                   .Input("new_global_step", "int64")
                   .SetShapeFn(NoOutputsShape));
PF_REGISTER_OP(SharedOp("AccumulatorNumAccumulated", kGradTypes)
                   .Output("num_accumulated", "int32")
                   .SetShapeFn(ScalarShape));
PF_REGISTER_OP(SharedOp("AccumulatorNumDropped", kGradTypes)
                   .Output("num_dropped", "int64")
                   .SetShapeFn(ScalarShape));
PF_REGISTER_KERNEL(KernelDef("AccumulatorApplyGradient", kDeviceCpu), AccumulatorApplyGradientOp);
PF_REGISTER_KERNEL(KernelDef("AccumulatorTakeGradient", kDeviceCpu), AccumulatorTakeGradientOp);
PF_REGISTER_KERNEL(KernelDef("AccumulatorSetGlobalStep", kDeviceCpu), AccumulatorSetGlobalStepOp);
PF_REGISTER_KERNEL(KernelDef("AccumulatorNumAccumulated", kDeviceCpu),
                   CountOp<Accumulator, int32_t, &Accumulator::num_accumulated>);
PF_REGISTER_KERNEL(KernelDef("AccumulatorNumDropped", kDeviceCpu),
                   CountOp<Accumulator, int64_t, &Accumulator::num_dropped>);

}  // namespace

namespace ops {

namespace {
NodeBuilder Shared(const Scope& s, const std::string& op, const SharedResource& r) {
  return NodeBuilder(s, op)
      .Attr("shared_name", r.shared_name)
      .Attr("dtype", r.dtype)
      .Attr("shape", r.shape);
}
}  // namespace

Operation QueueEnqueueMany(const Scope& s, const SharedResource& queue, Output values) {
  return Shared(s, "QueueEnqueueMany", queue).Input(values).Finalize();
}
Output QueueDequeue(const Scope& s, const SharedResource& queue) {
  return Shared(s, "QueueDequeue", queue).Finalize();
}
Output QueueSize(const Scope& s, const SharedResource& queue) {
  return Shared(s, "QueueSize", queue).Finalize();
}
Operation AccumulatorApplyGradient(const Scope& s, const SharedResource& acc, Output local_step,
                                   Output gradient) {
  return Shared(s, "AccumulatorApplyGradient", acc).Input(local_step).Input(gradient).Finalize();
}
Output AccumulatorTakeGradient(const Scope& s, const SharedResource& acc, Output num_required) {
  return Shared(s, "AccumulatorTakeGradient", acc).Input(num_required).Finalize();
}
Operation AccumulatorSetGlobalStep(const Scope& s, const SharedResource& acc,
                                   Output new_global_step) {
  return Shared(s, "AccumulatorSetGlobalStep", acc).Input(new_global_step).Finalize();
}
Output AccumulatorNumAccumulated(const Scope& s, const SharedResource& acc) {
  return Shared(s, "AccumulatorNumAccumulated", acc).Finalize();
}
Output AccumulatorNumDropped(const Scope& s, const SharedResource& acc) {
  return Shared(s, "AccumulatorNumDropped", acc).Finalize();
}

}  // namespace ops
}  // namespace pf
