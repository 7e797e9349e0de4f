// MetaGraph export and import (train/meta_graph.h): a model exported with its checkpoint
// reloads into a fresh Graph and Session, trains on exactly as the original would have (Adam's
// slots and the global step restored) and serves the same outputs through its signature; a
// plain GraphDef import lists its variables; a Saver of nothing is TensorFlow's error.
#include "placeflow/train/meta_graph.h"

#include <cstdlib>
#include <filesystem>

#include "placeflow/graph/graph_def.h"
#include "placeflow/io/proto/meta_graph.pb.h"
#include "placeflow/ops/summary/summary.h"
#include "tests/testing/test_util.h"

namespace pf::meta_graph_test {
namespace {

using Catch::Matchers::Contains;

struct Mlp {
  Graph g;
  Output x, labels, logits, probs, loss;
  Operation train_op;
  Mlp() {
    Scope root = Scope::Root(&g);
    x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 6});
    labels = ops::Placeholder(root.WithOpName("labels"), DT_INT32, {-1});
    Variable step = train::GetOrCreateGlobalStep(root);
    Scope d0 = root.WithVariableScope("dense0"), d1 = root.WithVariableScope("dense1");
    Variable w0 = GetVariable(d0, "kernel", {6, 8}, init::GlorotUniform(1));
    Variable b0 = GetVariable(d0, "bias", {8}, init::Constant(0.1));
    Variable w1 = GetVariable(d1, "kernel", {8, 3}, init::GlorotUniform(2));
    Variable b1 = GetVariable(d1, "bias", {3}, init::Zeros());
    Output h = ops::Relu(root, ops::Add(root, ops::MatMul(root, x, w0.value()), b0.value()));
    logits = ops::Add(root.WithOpName("logits"), ops::MatMul(root, h, w1.value()), b1.value());
    probs = ops::Softmax(root.WithOpName("probs"), logits);
    loss = ops::Mean(root.WithOpName("loss"),
                     ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).first);
    g.AddToCollection(kLosses, loss);
    train::Adam opt(0.05);
    train_op = opt.Minimize(root, loss, &step);
    g.AddToCollection(train::kTrainOp, train_op.node);
  }
};

Tensor Batch(uint32_t seed) { return testing::RandomTensor({4, 6}, seed); }
Tensor Labels() { return Tensor::FromVector<int32_t>({0, 2, 1, 2}); }

std::filesystem::path TempDir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("pf_meta_{}_{}", name, getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct Reference {
  std::string meta, checkpoint;
  Tensor served;                   // probs on the serving batch at the checkpoint
  std::vector<float> next_losses;  // the losses of the two steps after the checkpoint
};

// Trains 5 Adam steps, exports the MetaGraph and a checkpoint, then records what the original
// gives next: the serving output and two more training steps.
Reference TrainExportAndContinue(const std::filesystem::path& dir) {
  Mlp m;
  Session sess(m.g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))});
  for (uint32_t i = 0; i < 5; ++i)
    sess.Run({{m.x, Batch(i)}, {m.labels, Labels()}}, {}, {m.train_op});
  Saver saver(&m.g, {}, 3);
  train::ExportMetaGraphOptions opt;
  opt.saver = &saver;
  opt.tags = {"serve", "train"};
  opt.signatures["serving_default"] = {{{"x", m.x}}, {{"probs", m.probs}}};
  Reference r;
  r.meta = (dir / "model.meta").string();
  train::ExportMetaGraph(r.meta, m.g, opt);
  r.checkpoint = saver.Save(sess, (dir / "model").string(), 5);
  r.served = sess.Run({{m.x, Batch(99)}}, {m.probs})[0];
  for (uint32_t i = 5; i < 7; ++i) {
    auto out = sess.Run({{m.x, Batch(i)}, {m.labels, Labels()}}, {m.loss}, {m.train_op});
    r.next_losses.push_back(out[0].scalar<float>());
  }
  return r;
}

TEST_CASE("An exported MetaGraph and checkpoint reload in a fresh graph, train on and serve",
          "[meta_graph]") {
  auto dir = TempDir("reload");
  const Reference r = TrainExportAndContinue(dir);

  Graph g;
  train::ImportedMetaGraph m = train::ImportMetaGraph(r.meta, &g);
  // 4 weights + global_step + Adam's 8 slots and 2 powers, as the original had.
  CHECK(GlobalVariables(&g).size() == 15);
  CHECK(TrainableVariables(&g).size() == 4);
  CHECK(m.variables.size() == 15);
  CHECK(m.trainable_variables.size() == 4);
  CHECK(FindVariable(&g, "dense0/kernel").value().node->name() == "dense0/kernel/read");
  CHECK_FALSE(FindVariable(&g, "global_step").trainable());
  CHECK(m.tags == std::vector<std::string>{"serve", "train"});
  REQUIRE(m.saver != nullptr);
  CHECK(m.saver->max_to_keep() == 3);
  REQUIRE(m.train_op().node != nullptr);
  REQUIRE(m.losses().size() == 1);
  CHECK(m.losses()[0].node->name() == "loss");
  CHECK(g.GetCollection(train::kTrainOp).size() == 1);

  Session sess(g);
  m.saver->Restore(sess, r.checkpoint);
  const train::Signature& sig = m.signatures.at("serving_default");
  Tensor served = sess.Run({{sig.inputs.at("x"), Batch(99)}}, {sig.outputs.at("probs")})[0];
  // The same ops on the same values: equal to the last bits.
  CHECK(testing::MaxAbsDiff(served, r.served) == 0.0);
  Output x = FindOutput(g, "x").value(), labels = FindOutput(g, "labels").value();
  for (uint32_t i = 5; i < 7; ++i) {
    auto out = sess.Run({{x, Batch(i)}, {labels, Labels()}}, {m.losses()[0]}, {m.train_op()});
    CHECK(out[0].scalar<float>() == Approx(r.next_losses[i - 5]).epsilon(1e-6));
  }
}

// Run by the next test in a child process: reloads the exported model there, then records
// what it serves and the losses of two more training steps.
TEST_CASE("child: reload a MetaGraph in a fresh process", "[.][meta_graph_child]") {
  const char* dir = std::getenv("PF_META_CHILD_DIR");
  // A run of the whole binary with only exclusions ("~[gpu]") selects hidden tests too: then
  // there is no parent and nothing to do.
  if (dir == nullptr) return;
  Graph g;
  train::ImportedMetaGraph m = train::ImportMetaGraph(std::string(dir) + "/model.meta", &g);
  Session sess(g);
  m.saver->Restore(sess, Saver::LatestCheckpoint(dir));
  const train::Signature& sig = m.signatures.at("serving_default");
  std::map<std::string, Tensor> out;
  out["served"] = sess.Run({{sig.inputs.at("x"), Batch(99)}}, {sig.outputs.at("probs")})[0];
  Output x = FindOutput(g, "x").value(), labels = FindOutput(g, "labels").value();
  std::vector<float> losses;
  for (uint32_t i = 5; i < 7; ++i) {
    auto r = sess.Run({{x, Batch(i)}, {labels, Labels()}}, {m.losses()[0]}, {m.train_op()});
    losses.push_back(r[0].scalar<float>());
  }
  out["losses"] = Tensor::FromVector<float>(losses);
  ThrowIfError(WriteSafetensors(std::string(dir) + "/child.safetensors", out));
}

TEST_CASE("An exported MetaGraph and checkpoint reload in a fresh process", "[meta_graph]") {
  auto dir = TempDir("child");
  const Reference r = TrainExportAndContinue(dir);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd =
      fmt::format("PF_META_CHILD_DIR='{}' '{}' '[meta_graph_child]' > '{}' 2>&1", dir.string(),
                  self, (dir / "child.log").string());
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto got = ReadSafetensors((dir / "child.safetensors").string()).ValueOrThrow();
  CHECK(testing::MaxAbsDiff(got.at("served"), r.served) == 0.0);
  for (int i = 0; i < 2; ++i)
    CHECK(got.at("losses").flat<float>()[i] == Approx(r.next_losses[i]).epsilon(1e-6));
}

TEST_CASE("The .meta file is TensorFlow's MetaGraphDef with VariableDefs and a signature",
          "[meta_graph]") {
  auto dir = TempDir("format");
  const Reference r = TrainExportAndContinue(dir);
  std::ifstream f(r.meta, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  tensorflow::MetaGraphDef def;
  REQUIRE(def.ParseFromString(ss.str()));
  CHECK(def.saver_def().max_to_keep() == 3);
  const auto& vars = def.collection_def().at("trainable_variables").bytes_list().value();
  REQUIRE(vars.size() == 4);
  tensorflow::VariableDef vd;
  REQUIRE(vd.ParseFromString(vars[0]));
  CHECK(vd.variable_name() == "dense0/kernel:0");
  CHECK(vd.snapshot_name() == "dense0/kernel/read:0");
  CHECK(vd.initializer_name() == "dense0/kernel/Assign");
  CHECK(vd.trainable());
  CHECK(def.collection_def().at("losses").node_list().value(0) == "loss:0");
  const auto& sig = def.signature_def().at("serving_default");
  CHECK(sig.inputs().at("x").name() == "x:0");
  CHECK(sig.inputs().at("x").tensor_shape().dim(1).size() == 6);
  CHECK(sig.outputs().at("probs").name() == "probs:0");
  CHECK(sig.method_name() == "tensorflow/serving/predict");
}

TEST_CASE("A GraphDef import lists its variables, and a Saver restores them", "[meta_graph]") {
  auto dir = TempDir("graphdef");
  const Reference r = TrainExportAndContinue(dir);
  Mlp original;
  ExportGraphDef(original.g, (dir / "model.pb").string());
  Graph g;
  ImportGraphDef((dir / "model.pb").string(), &g);
  const std::vector<Variable> vars = GlobalVariables(&g);
  REQUIRE(vars.size() == 15);
  CHECK(FindVariable(&g, "dense1/bias").valid());
  CHECK(FindVariable(&g, "dense1/bias").initializer().node->name() == "dense1/bias/Assign");
  Session sess(g);
  Saver(&g).Restore(sess, r.checkpoint);
  Output x = FindOutput(g, "x").value(), probs = FindOutput(g, "probs").value();
  CHECK(testing::MaxAbsDiff(sess.Run({{x, Batch(99)}}, {probs})[0], r.served) == 0.0);
}

TEST_CASE("ImportMetaGraph with a prefix adds to the graph's own collections", "[meta_graph]") {
  auto dir = TempDir("prefix");
  const Reference r = TrainExportAndContinue(dir);
  Graph g;
  Variable own = GetVariable(Scope::Root(&g), "own", {2}, init::Zeros());
  ImportGraphDefOptions opt;
  opt.prefix = "imported";
  train::ImportedMetaGraph m = train::ImportMetaGraph(r.meta, &g, opt);
  CHECK(GlobalVariables(&g).size() == 16);
  CHECK(GlobalVariables(&g)[0].name() == "own");
  CHECK(TrainableVariables(&g).size() == 5);
  CHECK(m.variables.size() == 15);
  CHECK(m.variables[1].name().rfind("imported/", 0) == 0);
  CHECK(m.signatures.at("serving_default").inputs.at("x").node->name() == "imported/x");
  CHECK(m.train_op().node->name().rfind("imported/", 0) == 0);
}

TEST_CASE("A MetaGraph written by TensorFlow imports with its resource variables",
          "[meta_graph][tf_fixture]") {
  // tests/data/make_tf_graphdef_fixtures.py: tf.compat.v1.train.export_meta_graph of an MLP.
  const std::string path =
      std::string(PF_SOURCE_DIR) + "/tests/data/tf_graphdefs/mlp_resource.meta";
  Graph g;
  train::ImportedMetaGraph m = train::ImportMetaGraph(path, &g);
  REQUIRE(m.variables.size() == 4);
  CHECK(m.trainable_variables.size() == 4);
  CHECK(TrainableVariables(&g).size() == 4);
  const Variable& k = m.variables[0];
  CHECK(k.name() == "dense0/kernel");
  CHECK(k.shape() == Shape({8, 16}));
  CHECK(k.value().node->name() == "dense0/kernel/Read/ReadVariableOp");
  CHECK(k.initializer().node->name() == "dense0/kernel/Assign");
  REQUIRE(m.losses().size() == 1);
  CHECK(m.losses()[0].node->name() == "loss");
  REQUIRE(m.saver != nullptr);  // no SaverDef in the file: TensorFlow's default max_to_keep
  CHECK(m.saver->max_to_keep() == 5);
  // TF's initial values (Consts), saved and restored into a second import: the same outputs.
  auto dir = TempDir("tfmeta");
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&g))});
  const std::string ckpt = m.saver->Save(sess, (dir / "model").string(), 1);
  Tensor x = testing::RandomTensor({3, 8}, 7);
  Tensor probs = sess.RunNamed({{"x", x}}, {"probs"})[0];
  Graph g2;
  train::ImportedMetaGraph m2 = train::ImportMetaGraph(path, &g2);
  Session sess2(g2);
  m2.saver->Restore(sess2, ckpt);
  CHECK(testing::MaxAbsDiff(sess2.RunNamed({{"x", x}}, {"probs"})[0], probs) == 0.0);
  Tensor uniform(DT_FLOAT, {3, 4});
  for (float& v : uniform.flat<float>()) v = 0.25f;
  CHECK(testing::MaxAbsDiff(probs, uniform) > 0.01);  // the weights were restored, not zeros
}

TEST_CASE("A Saver on a graph without variables is TensorFlow's 'No variables to save'",
          "[meta_graph][saver]") {
  Graph g;
  ops::Const(Scope::Root(&g), 1.f);
  CHECK_THROWS_WITH(Saver(&g), Contains("No variables to save"));
  Graph empty_import;
  ThrowIfError(ImportGraphDefFromBytes(R"pb(node { name: "c" op: "NoOp" })pb", &empty_import, {},
                                       /*text=*/true));
  CHECK_THROWS_WITH(Saver(&empty_import), Contains("No variables to save"));
}

TEST_CASE("ImportMetaGraph errors name the file and the missing tensor", "[meta_graph]") {
  Graph g;
  CHECK_THROWS_WITH(train::ImportMetaGraph("/nonexistent/m.meta", &g),
                    Contains("/nonexistent/m.meta"));
  tensorflow::MetaGraphDef def;
  auto* n = def.mutable_graph_def()->add_node();
  n->set_name("c");
  n->set_op("NoOp");
  (*def.mutable_collection_def())["losses"].mutable_node_list()->add_value("gone:0");
  auto m = train::ImportMetaGraphFromBytes(def.SerializeAsString(), &g);
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.status().message(), Contains("collection 'losses'") && Contains("gone:0"));
}

}  // namespace
}  // namespace pf::meta_graph_test
