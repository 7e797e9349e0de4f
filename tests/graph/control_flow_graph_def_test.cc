// Control flow through GraphDef (issue 35): graphs with conds and while loops (a loop's back
// edge NextIteration -> Merge makes a cycle) export, import and compute the same; TensorFlow
// 2.x's tf.compat.v1 cond and while_loop GraphDefs (control flow v1, tests/data/tf_graphdefs,
// made by tests/data/make_tf_graphdef_fixtures.py) import and give TensorFlow's outputs; placed
// partitions with loops cross the cluster wire; other cycles are errors naming a node on them.
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "placeflow/devices/device.h"
#include "placeflow/executor/prepared_step.h"
#include "placeflow/graph/graph_def.h"
#include "placeflow/io/proto/graph.pb.h"
#include "tests/testing/test_util.h"
#include "tests/testing/tf_fixture.h"

namespace pf::control_flow_graph_def_test {
namespace {

using Catch::Matchers::Contains;
using Vars = std::vector<Output>;

// n (int32), x (float [3]), p (bool) ->
//   loop_sum    = sum over i < n of i * x                  (parallel_iterations 1)
//   cond_out    = p ? 2x : -x
//   nested_sum  = s over i < n, s = 1: inner = sum over j <= i of j;
//                 s = i < 2 ? s + inner * x : s - x         (a loop in a loop, a cond in a loop)
//   grown       = [7, 0, 1, ..., n-1]                       (a shape invariant [-1])
//   capped      = x * 2^n                                   (maximum_iterations n)
//   counted     = n, adding 1 to the variable "counter" per iteration (a reference in a loop)
struct Model {
  Graph g;
  Output n, x, p, loop_sum, cond_out, nested_sum, grown, capped, counted, counter;
  Operation init;
  Model() {
    Scope root = Scope::Root(&g);
    n = ops::Placeholder(root.WithOpName("n"), DT_INT32, {});
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {3});
    p = ops::Placeholder(root.WithOpName("p"), DT_BOOL, {});
    auto below_n = [&](const Scope& s, const Vars& v) { return ops::Less(s, v[0], n); };
    auto one = [](const Scope& s) { return ops::ConstInt(s, 1); };
    ops::WhileOptions serial;
    serial.parallel_iterations = 1;
    loop_sum = ops::WhileLoop(
        root.WithOpName("sum_loop"), below_n,
        [&](const Scope& s, const Vars& v) {
          return Vars{ops::Add(s, v[0], one(s)),
                      ops::Add(s, v[1], ops::Mul(s, ops::Cast(s, v[0], DT_FLOAT), x))};
        },
        {ops::ConstInt(root, 0), ops::Const(root, {0.f, 0.f, 0.f}, Shape{3})}, serial)[1];
    cond_out = ops::Cond(
        root.WithOpName("branch"), p,
        [&](const Scope& s) { return Vars{ops::Mul(s, x, ops::Const(s, 2.f))}; },
        [&](const Scope& s) { return Vars{ops::Neg(s, x)}; })[0];
    nested_sum = ops::WhileLoop(
        root.WithOpName("outer"), below_n,
        [&](const Scope& s, const Vars& v) {
          Output i = v[0];
          Output inner = ops::WhileLoop(
              s.WithOpName("inner"),
              [&](const Scope& c, const Vars& w) {
                return ops::Less(c, w[0], ops::Add(c, i, one(c)));
              },
              [&](const Scope& b, const Vars& w) {
                return Vars{ops::Add(b, w[0], one(b)),
                            ops::Add(b, w[1], ops::Cast(b, w[0], DT_FLOAT))};
              },
              {ops::ConstInt(s, 0), ops::Const(s, 0.f)})[1];
          Output sum = ops::Cond(
              s, ops::Less(s, i, ops::ConstInt(s, 2)),
              [&](const Scope& b) { return Vars{ops::Add(b, v[1], ops::Mul(b, inner, x))}; },
              [&](const Scope& b) { return Vars{ops::Sub(b, v[1], x)}; })[0];
          return Vars{ops::Add(s, i, one(s)), sum};
        },
        {ops::ConstInt(root, 0), ops::Const(root, {1.f, 1.f, 1.f}, Shape{3})})[1];
    ops::WhileOptions grow;
    grow.shape_invariants = {Shape{}, Shape{-1}};
    grown = ops::WhileLoop(
        root.WithOpName("grow"), below_n,
        [&](const Scope& s, const Vars& v) {
          return Vars{ops::Add(s, v[0], one(s)),
                      ops::Concat(s, {v[1], ops::Reshape(s, v[0], {1})}, 0)};
        },
        {ops::ConstInt(root, 0), ops::ConstInt(root, std::vector<int32_t>{7})}, grow)[1];
    BuildCappedAndCounted(root);
  }
  void BuildCappedAndCounted(const Scope& root) {
    ops::WhileOptions capped_options;
    capped_options.maximum_iterations = n;
    capped = ops::WhileLoop(
        root.WithOpName("capped"),
        [](const Scope& s, const Vars&) { return ops::Const(s, Tensor::Scalar<bool>(true)); },
        [](const Scope& s, const Vars& v) { return Vars{ops::Mul(s, v[0], ops::Const(s, 2.f))}; },
        {x}, capped_options)[0];
    counter = ops::Variable(root.WithOpName("counter"), Shape{}, DT_FLOAT);
    init = ops::Assign(root.WithOpName("counter/init"), counter, ops::Const(root, 0.f));
    counted = ops::WhileLoop(
        root.WithOpName("count"),
        [&](const Scope& s, const Vars& v) {
          return ops::Less(s, v[0], ops::Cast(s, n, DT_FLOAT));
        },
        [&](const Scope& s, const Vars& v) {
          Output c = ops::AssignAdd(s, counter, ops::Const(s, 1.f));
          return Vars{ops::Add(s, v[0], ops::Div(s, c, c))};
        },
        {ops::Const(root, 0.f)})[0];
  }
  std::vector<std::string> Fetches() const {
    return {loop_sum.name(), cond_out.name(), nested_sum.name(),
            grown.name(),    capped.name(),   counted.name()};
  }
};

// The same as plain C++ loops.
std::vector<Tensor> Reference(int n, const std::vector<float>& x, bool p) {
  std::vector<float> loop_sum(3, 0.f), cond_out(3), nested(3, 1.f), capped(x);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) loop_sum[k] += static_cast<float>(i) * x[k];
  for (int k = 0; k < 3; ++k) cond_out[k] = p ? 2.f * x[k] : -x[k];
  for (int i = 0; i < n; ++i) {
    float inner = 0.f;
    for (int j = 0; j <= i; ++j) inner += static_cast<float>(j);
    for (int k = 0; k < 3; ++k) nested[k] = i < 2 ? nested[k] + inner * x[k] : nested[k] - x[k];
  }
  std::vector<int32_t> grown = {7};
  for (int i = 0; i < n; ++i) grown.push_back(i);
  for (int i = 0; i < n; ++i)
    for (float& v : capped) v *= 2.f;
  return {Tensor::FromVector<float>(loop_sum, {3}),
          Tensor::FromVector<float>(cond_out, {3}),
          Tensor::FromVector<float>(nested, {3}),
          Tensor::FromVector<int32_t>(grown, {static_cast<int64_t>(grown.size())}),
          Tensor::FromVector<float>(capped, {3}),
          Tensor::Scalar<float>(static_cast<float>(n))};
}

// Runs the model's fetches in `g` (built by Model, or imported from it, names prefixed by
// `prefix`) for several feeds; checks them against Reference (floats within 1e-5 relative: the
// same float operations in the same order give the same values) and the counter variable.
void CheckRuns(Graph& g, const Model& names, const std::string& prefix = "") {
  auto name = [&](const std::string& s) { return prefix.empty() ? s : prefix + "/" + s; };
  std::vector<std::string> fetches;
  for (const std::string& f : names.Fetches()) fetches.push_back(name(f));
  Session sess(g);
  sess.RunNamed({}, {}, {name("counter/init")});
  const std::vector<float> x = {1.5f, -2.f, 0.25f};
  float count = 0.f;
  for (auto [n, p] :
       std::vector<std::pair<int, bool>>{{0, true}, {1, false}, {4, true}, {7, false}}) {
    INFO("n = " << n << ", p = " << p);
    std::vector<Tensor> got = sess.RunNamed({{name("n"), Tensor::Scalar<int32_t>(n)},
                                             {name("x"), Tensor::FromVector<float>(x, {3})},
                                             {name("p"), Tensor::Scalar<bool>(p)}},
                                            fetches);
    std::vector<Tensor> want = Reference(n, x, p);
    for (size_t k = 0; k < want.size(); ++k) {
      INFO(fetches[k] << ": " << got[k].DebugString() << " want " << want[k].DebugString());
      REQUIRE(got[k].shape() == want[k].shape());
      for (int64_t e = 0; e < want[k].num_elements(); ++e) {
        if (want[k].dtype() == DT_INT32)
          CHECK(got[k].flat<int32_t>()[e] == want[k].flat<int32_t>()[e]);
        else
          CHECK(got[k].flat<float>()[e] == Approx(want[k].flat<float>()[e]).epsilon(1e-5));
      }
    }
    count += static_cast<float>(n);
    CHECK(sess.RunNamed({}, {name("counter")})[0].scalar<float>() == count);
  }
}

TEST_CASE("Conds and nested while loops round-trip through GraphDef and compute the same",
          "[graph_def][control_flow]") {
  Model m;
  CheckRuns(m.g, m);
  const std::string bytes = SerializeGraphDef(m.g).value();
  // What the file holds: Enter's frame, is_constant and parallel_iterations; Merge's N and T;
  // a loop's Merge takes its NextIteration second.
  tensorflow::GraphDef def;
  REQUIRE(def.ParseFromString(bytes));
  int enters = 0, back_edges = 0;
  for (const tensorflow::NodeDef& nd : def.node()) {
    INFO(nd.name() << " (" << nd.op() << ")");
    if (nd.op() == "Enter") {
      ++enters;
      const std::string& frame = nd.attr().at("frame_name").s();
      CHECK((!frame.empty() && nd.name().rfind(frame + "/", 0) == 0));
      CHECK(nd.attr().count("is_constant"));
      CHECK(nd.attr().at("parallel_iterations").i() ==
            (nd.name().rfind("sum_loop/", 0) == 0 ? 1 : 10));
    }
    if (nd.op() == "Merge") {
      CHECK(nd.attr().at("N").i() == nd.input_size());
      CHECK(nd.attr().count("T"));
      if (nd.input_size() == 2 && nd.input(1).find("NextIteration") != std::string::npos)
        ++back_edges;
    }
  }
  int next_iterations = 0;
  for (const Node* n : m.g.nodes())
    next_iterations += n->op_def().control_flow() == ControlFlowKind::kNextIteration;
  CHECK(enters >= 12);
  CHECK(next_iterations == 11);  // the loop variables, capped's hidden counter among them
  CHECK(back_edges == next_iterations);
  // Imported into a fresh graph: the same nodes, inputs (back edges included), attrs and
  // static shapes (the grown vector's Merge is [?] again, not the [1] its Enter gives it).
  Graph g2;
  ThrowIfError(ImportGraphDefFromBytes(bytes, &g2));
  REQUIRE(g2.num_nodes() == m.g.num_nodes());
  for (const Node* n : m.g.nodes()) {
    INFO(n->name() << " (" << n->op() << ")");
    const Node* b = g2.FindNode(n->name());
    REQUIRE(b != nullptr);
    CHECK(b->op() == n->op());
    REQUIRE(b->num_inputs() == n->num_inputs());
    for (int i = 0; i < n->num_inputs(); ++i) CHECK(b->input(i).name() == n->input(i).name());
    CHECK(b->control_inputs().size() == n->control_inputs().size());
    for (const auto& [k, v] : n->attrs())
      CHECK(AttrValueToString(b->attrs().at(k)) == AttrValueToString(v));
    for (int i = 0; i < n->num_outputs(); ++i) CHECK(b->output_shape(i) == n->output_shape(i));
  }
  CHECK(g2.FindNode(m.grown.node->name())->output_shape(0) == Shape{-1});
  CheckRuns(g2, m);
  // Text format too, and twice into one graph with prefixes: each import's loops are frames of
  // their own ("a/sum_loop", "b/sum_loop"), so both run in one step.
  const std::string text = GraphDefText(m.g).value();
  Graph g3;
  for (const char* prefix : {"a", "b"}) {
    ImportGraphDefOptions o;
    o.prefix = prefix;
    ThrowIfError(ImportGraphDefFromBytes(text, &g3, o, /*text=*/true));
  }
  CHECK(g3.FindNode("b/sum_loop/Enter")->attr<std::string>("frame_name") == "b/sum_loop");
  CheckRuns(g3, m, "a");
  Session both(g3);
  auto feeds = [](const std::string& prefix, int n) {
    return std::vector<std::pair<std::string, Tensor>>{
        {prefix + "/n", Tensor::Scalar<int32_t>(n)},
        {prefix + "/x", Tensor::FromVector<float>({1.f, 2.f, 3.f}, {3})},
        {prefix + "/p", Tensor::Scalar<bool>(true)}};
  };
  std::vector<std::pair<std::string, Tensor>> all = feeds("a", 3);
  for (auto& f : feeds("b", 5)) all.push_back(f);
  std::vector<Tensor> got = both.RunNamed(all, {"a/" + m.loop_sum.name(), "b/" + m.loop_sum.name(),
                                                "a/" + m.grown.name(), "b/" + m.grown.name()});
  CHECK(got[0].ToVector<float>() == std::vector<float>{3.f, 6.f, 9.f});     // (0+1+2) x
  CHECK(got[1].ToVector<float>() == std::vector<float>{10.f, 20.f, 30.f});  // (0+..+4) x
  CHECK(got[2].ToVector<int32_t>() == std::vector<int32_t>{7, 0, 1, 2});
  CHECK(got[3].ToVector<int32_t>() == std::vector<int32_t>{7, 0, 1, 2, 3, 4});
}

TEST_CASE("TensorFlow's cond and while_loop GraphDefs (control flow v1) give TF's outputs",
          "[graph_def][control_flow][tf_fixture]") {
  Graph g;
  std::unique_ptr<Session> sess;
  std::set<std::string> ops = testing::CheckAgainstTf("control_flow", &g, &sess);
  for (const char* op : {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})
    CHECK(ops.count(op));
  CHECK(g.FindNode("sum_loop/Enter")->attr<std::string>("frame_name") == "sum_loop/while_context");
  CHECK(g.FindNode("sum_loop/Merge_1")->output_shape(0) == Shape{3});
  CHECK(g.FindNode("grow/Merge_1")->output_shape(0) == Shape{-1});  // its shape invariant
  CHECK(g.FindNode("grown")->output_shape(0) == Shape{-1});
  // Other feeds, against the script's computation as plain C++ loops.
  const std::vector<float> x = {0.5f, -3.f, 2.f};
  for (auto [n, p] : std::vector<std::pair<int, bool>>{{0, false}, {2, true}, {6, false}}) {
    INFO("n = " << n << ", p = " << p);
    std::vector<Tensor> got = sess->RunNamed({{"n", Tensor::Scalar<int32_t>(n)},
                                              {"x", Tensor::FromVector<float>(x, {3})},
                                              {"p", Tensor::Scalar<bool>(p)}},
                                             {"loop_sum", "loop_count", "cond_out", "cond_not_out",
                                              "nested_sum", "capped_out", "grown"});
    std::vector<float> sum(3, 0.f), nested(3, 1.f);
    for (int i = 0; i < n; ++i) {
      float inner = 0.f;
      for (int j = 0; j < i; ++j) inner += static_cast<float>(j + 1);
      for (int k = 0; k < 3; ++k) {
        sum[k] += static_cast<float>(i) * x[k];
        nested[k] = i < 3 ? nested[k] + inner * x[k] : nested[k] - x[k] / 2.f;
      }
    }
    std::vector<int32_t> grown = {7};
    for (int i = 0; i < n; ++i) grown.push_back(i);
    CHECK(got[0].ToVector<float>() == sum);
    CHECK(got[1].scalar<int32_t>() == n);
    for (int k = 0; k < 3; ++k) {
      CHECK(got[2].flat<float>()[k] == (p ? 2.f * x[k] : x[k] - 1.f));
      CHECK(got[3].flat<float>()[k] == (!p ? 2.f * x[k] : x[k] - 1.f));
      CHECK(got[4].flat<float>()[k] == Approx(nested[k]).epsilon(1e-6));
      CHECK(got[5].flat<float>()[k] == 32.f * x[k]);  // maximum_iterations 5
    }
    CHECK(got[6].ToVector<int32_t>() == grown);
  }
}

TEST_CASE("TensorFlow's RefSwitch and RefEnter on reference variables import and run",
          "[graph_def][control_flow][tf_fixture]") {
  Graph g;
  std::unique_ptr<Session> sess;
  std::set<std::string> ops = testing::CheckAgainstTf("control_flow_ref", &g, &sess);
  CHECK(ops.count("RefSwitch"));
  CHECK(ops.count("RefEnter"));
  CHECK(g.FindNode("update/AssignAdd/Switch")->op() == "Switch");
  // TF's run left w = 11 (the cond added 1) and v = 6 (four iterations added 1 to 2): the false
  // branch reads w, two more iterations sum 7 + 8.
  std::vector<Tensor> got =
      sess->RunNamed({{"n", Tensor::Scalar<int32_t>(2)}, {"p", Tensor::Scalar<bool>(false)}},
                     {"cond_ref", "ref_loop_sum"});
  CHECK(got[0].scalar<float>() == 11.f);
  CHECK(got[1].scalar<float>() == 15.f);
}

// A GraphDef in text format: two Consts, "c" (float) and "k" (int32), then `body`'s nodes.
Status ImportText(const std::string& body, Graph* g) {
  const std::string nodes = R"pb(
    node {
      name: "c"
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
            tensor_shape {}
            float_val: 1
          }
        }
      }
    }
    node {
      name: "k"
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
            tensor_shape {}
            int_val: 1
          }
        }
      }
    }
  )pb";
  return ImportGraphDefFromBytes(nodes + body, g, {}, /*text=*/true);
}

std::string NodeText(const std::string& name, const std::string& op,
                     const std::vector<std::string>& inputs, const std::string& attrs) {
  std::string s = "node { name: \"" + name + "\" op: \"" + op + "\"";
  for (const std::string& in : inputs) s += " input: \"" + in + "\"";
  return s + " " + attrs + " }\n";
}

const char kFloat[] = R"pb(attr {
                             key: "T"
                             value { type: DT_FLOAT }
                           })pb";

TEST_CASE("A cycle that is not a loop's back edge is an error naming a node on it",
          "[graph_def][control_flow][errors]") {
  Graph g;
  // "d" uses the cycle a -> b -> a but is not on it.
  Status s = ImportText(NodeText("d", "Identity", {"a"}, kFloat) +
                            NodeText("a", "Identity", {"b"}, kFloat) +
                            NodeText("b", "Identity", {"a"}, kFloat),
                        &g);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("cycle through node 'a' (op: 'Identity'): a -> b -> a") &&
                              Contains("only a while loop's back edge"));
  // A NextIteration that feeds no Merge closes no loop.
  s = ImportText(
      NodeText("id", "Identity", {"ni"}, kFloat) + NodeText("ni", "NextIteration", {"id"}, kFloat),
      &g);
  CHECK_THAT(s.message(), Contains("cycle through node 'id' (op: 'Identity'): id -> ni -> id"));
  CHECK(s.code() == Code::kInvalidArgument);
  // A loop's Merge whose every input is a back edge.
  const std::string merge_attrs = std::string(kFloat) + " attr { key: \"N\" value { i: 1 } }";
  s = ImportText(
      NodeText("m", "Merge", {"ni"}, merge_attrs) + NodeText("ni", "NextIteration", {"m"}, kFloat),
      &g);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("'m' (op: 'Merge')") &&
                              Contains("every data input comes from a NextIteration"));
  // A back edge of another dtype than the loop variable's.
  const std::string two = std::string(kFloat) + " attr { key: \"N\" value { i: 2 } }";
  const std::string enter =
      std::string(kFloat) + " attr { key: \"frame_name\" value { s: \"L\" } }";
  const std::string int_t = R"pb(attr {
                                   key: "T"
                                   value { type: DT_INT32 }
                                 })pb";
  s = ImportText(NodeText("e", "Enter", {"c"}, enter) + NodeText("m", "Merge", {"e", "ni"}, two) +
                     NodeText("ni", "NextIteration", {"k"}, int_t),
                 &g);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK_THAT(s.message(), Contains("'m' (op: 'Merge')") && Contains("back edge 'ni:0' is int32"));
}

// A graph of constants: total = sum over i < 5 of (i < 2 ? i : 10 * i), through a cond in a loop.
struct ConstLoop {
  Graph g;
  Output total;
  ConstLoop() {
    Scope root = Scope::Root(&g);
    total = ops::WhileLoop(
        root.WithOpName("loop"),
        [](const Scope& s, const Vars& v) { return ops::Less(s, v[0], ops::ConstInt(s, 5)); },
        [](const Scope& s, const Vars& v) {
          Output add = ops::Cond(
              s, ops::Less(s, v[0], ops::ConstInt(s, 2)),
              [&](const Scope& b) { return Vars{v[0]}; },
              [&](const Scope& b) { return Vars{ops::Mul(b, v[0], ops::ConstInt(b, 10))}; })[0];
          return Vars{ops::Add(s, v[0], ops::ConstInt(s, 1)), ops::Add(s, v[1], add)};
        },
        {ops::ConstInt(root, 0), ops::ConstInt(root, 0)})[1];
  }
};

TEST_CASE("A placed partition holding a loop crosses the cluster wire and runs",
          "[graph_def][control_flow]") {
  ConstLoop m;
  DeviceSet devices;
  devices.Add(NewCpuDevice(0));
  std::map<std::string, std::string> logged;
  StepPlan plan = PlanSignature({}, {m.total}, {}, devices, {}, &logged).value();
  REQUIRE(plan.partitions.parts.size() == 1);
  const Partitions::Part& part = plan.partitions.parts[0];
  std::vector<const Node*> shipped(part.nodes.begin(), part.nodes.end());
  tensorflow::GraphDef def;
  ThrowIfError(PlacedGraphToProto(shipped, &def));
  tensorflow::GraphDef wire;
  REQUIRE(wire.ParseFromString(def.SerializeAsString()));
  std::unique_ptr<Graph> back = PlacedGraphFromProto(wire).value();
  REQUIRE(back->num_nodes() == static_cast<int>(shipped.size()));
  int back_edges = 0;
  for (const Node* n : shipped) {
    INFO(n->name() << " (" << n->op() << ")");
    const Node* b = back->FindNode(n->name());
    REQUIRE(b != nullptr);
    REQUIRE(b->num_inputs() == n->num_inputs());
    for (int i = 0; i < n->num_inputs(); ++i) {
      CHECK(b->input(i).name() == n->input(i).name());
      back_edges += b->input(i).node->op_def().control_flow() == ControlFlowKind::kNextIteration;
    }
  }
  CHECK(back_edges == 2);
  const std::string fetch = Output(plan.partitions.copy_of.at(m.total.node), 0).name();
  Session sess(*back);
  CHECK(sess.RunNamed({}, {fetch})[0].scalar<int32_t>() == 0 + 1 + 20 + 30 + 40);
}

}  // namespace
}  // namespace pf::control_flow_graph_def_test
