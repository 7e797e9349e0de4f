// BatchNormMovingStatsCheck: the inference path of layers::BatchNormalization reads its moving
// statistics through this op, which passes them on unchanged and warns once per layer (per
// process) when they are still where their initialisers left them, within kBarelyMoved in every
// channel: moving_mean all 0 and moving_variance all 1. Inference then normalises with
// statistics that do not describe the data (docs/api.md, "The momentum trap").
//
// Why this check: it reads the C values of the two statistics (no pass over the activations),
// so it costs nothing next to the layer. A channel's moving statistic moves by (1 - momentum)
// times its gap to the batch statistic per update: at Keras's 0.99 the first update moves a
// channel whose batch variance is 1.1 by 1e-3. Every channel still within 1e-3 of the
// initial values means no update ran (the train op does not run the "update_ops") or only the
// first few did, which is the trap; real feature maps never have every channel's mean and
// variance within 1e-3 of 0 and 1, so trained statistics do not trigger it.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <string>

#include "placeflow/core/device_name.h"
#include "placeflow/core/logging.h"
#include "placeflow/devices/device.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/graph/scope.h"
#include "placeflow/train/layers.h"

namespace pf {
namespace {

constexpr float kBarelyMoved = 1e-3f;

// Layers warned about (once each, per process).
std::mutex& WarnedMutex() {
  static std::mutex mu;
  return mu;
}
std::set<std::string>& Warned() {
  static std::set<std::string> warned;
  return warned;
}

bool Unmoved(const Tensor& mean, const Tensor& variance) {
  const float* m = mean.data<float>();
  const float* v = variance.data<float>();
  for (int64_t i = 0; i < mean.num_elements(); ++i) {
    if (!(std::fabs(m[i]) <= kBarelyMoved)) return false;
  }
  for (int64_t i = 0; i < variance.num_elements(); ++i) {
    if (!(std::fabs(v[i] - 1.f) <= kBarelyMoved)) return false;
  }
  return true;
}

class BatchNormMovingStatsCheckOp : public OpKernel {
 public:
  explicit BatchNormMovingStatsCheckOp(const Node& n)
      : OpKernel(n), layer_(n.attr<std::string>("layer")), momentum_(n.attr<float>("momentum")) {}

  Status Compute(OpKernelContext* ctx) override {
    const Tensor& mean = ctx->input(0);
    const Tensor& variance = ctx->input(1);
    if (!warned_ && Unmoved(mean, variance)) {
      warned_ = true;
      std::lock_guard<std::mutex> lock(WarnedMutex());
      if (Warned().insert(layer_).second) {
        PF_LOG_WARN(
            "BatchNormalization '{}': inference (training=false) normalises with moving "
            "statistics still at their initial values (every channel's moving_mean within {} of 0 "
            "and moving_variance within {} of 1). The moving averages move by {} of the gap per "
            "training step (momentum {}): run the graph's \"update_ops\" with the train op, train "
            "longer, or build the layer with a smaller momentum (0.9) for short runs",
            layer_, kBarelyMoved, kBarelyMoved, 1.f - momentum_, momentum_);
      }
    }
    PF_RETURN_IF_ERROR(ctx->ForwardInput(0, 0));
    return ctx->ForwardInput(1, 1);
  }

 private:
  std::string layer_;
  float momentum_;
  bool warned_ = false;  // this kernel's (a cheap skip; the set decides)
};

PF_REGISTER_OP(OpDef("BatchNormMovingStatsCheck")
                   .SetStateful()  // it has an effect (the warning): never merged or folded
                   .SetForwardsInput()
                   .Input("mean", "float")
                   .Input("variance", "float")
                   .Output("mean_out", "float")
                   .Output("variance_out", "float")
                   .RequiredAttr("layer")
                   .Attr("momentum", 0.99f)
                   // It passes its inputs on: so do their gradients.
                   .SetGradient([](const Scope&, const Node&, const std::vector<Output>& g,
                                   std::vector<Output>* dx) {
                     *dx = {g[0], g[1]};
                     return Status::OK();
                   })
                   .SetShapeFn([](ShapeContext& c) {
                     c.set_output(0, c.input(0));
                     c.set_output(1, c.input(1));
                     return Status::OK();
                   }));
// CPU only: the layer puts it on its task's CPU (the statistics are C floats each).
PF_REGISTER_KERNEL(KernelDef("BatchNormMovingStatsCheck", kDeviceCpu), BatchNormMovingStatsCheckOp);

}  // namespace

namespace layers {

void CheckedMovingStatistics(const Scope& s, const std::string& layer, float momentum, Output* mean,
                             Output* variance) {
  // The scope's task, on its CPU: the check has no GPU kernel.
  DeviceName where;
  DeviceName::Parse(s.device_string(), &where);
  if (where.has_type && where.type != kDeviceCpu) {
    where.type = kDeviceCpu;
    where.has_id = false;
  }
  Node* n = NodeBuilder(s.WithOpName("moving_stats_check").WithDevice(where.ToString()),
                        "BatchNormMovingStatsCheck")
                .Input(*mean)
                .Input(*variance)
                .Attr("layer", layer)
                .Attr("momentum", momentum)
                .Finalize();
  *mean = Output(n, 0);
  *variance = Output(n, 1);
}

}  // namespace layers
}  // namespace pf
