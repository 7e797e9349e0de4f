#include "placeflow/train/towers.h"

#include <map>
#include <set>

#include "placeflow/core/device_name.h"
#include "placeflow/core/logging.h"
#include "placeflow/devices/gpu_probe.h"
#include "placeflow/ops/ops.h"
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
  return ops::Cast(s.WithOpName("batch_size"), ops::Slice(s, ops::ShapeOf(s, x), {0}, {1}),
                   DT_FLOAT);
}

[[noreturn]] void Fail(Status s) { throw Error(std::move(s)); }

}  // namespace

std::vector<std::string> ResolveTowerDevices(const TowerOptions& o) {
  std::vector<std::string> out;
  for (const std::string& d : o.devices) {
    if (d == "all_gpus") {
      const int n = o.num_gpus >= 0 ? o.num_gpus : CudaDeviceCount();
      if (n <= 0)
        Fail(
            errors::InvalidArgument("Tower devices 'all_gpus': no GPU is visible to this process"));
      for (int i = 0; i < n; ++i) out.push_back("/gpu:" + std::to_string(i));
    } else if (d == "all_cpus") {
      for (int i = 0; i < std::max(1, o.num_cpus); ++i) out.push_back("/cpu:" + std::to_string(i));
    } else {
      DeviceName::ParseOrError(d).ValueOrThrow();
      out.push_back(d);
    }
  }
  if (out.empty()) Fail(errors::InvalidArgument("ReplicateTowers needs at least one device"));
  return out;
}

Towers ReplicateTowers(const Scope& scope, const TowerOptions& o, const std::vector<Output>& inputs,
                       const TowerFn& model_fn) {
  Graph* g = scope.graph();
  Towers t;
  t.devices = ResolveTowerDevices(o);
  const int n = static_cast<int>(t.devices.size());
  const bool mirrored = o.aggregation == Aggregation::kAllReduce;
  if (inputs.empty())
    Fail(errors::InvalidArgument("ReplicateTowers needs at least one input to split"));

  // Each input's dimension 0 split across the towers.
  std::vector<std::vector<Output>> tower_inputs(n);
  if (n == 1) {
    tower_inputs[0] = inputs;
  } else {
    Scope split = scope.NewSubScope("split");
    for (const Output& in : inputs) {
      std::vector<Output> parts = ops::BatchSplit(split, in, n);
      for (int i = 0; i < n; ++i) tower_inputs[i].push_back(parts[i]);
    }
  }

  std::vector<Used> used(n);
  // Tower i's replicas by the name of their primary (kAllReduce).
  std::vector<std::map<std::string, Variable>> replica_of(n);
  std::vector<Output> weights;
  std::vector<Scope> tower_scopes;
  for (int i = 0; i < n; ++i) {
    const std::string tower_name = "tower_" + std::to_string(i);
    Scope ts = scope.NewSubScope(tower_name).WithDevice(t.devices[i]);
    CustomGetter getter;
    if (!mirrored || i == 0) {
      // Parameter device: one set of variables there, tower 0 creates and the others reuse.
      // All-reduce: tower 0 creates the primaries on its own device.
      if (!mirrored && i > 0) ts = ts.WithReuse(Reuse::kReuse);
      const std::string device = mirrored ? "" : o.variable_device;
      getter = [&, i, device](const VariableRequest& req, const VariableGetterFn& next) {
        VariableRequest r = req;
        if (!device.empty()) r.scope = r.scope.WithDevice(device);
        Variable v = next(r);
        used[i].Add(v);
        return v;
      };
    } else {
      getter = [&, i, tower_name](const VariableRequest& req, const VariableGetterFn& next) {
        Variable primary = FindVariable(g, FullName(req));
        if (!primary.valid() || !used[0].names.count(primary.name())) {
          Fail(errors::InvalidArgument(
              tower_name, " asked for variable ", FullName(req),
              ", which tower_0 did not use: every tower must build the same model"));
        }
        if (!primary.trainable()) {  // shared, not mirrored
          used[i].Add(primary);
          return primary;
        }
        VariableRequest r = req;
        r.name = req.name + "/replica_" + std::to_string(i);
        r.scope = req.scope.WithReuse(Reuse::kAutoReuse);
        r.trainable = false;  // the primary stands for all replicas in the trainable collection
        Operation init = primary.initializer();
        r.initializer = [init](const Scope&, const Shape&, DType) { return Output(init.node, 0); };
        Variable v = next(r);
        used[i].Add(v);
        replica_of[i][primary.name()] = v;
        return v;
      };
    }
    ts = ts.WithCustomGetter(getter);
    const size_t updates_before = g->GetCollection(kUpdateOps).size();
    TowerOutputs out = model_fn(ts, tower_inputs[i]);
    if (out.loss.node == nullptr || out.loss.dtype() != DT_FLOAT || out.loss.shape().rank() > 0) {
      Fail(errors::InvalidArgument(tower_name, ": model_fn must return a float scalar loss, got ",
                                   out.loss.node ? out.loss.shape().ToString() + " " +
                                                       std::string(DTypeName(out.loss.dtype()))
                                                 : "none"));
    }
    if (i > 0 && out.extra.size() != t.towers[0].extra.size()) {
      Fail(errors::InvalidArgument(tower_name, " returned ", out.extra.size(),
                                   " extra outputs, tower_0 ", t.towers[0].extra.size()));
    }
    // Update ops (batch-norm style) run once: tower 0's stay, the others' leave the collection.
    std::vector<Output> updates = g->GetCollection(kUpdateOps);
    if (i == 0) {
      for (size_t k = updates_before; k < updates.size(); ++k)
        t.update_ops.emplace_back(updates[k].node);
    } else {
      updates.resize(updates_before);
      g->SetCollection(kUpdateOps, std::move(updates));
    }
    t.towers.push_back(out);
    tower_scopes.push_back(ts.WithNoCustomGetter());
    if (n > 1) weights.push_back(BatchSize(ts.NewSubScope("batch_size"), tower_inputs[i][0]));
  }

  // The trainable variables, per tower in tower 0's order.
  for (const Variable& v : used[0].vars) {
    if (v.trainable()) t.variables.push_back(v);
  }
  std::vector<std::vector<Variable>> vars(n);
  for (int i = 0; i < n; ++i) {
    for (const Variable& v : t.variables) {
      if (!mirrored || i == 0) {
        vars[i].push_back(v);
        continue;
      }
      auto it = replica_of[i].find(v.name());
      if (it == replica_of[i].end()) {
        Fail(
            errors::InvalidArgument("tower_", i, " did not use variable ", v.name(),
                                    ", which tower_0 uses: every tower must build the same model"));
      }
      vars[i].push_back(it->second);
    }
  }
  if (mirrored) t.replicas = vars;

  // Each tower's gradients, computed on its device. Gated as in Optimizer::ComputeGradients
  // (an in-place update must not overtake a gradient that still reads the variable).
  GradientOptions go;
  go.null_for_unreachable = true;
  go.gate_gradients = true;
  std::vector<std::vector<Output>> grads(n);
  for (int i = 0; i < n; ++i) {
    std::vector<Output> xs;
    for (const Variable& v : vars[i]) xs.push_back(v.value());
    // Tower 0 also checks that the loss depends on no trainable variable from outside.
    std::vector<Variable> outside;
    if (i == 0) {
      for (const Variable& v : TrainableVariables(g)) {
        if (!used[0].names.count(v.name())) outside.push_back(v);
      }
      for (const Variable& v : outside) xs.push_back(v.value());
    }
    std::vector<Output> gs =
        TryGradients(tower_scopes[i], {t.towers[i].loss}, xs, {}, go).ValueOrThrow();
    for (size_t k = 0; k < outside.size(); ++k) {
      if (gs[vars[i].size() + k].node != nullptr) {
        Fail(errors::InvalidArgument(
            "The loss of tower_0 depends on variable ", outside[k].name(),
            ", which was created outside ReplicateTowers and so can be neither ",
            mirrored ? "mirrored" : "shared and averaged",
            ": create it with GetVariable inside model_fn"));
      }
    }
    gs.resize(vars[i].size());
    grads[i] = std::move(gs);
  }
  for (int i = 1; i < n; ++i) {
    for (size_t k = 0; k < t.variables.size(); ++k) {
      if ((grads[i][k].node == nullptr) != (grads[0][k].node == nullptr)) {
        Fail(errors::InvalidArgument("tower_", i,
                                     " and tower_0 disagree on whether the loss depends on ",
                                     t.variables[k].name()));
      }
    }
  }

  if (n == 1) {
    for (size_t k = 0; k < t.variables.size(); ++k)
      t.grads_and_vars.emplace_back(grads[0][k], t.variables[k]);
    t.loss = t.towers[0].loss;
    t.extra = t.towers[0].extra;
    return t;
  }

  // The loss of the whole batch, next to the variables (or tower 0).
  const std::string home = mirrored ? t.devices[0] : o.variable_device;
  std::vector<Output> losses;
  for (const TowerOutputs& out : t.towers) losses.push_back(out.loss);
  Scope home_scope = home.empty() ? scope : scope.WithDevice(home);
  t.loss = ops::WeightedMean(home_scope.WithOpName("loss"), losses, weights);
  Scope concat = scope.NewSubScope("concat_outputs");
  for (size_t j = 0; j < t.towers[0].extra.size(); ++j) {
    std::vector<Output> parts;
    for (const TowerOutputs& out : t.towers) parts.push_back(out.extra[j]);
    t.extra.push_back(ops::Concat(concat, parts, 0));
  }

  if (!mirrored) {
    Scope avg = scope.NewSubScope("average_gradients");
    for (size_t k = 0; k < t.variables.size(); ++k) {
      const Variable& v = t.variables[k];
      Output combined;
      if (grads[0][k].node != nullptr) {
        std::vector<Output> per_tower;
        for (int i = 0; i < n; ++i) per_tower.push_back(grads[i][k]);
        combined = ops::WeightedMean(avg.ColocateWith(Operation(v.ref().node)).WithOpName(v.name()),
                                     per_tower, weights);
      }
      t.grads_and_vars.emplace_back(combined, v);
    }
    return t;
  }

  // All-reduce: one collective per tower and dtype; every replica gets its tower's result.
  const std::string key = g->UniqueName(scope.Qualify("allreduce"));
  std::vector<std::vector<Output>> reduced(n, std::vector<Output>(t.variables.size()));
  for (DType dtype : {DT_FLOAT, DT_DOUBLE}) {
    std::vector<size_t> members;
    for (size_t k = 0; k < t.variables.size(); ++k) {
      if (grads[0][k].node != nullptr && t.variables[k].dtype() == dtype) members.push_back(k);
    }
    if (members.empty()) continue;
    for (int i = 0; i < n; ++i) {
      std::vector<Output> in;
      for (size_t k : members) in.push_back(grads[i][k]);
      std::vector<Output> out =
          ops::CollectiveAllReduce(tower_scopes[i].NewSubScope("allreduce"), in, weights[i],
                                   key + "/" + std::string(DTypeName(dtype)), n, i);
      for (size_t m = 0; m < members.size(); ++m) reduced[i][members[m]] = out[m];
    }
  }
  for (int i = 0; i < n; ++i) {
    for (size_t k = 0; k < t.variables.size(); ++k)
      t.grads_and_vars.emplace_back(reduced[i][k], vars[i][k]);
  }
  return t;
}

}  // namespace pf::train
