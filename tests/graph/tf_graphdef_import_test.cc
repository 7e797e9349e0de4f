// GraphDefs written by TensorFlow 2.x (tests/data/make_tf_graphdef_fixtures.py, tensorflow-cpu
// 2.21, tf.compat.v1 graphs) import and compute TensorFlow's outputs on the same inputs
// (tests/data/tf_graphdefs/expected.json): AddV2, reductions with an axes input, resource and
// reference variables, IdentityN, StopGradient, NoOp, Const of every dtype placeflow has.
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <variant>

#include "placeflow/graph/graph_def.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tf_fixture.h"

namespace pf::tf_graphdef_import_test {
namespace {

using Catch::Matchers::Contains;

using testing::Json;
using testing::JsonParser;

using testing::CheckEqualsTf;
using testing::Expected;
using testing::FeedOf;
using testing::FixturePath;

// The name our graph gives TF's tensor: an IdentityN's output i > 0 is "<name>/output_<i>".
std::string OurName(const std::string& tf_name) {
  return tf_name == "pair:1" ? "pair/output_1:0" : tf_name;
}

// Imports `name`.pb, runs its "init" and every fetch with TF's feeds; checks TF's values.
void CheckAgainstTf(const std::string& name) {
  const Json& e = Expected()[name];
  Graph g;
  ImportGraphDef(FixturePath(name + ".pb"), &g);
  Session sess(g);
  if (!e["init"].str().empty()) sess.RunNamed({}, {}, {e["init"].str()});
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [feed, value] : e["feeds"].object()) feeds.emplace_back(feed, FeedOf(value));
  std::vector<std::string> fetches;
  for (const auto& [fetch, value] : e["fetches"].object()) fetches.push_back(OurName(fetch));
  std::vector<Tensor> got = sess.RunNamed(feeds, fetches);
  size_t k = 0;
  for (const auto& [fetch, value] : e["fetches"].object()) CheckEqualsTf(fetch, got[k++], value);
}

TEST_CASE("TF-written MLP with resource variables imports and gives TF's outputs",
          "[graph_def][tf_fixture]") {
  CheckAgainstTf("mlp_resource");
}

TEST_CASE("TF-written MLP with reference variables imports and gives TF's outputs",
          "[graph_def][tf_fixture]") {
  CheckAgainstTf("mlp_ref");
}

TEST_CASE("TF-written conv net imports and gives TF's outputs", "[graph_def][tf_fixture]") {
  CheckAgainstTf("convnet");
}

TEST_CASE("TF-written Consts of every placeflow dtype import with TF's values",
          "[graph_def][tf_fixture]") {
  CheckAgainstTf("consts");
}

TEST_CASE("A TF Const of a dtype placeflow lacks is an error naming the node and the dtype",
          "[graph_def][tf_fixture]") {
  Graph g;
  try {
    ImportGraphDef(FixturePath("consts_unsupported.pb"), &g);
    FAIL("import succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnimplemented);
    CHECK_THAT(e.what(), Contains("(op: 'Const')") && Contains("is not supported by placeflow"));
    CHECK_THAT(e.what(), Contains("c_int8") || Contains("c_int16") || Contains("c_uint16"));
  }
}

TEST_CASE("Unnamed nodes take TensorFlow's default names", "[graph][tf_fixture]") {
  std::map<std::string, std::string> tf_ops;  // TF's own MLP: name -> op
  for (const Json& n : Expected()["mlp_ref"]["nodes"].array())
    tf_ops[n.array()[0].str()] = n.array()[1].str();
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 8});
  Output w = ops::Const(root, testing::RandomTensor({8, 8}, 1));
  Output mm = ops::MatMul(root, x, w);
  Output add = ops::Add(root, mm, w);
  Output relu = ops::Relu(root, add);
  Output mm1 = ops::MatMul(root, relu, w);
  Output sg = ops::StopGradient(root, mm1);
  Output mul = ops::Mul(root, sg, w);
  // The same names as TensorFlow's graph of the same model (expected.json), op for op.
  for (auto [out, name, tf_op] : {std::tuple{mm, "MatMul", "MatMul"},
                                  {add, "add", "AddV2"},
                                  {relu, "Relu", "Relu"},
                                  {mm1, "MatMul_1", "MatMul"},
                                  {sg, "StopGradient", "StopGradient"},
                                  {mul, "mul", "Mul"}}) {
    CHECK(out.node->name() == name);
    CHECK(tf_ops.at(name) == tf_op);
  }
  // TF's Python names for the other operators (a - b, a / b, a ** b, tf.concat, tf.transpose).
  CHECK(ops::Sub(root, x, x).node->name() == "sub");
  CHECK(ops::Div(root, x, x).node->name() == "truediv");
  CHECK(ops::Pow(root, x, x).node->name() == "pow");
  CHECK(ops::Concat(root, {x, x}, 0).node->name() == "concat");
  CHECK(ops::Transpose(root, x, {1, 0}).node->name() == "transpose");
  CHECK(ops::Add(root, x, x).node->name() == "add_1");
  CHECK(ops::Neg(root, x).node->name() == "Neg");
}

TEST_CASE("A TF GraphDef's variables are listed and restored after import",
          "[graph_def][tf_fixture]") {
  for (const char* name : {"mlp_resource", "mlp_ref"}) {
    INFO(name);
    Graph g;
    ImportGraphDef(FixturePath(std::string(name) + ".pb"), &g);
    std::vector<Variable> vars = GlobalVariables(&g);
    REQUIRE(vars.size() == 4);
    CHECK(TrainableVariables(&g).size() == 4);
    CHECK(vars[0].name() == "dense0/kernel");
    CHECK(vars[0].shape() == Shape({8, 16}));
    CHECK(vars[0].initializer().node->name() == "dense0/kernel/Assign");
    CHECK(vars[0].value().node->name() == (std::string(name) == "mlp_ref"
                                               ? "dense0/kernel/read"
                                               : "dense0/kernel/Read/ReadVariableOp"));
    // GlobalVariablesInitializer gives TF's initial values (Consts): TF's outputs follow.
    Session sess(g);
    sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&g))});
    const Json& e = Expected()[name];
    Tensor probs = sess.RunNamed({{"x:0", FeedOf(e["feeds"]["x:0"])}}, {"probs:0"})[0];
    CheckEqualsTf("probs:0", probs, e["fetches"]["probs:0"]);
  }
}

// A Sum whose axes are a Placeholder, a VarIsInitializedOp that a node uses, and a Sum over
// TF's empty axes list.
constexpr char kAxesFromPlaceholder[] = R"pb(
  node {
    name: "x"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "a"
    op: "Placeholder"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
  }
  node {
    name: "Sum"
    op: "Sum"
    input: "x"
    input: "a"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
    attr {
      key: "Tidx"
      value { type: DT_INT32 }
    }
    attr {
      key: "keep_dims"
      value { b: false }
    }
  })pb";
constexpr char kUsedVarIsInitialized[] = R"pb(
  node {
    name: "v"
    op: "VarHandleOp"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "shape"
      value { shape { dim { size: 2 } } }
    }
  }
  node { name: "init" op: "VarIsInitializedOp" input: "v" }
  node {
    name: "use"
    op: "Identity"
    input: "init"
    attr {
      key: "T"
      value { type: DT_BOOL }
    }
  })pb";
constexpr char kEmptyAxes[] = R"pb(
  node {
    name: "x"
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
          tensor_shape { dim { size: 2 } }
          float_val: 1
          float_val: 2
        }
      }
    }
  }
  node {
    name: "ax"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape { dim { size: 0 } }
        }
      }
    }
  }
  node {
    name: "Sum"
    op: "Sum"
    input: "x"
    input: "ax"
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  })pb";

TEST_CASE("TF reduction axes that are not a Const are an error naming the node", "[graph_def]") {
  Graph g;
  Status s = ImportGraphDefFromBytes(kAxesFromPlaceholder, &g, {}, /*text=*/true);
  CHECK(s.code() == Code::kUnimplemented);
  CHECK_THAT(s.message(), Contains("'Sum' (op: 'Sum')") && Contains("must come from a Const"));
}

TEST_CASE("A TF VarIsInitializedOp in use is an error naming it and its user", "[graph_def]") {
  Graph g;
  Status s = ImportGraphDefFromBytes(kUsedVarIsInitialized, &g, {}, /*text=*/true);
  CHECK(s.code() == Code::kUnimplemented);
  CHECK_THAT(s.message(), Contains("'init' (op: 'VarIsInitializedOp')") && Contains("'use'"));
}

TEST_CASE("A TF reduction over no axes imports as an Identity", "[graph_def]") {
  Graph g;
  ThrowIfError(ImportGraphDefFromBytes(kEmptyAxes, &g, {}, /*text=*/true));
  CHECK(g.FindNode("Sum")->op() == "Identity");
  Session sess(g);
  Tensor got = sess.RunNamed({}, {"Sum"})[0];
  CHECK(got.shape() == Shape({2}));
  CHECK(got.flat<float>()[1] == 2.f);
}

}  // namespace
}  // namespace pf::tf_graphdef_import_test
