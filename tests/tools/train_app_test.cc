// pf-train's library (pf_app): its flags as ParseArgs reads them (both spellings of the cluster
// flags, range errors naming the flag, unknown flags, defaults from the model table) and the
// model table (every name builds; the classifier column is right).
#include <vector>

#include "placeflow/models/models.h"
#include "tests/testing/test_util.h"
#include "tools/placement_rules.h"
#include "tools/train_flags.h"

namespace pf::train_app_test {
namespace {

using Catch::Matchers::Contains;

app::TrainArgs Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "pf-train");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return app::ParseArgs(static_cast<int>(argv.size()), argv.data());
}

TEST_CASE("pf-train's cluster flags take the dashed and the TensorFlow spelling alike",
          "[app][flags]") {
  struct Case {
    const char *dashed, *tf, *value;
  };
  for (const Case& c :
       {Case{"--job-name", "--job_name", "worker"}, Case{"--task-index", "--task_index", "3"},
        Case{"--ps-hosts", "--ps_hosts", "h:1,h:2"},
        Case{"--worker-hosts", "--worker_hosts", "h:3"},
        Case{"--replicas-to-aggregate", "--replicas_to_aggregate", "2"},
        Case{"--sync-timeout", "--sync_timeout", "7.5"}}) {
    INFO(c.dashed);
    const app::TrainArgs a = Parse({c.dashed, c.value}), b = Parse({c.tf, c.value});
    const app::TrainArgs d = Parse({std::string(c.tf) + "=" + c.value});
    CHECK(a.job_name == b.job_name);
    CHECK(a.task_index == b.task_index);
    CHECK(a.ps_hosts == b.ps_hosts);
    CHECK(a.worker_hosts == b.worker_hosts);
    CHECK(a.replicas_to_aggregate == b.replicas_to_aggregate);
    CHECK(a.sync_timeout == b.sync_timeout);
    CHECK(d.job_name == a.job_name);
    CHECK(d.sync_timeout == a.sync_timeout);
  }
  CHECK(Parse({"--job_name", "worker"}).job_name == "worker");
  CHECK(Parse({"--task_index", "3"}).task_index == 3);
  CHECK(Parse({"--ps_hosts", "h:1,h:2"}).ps_hosts == "h:1,h:2");
  CHECK(Parse({"--worker_hosts", "h:3"}).worker_hosts == "h:3");
  CHECK(Parse({"--replicas_to_aggregate", "2"}).replicas_to_aggregate == 2);
  CHECK(Parse({"--sync_timeout", "7.5"}).sync_timeout == 7.5);
  CHECK_FALSE(Parse({}).sync_replicas);
  CHECK(Parse({"--sync-replicas"}).sync_replicas);
  CHECK(Parse({"--sync_replicas"}).sync_replicas);
  // The last of repeated values wins, whichever spelling each uses.
  CHECK(Parse({"--task-index", "1", "--task_index", "2"}).task_index == 2);
}

TEST_CASE("pf-train's bad values are errors naming the flag by its dashed name", "[app][flags]") {
  CHECK_THROWS_AS(Parse({"--batch", "0"}), app::UsageError);
  CHECK_THROWS_WITH(Parse({"--batch", "0"}),
                    "--batch must be an integer in [1, 10000000], got '0'");
  CHECK_THROWS_WITH(Parse({"--sync_timeout", "0"}), "--sync-timeout must be a number > 0, got '0'");
  CHECK_THROWS_WITH(Parse({"--task_index", "-1"}),
                    "--task-index must be an integer in [0, 1024], got '-1'");
  CHECK_THROWS_WITH(Parse({"--job_name", "chief"}),
                    "--job-name must be one of ps, worker, got 'chief'");
  CHECK_THROWS_WITH(Parse({"--lr=nan"}), "--lr must be a number > 0, got 'nan'");
  CHECK_THROWS_WITH(Parse({"--steps"}), "missing value for --steps");
  CHECK_THROWS_WITH(Parse({"--restore=maybe", "--checkpoint", "c"}),
                    "--restore takes no value (or true/false), got 'maybe'");
  CHECK_THROWS_WITH(Parse({"--towers", "0"}), "--towers must be an integer in [1, 1024], got '0'");
  CHECK_THROWS_WITH(Parse({"--restore"}), "--restore needs --checkpoint DIR");
  CHECK_THROWS_WITH(Parse({"--place", "x"}), "bad --place rule 'x': expected regex=device");
}

TEST_CASE("pf-train rejects a --lr that float32 cannot hold and an empty --checkpoint",
          "[app][flags]") {
  CHECK_THROWS_WITH(Parse({"--lr", "1e-50"}),
                    Contains("--lr 1e-50 is 0 in float32, the models' dtype (float32 spans ["));
  CHECK_THROWS_WITH(Parse({"--lr", "1e39"}), Contains("--lr 1e+39 is infinite in float32"));
  CHECK(Parse({"--lr", "1e-44"}).lr == 1e-44);  // a float32 denormal: small, not zero
  CHECK(Parse({"--lr", "0.01"}).lr == 0.01);
  const std::string empty =
      "--checkpoint needs a directory, got '' (leave the flag out to save none)";
  CHECK_THROWS_AS(Parse({"--checkpoint", ""}), app::UsageError);
  CHECK_THROWS_WITH(Parse({"--checkpoint", ""}), empty);
  CHECK_THROWS_WITH(Parse({"--checkpoint="}), "missing value for --checkpoint");
  CHECK(Parse({"--checkpoint", "ckpt"}).checkpoint == "ckpt");
  CHECK(Parse({}).checkpoint.empty());  // left out: no checkpoint, as before
}

TEST_CASE("pf-train: a --place rule that matches no node is reported and returned",
          "[app][flags]") {
  Graph g;
  Scope root = Scope::Root(&g);
  ops::Const(root.WithOpName("affine0/w"), 1.f);
  ops::Const(root.WithOpName("affine1/w"), 2.f);
  const auto rules = app::ParsePlacementRules("affine0=/cpu:1,afine1=/cpu:0,w$=/cpu:2");
  const std::vector<std::string> unmatched = app::ApplyPlacementRules(g, rules);
  CHECK(unmatched == std::vector<std::string>{"afine1=/cpu:0"});
  // Later rules win: both nodes end with "w".
  CHECK(g.FindNode("affine0/w")->requested_device() == "/cpu:2");
  CHECK(g.FindNode("affine1/w")->requested_device() == "/cpu:2");
}

TEST_CASE("pf-train's summary names where fallen-back variables really went", "[app][flags]") {
  const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
  const std::string summary = "1 tower(s) on /cpu:0 (aggregation param, variables on /cpu:5)";
  CHECK(app::NoteFallbacks(summary, {{"/cpu:5", cpu0}}) ==
        "1 tower(s) on /cpu:0 (aggregation param, variables on " + cpu0 + " (no /cpu:5))");
  CHECK(app::NoteFallbacks(summary, {}) == summary);
  // Whole names only: /cpu:1 is not /cpu:10.
  CHECK(app::NoteFallbacks("variables on /cpu:10", {{"/cpu:1", cpu0}}) == "variables on /cpu:10");
}

TEST_CASE("pf-train: an unknown flag or argument is an error and --help is not", "[app][flags]") {
  CHECK_THROWS_WITH(Parse({"--stepz", "3"}), "unknown flag '--stepz' (see pf-train --help)");
  CHECK_THROWS_WITH(Parse({"--stepz=3"}), "unknown flag '--stepz' (see pf-train --help)");
  // Only the cluster flags have an underscore spelling.
  CHECK_THROWS_WITH(Parse({"--log_device_placement"}),
                    "unknown flag '--log_device_placement' (see pf-train --help)");
  CHECK_THROWS_WITH(Parse({"extra"}), "unknown flag 'extra' (see pf-train --help)");
  const app::TrainArgs help = Parse({"--steps", "3", "--help", "--batch", "0"});
  CHECK(help.help);
  CHECK_THAT(help.help_text, Contains("--job-name ps|worker"));
  CHECK_THAT(help.help_text, Contains("also --task_index)"));
  CHECK_FALSE(Parse({}).help);
}

TEST_CASE("pf-train's per-model defaults come from the model table", "[app][flags][models]") {
  for (const models::ModelSpec& spec : models::Models()) {
    INFO(spec.name);
    const app::TrainArgs a = Parse({"--model", spec.name});
    CHECK(a.model == spec.name);
    CHECK(a.batch == spec.batch);
    CHECK(Parse({"--model", spec.name, "--batch", "7"}).batch == 7);
  }
  CHECK(models::FindModel("mlp_seed000")->batch == 2000);
  CHECK(models::FindModel("mnist_mlp")->batch == 100);
  // --help shows the same numbers.
  CHECK_THAT(Parse({"-h"}).help_text,
             Contains("(default: 2000 for mlp_seed000, 32 for mobilenet_v2,"));
  CHECK_THAT(Parse({"-h"}).help_text,
             Contains("(default: sgd for mlp_seed000, mnist_mlp, else adam"));
}

TEST_CASE("Every model in the table builds a graph with the table's optimizer and kind",
          "[app][models]") {
  for (const models::ModelSpec& spec : models::Models()) {
    INFO(spec.name);
    Graph g;
    Scope root = Scope::Root(&g);
    models::Model m = models::BuildModel(spec.name, root, {});
    CHECK(m.name == spec.name);
    CHECK(m.classifier == spec.classifier);
    CHECK(models::IsClassifier(spec.name) == spec.classifier);
    CHECK(m.optimizer_name == spec.optimizer);
    CHECK(m.loss.node != nullptr);
    CHECK(m.train_op.node != nullptr);
    CHECK((m.accuracy.node != nullptr) == spec.classifier);
    CHECK(g.num_nodes() > 10);
    models::ModelOptions o;
    o.optimizer = "momentum";
    Graph g2;
    CHECK(models::BuildModel(spec.name, Scope::Root(&g2), o).optimizer_name == "momentum");
  }
  CHECK_FALSE(models::IsClassifier("mlp_seed000"));
  CHECK(models::IsClassifier("lenet"));
  CHECK_FALSE(models::IsClassifier("resnet"));
  CHECK(models::FindModel("resnet") == nullptr);
  Graph g;
  CHECK_THROWS_WITH(models::BuildModel("resnet", Scope::Root(&g), {}),
                    Contains("known models: " + models::ModelNames()));
}

TEST_CASE("The model table's learning rates: sgd's apart and the default optimizer's otherwise",
          "[app][models]") {
  const models::ModelSpec& mlp = *models::FindModel("mnist_mlp");
  CHECK(mlp.LearningRate("") == 0.3);  // its default optimizer is sgd
  CHECK(mlp.LearningRate("sgd") == 0.3);
  CHECK(mlp.LearningRate("adam") == 0.001);
  const models::ModelSpec& lenet = *models::FindModel("lenet");
  CHECK(lenet.LearningRate("") == 1e-3);
  CHECK(lenet.LearningRate("sgd") == 0.05);
  CHECK(models::LearningRateOf("mlp_seed000", {}) == 0.01);
  models::ModelOptions given;
  given.learning_rate = 0.5;
  CHECK(models::LearningRateOf("lenet", given) == 0.5);
  // The rate the graph runs with: mnist_mlp's decayed rate at step 0 is the base rate.
  for (const char* optimizer : {"", "adam"}) {
    INFO(optimizer);
    Graph g;
    Scope root = Scope::Root(&g);
    models::ModelOptions o;
    o.optimizer = optimizer;
    models::Model m = models::BuildModel("mnist_mlp", root, o);
    Session sess(g, {});
    sess.Run({}, {}, {GlobalVariablesInitializer(root)});
    CHECK(sess.Run({m.learning_rate})[0].scalar<float>() ==
          Approx(mlp.LearningRate(optimizer)).epsilon(1e-6));
  }
}

}  // namespace
}  // namespace pf::train_app_test
