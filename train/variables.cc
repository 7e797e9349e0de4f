#include "placeflow/train/variables.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "placeflow/ops/ops.h"

namespace pf {

// Graph/variable.h's friend: a Variable handle for nodes already in the graph.
Variable AdoptVariable(Node* ref, Output read, Operation initializer, bool trainable);

namespace {

struct VariableStore {
  std::map<std::string, Variable> by_name;
  std::vector<std::string> order;
};

void AdoptImported(Graph* g, VariableStore* store);

Output FillWith(const Scope& s, const Shape& shape, DType dtype, double value) {
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  Tensor v(dtype, Shape{});
  VisitDType(dtype, [&](auto t) { v.flat<decltype(t)>()[0] = static_cast<decltype(t)>(value); });
  return ops::Fill(s, ops::ConstInt(s.WithOpName("shape"), dims),
                   ops::Const(s.WithOpName("value"), v));
}

// y = x * scale + shift, skipping identity steps.
Output Affine(const Scope& s, Output x, double scale, double shift, DType dtype) {
  auto scalar = [&](double v, const char* name) {
    Tensor t(dtype, Shape{});
    VisitDType(dtype, [&](auto z) { t.flat<decltype(z)>()[0] = static_cast<decltype(z)>(v); });
    return ops::Const(s.WithOpName(name), t);
  };
  if (scale != 1.0) x = ops::Mul(s.WithOpName("mul"), x, scalar(scale, "scale"));
  if (shift != 0.0) x = ops::Add(s.WithOpName("add"), x, scalar(shift, "shift"));
  return x;
}

int64_t FanIn(const Shape& s) {
  return s.rank() >= 2 ? s.num_elements() / s.dim(s.rank() - 1) : (s.rank() == 1 ? s.dim(0) : 1);
}
int64_t FanOut(const Shape& s) {
  if (s.rank() < 1) return 1;
  if (s.rank() == 1) return s.dim(0);
  int64_t receptive = s.num_elements() / (s.dim(s.rank() - 1) * s.dim(s.rank() - 2));
  return s.dim(s.rank() - 1) * receptive;
}

}  // namespace

namespace init {

Initializer Constant(double value) {
  return [value](const Scope& s, const Shape& shape, DType dtype) {
    return FillWith(s, shape, dtype, value);
  };
}
Initializer Zeros() { return Constant(0.0); }
Initializer Ones() { return Constant(1.0); }

Initializer RandomUniform(double minval, double maxval, int64_t seed) {
  return [=](const Scope& s, const Shape& shape, DType dtype) {
    return Affine(s, ops::RandomUniform(s, shape, dtype, seed), maxval - minval, minval, dtype);
  };
}
Initializer RandomNormal(double mean, double stddev, int64_t seed) {
  return [=](const Scope& s, const Shape& shape, DType dtype) {
    return Affine(s, ops::RandomNormal(s, shape, dtype, seed), stddev, mean, dtype);
  };
}
Initializer TruncatedNormal(double mean, double stddev, int64_t seed) {
  return [=](const Scope& s, const Shape& shape, DType dtype) {
    return Affine(s, ops::TruncatedNormal(s, shape, dtype, seed), stddev, mean, dtype);
  };
}
Initializer GlorotUniform(int64_t seed) {
  return [=](const Scope& s, const Shape& shape, DType dtype) {
    double limit = std::sqrt(6.0 / static_cast<double>(FanIn(shape) + FanOut(shape)));
    return Affine(s, ops::RandomUniform(s, shape, dtype, seed), 2 * limit, -limit, dtype);
  };
}

}  // namespace init

Variable GetVariable(const Scope& scope, const std::string& name, const Shape& shape,
                     Initializer initializer, DType dtype, bool trainable) {
  if (scope.custom_getter()) {
    VariableRequest request{scope.WithNoCustomGetter(), name,  shape,
                            std::move(initializer),     dtype, trainable};
    return (*scope.custom_getter())(request, [](const VariableRequest& r) {
      return GetVariable(r.scope, r.name, r.shape, r.initializer, r.dtype, r.trainable);
    });
  }
  Graph* g = scope.graph();
  auto* store = g->GetOrCreateExtension<VariableStore>();
  AdoptImported(g, store);
  const std::string full =
      scope.variable_scope().empty() ? name : scope.variable_scope() + "/" + name;
  const Reuse reuse = scope.reuse();
  auto it = store->by_name.find(full);
  if (it != store->by_name.end()) {
    const Variable& v = it->second;
    if (reuse == Reuse::kCreate || reuse == Reuse::kInherit) {
      throw Error(
          errors::InvalidArgument("Variable ", full,
                                  " already exists, disallowed. Did you mean to set reuse=True or "
                                  "reuse=tf.AUTO_REUSE in VarScope?"));
    }
    if (!shape.IsCompatibleWith(v.shape())) {
      throw Error(errors::InvalidArgument("Trying to share variable ", full,
                                          ", but specified shape ", shape.ToString(),
                                          " and found shape ", v.shape().ToString(), "."));
    }
    if (dtype != v.dtype()) {
      throw Error(errors::InvalidArgument("Trying to share variable ", full,
                                          ", but specified dtype ", DTypeName(dtype),
                                          " and found dtype ", DTypeName(v.dtype()), "."));
    }
    return v;
  }
  if (reuse == Reuse::kReuse) {
    throw Error(errors::InvalidArgument(
        "Variable ", full,
        " does not exist, or was not created with tf.get_variable(). Did you mean "
        "to set reuse=tf.AUTO_REUSE in VarScope?"));
  }
  if (!shape.IsFullyDefined()) {
    throw Error(errors::InvalidArgument("Shape of a new variable (", full,
                                        ") must be fully defined, but instead was ",
                                        shape.ToString(), "."));
  }
  if (!initializer)
    initializer = (dtype == DT_FLOAT || dtype == DT_DOUBLE) ? init::GlorotUniform() : init::Zeros();

  // Variables ignore name scopes and control dependencies but keep the device scope.
  Scope vroot = Scope::Root(g).WithExactNameScope(full);
  if (!scope.device().IsEmpty()) vroot = vroot.WithDevice(scope.device_string());
  for (Node* c : scope.colocation()) vroot = vroot.ColocateWith(c);
  Variable v;
  v.name_ = full;
  v.trainable_ = trainable;
  v.ref_ = NodeBuilder(vroot.WithExactNameScope("").WithOpName(full), "Variable")
               .Attr("shape", shape)
               .Attr("dtype", dtype)
               .Finalize();
  Scope colocated = vroot.ColocateWith(v.ref_);
  Output initial = initializer(colocated.WithExactNameScope(full + "/Initializer"), shape, dtype);
  v.initializer_ = ops::Assign(colocated.WithOpName("Assign"), v.ref_, initial);
  v.read_ = ops::Identity(colocated.WithOpName("read"), v.ref_);

  store->by_name[full] = v;
  store->order.push_back(full);
  g->AddToCollection(kGlobalVariables, v.ref_);
  if (trainable) g->AddToCollection(kTrainableVariables, v.ref_);
  return v;
}

Variable AdoptVariable(Node* ref, Output read, Operation initializer, bool trainable) {
  Variable v;
  v.name_ = ref->name();
  v.ref_ = ref;
  v.read_ = read;
  v.initializer_ = initializer;
  v.trainable_ = trainable;
  return v;
}

namespace {

// An imported variable's value: "<name>/read" (TensorFlow's name), else an Identity reading it
// (a resource variable's ReadVariableOp), else a new "<name>/read".
Output FindRead(Graph* g, Node* ref) {
  Node* n = g->FindNode(ref->name() + "/read");
  if (n != nullptr && n->op() == "Identity" && n->input(0).node == ref) return n;
  for (const Edge& e : ref->out_edges())
    if (!e.IsControl() && e.dst->op() == "Identity") return e.dst;
  Scope s = Scope::Root(g).WithExactNameScope("").ColocateWith(ref);
  return ops::Identity(s.WithOpName(ref->name() + "/read"), ref);
}

// An imported variable's initializer: "<name>/Assign", else an Assign to it under its name.
Operation FindInitializer(Graph* g, Node* ref) {
  Node* n = g->FindNode(ref->name() + "/Assign");
  if (n != nullptr && n->op() == "Assign" && n->input(0).node == ref) return n;
  for (const Edge& e : ref->out_edges()) {
    if (!e.IsControl() && e.dst_input == 0 && e.dst->op() == "Assign" &&
        e.dst->name().rfind(ref->name() + "/", 0) == 0)
      return e.dst;
  }
  return Operation();
}

bool InCollection(Graph* g, const char* key, const Node* n) {
  for (const Output& o : g->GetCollection(key))
    if (o.node == n) return true;
  return false;
}

// Variables that entered the graph's collections without GetVariable (ImportGraphDef) join the
// store, so lookups, savers and reuse see them.
void AdoptImported(Graph* g, VariableStore* store) {
  for (const char* key : {kGlobalVariables, kLocalVariables}) {
    for (const Output& o : g->GetCollection(key)) {
      Node* n = o.node;
      if (store->by_name.count(n->name()) || !n->op_def().is_variable()) continue;
      store->by_name[n->name()] = AdoptVariable(n, FindRead(g, n), FindInitializer(g, n),
                                                InCollection(g, kTrainableVariables, n));
      store->order.push_back(n->name());
    }
  }
}

std::vector<Variable> FromCollection(Graph* g, const char* key) {
  auto* store = g->GetOrCreateExtension<VariableStore>();
  AdoptImported(g, store);
  std::vector<Variable> out;
  for (const Output& o : g->GetCollection(key)) {
    auto it = store->by_name.find(o.node->name());
    if (it != store->by_name.end()) out.push_back(it->second);
  }
  return out;
}
}  // namespace

Variable LocalVariable(const Scope& scope, const std::string& name, const Shape& shape,
                       Initializer initializer, DType dtype) {
  Variable v = GetVariable(scope.WithNoCustomGetter(), name, shape, std::move(initializer), dtype,
                           /*trainable=*/false);
  Graph* g = scope.graph();
  std::vector<Output> global = g->GetCollection(kGlobalVariables);
  std::erase_if(global, [&](const Output& o) { return o.node == v.ref().node; });
  g->SetCollection(kGlobalVariables, std::move(global));
  std::vector<Output> local = g->GetCollection(kLocalVariables);
  if (std::find(local.begin(), local.end(), v.ref()) == local.end()) {
    g->AddToCollection(kLocalVariables, v.ref());
  }
  return v;
}

std::vector<Variable> GlobalVariables(Graph* g) { return FromCollection(g, kGlobalVariables); }
std::vector<Variable> LocalVariables(Graph* g) { return FromCollection(g, kLocalVariables); }
std::vector<Variable> TrainableVariables(Graph* g) {
  return FromCollection(g, kTrainableVariables);
}

Variable FindVariable(Graph* g, const std::string& name) {
  auto* store = g->GetOrCreateExtension<VariableStore>();
  AdoptImported(g, store);
  auto it = store->by_name.find(name);
  return it == store->by_name.end() ? Variable() : it->second;
}

Operation VariablesInitializer(const Scope& scope, const std::vector<Variable>& vars,
                               const std::string& name) {
  std::vector<Operation> deps;
  for (const Variable& v : vars)
    if (v.initializer().node != nullptr) deps.push_back(v.initializer());
  return ops::NoOp(scope.WithOpName(name).WithControlDependencies(deps));
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, GlobalVariables(scope.graph()));
}

Operation LocalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, LocalVariables(scope.graph()), "init_local");
}

}  // namespace pf

namespace pf {

Variable RegisterImportedVariable(Graph* graph, Node* ref, Output read, Operation initializer,
                                  bool trainable) {
  if (ref == nullptr || !ref->op_def().is_variable()) {
    throw Error(errors::InvalidArgument("RegisterImportedVariable: '",
                                        ref ? ref->name() : std::string("null"),
                                        "' is not a variable node"));
  }
  auto* store = graph->GetOrCreateExtension<VariableStore>();
  if (!store->by_name.count(ref->name())) store->order.push_back(ref->name());
  Variable v =
      AdoptVariable(ref, read.node ? read : FindRead(graph, ref),
                    initializer.node ? initializer : FindInitializer(graph, ref), trainable);
  store->by_name[ref->name()] = v;
  return v;
}

}  // namespace pf
