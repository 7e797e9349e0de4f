// What the GPU suite must exercise beyond the per-op conformance cases: towers on two GPUs
// (logical devices of GPU 0 when there is one) with both aggregation modes against one CPU
// tower, row views at odd offsets (the float4 path's fallback), tensors of more than 2^31
// elements. (A GPU fault that must come back as an error from Run, never as a hang, is in
// tests/devices/cuda/gpu_fault_test.cc: it needs a kernel of its own, so its program links the
// CUDA backend.) Skipped (ctest code 4) without a GPU.
#include "placeflow/models/models.h"
#include "tests/testing/test_util.h"

namespace pf::gpu_suite_test {
namespace {

// Two GPU devices: two physical GPUs, or GPU 0 split in two.
SessionOptions TwoGpus() {
  SessionOptions o;
  o.allow_soft_placement = true;
  if (CudaDeviceCount() < 2) {
    o.visible_device_list = "0";
    o.gpu_logical_devices = {{2048, 2048}};
  }
  return o;
}

// Trainable variables of `g` after one step of `model` on (x, y), and the step's loss.
std::map<std::string, Tensor> OneStep(const models::ModelOptions& mo, const SessionOptions& so,
                                      const Tensor& x, const Tensor& y, float* loss,
                                      std::map<std::string, Tensor>* before) {
  Graph g;
  g.set_seed(mo.seed);
  Scope root = Scope::Root(&g);
  models::Model m = models::BuildModel("mnist_mlp", root, mo);
  Session sess(g, so);
  sess.Run({}, {}, {GlobalVariablesInitializer(root)});
  for (const Variable& v : TrainableVariables(&g)) (*before)[v.name()] = sess.Run({v.value()})[0];
  *loss = sess.Run({{m.input, x}, {m.target, y}}, {m.loss}, {m.train_op})[0].scalar<float>();
  std::map<std::string, Tensor> after;
  for (const Variable& v : TrainableVariables(&g)) after[v.name()] = sess.Run({v.value()})[0];
  if (mo.towers) {
    int on_gpu = 0;
    for (const auto& [node, dev] : sess.DevicePlacement()) {
      if (g.FindNode(node)->op() == "MatMul" && dev.find("GPU:1") != std::string::npos) ++on_gpu;
    }
    CHECK(on_gpu >= 2);  // tower 1 really ran on the second GPU
  }
  return after;
}

TEST_CASE("Towers on two GPUs take the same step as one CPU tower, both aggregation modes",
          "[gpu][towers]") {
  PF_REQUIRE_GPU();
  const int64_t batch = 13;  // splits 7 + 6: tower 1's rows start at an odd offset
  Tensor x = testing::RandomTensor({batch, 784}, 5, 0, 1), y(DT_INT32, {batch});
  for (int64_t i = 0; i < batch; ++i) y.data<int32_t>()[i] = static_cast<int32_t>((i * 7) % 10);
  models::ModelOptions single;
  single.steps_per_epoch = 10;
  SessionOptions cpu;
  cpu.device_count["GPU"] = 0;
  float loss1 = 0;
  std::map<std::string, Tensor> before1, before2;
  const auto after1 = OneStep(single, cpu, x, y, &loss1, &before1);
  for (auto a : {train::Aggregation::kParameterDevice, train::Aggregation::kAllReduce}) {
    INFO((a == train::Aggregation::kAllReduce ? "all-reduce" : "parameter device"));
    models::ModelOptions mo = single;
    train::TowerOptions t;
    t.devices = {"/gpu:0", "/gpu:1"};
    t.aggregation = a;
    t.variable_device = "/gpu:0";
    mo.towers = t;
    float loss2 = 0;
    const auto after2 = OneStep(mo, TwoGpus(), x, y, &loss2, &before2);
    CHECK(loss2 == Approx(loss1).epsilon(1e-5));
    for (const auto& [name, t1] : after1) {
      INFO(name);
      REQUIRE(before2.at(name).BitwiseEqual(before1.at(name)));
      double max_update = 0, max_diff = 0;
      for (int64_t j = 0; j < t1.num_elements(); ++j) {
        const double u1 = t1.data<float>()[j] - before1.at(name).data<float>()[j];
        const double u2 = after2.at(name).data<float>()[j] - before1.at(name).data<float>()[j];
        max_update = std::max(max_update, std::abs(u1));
        max_diff = std::max(max_diff, std::abs(u2 - u1));
      }
      CHECK(max_update > 0);
      CHECK(max_diff <= 1e-4 * max_update + 1e-8);
    }
  }
}

TEST_CASE("Row views at odd offsets take the elementwise kernels' unaligned path correctly",
          "[gpu]") {
  PF_REQUIRE_GPU();
  // [13, 5] split 7 + 6: part 1 starts 35 floats (140 bytes) in, not 16-byte aligned; its 30
  // elements are a multiple of neither 4 nor the vector width.
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  Tensor v = testing::RandomTensor({13, 5}, 9);
  Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, {13, 5});
  std::vector<Output> parts = ops::BatchSplit(gpu, x, 2);
  Output sum = ops::Add(gpu, parts[1], parts[1]);
  Output prod = ops::Mul(gpu, parts[1], ops::Neg(gpu, parts[1]));
  std::vector<Tensor> out = Session(g).Run({{x, v}}, {sum, prod});
  REQUIRE(out[0].shape() == Shape({6, 5}));
  for (int64_t i = 0; i < 30; ++i) {
    const float e = v.data<float>()[35 + i];
    CHECK(out[0].data<float>()[i] == 2 * e);
    CHECK(out[1].data<float>()[i] == -e * e);
  }
}

TEST_CASE("Tensors of more than 2^31 elements are indexed correctly", "[gpu][large]") {
  PF_REQUIRE_GPU();
  // [65537, 32768]: 2^31 + 2^15 floats (8 GiB each); x, 2x and -2x need about 24 GiB.
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/gpu:0");
  Output dims = ops::ConstInt(gpu, {65537, 32768});
  Output x = ops::Fill(gpu, dims, ops::Const(gpu, 1.5f));
  Output y = ops::Neg(gpu, ops::Add(gpu, x, x));
  Output tail = ops::Slice(gpu, y, {65536, 32760}, {1, 8});
  Output head = ops::Slice(gpu, y, {0, 0}, {1, 8});
  std::vector<Tensor> out;
  Status s = Session(g).TryRun({}, {tail, head}, {}, &out);
  if (s.code() == Code::kResourceExhausted) {
    WARN("SKIPPED: this GPU cannot hold three 8 GiB tensors: " << s.message());
    return;
  }
  REQUIRE(s.ok());
  for (const Tensor& t : out) {
    for (int64_t i = 0; i < 8; ++i) CHECK(t.data<float>()[i] == -3.f);
  }
}

}  // namespace
}  // namespace pf::gpu_suite_test
