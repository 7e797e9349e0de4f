// pf-train as a library (the pf_app target): Main is a sequence of named steps, each a function
// of the flags and what the steps before it made.
//
//   int main(int argc, char** argv) { return pf::tools::RunMain("pf-train", pf::app::Main, argc,
//   argv); }
//
// ParseArgs (tools/train_flags.h) -> ChooseRole -> LoadData -> BuildGraph -> OpenSession ->
// Train -> Report. ChooseRole may end the run there: --towers-table times towers,
// --local-cluster starts a cluster of pf-train processes, a ps task serves; a worker and a
// process on its own go on. The cluster role is an interface (tools/cluster_role.h) with a stub
// in builds without gRPC, so no step holds an #ifdef.
#pragma once

#include <memory>
#include <optional>

#include "placeflow/models/models.h"
#include "tools/cluster_role.h"
#include "tools/summaries.h"
#include "tools/train_flags.h"
#include "tools/trainer.h"

namespace pf {
class Profile;  // placer/cost_model.h
}  // namespace pf

namespace pf::app {

struct Role {
  enum class Kind { kTowersTable, kLocalCluster, kPs, kWorker, kLocal };
  Kind kind = Kind::kLocal;
  std::unique_ptr<cluster::ClusterRole> task;  // kPs and kWorker
  bool trains() const { return kind == Kind::kWorker || kind == Kind::kLocal; }
};

// The classifiers' data: the training part as arrays (fed) or as a dataset (the pipeline in the
// graph), the test part as arrays (evaluation feeds them). Empty for mlp_seed000.
struct TrainingData {
  data::MnistArrays train, test;
  data::Dataset train_ds;
  int64_t train_examples = 0;
  bool pipeline = false;  // batches come through IteratorGetNext in the graph
  // --data-format images: the images' shape and the classes (empty: MNIST's 28x28x1, 10).
  std::vector<int64_t> image_shape;
  std::vector<std::string> class_names;
};

struct TrainGraph {
  std::unique_ptr<Graph> graph;
  models::Model model;
  bool classifier = false;
  int64_t steps_per_epoch = 0;  // classifiers
  int num_cpus = 1;             // the session's CPU devices
  std::optional<data::GraphIterator> iterator;
  std::unique_ptr<summaries::TrainingSummaries> summaries;
  Operation init;
  // Sync replicas: what the chief puts in place once the variables are ready (again after a
  // restore), and every worker's local step.
  Operation sync_chief_init, sync_local_init;
};

struct TrainOutcome {
  bool interrupted = false;
  int64_t global_step = 0;
  std::unique_ptr<train::SyncReplicasChief> sync_chief;  // the chief of sync replicas
};

// Checks the checkpoint directory (before any work) and picks what this process does; a ps
// task joins its cluster here. UsageError for cluster flags in a build without gRPC.
Role ChooseRole(const TrainArgs& a);
// The work of a role that does not train here (ChooseRole's towers table, local cluster, ps).
int RunWithoutTraining(Role& role, const TrainArgs& a, int argc, char** argv);
TrainingData LoadData(const TrainArgs& a);
TrainGraph BuildGraph(const TrainArgs& a, const Role& role, const TrainingData& data);
// A worker's settings change here (its own seed; only the chief saves), then the session opens
// and the run is described on stdout. `profile`: what --placement auto plans with (null:
// estimates).
std::unique_ptr<Session> OpenSession(TrainArgs& a, const Role& role, const TrainGraph& tg,
                                     std::shared_ptr<const Profile> profile = nullptr);
// The pieces ProfileWithRules shares with the training: the session's options (a worker's
// settings change here), the trainer's, and the MonitoredSession's creator.
SessionOptions TrainSessionOptions(TrainArgs& a, const Role& role, const TrainGraph& tg,
                                   std::shared_ptr<const Profile> profile);
trainer::Options TrainerOptions(const TrainArgs& a, const Role& role, const TrainGraph& tg,
                                const TrainingData& data);
std::unique_ptr<train::SessionCreator> MakeCreator(const TrainArgs& a, const Role& role,
                                                   const TrainGraph& tg, Session& sess,
                                                   std::shared_ptr<Saver> saver);
// --placement auto: the training step's predicted time beside the measured one (`seconds` over
// `steps`).
void ReportPrediction(const TrainGraph& tg, const Session& sess, double seconds, int64_t steps);
// --placement auto --profile-steps N: N traced training steps in a session of their own placed
// by the rules, recorded into a profile; null (and a line saying so) when the rules' placement
// cannot run them (a model over one device's --device-memory).
std::shared_ptr<const Profile> ProfileWithRules(const TrainArgs& a, const Role& role,
                                                TrainGraph& tg, TrainingData& data);
// Trains through a train::MonitoredSession: its creator initialises (the chief; restores with
// --restore) or waits for the chief (the other workers), and recovers from a ps restart.
TrainOutcome Train(const TrainArgs& a, const Role& role, TrainGraph& tg, Session& sess,
                   TrainingData& data);
// Closes the summaries, says how the run ended; returns the exit status (130: interrupted).
int Report(const TrainArgs& a, TrainGraph& tg, Session& sess, TrainOutcome& outcome);

// All of pf-train: exit status 0, 2 for a bad flag or value (UsageError), 130 when interrupted;
// other errors are thrown (tools/run_main.h makes them status 1).
int Main(int argc, char** argv);

}  // namespace pf::app
