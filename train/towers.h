// In-graph data parallelism (seed articles 000, 002, 004): write the model once, replicate it
// as towers over devices, split each batch across them, combine the gradients, apply one
// synchronous update.
//
//   pf::train::TowerOptions o;
//   o.devices = {"/cpu:0", "/cpu:1"};   // or {"all_gpus"}; {"all_cpus"} with ForSession below
//   o.aggregation = pf::train::Aggregation::kParameterDevice;   // variables on o.variable_device
//   pf::train::Towers t = pf::train::ReplicateTowers(root, o, {x, target},
//       [](const pf::Scope& s, const std::vector<pf::Output>& in) {
//         pf::Variable w = pf::GetVariable(s.WithVariableScope("affine0"), "w", {600, 1});
//         pf::Output y = pf::ops::MatMul(s, in[0], w.value());
//         return pf::train::TowerOutputs{pf::ops::MeanSquaredError(s, y, in[1]), {y}};
//       });
//   pf::train::GradientDescent opt(0.01);
//   pf::Operation step = opt.ApplyGradients(root, t.grads_and_vars, &global_step);
//   // t.loss: the whole batch's loss; t.extra[0]: y for the whole batch, in batch order
//
// Tower i is built under name scope "tower_i" on devices[i] and gets rows of each input's
// dimension 0 (BatchSplit: as even as possible, at least one row each). Tower results are
// combined weighted by their number of examples, so N towers over a batch compute what one
// tower over the whole batch computes (up to float rounding), even for uneven splits.
//
// kParameterDevice: one set of variables on variable_device (tower 0 creates them, the others
//   reuse them); the gradients are averaged there (WeightedMean) and applied once. By default
//   that is the first GPU when all towers are on GPUs, else /cpu:0 (ResolveVariableDevice).
// kAllReduce (mirrored): tower 0 creates "<name>" on devices[0], tower i a replica
//   "<name>/replica_i" on devices[i] initialised from it; the gradients of each tower are
//   all-reduced (CollectiveAllReduce, one per device and dtype) and every replica applies the
//   same update, so replicas stay bit-identical. Non-trainable variables are not replicated.
// With one device nothing is split or combined: the tower's gradients pass through.
//
// Errors (pf::Error): an unknown device shortcut, no GPUs for "all_gpus", "all_cpus" without
// num_cpus (TowerOptions::ForSession(session_options) sets it), a static batch smaller
// than the number of towers (at run time when the batch is only known then), a tower that
// uses other variables than tower 0, and a loss that depends on a trainable variable created
// outside ReplicateTowers (it could be neither replicated nor averaged).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "placeflow/executor/session.h"
#include "placeflow/train/optimizers.h"

namespace pf::train {

enum class Aggregation { kParameterDevice, kAllReduce };

inline constexpr char kAutoVariableDevice[] = "auto";

struct TowerOptions {
  // Device specifications, or "all_gpus" (/gpu:0.. for every visible GPU) and "all_cpus".
  std::vector<std::string> devices = {"/cpu:0"};
  Aggregation aggregation = Aggregation::kParameterDevice;
  // kParameterDevice: where the variables live. kAutoVariableDevice (the default): on the first
  // tower's device when every tower is on an accelerator (one GPU, or towers on GPUs only: the
  // variables never cross to the host), else /cpu:0 (the multi-GPU articles' layout, and CPU
  // towers). "" leaves the variables to the placer.
  std::string variable_device = kAutoVariableDevice;
  // What "all_cpus" expands to: the session's device_count["CPU"]. 0 (unset) makes "all_cpus"
  // an error rather than a guess that could disagree with the session; ForSession sets it.
  int num_cpus = 0;
  int num_gpus = -1;  // what "all_gpus" expands to; -1: the GPUs this process can see

  // Options whose CPU count comes from the session's options, so the two cannot disagree:
  // num_cpus = device_count["CPU"] (1 when absent, as the session creates).
  static TowerOptions ForSession(const SessionOptions& session);
};

struct TowerOutputs {
  Output loss;                // a float scalar: this tower's loss (a mean over its examples)
  std::vector<Output> extra;  // optional outputs with the batch on dimension 0 (predictions)
};
using TowerFn = std::function<TowerOutputs(const Scope& tower, const std::vector<Output>& inputs)>;

struct Towers {
  std::vector<std::string> devices;  // one per tower, shortcuts expanded
  std::string variable_device;  // where the variables went (kAllReduce: the primaries, devices[0])
  std::vector<TowerOutputs> towers;        // what model_fn returned for each tower
  Output loss;                             // the example-weighted mean of the tower losses
  std::vector<Output> extra;               // each extra output concatenated in batch order
  std::vector<GradAndVar> grads_and_vars;  // combined gradients, ready for ApplyGradients
  std::vector<Variable> variables;         // the model's trainable variables (tower 0's)
  std::vector<std::vector<Variable>>
      replicas;  // kAllReduce: replicas[i][k] mirrors variables[k] (i = 0: itself)
  std::vector<Operation> update_ops;  // tower 0's additions to the "update_ops" collection
};

// Expands the shortcuts of options.devices; throws pf::Error for a malformed device.
std::vector<std::string> ResolveTowerDevices(const TowerOptions& options);
// options.variable_device with kAutoVariableDevice decided for these (resolved) tower devices.
std::string ResolveVariableDevice(const TowerOptions& options,
                                  const std::vector<std::string>& devices);

Towers ReplicateTowers(const Scope& scope, const TowerOptions& options,
                       const std::vector<Output>& inputs, const TowerFn& model_fn);

}  // namespace pf::train
