// Combining tower results. Both ops compute the weighted mean sum_i w_i * x_i / sum_i w_i
// elementwise, summing in index order so every caller gets the same bits; tower replication
// weighs each tower by its number of examples, which makes N towers equal one tower over the
// whole batch even when the batch does not split evenly.
//
// WeightedMean: all values in one node (parameter-device aggregation, the seeds' average of the
//   tower gradients).
// CollectiveAllReduce: one node per device, each with its own list of values and its weight;
//   the nodes sharing a group_key meet in the step's CollectiveTable, the last to arrive
//   reduces, and every participant gets the same result on its own device (all-reduce
//   aggregation on CPU devices: reduce to one device and share back).
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/device_set.h"
#include "placeflow/graph/collectives.h"
#include "placeflow/graph/rendezvous.h"
#include "placeflow/ops/comm/aggregate.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

// out = sum_i scale[i] * values[i] over the elements.
template <typename T>
void WeightedSum(OpKernelContext* ctx, const std::vector<const Tensor*>& values,
                 const std::vector<double>& scale, Tensor* out) {
  T* y = out->data<T>();
  const int64_t n = out->num_elements();
  const int64_t k = static_cast<int64_t>(values.size());
  ParallelFor(ctx, n, k, [&](int64_t b, int64_t e) {
    const T s0 = static_cast<T>(scale[0]);
    const T* x0 = values[0]->data<T>();
    for (int64_t j = b; j < e; ++j) y[j] = s0 * x0[j];
    for (int64_t i = 1; i < k; ++i) {
      const T si = static_cast<T>(scale[i]);
      const T* xi = values[i]->data<T>();
      for (int64_t j = b; j < e; ++j) y[j] += si * xi[j];
    }
  });
}

Status SameShapes(ShapeContext& c, int first, int count, const char* op) {
  Shape merged = c.input(first);
  for (int i = first + 1; i < first + count; ++i) {
    const Shape& s = c.input(i);
    if (!s.IsCompatibleWith(merged)) {
      return errors::InvalidArgument(op, ": value ", i - first, " has shape ", s.ToString(),
                                     " but value 0 has shape ", c.input(first).ToString());
    }
    if (merged.unknown_rank())
      merged = s;
    else if (!s.unknown_rank()) {
      for (int d = 0; d < s.rank(); ++d)
        if (merged.dim(d) < 0) merged.set_dim(d, s.dim(d));
    }
  }
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, merged);
  return Status::OK();
}

// ---- WeightedMean ----
Status WeightedMeanShape(ShapeContext& c) {
  const int64_t n = c.attr<int64_t>("N");
  if (c.attr<int64_t>("M") != n) {
    return errors::InvalidArgument("WeightedMean needs one weight per value: ", n, " values, ",
                                   c.attr<int64_t>("M"), " weights");
  }
  for (int i = 0; i < n; ++i) {
    const Shape& w = c.input(static_cast<int>(n) + i);
    if (w.IsFullyDefined() && w.num_elements() != 1) {
      return errors::InvalidArgument("WeightedMean: weight ", i,
                                     " must have one element, got shape ", w.ToString());
    }
  }
  return SameShapes(c, 0, static_cast<int>(n), "WeightedMean");
}

template <typename T>
class WeightedMeanOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(std::vector<double> scale, WeightedMeanShares(ctx));
    std::vector<const Tensor*> values;
    for (size_t i = 0; i < scale.size(); ++i) values.push_back(&ctx->input(static_cast<int>(i)));
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    WeightedSum<T>(ctx, values, scale, out);
    return Status::OK();
  }
};

PF_REGISTER_OP(OpDef("WeightedMean")
                   .InputList("values", "T", "N")
                   .InputList("weights", "float", "M")
                   .Output("mean", "T")
                   .RequiredAttr("N")
                   .RequiredAttr("M")
                   .TypeAttr("T", kRealTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn(WeightedMeanShape));
PF_REGISTER_KERNEL(KernelDef("WeightedMean", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   WeightedMeanOp<float>);
PF_REGISTER_KERNEL(KernelDef("WeightedMean", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   WeightedMeanOp<double>);

// ---- CollectiveAllReduce ----
Status AllReduceShape(ShapeContext& c) {
  const int64_t n = c.attr<int64_t>("N");
  const Shape& w = c.input(static_cast<int>(n));
  if (w.IsFullyDefined() && w.num_elements() != 1) {
    return errors::InvalidArgument(
        "CollectiveAllReduce: the weight must have one element, got shape ", w.ToString());
  }
  if (c.attr<int64_t>("group_size") < 1)
    return errors::InvalidArgument("CollectiveAllReduce: group_size must be positive");
  for (int i = 0; i < n; ++i) c.set_output(i, c.input(i));
  return Status::OK();
}

template <typename T>
class AllReduceOp : public AllReduceKernel {
 public:
  using AllReduceKernel::AllReduceKernel;

 private:
  Status Reduce(std::vector<CollectiveTable::Participant>& all,
                const std::vector<double>& scale) const override {
    LogOnce(all);
    OpKernelContext* first = all[0].ctx;
    for (int k = 0; k < first->num_outputs(); ++k) {
      std::vector<const Tensor*> values;
      for (auto& p : all) values.push_back(&p.ctx->input(k));
      PF_ASSIGN_OR_RETURN(Tensor * out, first->AllocateOutput(k));
      WeightedSum<T>(first, values, scale, out);
      // Every other participant gets the same bits on its device.
      for (size_t i = 1; i < all.size(); ++i) {
        PF_ASSIGN_OR_RETURN(
            Tensor copy, CopyRegistry::Global()->Copy(*out, first->device(), all[i].ctx->device()));
        PF_RETURN_IF_ERROR(all[i].ctx->SetOutput(k, std::move(copy)));
      }
    }
    return Status::OK();
  }

  // Across tasks: the participants meet through the step's rendezvous, which reaches the other
  // tasks, in a reduce-scatter then an all-gather: rank c reduces slice c of every tensor (its
  // elements [c*E/n, (c+1)*E/n)) from every rank's slice, in rank order with the in-process
  // arithmetic (so the results are bit-identical with one process's towers), and sends the
  // reduced slice to every other rank. Each rank sends and receives (n-1)/n of its tensors in
  // each phase, as in a ring, but over direct connections.
  void ComputeAcrossTasks(OpKernelContext* ctx, std::function<void(Status)> done) override {
    const int n = ctx->num_outputs();
    const int size = static_cast<int>(group_devices().size());
    const int me = rank();
    ThreadPool* pool = IntraOpPool(ctx);
    auto finish = [pool, done = std::move(done)](Status s) {
      pool->Schedule([done, s] { done(s); });
    };
    Rendezvous* rv = ctx->rendezvous();
    // Phase 1: my weight to everyone, slice c of each tensor to rank c.
    for (int c = 0; c < size; ++c) {
      if (c == me) continue;
      Status s = rv->Send(Key(me, c, "weight", 0), ctx->input(n));
      for (int k = 0; s.ok() && k < n; ++k) {
        StatusOr<Tensor> slice = Slice(ctx->input(k), c, size);
        s = slice.ok() ? rv->Send(Key(me, c, "in", k), *slice) : slice.status();
      }
      if (!s.ok()) return finish(s);
    }
    // Every rank's weight and slice `me` of its tensors ([rank][k], then the weight at [rank][n]).
    auto gathered = std::make_shared<Countdown>();
    gathered->values.assign(size, std::vector<Tensor>(n + 1));
    gathered->values[me][n] = ctx->input(n);
    for (int k = 0; k < n; ++k) {
      StatusOr<Tensor> own = Slice(ctx->input(k), me, size);
      if (!own.ok()) return finish(own.status());
      gathered->values[me][k] = *own;
    }
    gathered->remaining = (size - 1) * (n + 1);
    gathered->done = [this, ctx, pool, gathered_raw = gathered.get(), finish](Status s) {
      if (!s.ok()) return finish(s);
      // Phase 2 on the pool: reduce my slice, send it to everyone, gather theirs.
      pool->Schedule([this, ctx, values = std::move(gathered_raw->values), finish]() mutable {
        Status reduced = ReduceMySlice(ctx, values, finish);
        if (!reduced.ok()) finish(reduced);
      });
    };
    for (int q = 0; q < size; ++q) {
      if (q == me) continue;
      for (int k = 0; k <= n; ++k) {
        rv->RecvAsync(Key(q, me, k == n ? "weight" : "in", k == n ? 0 : k),
                      [q, k, gathered](const Status& s, const Tensor& t) {
                        if (s.ok()) gathered->values[q][k] = t;
                        gathered->Arrive(s);
                      });
      }
    }
    // A group of one: nothing to receive (decided from the count, never from `remaining`, which
    // the receive callbacks may already have brought to zero).
    if (size == 1) {
      gathered->remaining = 1;
      gathered->Arrive(Status::OK());
    }
  }

  // Counts the values still to arrive; the first error wins; `done` runs once.
  struct Countdown {
    std::mutex mu;
    int remaining = 0;
    Status status;
    std::vector<std::vector<Tensor>> values;
    std::function<void(Status)> done;
    void Arrive(const Status& s) {
      bool finished;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!s.ok() && status.ok()) status = s;
        finished = --remaining == 0;
      }
      if (!finished) return;
      std::function<void(Status)> fn = std::move(done);  // it may hold this state: drop the cycle
      done = nullptr;
      fn(status);
    }
  };

  // Rank `c`'s share of `t`'s elements, as a 1-D view of its buffer.
  static StatusOr<Tensor> Slice(const Tensor& t, int c, int size) {
    const int64_t e = t.num_elements();
    PF_ASSIGN_OR_RETURN(Tensor flat, t.Reshaped(Shape{e}));
    return flat.SliceRows(e * c / size, e * (c + 1) / size);
  }

  std::string Key(int from, int to, const char* what, int k) const {
    return Rendezvous::Key(group_devices()[from], group_devices()[to],
                           "allreduce:" + key() + ":" + what + ":" + std::to_string(k));
  }

  // Reduces slice `me` of every tensor into the outputs, sends it to the other ranks, and
  // gathers their slices into the outputs; `finish` runs when all of them are in.
  Status ReduceMySlice(OpKernelContext* ctx, const std::vector<std::vector<Tensor>>& values,
                       const std::function<void(Status)>& finish) {
    const int n = ctx->num_outputs();
    const int size = static_cast<int>(values.size());
    const int me = rank();
    std::vector<double> w;
    for (const auto& rank_values : values) w.push_back(WeightOf(rank_values[n]));
    PF_ASSIGN_OR_RETURN(std::vector<double> scale, Normalise(w));
    if (!logged_.exchange(true)) {
      PF_LOG_INFO("All-reduce '{}' across tasks over {} device(s): reduce-scatter, all-gather",
                  key(), size);
    }
    std::vector<Tensor*> outs;
    for (int k = 0; k < n; ++k) {
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(k));
      outs.push_back(out);
      PF_ASSIGN_OR_RETURN(Tensor mine, Slice(*out, me, size));
      std::vector<const Tensor*> slices;
      for (int q = 0; q < size; ++q) {
        if (values[q][k].num_elements() != mine.num_elements()) {
          return errors::InvalidArgument("CollectiveAllReduce '", key(), "': tensor ", k,
                                         " of rank ", q,
                                         " has another number of elements than rank ", me, "'s (",
                                         ctx->input(k).shape().ToString(), ")");
        }
        slices.push_back(&values[q][k]);
      }
      WeightedSum<T>(ctx, slices, scale, &mine);
      for (int c = 0; c < size; ++c) {
        if (c != me) PF_RETURN_IF_ERROR(ctx->rendezvous()->Send(Key(me, c, "out", k), mine));
      }
    }
    auto gathered = std::make_shared<Countdown>();
    gathered->remaining = (size - 1) * n;
    gathered->done = finish;
    if (gathered->remaining == 0) {  // nothing to receive (no receive is registered yet)
      gathered->remaining = 1;
      gathered->Arrive(Status::OK());
      return Status::OK();
    }
    for (int c = 0; c < size; ++c) {
      if (c == me) continue;
      for (int k = 0; k < n; ++k) {
        ctx->rendezvous()->RecvAsync(Key(c, me, "out", k), [out = outs[k], c, size, gathered](
                                                               const Status& s, const Tensor& t) {
          Status st = s;
          if (st.ok()) {
            StatusOr<Tensor> place = Slice(*out, c, size);
            if (place.ok() && place->TotalBytes() == t.TotalBytes()) {
              std::memcpy(place->raw_data(), t.raw_data(), t.TotalBytes());
            } else {
              st = place.ok() ? errors::Internal("all-reduce slice of the wrong size")
                              : place.status();
            }
          }
          gathered->Arrive(st);
        });
      }
    }
    return Status::OK();
  }

  void LogOnce(const std::vector<CollectiveTable::Participant>& all) const {
    if (logged_.exchange(true)) return;
    std::string devices;
    for (const auto& p : all) devices += (devices.empty() ? "" : ", ") + p.ctx->device()->name();
    PF_LOG_INFO(
        "All-reduce '{}' over {} device(s) [{}]: reduced on {} and shared back (NCCL is used "
        "only between distinct physical GPUs)",
        key(), all.size(), devices, all[0].ctx->device()->name());
  }

  mutable std::atomic<bool> logged_{false};
};

PF_REGISTER_OP(OpDef("CollectiveAllReduce")
                   .InputList("input", "T", "N")
                   .Input("weight", "float")
                   .OutputList("output", "T", "N")
                   .RequiredAttr("N")
                   .TypeAttr("T", kRealTypes)
                   .RequiredAttr("group_key")
                   .RequiredAttr("group_size")
                   .RequiredAttr("rank")
                   // Set by a cluster's master when the participants span tasks: every rank's
                   // device, in rank order (ops/comm/aggregate.h).
                   .Attr("group_devices", std::vector<std::string>{})
                   .SetStateful()
                   .SetNotDifferentiable()
                   .SetShapeFn(AllReduceShape));
PF_REGISTER_KERNEL(KernelDef("CollectiveAllReduce", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   AllReduceOp<float>);
PF_REGISTER_KERNEL(KernelDef("CollectiveAllReduce", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   AllReduceOp<double>);

}  // namespace

namespace ops {
Output WeightedMean(const Scope& s, const std::vector<Output>& values,
                    const std::vector<Output>& weights) {
  return NodeBuilder(s, "WeightedMean").InputList(values).InputList(weights).Finalize();
}
std::vector<Output> CollectiveAllReduce(const Scope& s, const std::vector<Output>& inputs,
                                        Output weight, const std::string& group_key, int group_size,
                                        int rank) {
  Node* n = NodeBuilder(s, "CollectiveAllReduce")
                .InputList(inputs)
                .Input(weight)
                .Attr("group_key", group_key)
                .Attr("group_size", int64_t{group_size})
                .Attr("rank", int64_t{rank})
                .Finalize();
  std::vector<Output> outs;
  for (int i = 0; i < n->num_outputs(); ++i) outs.emplace_back(n, i);
  return outs;
}
}  // namespace ops
}  // namespace pf
