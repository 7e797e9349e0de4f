// GraphDef export and import (graph/graph_def.h): placeflow graphs round-trip with their ops,
// inputs, attrs, colocation and assigned devices and compute the same values; a GraphDef written
// the way TensorFlow writes one imports; bad files give errors naming the node and the op.
#include "placeflow/graph/graph_def.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "placeflow/io/proto/graph.pb.h"
#include "tests/testing/test_util.h"

namespace pf::graph_def_test {
namespace {

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// x -> MatMul(x, w on /cpu:1) -> Relu; AddN over a list; Split's second output; a control edge.
struct Model {
  Graph g;
  Output x, s, q;
  Operation init, after;
  Model() {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 3});
    Scope c1 = root.WithDevice("/cpu:1");
    Output w = ops::Variable(c1.WithOpName("w"), {3, 2}, DT_FLOAT);
    init = ops::Assign(
        c1.WithOpName("w/Assign"), w,
        ops::Const(c1.WithOpName("w/init"), {1.f, -2.f, 3.f, 0.5f, -1.f, 2.f}, Shape{3, 2}));
    Output read = ops::Identity(c1.ColocateWith(w).WithOpName("w/read"), w);
    Output y = ops::MatMul(root.WithOpName("y"), x, read);
    Output z = ops::Relu(root.WithOpName("z"), y);
    s = ops::AddN(root.WithOpName("s"), {z, z, y});
    std::vector<Output> parts = ops::Split(root.WithOpName("split"), y, 1, 2);
    q = ops::Mul(root.WithOpName("q"), parts[0], parts[1]);
    after = ops::NoOp(root.WithOpName("after").WithControlDependencies({s}));
  }
};

SessionOptions TwoCpus() {
  SessionOptions o;
  o.device_count["CPU"] = 2;
  return o;
}

TEST_CASE("GraphDef round-trip keeps nodes, attrs and assigned devices, and computes the same",
          "[graph_def]") {
  Model m;
  Session sess(m.g, TwoCpus());
  sess.Run({}, {}, {m.init});
  const Tensor x = testing::RandomTensor({4, 3}, 7);
  std::vector<Tensor> want = sess.Run({{m.x, x}}, {m.s, m.q}, {m.after});
  const auto placement = sess.DevicePlacement();
  REQUIRE(placement.at("w") == "/job:localhost/replica:0/task:0/device:CPU:1");

  const fs::path path = fs::temp_directory_path() / fmt::format("pf_graphdef_{}.pb", getpid());
  ExportGraphDef(m.g, path.string(), placement);

  // The file as TensorFlow reads it: "name:1" and "^name" inputs, devices, the _class attr.
  tensorflow::GraphDef def;
  REQUIRE(def.ParseFromString(ReadFile(path)));
  REQUIRE(def.node_size() == m.g.num_nodes());
  std::map<std::string, const tensorflow::NodeDef*> by_name;
  for (const auto& n : def.node()) by_name[n.name()] = &n;
  const tensorflow::NodeDef& q = *by_name.at("q");
  REQUIRE(q.input_size() == 2);
  CHECK(q.input(0) == "split");
  CHECK(q.input(1) == "split:1");
  const tensorflow::NodeDef& after = *by_name.at("after");
  REQUIRE(after.input_size() == 1);
  CHECK(after.input(0) == "^s");
  CHECK(by_name.at("w")->device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(by_name.at("w/read")->attr().at("_class").list().s(0) == "loc:@w");
  CHECK(by_name.at("y")->attr().at("T").type() == tensorflow::DT_FLOAT);
  CHECK(by_name.at("x")->attr().at("shape").shape().dim(0).size() == -1);
  CHECK(by_name.at("x")->attr().at("shape").shape().dim(1).size() == 3);
  CHECK(by_name.at("s")->attr().at("N").i() == 3);

  Graph g2;
  ImportGraphDef(path.string(), &g2);
  fs::remove(path);
  REQUIRE(g2.num_nodes() == m.g.num_nodes());
  for (const Node* n : m.g.nodes()) {
    INFO(n->name());
    const Node* n2 = g2.FindNode(n->name());
    REQUIRE(n2 != nullptr);
    CHECK(n2->op() == n->op());
    // Where the session placed it; a fed node (x) is never placed and keeps what it asked for.
    const auto placed = placement.find(n->name());
    CHECK(n2->requested_device() ==
          (placed != placement.end() ? placed->second : n->requested_device()));
    REQUIRE(n2->num_inputs() == n->num_inputs());
    for (int i = 0; i < n->num_inputs(); ++i) CHECK(n2->input(i).name() == n->input(i).name());
    REQUIRE(n2->control_inputs().size() == n->control_inputs().size());
    CHECK(n2->colocation_group() == n->colocation_group());
    REQUIRE(n2->attrs().size() == n->attrs().size());
    for (const auto& [k, v] : n->attrs())
      CHECK(AttrValueToString(n2->attrs().at(k)) == AttrValueToString(v));
  }
  Session sess2(g2, TwoCpus());
  sess2.RunNamed({}, {}, {"w/Assign"});
  std::vector<Tensor> got = sess2.RunNamed({{"x", x}}, {"s", "q"}, {"after"});
  CHECK(got[0].BitwiseEqual(want[0]));
  CHECK(got[1].BitwiseEqual(want[1]));
  // The imported graph asks for the devices it was placed on, so it is placed the same way.
  for (const auto& [name, device] : sess2.DevicePlacement()) {
    if (placement.count(name)) CHECK(device == placement.at(name));
  }
}

TEST_CASE("GraphDef text format round-trips (.pbtxt)", "[graph_def]") {
  Model m;
  const fs::path path = fs::temp_directory_path() / fmt::format("pf_graphdef_{}.pbtxt", getpid());
  ExportGraphDef(m.g, path.string());
  const std::string text = ReadFile(path);
  CHECK_THAT(text, Contains("name: \"split\""));
  CHECK_THAT(text, Contains("input: \"split:1\""));
  CHECK_THAT(text, Contains("device: \"/device:CPU:1\""));  // requested, not placed
  Graph g2;
  ImportGraphDef(path.string(), &g2);
  fs::remove(path);
  CHECK(g2.num_nodes() == m.g.num_nodes());
  CHECK(g2.FindNode("w")->requested_device() == "/device:CPU:1");
}

// What TensorFlow 1.x writes for y = relu(a @ b): nodes out of order, a Const broadcast from one
// float_val, attrs placeflow's ops do not have (grad_a, _output_shapes).
constexpr char kTfGraph[] = R"pb(
  node {
    name: "r"
    op: "Relu"
    input: "m"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "m"
    op: "MatMul"
    input: "a"
    input: "b"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
    attr {
      key: "transpose_a"
      value { b: false }
    }
    attr {
      key: "transpose_b"
      value { b: false }
    }
    attr {
      key: "grad_a"
      value { b: false }
    }
    attr {
      key: "_output_shapes"
      value {
        list {
          shape {
            dim { size: -1 }
            dim { size: 2 }
          }
        }
      }
    }
  }
  node {
    name: "a"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value {
        shape {
          dim { size: -1 }
          dim { size: 2 }
        }
      }
    }
  }
  node {
    name: "b"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {
            dim { size: 2 }
            dim { size: 2 }
          }
          float_val: 0.5
        }
      }
    }
  }
  versions { producer: 134 }
)pb";

TEST_CASE("A GraphDef written as TensorFlow writes it imports and runs", "[graph_def]") {
  Graph g;
  ThrowIfError(ImportGraphDefFromBytes(kTfGraph, &g, {}, /*text=*/true));
  Session sess(g);
  Tensor a = Tensor::FromVector<float>({1, 2, 3, -4}, {2, 2});
  Tensor r = sess.RunNamed({{"a", a}}, {"r"})[0];
  // a @ [[.5,.5],[.5,.5]] = [[1.5,1.5],[-.5,-.5]]; relu.
  CHECK(r.ToVector<float>() == std::vector<float>{1.5f, 1.5f, 0.f, 0.f});
  // With a prefix, twice into one graph.
  ImportGraphDefOptions o;
  o.prefix = "copy";
  ThrowIfError(ImportGraphDefFromBytes(kTfGraph, &g, o, true));
  CHECK(g.FindNode("copy/m")->input(0).node->name() == "copy/a");
}

TEST_CASE("Bad GraphDefs give errors naming the node, the op and the problem", "[graph_def]") {
  Graph g;
  Status s = ImportGraphDefFromBytes("\xff\xff\xff", &g);
  CHECK(s.code() == Code::kDataLoss);
  s = ImportGraphDefFromBytes(R"pb(node { name: "n" op: "NoSuchOp" })pb", &g, {}, true);
  CHECK(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Contains("'n'") && Contains("NoSuchOp"));
  s = ImportGraphDefFromBytes(R"pb(node { name: "r" op: "Relu" input: "gone:0" })pb", &g, {}, true);
  CHECK(s.code() == Code::kNotFound);
  CHECK_THAT(s.message(), Contains("gone:0"));
  ImportGraphDefOptions strict;
  strict.drop_unknown_attrs = false;
  Graph g2;
  s = ImportGraphDefFromBytes(kTfGraph, &g2, strict, true);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("grad_a") && Contains("'m'") && Contains("MatMul"));
  CHECK_THROWS_WITH(ImportGraphDef("/nonexistent/g.pb", &g2), Contains("/nonexistent/g.pb"));
  Graph g3;
  s = ImportGraphDefFromBytes(
      R"pb(node {
             name: "a"
             op: "Identity"
             input: "b"
             attr {
               key: "T"
               value { type: DT_FLOAT }
             }
           }
           node {
             name: "b"
             op: "Identity"
             input: "a"
             attr {
               key: "T"
               value { type: DT_FLOAT }
             }
           })pb",
      &g3, {}, true);
  CHECK_THAT(s.message(), Contains("cycle"));
}

}  // namespace
}  // namespace pf::graph_def_test
