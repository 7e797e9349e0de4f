// A cluster task's graph decoding from network bytes: a serialized GraphDef as a master ships a
// partition (graph/graph_def.h PlacedGraphFromProto). Errors are fine; a crash, a hang or a
// sanitizer report is a bug. What decodes must encode and decode again to the same graph.
#include <cstddef>
#include <cstdint>

#include "placeflow/graph/graph_def.h"
#include "placeflow/io/proto/graph.pb.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tensorflow::GraphDef def;
  if (!def.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto graph = pf::PlacedGraphFromProto(def);
  if (!graph.ok()) return 0;
  CHECK((*graph)->num_nodes() == def.node_size());
  std::vector<const pf::Node*> nodes((*graph)->nodes().begin(), (*graph)->nodes().end());
  tensorflow::GraphDef again;
  if (!pf::PlacedGraphToProto(nodes, &again).ok()) return 0;  // an attr GraphDef cannot hold
  auto back = pf::PlacedGraphFromProto(again);
  CHECK(back.ok());
  CHECK((*back)->num_nodes() == (*graph)->num_nodes());
  for (const pf::Node* n : nodes) {
    const pf::Node* b = (*back)->FindNode(n->name());
    CHECK(b != nullptr);
    CHECK(b->op() == n->op() && b->num_inputs() == n->num_inputs());
    CHECK(b->num_outputs() == n->num_outputs() && b->assigned_device() == n->assigned_device());
    for (int i = 0; i < n->num_inputs(); ++i) CHECK(b->input(i).name() == n->input(i).name());
    for (int i = 0; i < n->num_outputs(); ++i) {
      CHECK(pf::FindOutput(**back, n->name() + ":" + std::to_string(i)).ok());
      CHECK(b->output_dtype(i) == n->output_dtype(i) && b->output_shape(i) == n->output_shape(i));
    }
  }
  return 0;
}
