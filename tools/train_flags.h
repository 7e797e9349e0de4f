// pf-train's flags: what they set (TrainArgs), the table that parses them (on CLI11, through
// tools/flags.h) and the checks across flags.
//
//   pf::app::TrainArgs a = pf::app::ParseArgs(argc, argv);   // throws UsageError
//   if (a.help) std::fputs(a.help_text.c_str(), stdout);
//
// Naming: dashes (--job-name); the TensorFlow spellings of the cluster flags (--job_name,
// --task_index, --ps_hosts, --worker_hosts, --sync_replicas, --replicas_to_aggregate,
// --sync_timeout) are aliases (docs/flags.md). Defaults that depend on the model (--batch, --lr,
// --optimizer) come from the model table (placeflow/models/models.h).
#pragma once

#include <placeflow/placeflow.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/flags.h"
#include "tools/placement_rules.h"

namespace pf::app {

// A bad flag or setting: pf-train prints "pf-train: <what>" and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainArgs {
  std::string model = "mlp_seed000";
  int64_t steps = 100;
  bool steps_given = false;  // --steps on the command line (classifiers then stop there)
  int64_t epochs = 1;
  int64_t batch = 0;      // 0 until ParseArgs: the model's default
  double lr = 0;          // 0: the model's default
  std::string optimizer;  // "": the model's default
  // "float16" | "bfloat16": the automatic mixed-precision rewrite (float16 with loss scaling).
  std::string mixed_precision;
  bool log_placement = false;
  int64_t seed = 1;
  std::string data;
  std::string data_format = "idx";  // idx | tfrecord | images
  int64_t image_size = 224;         // images: the side they are resized to
  double validation_split = 0.2;    // images: the files kept to evaluate on
  double width = 1.0;               // mobilenet_v2's width multiplier
  std::string input = "dataset";    // dataset (IteratorGetNext in the graph) | feed
  std::string init = "glorot";
  std::string checkpoint;
  bool restore = false;
  std::string trace;
  int64_t cpu_devices = 1;
  std::string place;                   // "regex=device,regex=device"
  std::vector<PlaceRule> place_rules;  // parsed by ParseArgs
  bool no_soft_placement = false;
  std::string placement = "rules";  // rules | auto
  std::string placement_algorithm = "m-sct";
  int64_t profile_steps = 0;   // --placement auto: traced steps under the rules, planned from
  std::string device_memory;   // "cpu:0=2GB,cpu:1=2GB"
  int64_t device_threads = 0;  // SessionOptions::cpu_device_threads
  bool allow_nan = false;
  bool check_numerics = false;
  int64_t print_every = 0;
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int64_t threads = 0;
  std::string towers = "auto";  // a count, or auto: one per GPU, else 2 CPU devices
  std::string devices = "all";  // cpu | gpu | all (the GPUs when there are any, else CPUs)
  std::string aggregation = "param";
  std::string variable_device = train::kAutoVariableDevice;
  std::string towers_table;  // "1,2": time mlp_seed000 with each tower count, print the table
  // A cluster task (tools/cluster_role.h), or a whole local cluster.
  std::string job_name, ps_hosts, worker_hosts, local_cluster;
  int64_t task_index = 0;
  int64_t save_every = 0;  // steps between checkpoints (besides each epoch's)
  bool sync_replicas = false;
  int64_t replicas_to_aggregate = 0;  // 0: one gradient per worker
  double sync_timeout = 120;          // seconds a sync step may wait for the others
  std::string logdir;                 // TensorBoard event files (tools/summaries.h)
  int64_t histogram_every = 100;      // steps between weight and gradient histograms
  bool quiet = false;                 // no progress bar or periodic lines
  bool help = false;                  // --help: print help_text, do nothing else
  std::string help_text;

  bool in_cluster() const { return !job_name.empty() || !local_cluster.empty(); }
};

// Limits that keep a typo from hanging the machine (--cpu-devices 5000000000 once asked for
// 705M devices): far above any sensible value, far below what breaks.
constexpr int64_t kMaxDevices = 1024;
constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxBatch = 10'000'000;

// Every flag of pf-train, setting `a`: the parser, the range checks and --help.
flags::FlagSet MakeFlags(TrainArgs& a);
// The flags, checked alone and together, with the model's default batch filled in. Throws
// UsageError naming the flag.
TrainArgs ParseArgs(int argc, const char* const* argv);
// A tower count: an integer in [1, kMaxDevices], else UsageError naming `flag`.
int ParseCount(const std::string& text, const char* flag);

}  // namespace pf::app
