// The op-conformance harness: every op with a GPU kernel, and its gradient, runs on /gpu:0 and
// on the CPU with the same fresh random inputs; results must agree within each case's stated
// tolerance (relative to the largest CPU magnitude). Ops without a GPU kernel are listed as
// skipped. The coverage checks run in every build, with or without CUDA or a GPU: every
// registered op has a case or a listed exemption, and every GPU kernel (found in the kernel
// registry and, so CPU-only builds check it too, in the ops/*/*_gpu.cc sources) has a case.
// The cases themselves are in tests/ops/gpu_conformance_cases.cc.
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/ops/gpu_conformance_cases.h"
#include "tests/testing/test_util.h"

namespace pf::gpu_conformance_test {
namespace {

using conformance::Case;
using conformance::InputSpec;
using conformance::OpCases;
using conformance::TrainCase;
using conformance::TrainCases;

Tensor RandomInput(const InputSpec& s, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t(s.dtype, s.shape);
  std::uniform_real_distribution<double> real(s.lo, s.hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = real(rng);
    switch (s.dtype) {
      case DT_FLOAT:
        t.data<float>()[i] = static_cast<float>(v);
        break;
      case DT_DOUBLE:
        t.data<double>()[i] = v;
        break;
      case DT_INT32:
        t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(v));
        break;
      case DT_INT64:
        t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(v));
        break;
      case DT_BOOL:
        t.data<bool>()[i] = v > (s.lo + s.hi) / 2;
        break;
      default:
        break;
    }
  }
  return t;
}

constexpr char kGpu[] = "/gpu:0";

// The case's graph: placeholders on the CPU, the op (and its gradient) under /gpu:0.
struct Built {
  Graph g;
  std::vector<Output> inputs;
  std::vector<Output> fetches;
  std::vector<std::string> checked_nodes;  // must land on the GPU
};

void Build(const Case& c, Built* b, const char* target = kGpu) {
  Scope root = Scope::Root(&b->g);
  Scope cpu = root.WithDevice("/cpu:0");
  Scope gpu = root.WithDevice(target);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    b->inputs.push_back(ops::Placeholder(cpu.WithOpName(fmt::format("in{}", i)), c.inputs[i].dtype,
                                         c.inputs[i].shape));
  }
  std::vector<Output> outs = c.build(gpu.NewSubScope("op"), b->inputs);
  for (const Output& o : outs) b->checked_nodes.push_back(o.node->name());
  b->fetches = outs;
  if (!c.grad) return;
  std::vector<Output> terms, wrt;
  Scope gs = gpu.NewSubScope("grad");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!IsReal(outs[i].dtype()) || !outs[i].shape().IsFullyDefined()) continue;
    // A fixed random weight per output element makes every element's gradient distinct.
    Tensor w =
        RandomInput({outs[i].dtype(), outs[i].shape(), 0.5, 1.5}, 100 + static_cast<uint32_t>(i));
    terms.push_back(ops::Sum(gs, ops::Mul(gs, outs[i], ops::Const(gs, w))));
  }
  for (const Output& in : b->inputs) {
    if (IsReal(in.dtype())) wrt.push_back(in);
  }
  if (terms.empty() || wrt.empty()) return;
  Output loss = terms.size() == 1 ? terms[0] : ops::AddN(gs, terms);
  for (const Output& d : Gradients(gs, {loss}, wrt)) {
    if (d.node != nullptr) b->fetches.push_back(d);
  }
}

double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    m = std::max(m, std::abs(t.dtype() == DT_DOUBLE ? t.data<double>()[i] : t.data<float>()[i]));
  }
  return m;
}

// Empty when `got` matches `want` within `tol` (relative to the largest reference magnitude;
// bitwise for integers and bools), else what differs.
std::string Mismatch(const Tensor& want, const Tensor& got, double tol) {
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) {
    return fmt::format("{} {} vs {} {}", DTypeName(want.dtype()), want.shape().ToString(),
                       DTypeName(got.dtype()), got.shape().ToString());
  }
  if (IsReal(want.dtype())) {
    const double diff = testing::MaxAbsDiff(want, got), bound = tol * (1.0 + MaxAbs(want));
    if (diff <= bound) return "";
    return fmt::format("max |diff| {:.3g} > {:.3g}: want {} got {}", diff, bound,
                       want.DebugString(6), got.DebugString(6));
  }
  if (want.BitwiseEqual(got)) return "";
  return fmt::format("not bitwise equal: want {} got {}", want.DebugString(6), got.DebugString(6));
}

// Builds variable + loss + update under `dev`; returns {variable value, loss}, the step and init.
struct BuiltTrain {
  Graph g;
  Output var, loss, average;
  Operation step, init, add_one;
};
void BuildTrain(const TrainCase& c, const char* dev, BuiltTrain* b) {
  Scope root = Scope::Root(&b->g);
  Scope s = root.WithDevice(dev);
  Variable w = GetVariable(s, "w", {40, 30}, init::Constant(0.25));
  Output target = ops::Const(s, testing::RandomTensor({40, 30}, 7));
  b->loss = ops::Mean(s, ops::Square(s, ops::Sub(s, w.value(), target)));
  // A moving average of the variable after each update (ApplyMovingAverage).
  Operation minimize = c.make()->Minimize(s, b->loss);
  train::ExponentialMovingAverage ema(0.9);
  Operation average = ema.Apply(s.WithControlDependencies({minimize}), {w});
  b->step = ops::NoOp(s.WithControlDependencies({minimize, average}));
  b->average = ema.Average(w).value();
  b->var = w.value();
  b->init = GlobalVariablesInitializer(root);
  // AssignAdd and AssignSub round trip: +1 then -1 leaves the variable as it was.
  Output one = ops::OnesLike(s, w.value());
  b->add_one = Operation(ops::AssignSub(s, ops::AssignAdd(s, w.ref(), one), one).node);
}

SessionOptions CpuOnly() {
  SessionOptions o;
  o.allow_soft_placement = true;
  o.device_count["GPU"] = 0;
  return o;
}

// Where the cases run, against the CPU's results: /gpu:0, or /cpu:1 to run the harness itself
// (and every op across a device boundary) in CPU-only builds.
struct Target {
  const char* device;  // what the cases request
  const char* placed;  // what their nodes' assigned device names must contain
  SessionOptions options;
};
Target GpuTarget() {
  SessionOptions o;
  o.allow_soft_placement = true;
  return {kGpu, "GPU:0", o};
}
Target SecondCpuTarget() {
  SessionOptions o = CpuOnly();
  o.device_count["CPU"] = 2;
  return {"/cpu:1", "CPU:1", o};
}

// The outcome of the cases: each runs on its own; a failure (a mismatch, a misplaced node, or
// an error from either session) is recorded and the next case runs.
struct Report {
  int cases = 0, compared = 0;
  std::vector<std::string> failures;   // "<case>: <what went wrong>", one per problem
  std::vector<std::string> fell_back;  // nodes that asked for the target and ran elsewhere
  std::set<std::string> failing_cases;
  void Fail(const std::string& name, const std::string& what) {
    failures.push_back(name + ": " + what);
    failing_cases.insert(name);
  }
  // One line per failing case on stdout (a GPU run's log shows every defect at once), then
  // the test's verdict.
  void Check(const char* what) const {
    for (const std::string& f : failures) fmt::print("conformance FAILED: {}\n", f);
    INFO(what << ": " << failing_cases.size() << " of " << cases << " cases failed:\n"
              << fmt::format("{}", fmt::join(failures, "\n")));
    CHECK(failures.empty());
    WARN(what << ": " << cases << " cases, " << compared << " tensors compared; nodes that ran "
              << "on another device than the one asked for: "
              << (fell_back.empty() ? std::string("none")
                                    : fmt::format("{}", fmt::join(fell_back, "; "))));
  }
};

// Runs `body`, turning any exception into a recorded failure of case `name`.
template <typename Fn>
void Isolated(Report* r, const std::string& name, Fn&& body) {
  ++r->cases;
  try {
    body();
  } catch (const std::exception& e) {
    r->Fail(name, e.what());
  }
}

void RunOpCase(const Case& c, const Target& t, uint32_t* seed, Report* r) {
  Built b;
  Build(c, &b, t.device);
  FeedDict feeds;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    feeds.emplace_back(b.inputs[i], RandomInput(c.inputs[i], (*seed)++));
  Session cpu(b.g, CpuOnly());
  Session target(b.g, t.options);
  std::vector<Tensor> want = cpu.Run(feeds, b.fetches);
  std::vector<Tensor> got = target.Run(feeds, b.fetches);
  auto where = target.DevicePlacement();
  for (const std::string& n : b.checked_nodes) {
    if (where.at(n).find(t.placed) == std::string::npos)
      r->Fail(c.name, fmt::format("node {} ran on {}, not {}", n, where.at(n), t.device));
  }
  const std::string asked = DeviceName::TryParse(t.device).ValueOrThrow().ToString();
  for (const auto& [node, dev] : where) {
    const Node* n = b.g.FindNode(node);
    if (n && !n->requested_device().empty() &&
        DeviceName::TryParse(n->requested_device()).ValueOrThrow().ToString() == asked &&
        dev.find(t.placed) == std::string::npos) {
      r->fell_back.push_back(fmt::format("{} ({})", n->op(), c.name));
    }
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string m = Mismatch(want[i], got[i], c.tol);
    if (!m.empty()) r->Fail(c.name, fmt::format("fetch {} ({}): {}", i, b.fetches[i].name(), m));
    ++r->compared;
  }
}

// Five optimizer steps, a moving average, then an AssignAdd/AssignSub chain, on the CPU and on
// the target.
void RunTrainCase(const TrainCase& c, const Target& t, Report* r) {
  const std::string name = "optimizer " + c.name;
  std::vector<Tensor> result[2];
  for (int k = 0; k < 2; ++k) {
    BuiltTrain b;
    BuildTrain(c, t.device, &b);
    Session sess(b.g, k == 0 ? CpuOnly() : t.options);
    sess.Run({}, {}, {b.init});
    for (int step = 0; step < 5; ++step) sess.Run({}, {}, {b.step});
    sess.Run({}, {}, {b.add_one});
    result[k] = sess.Run({b.var, b.loss, b.average});
    const std::string w = sess.DevicePlacement().at("w");
    if (k == 1 && w.find(t.placed) == std::string::npos)
      r->Fail(name, fmt::format("variable w ran on {}, not {}", w, t.device));
  }
  const char* what[] = {"variable", "loss", "moving average"};
  for (int i = 0; i < 3; ++i) {
    const std::string m = Mismatch(result[0][i], result[1][i], 1e-5);
    if (!m.empty()) r->Fail(name, fmt::format("{}: {}", what[i], m));
    ++r->compared;
  }
}

Report RunOpCases(const Target& t) {
  Report r;
  uint32_t seed = 1;
  for (const Case& c : OpCases()) Isolated(&r, c.name, [&] { RunOpCase(c, t, &seed, &r); });
  return r;
}
Report RunTrainCases(const Target& t) {
  Report r;
  for (const TrainCase& c : TrainCases())
    Isolated(&r, "optimizer " + c.name, [&] { RunTrainCase(c, t, &r); });
  return r;
}

// Ops with no conformance case, each with the reason. Everything else registered must have a
// case, with or without CUDA: a new op fails the coverage test until it gets one (and, when it
// has a GPU kernel, until that kernel is compared against the CPU) or is listed here. Ops whose
// name starts with "Test" are registered by the executor and placer tests themselves.
const std::map<std::string, std::string>& ExemptOps() {
  static const char kCpuFusion[] =
      "CPU only: the remapper fuses on CPU partitions only (executor/remapper.h)";
  static const auto* exempt = [] {
    auto* m = new std::map<std::string, std::string>{
        {"_Send", "inserted by the partitioner on every cross-device edge of every GPU case"},
        {"_Recv", "inserted by the partitioner on every cross-device edge of every GPU case"},
        {"_Arg", "carries each case's fed inputs into the GPU partition"},
        {"Placeholder", "the cases' inputs; its kernel only reports a missing feed"},
        // Debugging ops read their tensors on the host; soft placement runs them on the CPU.
        {"CheckNumerics", "CPU only: a debugging check (ops/debug/debug_ops.cc, docs/api.md)"},
        {"Prod", "CPU only for now: no GPU reduction kernel multiplies yet (soft placement)"},
        {"Print", "CPU only: writes to stderr (ops/debug/debug_ops.cc, docs/api.md)"},
        {"BatchNormMovingStatsCheck",
         "CPU only: batch norm's warning on unmoved statistics (train/batch_norm_check.cc)"},
        // The input pipeline's ops: host-side iterator state (data/iterator_ops.h).
        {"MakeIterator", "CPU only: (re)starts a host-side input pipeline (data/iterator_ops.h)"},
        {"IteratorGetNext",
         "CPU only: the input pipeline's elements are host tensors (data/iterator_ops.h)"},
        // String inputs live in host memory (DT_STRING): parsing ops are CPU kernels.
        {"DecodeRaw", "CPU only: its input is DT_STRING (ops/parse/decode_ops.cc)"},
    };
#ifdef PF_WITH_PROTOBUF  // these ops exist only in builds with protobuf
    m->insert({
        {"ParseExampleDense", "CPU only: parses DT_STRING tf.Examples (ops/parse/)"},
        {"ParseExampleVarLen", "CPU only: parses DT_STRING tf.Examples (ops/parse/)"},
        // Summaries serialize protos into DT_STRING scalars, host memory (ops/summary/).
        {"ScalarSummary", "CPU only: its output is a DT_STRING Summary proto"},
        {"HistogramSummary", "CPU only: its output is a DT_STRING Summary proto"},
        {"ImageSummary", "CPU only: encodes PNGs into a DT_STRING Summary proto"},
        {"MergeSummary", "CPU only: joins DT_STRING Summary protos"},
    });
#endif
    for (const char* op : {"_FusedMatMul", "_FusedBatchNormEx", "_FusedBatchNormGradEx",
                           "_FusedApplyGradientDescent", "_FusedApplyMomentum", "_FusedApplyAdam",
                           "_FusedApplyRMSProp", "_FusedApplyAdagrad"})
      (*m)[op] = kCpuFusion;
    // Shared queues and accumulators: host-side state of sync replicas on the ps tasks' CPUs
    // (docs/distributed.md); they have no GPU kernel.
    for (const char* op :
         {"QueueEnqueueMany", "QueueDequeue", "QueueSize", "AccumulatorApplyGradient",
          "AccumulatorTakeGradient", "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated",
          "AccumulatorNumDropped"}) {
      (*m)[op] = "CPU only: shared host state of sync replicas (ops/state/data_flow_ops.cc)";
    }
    // Issue 33's everyday ops (ops/everyday_ops.h): CPU kernels; soft placement runs a GPU
    // request on the CPU (tests/ops/gather_scan_topk_test.cc checks that it does).
    for (const char* op : {"Abs", "Sign", "ArgMin", "ClipByValue", "Select", "SelectV2", "Where",
                           "GatherV2", "GatherV2Grad", "Tile", "TileGrad", "Range", "Cumsum",
                           "TopKV2", "TopKV2Grad", "InTopKV2"}) {
      (*m)[op] = "CPU only for now: an everyday op of issue 33 (ops/everyday_ops.h)";
    }
    (*m)["Erf"] = "CPU only for now: issue 34's vectorised erf (ops/simd/vec_kernels.h)";
    for (const char* op : {"LogicalAnd", "LogicalOr", "LogicalNot"}) {
      (*m)[op] = "CPU only for now: bool logic (ops/everyday_ops.h), soft placement";
    }
    // A control-flow primitive means nothing alone (an Enter needs its loop, a pop its push):
    // each runs in the loops, conds and loop gradients of tests/executor/control_flow_test.cc
    // and tests/graph/tf_loop_gradients_import_test.cc; the GPU kernels have not run (issue 35).
    for (const char* op :
         {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond", "StackV2", "StackPushV2",
          "StackPopV2", "InplaceUpdate", "ControlTrigger"})
      (*m)[op] = "control flow: tested in loops and conds (tests/executor, tests/graph)";
    for (const char* op : {"BlockLSTM", "BlockLSTMGrad", "InplaceAdd"})
      (*m)[op] = "CPU only for now: the fused LSTM and loop gradients' sums (docs/control_flow.md)";
    (*m)["Assert"] =
        "no output to compare: checks of Case and MapFn, its GPU kernel reads host "
        "memory (tests/executor/functional_ops_test.cc)";
    // Image files: DT_STRING bytes through libjpeg/libpng on the host; resizing has no GPU
    // kernel yet (issue 36), the placer keeps it on the CPU (tests/ops/image_ops_test.cc).
    for (const char* op :
         {"DecodeJpeg", "DecodePng", "DecodeImage", "EncodeJpeg", "EncodePng", "ReadFile"})
      (*m)[op] = "CPU only: image file bytes are DT_STRING (ops/image/codec_ops.cc)";
    for (const char* op : {"ResizeBilinear", "ResizeBilinearGrad", "ResizeNearestNeighbor",
                           "ResizeNearestNeighborGrad"})
      (*m)[op] = "CPU only for now: no GPU resize kernel yet (issue 36)";
    return m;
  }();
  return *exempt;
}
bool IsExempt(const std::string& op) {
  return ExemptOps().count(op) > 0 || op.rfind("Test", 0) == 0;
}

// The ops the cases build under /gpu:0 (the op graphs, their gradients, the optimizer graphs).
std::set<std::string> CoveredOps() {
  std::set<std::string> covered;
  auto collect = [&](const Graph& g) {
    for (const Node* n : g.nodes()) {
      if (n->requested_device().find("GPU") != std::string::npos ||
          n->requested_device().find("gpu") != std::string::npos) {
        covered.insert(n->op());
      }
    }
  };
  for (const Case& c : OpCases()) {
    Built b;
    Build(c, &b);
    collect(b.g);
  }
  for (const TrainCase& c : TrainCases()) {
    BuiltTrain b;
    BuildTrain(c, kGpu, &b);
    collect(b.g);
  }
  return covered;
}

std::set<std::string> OpsWithGpuKernels() {
  std::set<std::string> out;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(op)) {
      if (k->device_type() == kDeviceGpu) out.insert(op);
    }
  }
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The ops the source tree registers GPU kernels for, read from the files rather than from the
// kernel registry so that a CPU-only build checks them too: every registered op named by a
// string literal in an ops/<family>/*_gpu.cc, and every KernelDef("Op", kDeviceGpu) elsewhere
// under ops/ (the GPU kernels that reuse a CPU kernel class).
std::set<std::string> OpsWithGpuKernelsInSources() {
  const std::vector<std::string> ops = OpRegistry::Global()->ListOps();
  const std::set<std::string> registered(ops.begin(), ops.end());
  const std::regex literal("\"(\\w+)\"");
  const std::regex gpu_kernel_def("KernelDef\\(\\s*\"(\\w+)\"\\s*,\\s*kDeviceGpu");
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(PF_SOURCE_DIR) / "ops")) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !name.ends_with(".cc")) continue;
    const std::string text = ReadFile(entry.path());
    const bool gpu_file = name.ends_with("_gpu.cc");
    for (std::sregex_iterator it(text.begin(), text.end(), gpu_file ? literal : gpu_kernel_def),
         end;
         it != end; ++it) {
      if (registered.count((*it)[1].str())) out.insert((*it)[1].str());
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  return v.empty() ? "none" : fmt::format("{}", fmt::join(v, ", "));
}

TEST_CASE("Every op has a GPU conformance case or a listed exemption", "[ops][conformance]") {
  const std::set<std::string> covered = CoveredOps();
  std::vector<std::string> missing, stale;
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!covered.count(op) && !IsExempt(op)) missing.push_back(op);
  }
  for (const auto& [op, why] : ExemptOps()) {
    if (OpRegistry::Global()->Find(op) == nullptr || covered.count(op)) stale.push_back(op);
  }
  INFO(
      "Ops without a conformance case (add one to OpCases() or TrainCases() in "
      "tests/ops/gpu_conformance_cases.cc, or an exemption with its reason to ExemptOps()): "
      << Join(missing));
  CHECK(missing.empty());
  INFO("Exemptions for ops that are not registered or now have a case: " << Join(stale));
  CHECK(stale.empty());
  WARN(OpCases().size() << " op cases, " << TrainCases().size() << " optimizer cases cover "
                        << covered.size() << " ops");
}

TEST_CASE("Every GPU kernel has a conformance case", "[ops][conformance][backend_kernels]") {
  const std::set<std::string> covered = CoveredOps();
  const std::set<std::string> in_sources = OpsWithGpuKernelsInSources();
  // The scan must see the tree: PF_SOURCE_DIR is this checkout, with GPU kernels for most ops.
  REQUIRE(in_sources.size() >= 50);
  std::set<std::string> gpu_ops = in_sources;
  // The registry holds GPU kernels where the CUDA backend is loaded: with a driver, or forced
  // (ctest gpu_kernels_match_sources sets PF_CUDA_BACKEND=1 in every CUDA build).
  const GpuBackendLoad::State backend = LoadGpuBackend().state;
  if (backend == GpuBackendLoad::State::kLoaded || backend == GpuBackendLoad::State::kLinked) {
    // The tests' own Test* ops (a GPU fault kernel) are registered by tests, not the sources.
    std::set<std::string> registered;
    for (const std::string& op : OpsWithGpuKernels()) {
      if (op.rfind("Test", 0) != 0) registered.insert(op);
    }
    // The scan and the registry agree where both exist, so the scan is trusted without CUDA.
    std::vector<std::string> only_registered, only_scanned;
    std::set_difference(registered.begin(), registered.end(), in_sources.begin(), in_sources.end(),
                        std::back_inserter(only_registered));
    std::set_difference(in_sources.begin(), in_sources.end(), registered.begin(), registered.end(),
                        std::back_inserter(only_scanned));
    INFO("GPU kernels the source scan missed: " << Join(only_registered));
    CHECK(only_registered.empty());
    INFO("Ops the source scan found that have no GPU kernel: " << Join(only_scanned));
    CHECK(only_scanned.empty());
    gpu_ops.insert(registered.begin(), registered.end());
  }
  std::vector<std::string> missing, without_gpu;
  for (const std::string& op : gpu_ops) {
    if (!covered.count(op) && !IsExempt(op)) missing.push_back(op);
  }
  for (const std::string& op : OpRegistry::Global()->ListOps()) {
    if (!gpu_ops.count(op) && !IsExempt(op)) without_gpu.push_back(op);
  }
  INFO("GPU kernels without a conformance case: " << Join(missing));
  CHECK(missing.empty());
  // Reported, not failed: these run on the CPU (soft placement) when asked for a GPU.
  WARN(gpu_ops.size() << " ops with GPU kernels; ops without one: " << Join(without_gpu));
}

TEST_CASE("GPU conformance: every op and its gradient match the CPU", "[gpu][conformance]") {
  PF_REQUIRE_GPU();
  RunOpCases(GpuTarget()).Check("GPU op cases");
}

TEST_CASE("GPU conformance: optimizers and variable updates match the CPU", "[gpu][conformance]") {
  PF_REQUIRE_GPU();
  RunTrainCases(GpuTarget()).Check("GPU optimizer cases");
}

// The same harness with /cpu:1 as the target, in every build: it runs here what the GPU run
// runs (each op behind a Send/Recv pair, the optimizers and the chained variable updates), so
// the harness and the cases are known to work before a GPU is lent.
TEST_CASE("Conformance harness: every case on a second CPU device matches /cpu:0",
          "[ops][conformance][harness]") {
  RunOpCases(SecondCpuTarget()).Check("op cases on /cpu:1");
  RunTrainCases(SecondCpuTarget()).Check("optimizer cases on /cpu:1");
}

// A failing case does not stop the others: an op case whose graph fails at run time is
// recorded with its error, and the cases after it still run and pass.
TEST_CASE("Conformance harness: a failing case is recorded and the next cases still run",
          "[ops][conformance][harness]") {
  const Target t = SecondCpuTarget();
  Report r;
  uint32_t seed = 1;
  Case bad{"MatMul mismatched inner dimensions",
           {{DT_FLOAT, {2, 3}}, {DT_FLOAT, {-1, 2}}},
           [](const Scope& s, const std::vector<Output>& in) {
             return std::vector<Output>{ops::MatMul(s, in[0], in[1])};
           },
           false};
  bad.inputs[1].shape = Shape({4, 2});  // fed as [4,2]: fails in both sessions at run time
  std::vector<Case> cases = {bad, OpCases()[0], bad, OpCases()[1]};
  for (const Case& c : cases) Isolated(&r, c.name, [&] { RunOpCase(c, t, &seed, &r); });
  CHECK(r.cases == 4);
  CHECK(r.failing_cases == std::set<std::string>{bad.name});
  REQUIRE(r.failures.size() == 2);
  CHECK_THAT(r.failures[0], Catch::Contains("MatMul"));
  CHECK(r.compared >= 2);  // both good cases compared their fetches
  // A wrong result is caught too: the mismatch names the fetch and the difference.
  Tensor a = Tensor::FromVector<float>({1, 2, 3}), b = Tensor::FromVector<float>({1, 2, 3.5f});
  CHECK(Mismatch(a, a, 1e-5).empty());
  CHECK_THAT(Mismatch(a, b, 1e-5), Catch::Contains("max |diff| 0.5"));
  CHECK_THAT(Mismatch(a, Tensor::FromVector<float>({1, 2}), 1e-5),
             Catch::Contains("[3] vs float [2]"));
}

}  // namespace
}  // namespace pf::gpu_conformance_test
