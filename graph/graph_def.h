// GraphDef export and import: TensorFlow's serialized graph format (io/proto/graph.proto), so a
// graph built in C++ can be saved, opened in TensorBoard or Netron, and loaded again.
//
//   pf::ExportGraphDef(g, "model.pb", sess.DevicePlacement());   // devices as placed
//   pf::Graph g2;
//   pf::ImportGraphDef("model.pb", &g2);                         // same nodes, attrs, devices
//   pf::Session sess2(g2);
//   sess2.RunNamed({{"x", batch}}, {"loss"});
//
// Each NodeDef carries the node's op, inputs ("name", "name:1", then "^ctrl"), attrs and a device:
// the placement's entry for the node when one is given, else its assigned device, else the
// device it requested. Colocation goes into TensorFlow's "_class" attr (["loc:@name"]). A path
// ending in ".pbtxt" is written and read as protobuf text format, any other as binary.
// Only built with protobuf (PF_WITH_PROTOBUF); docs/observability.md says what importing a
// TensorFlow-written GraphDef supports.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"
#include "placeflow/graph/graph.h"

namespace tensorflow {
class GraphDef;
}  // namespace tensorflow

namespace pf {

// The graph as a serialized GraphDef (binary). InvalidArgument for an attr value GraphDef has no
// form for.
// Whether `path` ends in ".pbtxt": GraphDef and MetaGraphDef files in protobuf text format.
bool IsTextProtoPath(const std::string& path);
StatusOr<std::string> SerializeGraphDef(const Graph& graph,
                                        const std::map<std::string, std::string>& placement = {});
// The same in protobuf text format (what TensorFlow's tf.io.write_graph(as_text=True) writes).
StatusOr<std::string> GraphDefText(const Graph& graph,
                                   const std::map<std::string, std::string>& placement = {});

struct ImportGraphDefOptions {
  // Prepended to every imported node name ("imported" makes "x" into "imported/x") and to the
  // frame names of imported loops (an Enter's frame_name), so each import's loops are its own.
  std::string prefix;
  // Attrs the op's schema does not declare (TensorFlow-written files carry some placeflow's ops
  // lack, such as MatMul's grad_a) are dropped; false makes them an error.
  bool drop_unknown_attrs = true;
  // The NodeDef's device becomes the node's requested device (as in TensorFlow); false ignores
  // devices.
  bool import_devices = true;
};

// Adds the nodes of a serialized GraphDef (binary, or text when `text`) to `graph`, in an order
// where each node follows its inputs. Every op must be registered; errors name the node, the op
// and the attr or input at fault. While loops import (graph/graph_def_loops.h): a loop's back
// edge (NextIteration -> Merge) is wired once every node is in, and a loop's Merge gets the
// shape its Enter and its NextIteration agree on (docs/control_flow.md); any other cycle is
// InvalidArgument naming a node on it. With a `prefix`, Enter's frame_name gets it too.
Status ImportGraphDefFromBytes(std::string_view bytes, Graph* graph,
                               const ImportGraphDefOptions& options = {}, bool text = false);

// The same from a parsed GraphDef (a MetaGraphDef's graph_def). TensorFlow's ops that placeflow
// has under other names are rewritten first (graph/graph_def_tf.h: AddV2, resource variables,
// reductions with an axes input, IdentityN). Imported variables join the graph's "variables"
// collection, floating-point ones also "trainable_variables", so GlobalVariables(&g) and a
// Saver see them.
Status ImportGraphDefProto(tensorflow::GraphDef def, Graph* graph,
                           const ImportGraphDefOptions& options = {});

// The public forms: throw pf::Error (NotFound / DataLoss naming the file for I/O and parse
// failures).
void ExportGraphDef(const Graph& graph, const std::string& path,
                    const std::map<std::string, std::string>& placement = {});
void ImportGraphDef(const std::string& path, Graph* graph,
                    const ImportGraphDefOptions& options = {});

// A placed graph exactly, as a master ships a partition to a task: `nodes` (each input of theirs
// must be among them; control inputs from other nodes are left out, as an executor ignores
// them), each with its op, attrs, assigned device, and its output dtypes and shapes (attrs
// "_output_types" and "_output_shapes"), so the task rebuilds it without inference or placement.
Status PlacedGraphToProto(const std::vector<const Node*>& nodes, tensorflow::GraphDef* def);
// Rebuilds a placed graph (in any node order; while loops' back edges are wired last, as on
// import). Errors name the node and the op, e.g. an op this build does not have; malformed input
// (a missing input, a cycle that is not a loop's back edge, bad dtypes) is an error, never a
// crash.
StatusOr<std::unique_ptr<Graph>> PlacedGraphFromProto(const tensorflow::GraphDef& def);

// "node:index" (or "node", index 0) in `graph`; InvalidArgument when malformed or absent.
StatusOr<Output> FindOutput(const Graph& graph, const std::string& name);

}  // namespace pf
