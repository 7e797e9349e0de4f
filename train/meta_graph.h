// MetaGraph export and import (tf.train.export_meta_graph / tf.train.import_meta_graph): the
// GraphDef with what a program needs to go on with it: the variables (with their read and
// initializer ops), the train op, losses, summaries and update ops, the Saver's settings and
// named signatures of inputs and outputs. The file is TensorFlow's MetaGraphDef
// (io/proto/meta_graph.proto, TensorFlow's field numbers), binary, or text for a ".pbtxt" path.
//
//   // Training process: export once, checkpoint as usual.
//   pf::Saver saver(&g);
//   g.AddToCollection(pf::train::kTrainOp, train_op.node);
//   pf::train::ExportMetaGraphOptions opt;
//   opt.saver = &saver;
//   opt.signatures["serving_default"] = {{{"x", x}}, {{"probs", probs}}};
//   pf::train::ExportMetaGraph("ckpt/model.meta", g, opt);
//   saver.Save(sess, "ckpt/model", step);
//
//   // A fresh process: rebuild, restore, then train on or serve.
//   pf::Graph g2;
//   pf::train::ImportedMetaGraph m = pf::train::ImportMetaGraph("ckpt/model.meta", &g2);
//   pf::Session sess(g2);
//   m.saver->Restore(sess, pf::Saver::LatestCheckpoint("ckpt"));
//   sess.Run({}, {}, {m.train_op()});
//   const pf::train::Signature& sig = m.signatures.at("serving_default");
//   sess.Run({{sig.inputs.at("x"), batch}}, {sig.outputs.at("probs")});
//
// Collections: "variables", "trainable_variables" and "local_variables" are written as
// TensorFlow writes them (serialized VariableDefs: the variable, its snapshot and initializer);
// "train_op", "losses", "summaries", "update_ops" and any key in `collections` as node lists
// ("name:0" for a tensor, "name" for an op). The SaverDef carries the Saver's max_to_keep (its
// tensor and op names are empty: placeflow's checkpoints are safetensors files, restored by
// pf::Saver, not by TensorFlow's save/restore ops).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placeflow/graph/graph_def.h"
#include "placeflow/train/saver.h"

namespace pf::train {

// The collection of train ops (TensorFlow's tf.GraphKeys.TRAIN_OP).
inline constexpr char kTrainOp[] = "train_op";

// Named inputs and outputs of a graph (TensorFlow's SignatureDef).
struct Signature {
  std::map<std::string, Output> inputs;
  std::map<std::string, Output> outputs;
  std::string method_name = "tensorflow/serving/predict";
};

struct ExportMetaGraphOptions {
  // Its max_to_keep goes into the SaverDef; null: no SaverDef.
  const Saver* saver = nullptr;
  // By key ("serving_default" is TensorFlow Serving's).
  std::map<std::string, Signature> signatures;
  std::vector<std::string> tags;
  // Collections exported beside the standard ones (node lists).
  std::vector<std::string> collections;
  // The devices nodes carry (as ExportGraphDef's `placement`).
  std::map<std::string, std::string> placement;
};

// The MetaGraphDef, serialized (binary, or protobuf text when `text`). InvalidArgument for an
// attr value GraphDef has no form for.
StatusOr<std::string> SerializeMetaGraph(Graph& graph, const ExportMetaGraphOptions& options = {},
                                         bool text = false);
// Writes it to `path` (text for ".pbtxt"). Throws pf::Error.
void ExportMetaGraph(const std::string& path, Graph& graph,
                     const ExportMetaGraphOptions& options = {});

struct ImportedMetaGraph {
  // A Saver over the MetaGraph's global variables, with its max_to_keep; null when the graph
  // has no variables (TensorFlow returns None then).
  std::unique_ptr<Saver> saver;
  std::vector<Variable> variables;            // "variables", in order
  std::vector<Variable> trainable_variables;  // "trainable_variables"
  // Every node-list collection, by key ("train_op", "losses", ...): set in the graph too.
  std::map<std::string, std::vector<Output>> collections;
  std::map<std::string, Signature> signatures;
  std::vector<std::string> tags;
  // The first of "train_op" (a null Operation when there is none).
  Operation train_op() const;
  // "losses".
  std::vector<Output> losses() const;
};

// Adds the MetaGraph's nodes to `graph` (with options.prefix before every name) and restores its
// collections and variables, so GlobalVariables(graph), TrainableVariables(graph) and
// graph->GetCollection(key) give what the exporting graph had. Throws pf::Error: NotFound for a
// missing file, DataLoss for one that does not parse, InvalidArgument for a collection or
// signature naming a tensor the graph lacks; import errors as ImportGraphDef's.
ImportedMetaGraph ImportMetaGraph(const std::string& path, Graph* graph,
                                  const ImportGraphDefOptions& options = {});
// The same from the bytes of a MetaGraphDef (binary, or text when `text`).
StatusOr<ImportedMetaGraph> ImportMetaGraphFromBytes(std::string_view bytes, Graph* graph,
                                                     const ImportGraphDefOptions& options = {},
                                                     bool text = false);

}  // namespace pf::train
