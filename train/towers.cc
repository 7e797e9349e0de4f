#include "placeflow/train/towers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "placeflow/core/device_name.h"
#include "placeflow/core/logging.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/summary/summary.h"
#include "placeflow/train/gradients.h"

namespace pf::train {
namespace {

std::string FullName(const VariableRequest& r) {
  return r.scope.variable_scope().empty() ? r.name : r.scope.variable_scope() + "/" + r.name;
}

// The variables a tower's getter handed out, in first-use order.
struct Used {
  std::vector<Variable> vars;
  std::set<std::string> names;
  void Add(const Variable& v) {
    if (names.insert(v.name()).second) vars.push_back(v);
  }
};

// A scalar float holding the number of rows of `x` (the tower's weight).
Output BatchSize(const Scope& s, Output x) {
  return ops::Cast(s.WithOpName("batch_size"), ops::Slice(s, ops::Shape(s, x), {0}, {1}), DT_FLOAT);
}

}  // namespace

TowerOptions TowerOptions::ForSession(const SessionOptions& session) {
  TowerOptions o;
  auto cpus = session.device_count.find("CPU");
  o.num_cpus = cpus == session.device_count.end() ? 1 : std::max(1, cpus->second);
  return o;
}

std::vector<std::string> ResolveTowerDevices(const TowerOptions& o) {
  std::vector<std::string> out;
  for (const std::string& d : o.devices) {
    if (d == "all_gpus") {
      const int n = o.num_gpus >= 0 ? o.num_gpus : CudaDeviceCount();
      if (n <= 0)
        ThrowError(
            errors::InvalidArgument("Tower devices 'all_gpus': no GPU is visible to this process"));
      for (int i = 0; i < n; ++i) out.push_back("/gpu:" + std::to_string(i));
    } else if (d == "all_cpus") {
      if (o.num_cpus <= 0)
        ThrowError(errors::InvalidArgument(
            "Tower devices 'all_cpus': TowerOptions::num_cpus is not set; it must equal the "
            "session's device_count[\"CPU\"] (TowerOptions::ForSession(session_options) sets it)"));
      for (int i = 0; i < o.num_cpus; ++i) out.push_back("/cpu:" + std::to_string(i));
    } else {
      DeviceName::TryParse(d).ValueOrThrow();
      out.push_back(d);
    }
  }
  if (out.empty()) ThrowError(errors::InvalidArgument("ReplicateTowers needs at least one device"));
  return out;
}

std::string ResolveVariableDevice(const TowerOptions& o, const std::vector<std::string>& devices) {
  if (o.variable_device != kAutoVariableDevice) return o.variable_device;
  for (const std::string& d : devices) {
    const DeviceName name = DeviceName::TryParse(d).ValueOrThrow();
    // Any spelling of CPU ("/device:cpu:0" keeps its case).
    const bool cpu = name.has_type && name.type.size() == 3 &&
                     std::equal(name.type.begin(), name.type.end(), "CPU",
                                [](char a, char b) { return std::toupper(a) == b; });
    if (!name.has_type || cpu) return "/cpu:0";
  }
  return devices.empty() ? "/cpu:0" : devices[0];
}

namespace {

// ReplicateTowers, step by step: split the inputs, build each tower with its variable getter,
// line up each tower's variables, take each tower's gradients, then combine them.
class Replicator {
 public:
  Replicator(const Scope& scope, const TowerOptions& o)
      : scope_(scope),
        o_(o),
        g_(scope.graph()),
        mirrored_(o.aggregation == Aggregation::kAllReduce) {
    t_.devices = ResolveTowerDevices(o);
    t_.variable_device = mirrored_ ? t_.devices[0] : ResolveVariableDevice(o, t_.devices);
    n_ = static_cast<int>(t_.devices.size());
    used_.resize(n_);
    replica_of_.resize(n_);
  }

  Towers Run(const std::vector<Output>& inputs, const TowerFn& model_fn) {
    if (inputs.empty())
      ThrowError(errors::InvalidArgument("ReplicateTowers needs at least one input to split"));
    std::vector<std::vector<Output>> tower_inputs = SplitInputs(inputs);
    for (int i = 0; i < n_; ++i) BuildTower(i, tower_inputs[i], model_fn);
    CollectVariables();
    for (int i = 0; i < n_; ++i) grads_.push_back(TowerGradients(i));
    CheckTowersAgree();
    if (n_ == 1) {
      PassThrough();
    } else {
      CombineLossAndExtras();
      if (mirrored_) {
        AllReduceGradients();
      } else {
        AverageGradients();
      }
    }
    return std::move(t_);
  }

 private:
  static std::string TowerName(int i) { return "tower_" + std::to_string(i); }

  // Each input's dimension 0 split across the towers.
  std::vector<std::vector<Output>> SplitInputs(const std::vector<Output>& inputs) const {
    std::vector<std::vector<Output>> tower_inputs(n_);
    if (n_ == 1) {
      tower_inputs[0] = inputs;
      return tower_inputs;
    }
    Scope split = scope_.NewSubScope("split");
    for (const Output& in : inputs) {
      std::vector<Output> parts = ops::BatchSplit(split, in, n_);
      for (int i = 0; i < n_; ++i) tower_inputs[i].push_back(parts[i]);
    }
    return tower_inputs;
  }

  // Parameter device: one set of variables there, tower 0 creates and the others reuse.
  // All-reduce: tower 0 creates the primaries on its own device.
  CustomGetter SharedGetter(int i) {
    const std::string device = mirrored_ ? "" : t_.variable_device;
    return [this, i, device](const VariableRequest& req, const VariableGetterFn& next) {
      VariableRequest r = req;
      if (!device.empty()) r.scope = r.scope.WithDevice(device);
      Variable v = next(r);
      used_[i].Add(v);
      return v;
    };
  }

  // All-reduce, towers after the first: a replica "<name>/replica_i" of each trainable primary,
  // initialised from it; non-trainable variables are shared.
  CustomGetter ReplicaGetter(int i) {
    return [this, i](const VariableRequest& req, const VariableGetterFn& next) {
      Variable primary = FindVariable(g_, FullName(req));
      if (!primary.valid() || !used_[0].names.count(primary.name())) {
        ThrowError(errors::InvalidArgument(
            TowerName(i), " asked for variable ", FullName(req),
            ", which tower_0 did not use: every tower must build the same model"));
      }
      if (!primary.trainable()) {  // shared, not mirrored
        used_[i].Add(primary);
        return primary;
      }
      VariableRequest r = req;
      r.name = req.name + "/replica_" + std::to_string(i);
      r.scope = req.scope.WithReuse(Reuse::kAutoReuse);
      r.trainable = false;  // the primary stands for all replicas in the trainable collection
      Operation init = primary.initializer();
      r.initializer = [init](const Scope&, const Shape&, DType) { return Output(init.node, 0); };
      Variable v = next(r);
      used_[i].Add(v);
      replica_of_[i][primary.name()] = v;
      return v;
    };
  }

  // Builds tower i under "tower_i" on its device and records its outputs and weight.
  void BuildTower(int i, const std::vector<Output>& inputs, const TowerFn& model_fn) {
    Scope ts = scope_.NewSubScope(TowerName(i)).WithDevice(t_.devices[i]);
    if (!mirrored_ && i > 0) ts = ts.WithReuse(Reuse::kReuse);
    ts = ts.WithCustomGetter(!mirrored_ || i == 0 ? SharedGetter(i) : ReplicaGetter(i));
    const size_t updates_before = g_->GetCollection(kUpdateOps).size();
    const size_t summaries_before = g_->GetCollection(summary::kSummaries).size();
    TowerOutputs out = model_fn(ts, inputs);
    CheckTowerOutputs(i, out);
    KeepUpdateOpsOfTower0(i, updates_before);
    // Summaries too: tower 0's describe the model once (TensorFlow's multi-tower examples merge
    // one tower's); the other towers' stay in the graph, out of summary::MergeAll.
    if (i > 0) {
      std::vector<Output> summaries = g_->GetCollection(summary::kSummaries);
      summaries.resize(summaries_before);
      g_->SetCollection(summary::kSummaries, std::move(summaries));
    }
    t_.towers.push_back(out);
    tower_scopes_.push_back(ts.WithNoCustomGetter());
    if (n_ > 1) weights_.push_back(BatchSize(ts.NewSubScope("batch_size"), inputs[0]));
  }

  void CheckTowerOutputs(int i, const TowerOutputs& out) const {
    if (out.loss.node == nullptr || out.loss.dtype() != DT_FLOAT || out.loss.shape().rank() > 0) {
      ThrowError(errors::InvalidArgument(
          TowerName(i), ": model_fn must return a float scalar loss, got ",
          out.loss.node
              ? out.loss.shape().ToString() + " " + std::string(DTypeName(out.loss.dtype()))
              : "none"));
    }
    if (i > 0 && out.extra.size() != t_.towers[0].extra.size()) {
      ThrowError(errors::InvalidArgument(TowerName(i), " returned ", out.extra.size(),
                                         " extra outputs, tower_0 ", t_.towers[0].extra.size()));
    }
  }

  // Update ops (batch-norm style) run once: tower 0's stay, the others' leave the collection.
  void KeepUpdateOpsOfTower0(int i, size_t updates_before) {
    std::vector<Output> updates = g_->GetCollection(kUpdateOps);
    if (i == 0) {
      for (size_t k = updates_before; k < updates.size(); ++k)
        t_.update_ops.emplace_back(updates[k].node);
    } else {
      updates.resize(updates_before);
      g_->SetCollection(kUpdateOps, std::move(updates));
    }
  }

  // The trainable variables, per tower in tower 0's order (a tower's replicas when mirrored).
  void CollectVariables() {
    for (const Variable& v : used_[0].vars) {
      if (v.trainable()) t_.variables.push_back(v);
    }
    vars_.resize(n_);
    for (int i = 0; i < n_; ++i) {
      for (const Variable& v : t_.variables) {
        if (!mirrored_ || i == 0) {
          vars_[i].push_back(v);
          continue;
        }
        auto it = replica_of_[i].find(v.name());
        if (it == replica_of_[i].end()) {
          ThrowError(errors::InvalidArgument(
              "tower_", i, " did not use variable ", v.name(),
              ", which tower_0 uses: every tower must build the same model"));
        }
        vars_[i].push_back(it->second);
      }
    }
    if (mirrored_) t_.replicas = vars_;
  }

  // Tower i's gradients (one per variable, null where the loss does not depend on it), on its
  // device. Gated as in Optimizer::ComputeGradients (an in-place update must not overtake a
  // gradient that still reads the variable). Tower 0 also checks that the loss depends on no
  // trainable variable from outside.
  std::vector<Output> TowerGradients(int i) const {
    GradientOptions go;
    go.null_for_unreachable = true;
    go.gate_gradients = true;
    std::vector<Output> xs;
    for (const Variable& v : vars_[i]) xs.push_back(v.value());
    std::vector<Variable> outside;
    if (i == 0) {
      for (const Variable& v : TrainableVariables(g_)) {
        if (!used_[0].names.count(v.name())) outside.push_back(v);
      }
      for (const Variable& v : outside) xs.push_back(v.value());
    }
    std::vector<Output> gs = Gradients(tower_scopes_[i], {t_.towers[i].loss}, xs, {}, go);
    for (size_t k = 0; k < outside.size(); ++k) {
      if (gs[vars_[i].size() + k].node != nullptr) {
        ThrowError(errors::InvalidArgument(
            "The loss of tower_0 depends on variable ", outside[k].name(),
            ", which was created outside ReplicateTowers and so can be neither ",
            mirrored_ ? "mirrored" : "shared and averaged",
            ": create it with GetVariable inside model_fn"));
      }
    }
    gs.resize(vars_[i].size());
    return gs;
  }

  void CheckTowersAgree() const {
    for (int i = 1; i < n_; ++i) {
      for (size_t k = 0; k < t_.variables.size(); ++k) {
        if ((grads_[i][k].node == nullptr) != (grads_[0][k].node == nullptr)) {
          ThrowError(errors::InvalidArgument(
              "tower_", i, " and tower_0 disagree on whether the loss depends on ",
              t_.variables[k].name()));
        }
      }
    }
  }

  // One tower: nothing to split or combine, its loss and gradients are the result.
  void PassThrough() {
    for (size_t k = 0; k < t_.variables.size(); ++k)
      t_.grads_and_vars.emplace_back(grads_[0][k], t_.variables[k]);
    t_.loss = t_.towers[0].loss;
    t_.extra = t_.towers[0].extra;
  }

  // The loss of the whole batch, next to the variables (or tower 0), and each extra output
  // concatenated in batch order.
  void CombineLossAndExtras() {
    const std::string& home = t_.variable_device;
    std::vector<Output> losses;
    for (const TowerOutputs& out : t_.towers) losses.push_back(out.loss);
    Scope home_scope = home.empty() ? scope_ : scope_.WithDevice(home);
    t_.loss = ops::WeightedMean(home_scope.WithOpName("loss"), losses, weights_);
    Scope concat = scope_.NewSubScope("concat_outputs");
    for (size_t j = 0; j < t_.towers[0].extra.size(); ++j) {
      std::vector<Output> parts;
      for (const TowerOutputs& out : t_.towers) parts.push_back(out.extra[j]);
      t_.extra.push_back(ops::Concat(concat, parts, 0));
    }
  }

  // Parameter device: each variable's gradients averaged next to it, applied once.
  void AverageGradients() {
    Scope avg = scope_.NewSubScope("average_gradients");
    for (size_t k = 0; k < t_.variables.size(); ++k) {
      const Variable& v = t_.variables[k];
      Output combined;
      if (grads_[0][k].node != nullptr) {
        std::vector<Output> per_tower;
        for (int i = 0; i < n_; ++i) per_tower.push_back(grads_[i][k]);
        combined = ops::WeightedMean(avg.ColocateWith(Operation(v.ref().node)).WithOpName(v.name()),
                                     per_tower, weights_);
      }
      t_.grads_and_vars.emplace_back(combined, v);
    }
  }

  // All-reduce: one collective per tower and dtype; every replica gets its tower's result.
  void AllReduceGradients() {
    const std::string key = g_->UniqueName(scope_.Qualify("allreduce"));
    std::vector<std::vector<Output>> reduced(n_, std::vector<Output>(t_.variables.size()));
    for (DType dtype : {DT_FLOAT, DT_DOUBLE}) {
      std::vector<size_t> members;
      for (size_t k = 0; k < t_.variables.size(); ++k) {
        if (grads_[0][k].node != nullptr && t_.variables[k].dtype() == dtype) members.push_back(k);
      }
      if (members.empty()) continue;
      for (int i = 0; i < n_; ++i) {
        std::vector<Output> in;
        for (size_t k : members) in.push_back(grads_[i][k]);
        std::vector<Output> out =
            ops::CollectiveAllReduce(tower_scopes_[i].NewSubScope("allreduce"), in, weights_[i],
                                     key + "/" + std::string(DTypeName(dtype)), n_, i);
        for (size_t m = 0; m < members.size(); ++m) reduced[i][members[m]] = out[m];
      }
    }
    for (int i = 0; i < n_; ++i) {
      for (size_t k = 0; k < t_.variables.size(); ++k)
        t_.grads_and_vars.emplace_back(reduced[i][k], vars_[i][k]);
    }
  }

  const Scope scope_;
  const TowerOptions& o_;
  Graph* const g_;
  const bool mirrored_;
  int n_ = 0;
  Towers t_;
  std::vector<Used> used_;                                   // per tower
  std::vector<std::map<std::string, Variable>> replica_of_;  // per tower, by primary's name
  std::vector<Output> weights_;                              // per tower: its number of rows
  std::vector<Scope> tower_scopes_;                          // per tower, without the getter
  std::vector<std::vector<Variable>> vars_;                  // per tower: t_.variables' stand-ins
  std::vector<std::vector<Output>> grads_;                   // per tower, per variable
};

}  // namespace

Towers ReplicateTowers(const Scope& scope, const TowerOptions& o, const std::vector<Output>& inputs,
                       const TowerFn& model_fn) {
  return Replicator(scope, o).Run(inputs, model_fn);
}

}  // namespace pf::train
