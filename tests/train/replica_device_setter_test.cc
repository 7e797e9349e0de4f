// ReplicaDeviceSetter: which device each variable and op asks for, and where the placer puts
// them over a ps/worker cluster's devices (CPU devices renamed into tasks, no processes).
#include "tests/testing/test_util.h"

namespace pf::replica_device_setter_test {
namespace {

TEST_CASE("ReplicaDeviceSetter: variables round robin over the ps, ops on the worker",
          "[train][distributed]") {
  Graph g;
  train::ReplicaDeviceSetter setter(2, "/job:worker/task:1");
  Scope s = setter.Apply(Scope::Root(&g));
  Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, {4, 3});
  Variable w = GetVariable(s.WithVariableScope("layer"), "w", {3, 2});
  Variable b = GetVariable(s.WithVariableScope("layer"), "b", {2});
  Variable c = GetVariable(s, "c", {2});
  Output y = ops::Add(s, ops::MatMul(s, x, w.value()), b.value());
  CHECK(w.ref().node->requested_device() == "/job:ps/task:0/device:CPU:0");
  CHECK(b.ref().node->requested_device() == "/job:ps/task:1/device:CPU:0");
  CHECK(c.ref().node->requested_device() == "/job:ps/task:0/device:CPU:0");
  CHECK(y.node->requested_device() == "/job:worker/task:1");
  // Reuse finds the variable where it is and does not advance the round robin.
  Variable again = GetVariable(s.WithVariableScope("layer", Reuse::kReuse), "w", {3, 2});
  CHECK(again.ref().node == w.ref().node);
  Variable d = GetVariable(s, "d", {2});
  CHECK(d.ref().node->requested_device() == "/job:ps/task:1/device:CPU:0");

  // The placer puts them there, optimizer slots and updates with their variables.
  Output loss = ops::Mean(s, ops::Square(s, y));
  Operation step = train::Adam(0.01).Minimize(s, loss);
  DeviceSet devices;
  for (auto [job, task] : {std::pair{"ps", 0}, {"ps", 1}, {"worker", 0}, {"worker", 1}}) {
    auto d = NewCpuDevice(0);
    d->SetTask(job, 0, task);
    devices.Add(std::move(d));
  }
  auto placement = Place(g.nodes(), devices, {}).ValueOrThrow();
  std::map<std::string, std::string> where;
  for (const auto& [n, d] : placement.device) where[n->name()] = d->name();
  CHECK(where.at("layer/w") == "/job:ps/replica:0/task:0/device:CPU:0");
  CHECK(where.at("layer/b") == "/job:ps/replica:0/task:1/device:CPU:0");
  CHECK(where.at(y.node->name()) == "/job:worker/replica:0/task:1/device:CPU:0");
  int on_ps = 0;
  for (const auto& [name, dev] : where) {
    if (name.find("Adam") != std::string::npos && name.find("layer/w") != std::string::npos) {
      INFO(name);
      CHECK(dev == "/job:ps/replica:0/task:0/device:CPU:0");  // slots and ApplyAdam of w
      ++on_ps;
    }
  }
  CHECK(on_ps >= 3);
}

TEST_CASE("ReplicaDeviceSetter: greedy by size balances bytes; bad arguments are refused",
          "[train][distributed]") {
  Graph g;
  train::ReplicaDeviceSetter setter(2, "/job:worker", train::PsStrategy::kGreedyBySize);
  Scope s = setter.Apply(Scope::Root(&g));
  Variable big = GetVariable(s, "big", {1000});
  Variable small1 = GetVariable(s, "small1", {10});
  Variable small2 = GetVariable(s, "small2", {10});
  Variable mid = GetVariable(s, "mid", {500});
  CHECK(big.ref().node->requested_device() == "/job:ps/task:0/device:CPU:0");
  CHECK(small1.ref().node->requested_device() == "/job:ps/task:1/device:CPU:0");
  CHECK(small2.ref().node->requested_device() == "/job:ps/task:1/device:CPU:0");
  CHECK(mid.ref().node->requested_device() == "/job:ps/task:1/device:CPU:0");  // 20 < 4000 bytes
  CHECK_THROWS_AS(train::ReplicaDeviceSetter(0, "/job:worker"), Error);
  CHECK_THROWS_AS(train::ReplicaDeviceSetter(1, "/job:worker/bad:x"), Error);
}

}  // namespace
}  // namespace pf::replica_device_setter_test
