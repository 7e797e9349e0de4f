// What the CPU and GPU aggregation kernels share: tower weights (each tower counts in proportion
// to its examples) and the CollectiveAllReduce kernel's meeting, checks and weight shares.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/core/tensor.h"
#include "placeflow/devices/device.h"
#include "placeflow/graph/collectives.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/ops/op_util.h"

namespace pf {

// w_i / sum(w); an error naming the weights when they are negative or sum to zero.
inline StatusOr<std::vector<double>> Normalise(const std::vector<double>& w) {
  double total = 0;
  for (double v : w) {
    if (!(v >= 0)) return errors::InvalidArgument("Weights must be non-negative, got ", v);
    total += v;
  }
  if (total <= 0) return errors::InvalidArgument("Weights sum to ", total, ": nothing to average");
  std::vector<double> scale;
  for (double v : w) scale.push_back(v / total);
  return scale;
}

// The float weight in `t` (host memory), or -1 when it is not a single value.
inline double WeightOf(const Tensor& t) {
  return t.num_elements() == 1 ? static_cast<double>(t.data<float>()[0]) : -1;
}

// WeightedMean's inputs (N values, then N weights): checks that the values share a shape and
// returns each value's share of the weights.
inline StatusOr<std::vector<double>> WeightedMeanShares(OpKernelContext* ctx) {
  const int n = ctx->num_inputs() / 2;
  std::vector<double> w;
  for (int i = 0; i < n; ++i) {
    if (ctx->input(i).shape() != ctx->input(0).shape()) {
      return errors::InvalidArgument("WeightedMean: value ", i, " has shape ",
                                     ctx->input(i).shape().ToString(), " but value 0 has shape ",
                                     ctx->input(0).shape().ToString());
    }
    w.push_back(WeightOf(ctx->input(n + i)));
  }
  return Normalise(w);
}

// CollectiveAllReduce: the participants (one node per device, sharing group_key) meet in the
// step's CollectiveTable; the last to arrive checks them (same number of tensors, same shapes)
// and calls Reduce with each rank's weight share. Executors of the others continue on the pool.
class AllReduceKernel : public OpKernel {
 public:
  explicit AllReduceKernel(const Node& n)
      : OpKernel(n),
        key_(n.attr<std::string>("group_key")),
        size_(static_cast<int>(n.attr<int64_t>("group_size"))),
        rank_(static_cast<int>(n.attr<int64_t>("rank"))),
        group_devices_(n.attr<std::vector<std::string>>("group_devices")) {}
  bool IsAsync() const override { return true; }
  bool IsExpensive() const override { return false; }
  Status Compute(OpKernelContext*) override {
    return errors::Internal("CollectiveAllReduce is asynchronous");
  }
  void ComputeAsync(OpKernelContext* ctx, std::function<void(Status)> done) override {
    if (ctx->collectives() == nullptr) {
      return done(errors::Internal("CollectiveAllReduce outside a step"));
    }
    if (!group_devices_.empty()) return ComputeAcrossTasks(ctx, std::move(done));
    ThreadPool* pool = IntraOpPool(ctx);
    auto finish = [pool, done = std::move(done)](Status s) {
      pool->Schedule([done, s] { done(s); });
    };
    ctx->collectives()->Join(key_, size_, {rank_, ctx, std::move(finish)},
                             [this](auto& all) { return CheckAndReduce(all); });
  }

 protected:
  // `all` in rank order, checked; scale[i] is rank i's share of the weights.
  virtual Status Reduce(std::vector<CollectiveTable::Participant>& all,
                        const std::vector<double>& scale) const = 0;
  // The participants span tasks of a cluster (the master set group_devices: every rank's
  // device): they meet through the step's rendezvous instead of the in-process table.
  virtual void ComputeAcrossTasks(OpKernelContext* ctx, std::function<void(Status)> done) {
    done(errors::Unimplemented("CollectiveAllReduce '", key_, "' across tasks on ",
                               ctx->device()->name(),
                               ": only CPU participants can all-reduce across tasks so far"));
  }
  const std::string& key() const { return key_; }
  int rank() const { return rank_; }
  const std::vector<std::string>& group_devices() const { return group_devices_; }

 private:
  Status CheckAndReduce(std::vector<CollectiveTable::Participant>& all) const {
    OpKernelContext* first = all[0].ctx;
    const int n = first->num_outputs();
    std::vector<double> w;
    for (auto& p : all) {
      if (p.ctx->num_outputs() != n) {
        return errors::InvalidArgument("CollectiveAllReduce '", key_, "': participants reduce ", n,
                                       " and ", p.ctx->num_outputs(), " tensors");
      }
      for (int k = 0; k < n; ++k) {
        if (p.ctx->input(k).shape() != first->input(k).shape()) {
          return errors::InvalidArgument("CollectiveAllReduce '", key_, "': tensor ", k,
                                         " has shape ", first->input(k).shape().ToString(),
                                         " on rank 0 and ", p.ctx->input(k).shape().ToString(),
                                         " on rank ", p.rank);
        }
      }
      w.push_back(WeightOf(p.ctx->input(n)));
    }
    PF_ASSIGN_OR_RETURN(std::vector<double> scale, Normalise(w));
    return Reduce(all, scale);
  }

  std::string key_;
  int size_, rank_;
  std::vector<std::string> group_devices_;
};

}  // namespace pf
