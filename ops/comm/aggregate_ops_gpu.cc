// Tower aggregation on GPUs. WeightedMean: one weighted-sum kernel (weights read in host
// memory). CollectiveAllReduce: the participants meet in the step's CollectiveTable as on the
// CPU; the last to arrive scales each participant's tensors into one packed buffer on its GPU
// and all-reduces the packed buffers with one grouped NCCL call (one rank per physical GPU),
// or, when logical devices share a GPU, reduces on the first device and copies back.
#include <atomic>
#include <latch>
#include <memory>
#include <mutex>

#include "placeflow/core/logging.h"
#include "placeflow/devices/copy_registry.h"
#include "placeflow/devices/cuda/gpu_nccl.h"
#include "placeflow/graph/collectives.h"
#include "placeflow/ops/comm/aggregate.h"
#include "placeflow/ops/gpu/gpu_kernel.h"
#include "placeflow/ops/math/cwise_launch.h"
#include "placeflow/ops/math/reduction_launch.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

struct CopyJob {
  Tensor tensor;
  Device* src;
  Device* dst;
};

// Starts every copy, then waits for all of them (they overlap); the first error wins. The
// state is shared with the callbacks, so it outlives the last one even after the wait returns.
StatusOr<std::vector<Tensor>> CopyAll(const std::vector<CopyJob>& jobs) {
  struct State {
    explicit State(size_t n) : out(n), pending(static_cast<std::ptrdiff_t>(n)) {}
    std::vector<Tensor> out;
    std::latch pending;
    std::mutex mu;
    Status first_error;
  };
  auto st = std::make_shared<State>(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    CopyRegistry::Global()->CopyAsync(jobs[j].tensor, jobs[j].src, jobs[j].dst,
                                      [st, j](StatusOr<Tensor> copy) {
                                        {
                                          std::lock_guard<std::mutex> lock(st->mu);
                                          if (copy.ok()) {
                                            st->out[j] = std::move(copy).value();
                                          } else if (st->first_error.ok()) {
                                            st->first_error = copy.status();
                                          }
                                        }
                                        st->pending.count_down();
                                      });
  }
  st->pending.wait();
  std::lock_guard<std::mutex> lock(st->mu);
  if (!st->first_error.ok()) return st->first_error;
  return std::move(st->out);
}

template <typename T>
class WeightedMeanGpuOp : public GpuOpKernel {
 public:
  using GpuOpKernel::GpuOpKernel;
  Status ComputeOnGpu(OpKernelContext* ctx, GpuDevice* gpu) override {
    PF_ASSIGN_OR_RETURN(std::vector<double> scale, WeightedMeanShares(ctx));
    const int n = static_cast<int>(scale.size());
    std::vector<const T*> values;
    for (int i = 0; i < n; ++i) values.push_back(ctx->input(i).data<T>());
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    gpu::WeightedSum<T>(values.data(), scale.data(), n, out->data<T>(), out->num_elements(),
                        gpu->compute_stream());
    return Status::OK();
  }
};

template <typename T>
class AllReduceGpuOp : public AllReduceKernel {
 public:
  using AllReduceKernel::AllReduceKernel;

 private:
  Status Reduce(std::vector<CollectiveTable::Participant>& all,
                const std::vector<double>& scale) const override {
    std::vector<GpuDevice*> gpus;
    for (auto& p : all) {
      if (p.ctx->device()->device_type() != kDeviceGpu) {
        return errors::InvalidArgument("CollectiveAllReduce '", key(), "': rank ", p.rank,
                                       " is on ", p.ctx->device()->name(),
                                       "; GPU participants need GPU peers");
      }
      gpus.push_back(static_cast<GpuDevice*>(p.ctx->device()));
    }
    int64_t total = 0;
    for (int k = 0; k < all[0].ctx->num_outputs(); ++k)
      total += all[0].ctx->input(k).num_elements();
    LogOnce(gpus);
    if (NcclUsable(gpus)) return ReduceWithNccl(all, gpus, scale, total);
    return ReduceOnFirst(all, gpus, scale);
  }

  // Each rank packs scale_i * its tensors into one buffer; NCCL sums the buffers in place; the
  // outputs are views into the packed result.
  Status ReduceWithNccl(std::vector<CollectiveTable::Participant>& all,
                        const std::vector<GpuDevice*>& gpus, const std::vector<double>& scale,
                        int64_t total) const {
    const int n = all[0].ctx->num_outputs();
    std::vector<Tensor> packed(all.size());
    std::vector<void*> buffers;
    for (size_t i = 0; i < all.size(); ++i) {
      PF_RETURN_IF_ERROR(gpus[i]->Activate());
      PF_ASSIGN_OR_RETURN(packed[i], GpuTemp(all[i].ctx, DataTypeOf<T>(), Shape{total}));
      int64_t offset = 0;
      for (int k = 0; k < n; ++k) {
        const Tensor& in = all[i].ctx->input(k);
        gpu::Scale<T>(in.data<T>(), static_cast<T>(scale[i]), nullptr, packed[i].data<T>() + offset,
                      in.num_elements(), gpus[i]->compute_stream());
        offset += in.num_elements();
      }
      PF_RETURN_IF_ERROR(gpus[i]->CheckLaunch(name() + " (pack)"));
      buffers.push_back(packed[i].raw_data());
    }
    PF_RETURN_IF_ERROR(NcclAllReduceSum(gpus, buffers, total, DataTypeOf<T>()));
    for (size_t i = 0; i < all.size(); ++i) {
      int64_t offset = 0;
      for (int k = 0; k < n; ++k) {
        const Shape& shape = all[i].ctx->input(k).shape();
        PF_ASSIGN_OR_RETURN(Tensor piece,
                            packed[i].SliceRows(offset, offset + shape.num_elements()));
        PF_ASSIGN_OR_RETURN(Tensor out, piece.Reshaped(shape));
        PF_RETURN_IF_ERROR(all[i].ctx->SetOutput(k, std::move(out)));
        offset += shape.num_elements();
      }
    }
    return Status::OK();
  }

  // Logical devices of one GPU (NCCL needs distinct GPUs): gather to the first, sum, share back.
  // Runs on a pool thread (ComputeAsync below): it waits for copies, which a GPU callback
  // thread may have to finish.
  Status ReduceOnFirst(std::vector<CollectiveTable::Participant>& all,
                       const std::vector<GpuDevice*>& gpus,
                       const std::vector<double>& scale) const {
    if (GpuDevice::OnCallbackThread()) {
      return errors::Internal(name(), ": reduction on a GPU callback thread would deadlock");
    }
    OpKernelContext* first = all[0].ctx;
    const int n = first->num_outputs();
    std::vector<CopyJob> gather;
    for (int k = 0; k < n; ++k) {
      for (size_t i = 1; i < all.size(); ++i)
        gather.push_back({all[i].ctx->input(k), gpus[i], gpus[0]});
    }
    PF_ASSIGN_OR_RETURN(std::vector<Tensor> gathered, CopyAll(gather));
    std::vector<CopyJob> share;
    for (int k = 0; k < n; ++k) {
      std::vector<const T*> values = {first->input(k).data<T>()};
      for (size_t i = 1; i < all.size(); ++i)
        values.push_back(gathered[k * (all.size() - 1) + i - 1].data<T>());
      PF_ASSIGN_OR_RETURN(Tensor * out, first->AllocateOutput(k));
      PF_RETURN_IF_ERROR(gpus[0]->Activate());
      gpu::WeightedSum<T>(values.data(), scale.data(), static_cast<int>(values.size()),
                          out->data<T>(), out->num_elements(), gpus[0]->compute_stream());
      PF_RETURN_IF_ERROR(gpus[0]->CheckLaunch(name()));
      for (size_t i = 1; i < all.size(); ++i) share.push_back({*out, gpus[0], gpus[i]});
    }
    PF_ASSIGN_OR_RETURN(std::vector<Tensor> shared, CopyAll(share));
    for (int k = 0; k < n; ++k) {
      for (size_t i = 1; i < all.size(); ++i) {
        PF_RETURN_IF_ERROR(
            all[i].ctx->SetOutput(k, std::move(shared[k * (all.size() - 1) + i - 1])));
      }
    }
    return Status::OK();
  }

  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    if (!GpuDevice::OnCallbackThread()) return AllReduceKernel::ComputeAsync(ctx, std::move(done));
    IntraOpPool(ctx)->Schedule([this, ctx, done = std::move(done)]() mutable {
      AllReduceKernel::ComputeAsync(ctx, std::move(done));
    });
  }

  void LogOnce(const std::vector<GpuDevice*>& gpus) const {
    if (logged_.exchange(true)) return;
    std::string devices;
    for (const GpuDevice* g : gpus) devices += (devices.empty() ? "" : ", ") + g->name();
    PF_LOG_INFO("All-reduce '{}' over [{}]: {}", key(), devices,
                NcclUsable(gpus) ? "NCCL, one packed buffer per GPU"
                                 : "reduced on the first GPU and copied back");
  }

  mutable std::atomic<bool> logged_{false};
};

#define PF_GPU_AGGREGATE(T)                                                            \
  PF_REGISTER_KERNEL(Gpu("WeightedMean", DataTypeOf<T>()).HostMemory("weights"),       \
                     WeightedMeanGpuOp<T>);                                            \
  PF_REGISTER_KERNEL(Gpu("CollectiveAllReduce", DataTypeOf<T>()).HostMemory("weight"), \
                     AllReduceGpuOp<T>)
PF_GPU_AGGREGATE(float);
PF_GPU_AGGREGATE(double);

}  // namespace
}  // namespace pf

// Macros stay in this file (a unity build compiles it with others: design rule 19).
#undef PF_GPU_AGGREGATE
