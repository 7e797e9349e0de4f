// SummaryWriter (train/summary_writer.h): what it writes is read back by the project's reader
// (io/event_file.h): summaries from ops, host scalars, the placed graph with devices, one traced
// step's statistics; it writes asynchronously (nothing before a flush with a long period) and
// takes events from many threads.
#include "placeflow/train/summary_writer.h"

#include <filesystem>
#include <thread>

#include "placeflow/io/event_file.h"
#include "placeflow/io/proto/graph.pb.h"
#include "placeflow/io/proto/step_stats.pb.h"
#include "placeflow/ops/summary/summary.h"
#include "tests/testing/test_util.h"

namespace pf::summary_writer_test {
namespace {

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

// The graph event: every node with its assigned device (two devices: TensorBoard colours by
// them).
void CheckPlacedGraph(const std::string& graph_def, const Graph& g,
                      const std::map<std::string, std::string>& placement) {
  tensorflow::GraphDef def;
  REQUIRE(def.ParseFromString(graph_def));
  CHECK(def.node_size() == g.num_nodes());
  std::set<std::string> devices;
  for (const auto& n : def.node()) {
    INFO(n.name());
    if (placement.count(n.name())) CHECK(n.device() == placement.at(n.name()));
    devices.insert(n.device());
  }
  CHECK(devices.count("/job:localhost/replica:0/task:0/device:CPU:1") == 1);
  CHECK(devices.count("/job:localhost/replica:0/task:0/device:CPU:0") == 1);
}

// The run metadata event's step stats: per device, per node start and times, output bytes as
// memory.
void CheckStepStats(const std::string& run_metadata) {
  tensorflow::RunMetadata md;
  REQUIRE(md.ParseFromString(run_metadata));
  std::set<std::string> stat_devices, stat_nodes;
  for (const auto& d : md.step_stats().dev_stats()) {
    stat_devices.insert(d.device());
    for (const auto& n : d.node_stats()) {
      stat_nodes.insert(n.node_name());
      CHECK(n.all_start_micros() > 1600000000LL * 1000000);
      CHECK(n.all_end_rel_micros() >= n.op_end_rel_micros());
      REQUIRE(n.memory_size() == 1);
      if (n.node_name() == "h") CHECK(n.memory(0).total_bytes() == 3 * 4 * 4);
    }
  }
  CHECK(stat_devices.size() == 2);
  CHECK(stat_nodes.count("h") == 1);
  CHECK(stat_nodes.count("loss") == 1);
}

TEST_CASE("SummaryWriter writes summaries, scalars, the placed graph and step stats",
          "[summary_writer]") {
  testing::TempDir dir("sw_all", false);
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {-1, 4});
  Output h = ops::Relu(root.WithDevice("/cpu:1").WithOpName("h"), ops::Square(root, x));
  Output loss = ops::Mean(root.WithOpName("loss"), h, {0, 1});
  summary::Scalar(root, "loss", loss);
  summary::Histogram(root, "h", h);
  Output merged = summary::MergeAll(root);
  SessionOptions so;
  so.device_count["CPU"] = 2;
  Session sess(g, so);
  SummaryWriter writer(dir.path.string());
  std::vector<float> losses;
  for (int step = 1; step <= 5; ++step) {
    Tensor batch = testing::RandomTensor({3, 4}, step);
    RunOptions ro;
    ro.trace = step == 2;
    RunMetadata md;
    auto out = sess.Run(ro, {{x, batch}}, {merged, loss}, {}, &md);
    writer.AddSummary(out[0], step);
    writer.AddScalar("examples_per_sec", 100.0 * step, step);
    losses.push_back(out[1].scalar<float>());
    if (step == 1) writer.AddGraph(g, sess.DevicePlacement());
    if (ro.trace) writer.AddRunMetadata("step_2", md, step);
  }
  writer.Close();
  CHECK(writer.events_written() == 12);

  auto events = io::ReadEventFile(writer.path()).value();
  REQUIRE(events.size() == 13);
  CHECK(events[0].file_version == "brain.Event:2");
  std::map<std::string, std::vector<std::pair<int64_t, double>>> scalars;
  int histograms = 0;
  std::string graph_def, run_metadata;
  for (const io::EventRecord& e : events) {
    for (const io::SummaryValue& v : e.values) {
      if (v.kind == io::SummaryValue::Kind::kScalar) scalars[v.tag].emplace_back(e.step, v.scalar);
      if (v.kind == io::SummaryValue::Kind::kHistogram) {
        CHECK(v.tag == "h");
        CHECK(v.num == 12);
        ++histograms;
      }
    }
    if (!e.graph_def.empty()) graph_def = e.graph_def;
    if (!e.run_metadata.empty()) {
      CHECK(e.run_metadata_tag == "step_2");
      CHECK(e.step == 2);
      run_metadata = e.run_metadata;
    }
  }
  CHECK(histograms == 5);
  REQUIRE(scalars["loss"].size() == 5);
  for (int i = 0; i < 5; ++i) {
    CHECK(scalars["loss"][i].first == i + 1);
    CHECK(scalars["loss"][i].second == losses[i]);
    CHECK(scalars["examples_per_sec"][i].second == 100.0 * (i + 1));
  }
  CheckPlacedGraph(graph_def, g, sess.DevicePlacement());
  CheckStepStats(run_metadata);
}

TEST_CASE("SummaryWriter is asynchronous: events reach the file on flush", "[summary_writer]") {
  testing::TempDir dir("sw_async", false);
  SummaryWriterOptions o;
  o.flush_secs = 3600;
  o.max_queue = 1000;
  SummaryWriter writer(dir.path.string(), o);
  for (int i = 0; i < 50; ++i) writer.AddScalar("a", i, i);
  // Only the version record is in the file: the 50 events wait in the queue.
  CHECK(io::ReadEventFile(writer.path()).value().size() == 1);
  writer.Flush();
  auto events = io::ReadEventFile(writer.path()).value();
  REQUIRE(events.size() == 51);
  CHECK(events[50].values[0].scalar == 49);
  // A full queue wakes the thread without a flush.
  SummaryWriterOptions small;
  small.flush_secs = 3600;
  small.max_queue = 5;
  SummaryWriter w2((dir.path / "b").string(), small);
  for (int i = 0; i < 5; ++i) w2.AddScalar("b", i, i);
  for (int tries = 0; tries < 500 && w2.events_written() < 5; ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(w2.events_written() == 5);
}

TEST_CASE("SummaryWriter takes events from several threads", "[summary_writer]") {
  testing::TempDir dir("sw_threads", false);
  SummaryWriterOptions o;
  o.max_queue = 7;
  SummaryWriter writer(dir.path.string(), o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 250; ++i) writer.AddScalar("t" + std::to_string(t), i, i);
    });
  }
  for (auto& th : threads) th.join();
  writer.Close();
  auto events = io::ReadEventFile(writer.path()).value();
  REQUIRE(events.size() == 1001);
  std::map<std::string, int> per_tag;
  for (const auto& e : events)
    for (const auto& v : e.values) ++per_tag[v.tag];
  for (int t = 0; t < 4; ++t) CHECK(per_tag["t" + std::to_string(t)] == 250);
  writer.AddScalar("late", 1, 1);  // ignored after Close
  CHECK(io::ReadEventFile(writer.path()).value().size() == 1001);
}

TEST_CASE("SummaryWriter errors name the directory and the input", "[summary_writer]") {
  testing::TempDir dir("sw_errors", false);
  fs::create_directories(dir.path);
  std::ofstream(dir.path / "file") << "x";
  CHECK_THROWS_WITH(SummaryWriter((dir.path / "file" / "logs").string()),
                    Contains((dir.path / "file" / "logs").string()));
  SummaryWriter writer((dir.path / "ok").string());
  CHECK_THROWS_WITH(writer.AddSummary(Tensor::Scalar<float>(1), 1), Contains("string scalar"));
}

}  // namespace
}  // namespace pf::summary_writer_test
