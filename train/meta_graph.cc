#include "placeflow/train/meta_graph.h"

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "placeflow/graph/graph_def.h"
#include "placeflow/graph/proto_codecs.h"
#include "placeflow/io/proto/meta_graph.pb.h"
#include "placeflow/ops/summary/summary.h"

namespace pf::train {
namespace {

namespace tfp = ::tensorflow;

// TensorFlow writes these collections as serialized VariableDefs.
bool IsVariableKey(const std::string& key) {
  return key == kGlobalVariables || key == kTrainableVariables || key == kLocalVariables ||
         key == "model_variables";
}

// "name:i" for a tensor, "name" for an op without outputs (TensorFlow's node-list entries).
std::string EntryName(const Output& o) {
  return o.node->num_outputs() == 0 ? o.node->name() : o.name();
}

std::string VariableDefBytes(Graph* graph, const Output& o) {
  tfp::VariableDef vd;
  vd.set_variable_name(o.name());
  Variable v = FindVariable(graph, o.node->name());
  if (v.valid()) {
    vd.set_snapshot_name(v.value().name());
    if (v.initializer().node != nullptr) {
      vd.set_initializer_name(v.initializer().name());
      const Node* assign = v.initializer().node;
      if (assign->num_inputs() > 1) vd.set_initial_value_name(assign->input(1).name());
    }
    vd.set_trainable(v.trainable());
  }
  return vd.SerializeAsString();
}

void AddCollections(Graph* graph, const ExportMetaGraphOptions& options, tfp::MetaGraphDef* m) {
  std::vector<std::string> keys = {kGlobalVariables, kTrainableVariables, kLocalVariables, kLosses,
                                   kUpdateOps,       summary::kSummaries, kTrainOp};
  keys.insert(keys.end(), options.collections.begin(), options.collections.end());
  std::set<std::string> done;
  for (const std::string& key : keys) {
    if (!done.insert(key).second) continue;
    const std::vector<Output>& values = graph->GetCollection(key);
    if (values.empty()) continue;
    tfp::CollectionDef& c = (*m->mutable_collection_def())[key];
    for (const Output& o : values) {
      if (IsVariableKey(key))
        c.mutable_bytes_list()->add_value(VariableDefBytes(graph, o));
      else
        c.mutable_node_list()->add_value(EntryName(o));
    }
  }
}

Status AddSignatures(const ExportMetaGraphOptions& options, tfp::MetaGraphDef* m) {
  for (const auto& [key, sig] : options.signatures) {
    tfp::SignatureDef& def = (*m->mutable_signature_def())[key];
    def.set_method_name(sig.method_name);
    for (auto [from, to] : {std::pair{&sig.inputs, def.mutable_inputs()},
                            std::pair{&sig.outputs, def.mutable_outputs()}}) {
      for (const auto& [name, out] : *from) {
        if (out.node == nullptr)
          return errors::InvalidArgument("signature '", key, "': tensor '", name, "' is null");
        tfp::TensorInfo& info = (*to)[name];
        info.set_name(out.name());
        PF_ASSIGN_OR_RETURN(tfp::DataType t, DTypeToProto(out.dtype()));
        info.set_dtype(t);
        ShapeToProto(out.shape(), info.mutable_tensor_shape());
      }
    }
  }
  return Status();
}

StatusOr<tfp::MetaGraphDef> ToMetaGraph(Graph& graph, const ExportMetaGraphOptions& options) {
  tfp::MetaGraphDef m;
  m.mutable_meta_info_def()->set_meta_graph_version("placeflow");
  for (const std::string& t : options.tags) m.mutable_meta_info_def()->add_tags(t);
  PF_ASSIGN_OR_RETURN(std::string graph_bytes, SerializeGraphDef(graph, options.placement));
  if (!m.mutable_graph_def()->ParseFromString(graph_bytes))
    return errors::Internal("GraphDef serialization failed");
  if (options.saver != nullptr) {
    tfp::SaverDef* s = m.mutable_saver_def();
    s->set_max_to_keep(options.saver->max_to_keep());
    s->set_keep_checkpoint_every_n_hours(10000.f);  // TensorFlow's default: never
    s->set_version(tfp::SaverDef::V2);
  }
  AddCollections(&graph, options, &m);
  PF_RETURN_IF_ERROR(AddSignatures(options, &m));
  return m;
}

std::string Prefixed(const ImportGraphDefOptions& options, const std::string& name) {
  return options.prefix.empty() ? name : options.prefix + "/" + name;
}

StatusOr<Output> Lookup(const Graph& graph, const ImportGraphDefOptions& options,
                        const std::string& name, const std::string& where) {
  auto t = ParseTensorName(Prefixed(options, name));
  Node* n = t.ok() ? graph.FindNode(t->node) : nullptr;
  // "name" without an index may name an op without outputs (a train op).
  const bool op = n != nullptr && name.find(':') == std::string::npos;
  if (n == nullptr || (!op && t->index >= n->num_outputs())) {
    return errors::InvalidArgument("MetaGraph ", where, " names '", name,
                                   "', which is not in the imported graph");
  }
  return Output(n, t->index);
}

// The variables of a VariableDef collection, registered with the graph's variable store.
Status ImportVariables(const tfp::CollectionDef& c, const std::string& key,
                       const ImportGraphDefOptions& options, Graph* graph,
                       std::vector<Variable>* vars) {
  for (const std::string& bytes : c.bytes_list().value()) {
    tfp::VariableDef vd;
    if (!vd.ParseFromString(bytes))
      return errors::DataLoss("MetaGraph collection '", key, "' holds a bad VariableDef");
    const std::string where = "collection '" + key + "'";
    PF_ASSIGN_OR_RETURN(Output ref, Lookup(*graph, options, vd.variable_name(), where));
    if (!ref.node->op_def().is_variable()) {
      return errors::InvalidArgument("MetaGraph ", where, ": '", vd.variable_name(), "' (op: '",
                                     ref.node->op(), "') is not a variable");
    }
    Output read;
    Operation init;
    if (!vd.snapshot_name().empty()) {
      PF_ASSIGN_OR_RETURN(read, Lookup(*graph, options, vd.snapshot_name(), where));
    }
    if (!vd.initializer_name().empty()) {
      PF_ASSIGN_OR_RETURN(init, Lookup(*graph, options, vd.initializer_name(), where));
    }
    const bool trainable = vd.trainable() || key == kTrainableVariables;
    vars->push_back(RegisterImportedVariable(graph, ref.node, read, init, trainable));
  }
  return Status();
}

// A collection's entries from before the import, then the MetaGraph's (as TensorFlow's
// import_meta_graph adds to the graph's collections).
using Collections = std::map<std::string, std::vector<Output>>;
void SetAfter(const Collections& before, const std::string& key, std::vector<Output> imported,
              Graph* graph) {
  std::vector<Output> all = before.count(key) ? before.at(key) : std::vector<Output>{};
  all.insert(all.end(), imported.begin(), imported.end());
  graph->SetCollection(key, std::move(all));
}

Status ImportCollections(const tfp::MetaGraphDef& m, const ImportGraphDefOptions& options,
                         const Collections& before, Graph* graph, ImportedMetaGraph* out) {
  // The plain import put every variable in "variables"; the MetaGraph says exactly which.
  for (const char* key : {kGlobalVariables, kTrainableVariables, kLocalVariables})
    if (!m.collection_def().count(key)) SetAfter(before, key, {}, graph);
  // Trainable first: registering a global variable needs to know whether it trains.
  std::vector<std::string> keys;
  for (const auto& [key, c] : m.collection_def()) keys.push_back(key);
  std::stable_partition(keys.begin(), keys.end(),
                        [](const std::string& k) { return k == kTrainableVariables; });
  std::set<const Node*> trainable;
  for (const std::string& key : keys) {
    const tfp::CollectionDef& c = m.collection_def().at(key);
    if (IsVariableKey(key) && c.has_bytes_list()) {
      std::vector<Variable> vars;
      PF_RETURN_IF_ERROR(ImportVariables(c, key, options, graph, &vars));
      std::vector<Output> refs;
      for (const Variable& v : vars) refs.push_back(v.ref());
      SetAfter(before, key, std::move(refs), graph);
      if (key == kTrainableVariables) {
        for (const Variable& v : vars) trainable.insert(v.ref().node);
        out->trainable_variables = vars;
      } else if (key == kGlobalVariables) {
        out->variables = vars;
      }
      continue;
    }
    if (!c.has_node_list()) continue;  // TensorFlow's other kinds: contexts, ...
    std::vector<Output> values;
    for (const std::string& name : c.node_list().value()) {
      PF_ASSIGN_OR_RETURN(values.emplace_back(),
                          Lookup(*graph, options, name, "collection '" + key + "'"));
    }
    SetAfter(before, key, values, graph);
    out->collections[key] = std::move(values);
  }
  // A global variable's trainable flag is its membership of "trainable_variables".
  for (Variable& v : out->variables) {
    v = RegisterImportedVariable(graph, v.ref().node, v.value(), v.initializer(),
                                 trainable.count(v.ref().node) > 0);
  }
  return Status();
}

Status ImportSignatures(const tfp::MetaGraphDef& m, const ImportGraphDefOptions& options,
                        const Graph& graph, ImportedMetaGraph* out) {
  for (const auto& [key, def] : m.signature_def()) {
    Signature& sig = out->signatures[key];
    sig.method_name = def.method_name();
    for (auto [from, to] :
         {std::pair{&def.inputs(), &sig.inputs}, std::pair{&def.outputs(), &sig.outputs}}) {
      for (const auto& [name, info] : *from) {
        PF_ASSIGN_OR_RETURN((*to)[name],
                            Lookup(graph, options, info.name(), "signature '" + key + "'"));
      }
    }
  }
  return Status();
}

}  // namespace

Operation ImportedMetaGraph::train_op() const {
  auto it = collections.find(kTrainOp);
  return it == collections.end() || it->second.empty() ? Operation() : it->second[0];
}

std::vector<Output> ImportedMetaGraph::losses() const {
  auto it = collections.find(kLosses);
  return it == collections.end() ? std::vector<Output>{} : it->second;
}

StatusOr<std::string> SerializeMetaGraph(Graph& graph, const ExportMetaGraphOptions& options,
                                         bool text) {
  PF_ASSIGN_OR_RETURN(tfp::MetaGraphDef m, ToMetaGraph(graph, options));
  std::string out;
  bool ok = text ? google::protobuf::TextFormat::PrintToString(m, &out) : m.SerializeToString(&out);
  if (!ok) return errors::Internal("MetaGraphDef serialization failed");
  return out;
}

void ExportMetaGraph(const std::string& path, Graph& graph, const ExportMetaGraphOptions& options) {
  auto bytes = SerializeMetaGraph(graph, options, IsTextProtoPath(path));
  ThrowIfError(bytes.status());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) ThrowIfError(errors::NotFound("cannot open '", path, "' for writing"));
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  f.close();
  if (!f) ThrowIfError(errors::Internal("cannot write MetaGraph to '", path, "'"));
}

StatusOr<ImportedMetaGraph> ImportMetaGraphFromBytes(std::string_view bytes, Graph* graph,
                                                     const ImportGraphDefOptions& options,
                                                     bool text) {
  tfp::MetaGraphDef m;
  bool parsed = bytes.size() <= INT32_MAX &&
                (text ? google::protobuf::TextFormat::ParseFromString(std::string(bytes), &m)
                      : m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  if (!parsed) return errors::DataLoss("cannot parse a MetaGraphDef from ", bytes.size(), " bytes");
  Collections before;
  for (const char* key : {kGlobalVariables, kTrainableVariables, kLocalVariables})
    before[key] = graph->GetCollection(key);
  for (const auto& [key, c] : m.collection_def()) before[key] = graph->GetCollection(key);
  PF_RETURN_IF_ERROR(ImportGraphDefProto(m.graph_def(), graph, options));
  ImportedMetaGraph out;
  out.tags.assign(m.meta_info_def().tags().begin(), m.meta_info_def().tags().end());
  PF_RETURN_IF_ERROR(ImportCollections(m, options, before, graph, &out));
  PF_RETURN_IF_ERROR(ImportSignatures(m, options, *graph, &out));
  if (!out.variables.empty()) {
    const int keep =
        m.has_saver_def() && m.saver_def().max_to_keep() > 0 ? m.saver_def().max_to_keep() : 5;
    try {
      out.saver = std::make_unique<Saver>(graph, out.variables, keep);
    } catch (const Error& e) {
      return e.status();
    }
  }
  return out;
}

ImportedMetaGraph ImportMetaGraph(const std::string& path, Graph* graph,
                                  const ImportGraphDefOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) ThrowIfError(errors::NotFound("cannot open MetaGraph file '", path, "'"));
  std::stringstream ss;
  ss << f.rdbuf();
  auto m = ImportMetaGraphFromBytes(ss.str(), graph, options, IsTextProtoPath(path));
  if (!m.ok()) {
    ThrowIfError(
        Status(m.status().code(), fmt::format("{} (file '{}')", m.status().message(), path)));
  }
  return std::move(m).value();
}

}  // namespace pf::train
