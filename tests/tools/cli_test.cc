// pf-train and pf-bench run as a user runs them: --help, bad flags and values, bad data, bad
// checkpoint paths, a diverging loss, devices that do not exist. Exit status 2 is a bad flag or
// value, 1 an error while running.
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "placeflow/devices/gpu_probe.h"
#include "tests/testing/test_util.h"
#include "tools/flags.h"

namespace pf::cli_test {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

struct ToolRun {
  int status = -1;
  std::string out, err;
};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `binary args` with no GPU visible (as ctest runs the CPU tests), stdout and stderr apart.
ToolRun RunTool(const std::string& binary, const std::string& args) {
  static int calls = 0;
  const fs::path base = fs::temp_directory_path() / fmt::format("pf_cli_{}_{}", getpid(), calls++);
  const std::string cmd = fmt::format("CUDA_VISIBLE_DEVICES= {} {} >{}.out 2>{}.err", binary, args,
                                      base.string(), base.string());
  const int rc = std::system(cmd.c_str());
  ToolRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = ReadAll(base.string() + ".out");
  r.err = ReadAll(base.string() + ".err");
  fs::remove(base.string() + ".out");
  fs::remove(base.string() + ".err");
  return r;
}

ToolRun Train(const std::string& args) { return RunTool(PF_TRAIN_BINARY, args); }

// A temporary directory, removed at the end of the test.
void WriteIdx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims,
              uint8_t fill) {
  std::string s;
  auto be = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  be(magic);
  size_t n = 1;
  for (uint32_t d : dims) {
    be(d);
    n *= d;
  }
  for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 7 == 0 ? fill : i % 10));
  std::ofstream(path, std::ios::binary) << s;
}

// An MNIST-format directory (uncompressed IDX files) with `train` and `test` examples.
void WriteMnist(const fs::path& dir, uint32_t train, uint32_t test) {
  WriteIdx(dir / "train-images-idx3-ubyte", 0x803, {train, 28, 28}, 200);
  WriteIdx(dir / "train-labels-idx1-ubyte", 0x801, {train}, 3);
  WriteIdx(dir / "t10k-images-idx3-ubyte", 0x803, {test, 28, 28}, 200);
  WriteIdx(dir / "t10k-labels-idx1-ubyte", 0x801, {test}, 3);
}

int CountLines(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

// --help's entries, one per flag: its first line, and the lines under its description, joined.
std::vector<std::string> HelpEntries(const std::string& help) {
  std::vector<std::string> entries;
  REQUIRE(help.find("\nflags:\n") != std::string::npos);
  std::istringstream in(help.substr(help.find("\nflags:\n") + 8));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  --", 0) == 0) {
      entries.push_back(line);
    } else if (!entries.empty() && line.rfind(std::string(31, ' '), 0) == 0) {
      entries.back() += " " + line.substr(31);
      CHECK(line.size() <= 100);
    } else if (line.empty()) {
      break;  // the examples follow
    }
  }
  return entries;
}

TEST_CASE("pf-train --help describes every flag and its default on stdout and exits 0", "[cli]") {
  ToolRun r = Train("--help");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith("usage: pf-train"));  // tests/install/check_install.sh greps it
  const std::vector<std::string> entries = HelpEntries(r.out);
  CHECK(entries.size() == 50);
  for (const std::string& e : entries) {
    INFO(e);
    CHECK_THAT(e, Contains("(default: "));
  }
  // Every flag pf-train has ever accepted is described.
  for (const char* flag : {"--model",
                           "--steps",
                           "--epochs",
                           "--batch",
                           "--lr",
                           "--optimizer",
                           "--log-device-placement",
                           "--seed",
                           "--data",
                           "--data-format",
                           "--image-size",
                           "--validation-split",
                           "--width",
                           "--input",
                           "--init",
                           "--checkpoint",
                           "--restore",
                           "--print-every",
                           "--train-limit",
                           "--test-limit",
                           "--threads",
                           "--placement",
                           "--placement-algorithm",
                           "--profile-steps",
                           "--device-memory",
                           "--device-threads",
                           "--trace",
                           "--cpu-devices",
                           "--place",
                           "--towers",
                           "--devices",
                           "--aggregation",
                           "--variable-device",
                           "--towers-table",
                           "--job-name",
                           "--task-index",
                           "--ps-hosts",
                           "--worker-hosts",
                           "--local-cluster",
                           "--save-every",
                           "--sync-replicas",
                           "--replicas-to-aggregate",
                           "--sync-timeout",
                           "--allow-nan",
                           "--no-soft-placement",
                           "--logdir",
                           "--histogram-every",
                           "--quiet"}) {
    INFO(flag);
    CHECK(std::count_if(entries.begin(), entries.end(), [&](const std::string& e) {
            return e.rfind(std::string("  ") + flag + " ", 0) == 0;
          }) == 1);
  }
  CHECK(std::count(entries.begin(), entries.end(),
                   "  --batch N                    examples per step, split over the towers; "
                   "clamped to the training set's size (default: 2000 for mlp_seed000, 32 for "
                   "mobilenet_v2, 64 for lstm_seq, else 100; 1..10000000)") == 1);
  CHECK(std::count(entries.begin(), entries.end(),
                   "  --model NAME                 the model to train (default: mlp_seed000; one "
                   "of mlp_seed000, mnist_mlp, lenet, mobilenet_v2_small, cnn_seed004, "
                   "mobilenet_v2, lstm_seq)") == 1);
  CHECK_THAT(r.out, Contains("dataset-fashion-mnist"));
  CHECK(Train("-h").out == r.out);
}

TEST_CASE("pf-train --help names the TensorFlow spellings of the cluster flags as aliases",
          "[cli]") {
  const std::vector<std::string> entries = HelpEntries(Train("--help").out);
  for (const char* alias : {"--job_name", "--task_index", "--ps_hosts", "--worker_hosts",
                            "--sync_replicas", "--replicas_to_aggregate", "--sync_timeout"}) {
    INFO(alias);
    CHECK(std::count_if(entries.begin(), entries.end(), [&](const std::string& e) {
            return e.find(std::string("also ") + alias + ")") != std::string::npos;
          }) == 1);
  }
}

// PF_MAX_CPU_ISA is read when the library loads: a value it does not know is logged with the
// valid ones, and the program goes on uncapped (docs/simd.md).
TEST_CASE("PF_MAX_CPU_ISA with an unknown value is an error naming the valid ones", "[cli][simd]") {
  ToolRun r = RunTool(std::string("PF_MAX_CPU_ISA=avx3 ") + PF_BENCH_BINARY, "--help");
  CHECK(r.status == 0);
  CHECK_THAT(r.err, Contains("PF_MAX_CPU_ISA='avx3' is not one of sse4, avx2, avx512: ignored"));
  ToolRun ok = RunTool(std::string("PF_MAX_CPU_ISA=avx2 ") + PF_BENCH_BINARY, "--help");
  CHECK(ok.status == 0);
  CHECK(ok.err.empty());
}

TEST_CASE("pf-bench --help lists its figures with one line each", "[cli]") {
  ToolRun r = RunTool(PF_BENCH_BINARY, "--help");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith("usage: pf-bench [FIGURE...]"));
  CHECK_THAT(r.out,
             Contains("  executor_chain         us per node of a chain of 10,000 tiny ops\n"));
  CHECK_THAT(r.out, Contains("  conv2d_gflops          a 3x3 conv layer"));
  // One described line per figure: as many as the unknown-figure error names, at least the 22
  // of round 2.
  std::istringstream in(r.out.substr(r.out.find("figures:\n")));
  int figures = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  ", 0) != 0) continue;
    ++figures;
    INFO(line);
    CHECK(line.size() > 26);  // name, padding, description
  }
  ToolRun bad = RunTool(PF_BENCH_BINARY, "--nope");
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, StartsWith("pf-bench: unknown figure '--nope'; figures: executor_chain"));
  const std::string names = bad.err.substr(0, bad.err.find(" (pf-bench --help"));
  std::istringstream words(names.substr(names.find("figures: ") + 9));
  int named = 0;
  for (std::string w; words >> w;) ++named;
  CHECK(named >= 22);
  CHECK(figures == named);
}

TEST_CASE("pf-bench gpu_info says whether the CUDA backend loaded, and why not",
          "[cli][gpu_backend]") {
  const std::string bench = PF_BENCH_BINARY;
  ToolRun off = RunTool("PF_CUDA_BACKEND=0 " + bench, "gpu_info");
  CHECK(off.status == 0);
  CHECK(off.err.empty());
  CHECK(off.out == fmt::format("gpu_info count=0 cuda_build={} no CUDA runtime loaded status=ok\n"
                               "gpu_info backend: disabled (PF_CUDA_BACKEND=0)\n",
                               BuiltWithCuda() ? 1 : 0));
  // A backend that does not load: one warning naming it and dlerror, then CPU only.
  const std::string missing = "/nonexistent/libplaceflow_cuda.so.0";
  const std::string warning =
      "Could not load dynamic library '" + missing + "'; dlerror: " + missing +
      ": cannot open shared object file: No such file or directory. Skipping registering GPU "
      "devices: placeflow runs on the CPU only.";
  ToolRun failed = RunTool("PF_CUDA_BACKEND=" + missing + " " + bench, "gpu_info");
  CHECK(failed.status == 0);
  CHECK_THAT(failed.err, Contains(" W placeflow] " + warning + "\n"));
  CHECK(std::count(failed.err.begin(), failed.err.end(), '\n') == 1);
  CHECK_THAT(failed.out, StartsWith("gpu_info count=0 "));
  CHECK_THAT(failed.out, Contains("gpu_info backend: failed: " + warning + "\n"));
  if (BuiltWithCuda()) {
    // Forced without a driver (no GPU visible here): it loads from beside the core.
    ToolRun forced = RunTool("PF_CUDA_BACKEND=1 " + bench, "gpu_info");
    CHECK(forced.status == 0);
    CHECK_THAT(forced.out, StartsWith("gpu_info count=0 cuda_build=1 "));
    CHECK_THAT(forced.out, Contains(" status=ok\ngpu_info backend: loaded " +
                                    gpu_backend_internal::DefaultLibraryPath() + "\n"));
  }
}

TEST_CASE("pf-train: every numeric flag is range-checked with a one-line error and exit status 2",
          "[cli]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--lr -1", "--lr must be a number > 0, got '-1'"},
      {"--lr 0", "--lr must be a number > 0, got '0'"},
      {"--lr nan", "--lr must be a number > 0, got 'nan'"},
      {"--lr inf", "--lr must be a number > 0, got 'inf'"},
      {"--batch 0", "--batch must be an integer in [1, 10000000], got '0'"},
      {"--batch -5", "--batch must be an integer in [1, 10000000], got '-5'"},
      {"--batch 10000001", "--batch must be an integer in [1, 10000000], got '10000001'"},
      {"--steps -1", "--steps must be an integer >= 1, got '-1'"},
      {"--steps 10abc", "--steps must be an integer >= 1, got '10abc'"},
      {"--epochs 0", "--epochs must be an integer >= 1, got '0'"},
      {"--cpu-devices 0", "--cpu-devices must be an integer in [1, 1024], got '0'"},
      {"--cpu-devices -3", "--cpu-devices must be an integer in [1, 1024], got '-3'"},
      {"--cpu-devices 5000000000",
       "--cpu-devices must be an integer in [1, 1024], got '5000000000'"},
      {"--threads 100000", "--threads must be an integer in [0, 1024], got '100000'"},
      {"--threads -1", "--threads must be an integer in [0, 1024], got '-1'"},
      {"--seed 99999999999999999999", "--seed must be an integer >= 0, got '99999999999999999999'"},
      {"--print-every 0", "--print-every must be an integer >= 1, got '0'"},
      {"--save-every -2", "--save-every must be an integer >= 1, got '-2'"},
      {"--train-limit -1", "--train-limit must be an integer >= 0, got '-1'"},
      {"--sync_timeout 0", "--sync-timeout must be a number > 0, got '0'"},
      {"--sync-timeout 0", "--sync-timeout must be a number > 0, got '0'"},
      {"--towers 0", "--towers must be an integer in [1, 1024], got '0'"},
      {"--towers-table 1,0", "--towers-table must be an integer in [1, 1024], got '0'"},
      {"--devices tpu", "--devices must be one of cpu, gpu, all, got 'tpu'"},
      {"--model resnet",
       "--model must be one of mlp_seed000, mnist_mlp, lenet, "
       "mobilenet_v2_small, cnn_seed004, mobilenet_v2, lstm_seq, got 'resnet'"},
      {"--steps", "missing value for --steps"},
      {"--stepz 3", "unknown flag '--stepz' (see pf-train --help)"},
      {"--restore=maybe", "--restore takes no value (or true/false), got 'maybe'"},
      {"--place affine0", "bad --place rule 'affine0': expected regex=device"},
      {"--variable-device /cpu:x",
       "bad --variable-device '/cpu:x': Malformed device specification '/cpu:x'"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    ToolRun r = Train(args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "pf-train: " + message + "\n");
  }
  // --flag=value works like --flag value.
  CHECK(Train("--lr=-1").err == "pf-train: --lr must be a number > 0, got '-1'\n");
}

TEST_CASE("The flag table parses and range-checks values and describes flags", "[cli]") {
  int64_t n = 5;
  double lr = 0;
  bool on = false;
  std::string kind = "a";
  flags::FlagSet f("prog", "does things");
  f.Int("--n", &n, "a count", 1, 10);
  f.Double("--lr", &lr, "a rate", flags::Positive()).Default("the model's");
  f.Switch("--on", &on, "turns it on");
  f.String("--kind", &kind, "which", {"a", "b"});
  const char* good[] = {"prog", "--n", "7", "--lr=0.5", "--on", "--kind", "b"};
  REQUIRE(f.Parse(7, good).ok());
  CHECK(n == 7);
  CHECK(lr == 0.5);
  CHECK(on);
  CHECK(kind == "b");
  const char* bad[] = {"prog", "--n", "11"};
  Status s = f.Parse(3, bad);
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message() == "--n must be an integer in [1, 10], got '11'");
  CHECK(n == 7);  // unchanged by a rejected value
  const char* help[] = {"prog", "--n", "3", "--help", "--n", "99"};
  REQUIRE(f.Parse(6, help).ok());
  CHECK(f.help_requested());
  CHECK(f.Help() ==
        "usage: prog [FLAG VALUE | FLAG=VALUE | SWITCH]...\ndoes things\n\nflags:\n"
        "  --n N                        a count (default: 5; 1..10)\n"
        "  --lr F                       a rate (default: the model's; > 0)\n"
        "  --on                         turns it on (default: off)\n"
        "  --kind a|b                   which (default: a)\n");
}

TEST_CASE("pf-train --devices gpu without a GPU says where the towers really are", "[cli]") {
  ToolRun r = Train("--devices gpu --steps 2 --batch 8");
  CHECK(r.status == 0);
  CHECK_THAT(r.out, StartsWith("pf-train: no GPU found: 1 tower on /cpu:0\n"));
  CHECK_THAT(r.out, Contains("1 tower(s) on /cpu:0 (aggregation param"));
  CHECK_THAT(Train("--devices gpu --towers 2 --steps 1 --batch 8").out,
             StartsWith("pf-train: no GPU found: 2 towers on /cpu:0,/cpu:1\n"));
  // Without soft placement that is an error.
  ToolRun strict = Train("--devices gpu --steps 2 --batch 8 --no-soft-placement");
  CHECK(strict.status == 1);
  CHECK(strict.err ==
        "pf-train: InvalidArgument: --devices gpu: no GPU found, and soft placement is off "
        "(--no-soft-placement)\n");
}

TEST_CASE("pf-train: a --place or --variable-device that does not exist prints its fallback",
          "[cli]") {
  ToolRun r = Train("--towers 1 --steps 1 --batch 8 --place affine0=/cpu:7");
  CHECK(r.status == 0);
  CHECK_THAT(r.out,
             Contains("pf-train: --place 'affine0=/cpu:7': no device matches /cpu:7 (devices: "
                      "/job:localhost/replica:0/task:0/device:CPU:0); soft placement puts its "));
  CHECK_THAT(r.out, Contains(" node(s) on /job:localhost/replica:0/task:0/device:CPU:0\n"));
  CHECK_THAT(r.out, !Contains("puts its 0 node(s)"));
  ToolRun v = Train("--towers 1 --steps 1 --batch 8 --variable-device /cpu:3");
  CHECK(v.status == 0);
  CHECK_THAT(v.out, Contains("pf-train: --variable-device /cpu:3: no device matches /cpu:3"));
  // The summary line says where the variables are, not where they were asked to be.
  CHECK_THAT(v.out, Contains("variables on /job:localhost/replica:0/task:0/device:CPU:0 (no "
                             "/cpu:3)"));
  CHECK_THAT(v.out, !Contains("variables on /cpu:3"));
  CHECK_THAT(v.out, !Contains("puts its 0 node(s)"));
  // A device that exists: nothing to say.
  CHECK_THAT(Train("--towers 1 --cpu-devices 2 --steps 1 --batch 8 --place affine0=/cpu:1").out,
             !Contains("no device matches"));
  // Without soft placement the session's own error stops the run.
  ToolRun strict =
      Train("--towers 1 --steps 1 --batch 8 --place affine0=/cpu:7 --no-soft-placement");
  CHECK(strict.status == 1);
  CHECK_THAT(strict.err, Contains("{{node affine0/w}} was explicitly assigned to /device:CPU:7 but "
                                  "available devices are"));
}

TEST_CASE("pf-train stops on a NaN or infinite loss unless --allow-nan", "[cli]") {
  ToolRun r = Train("--towers 1 --steps 20 --batch 16 --lr 1e30");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, StartsWith("pf-train: InvalidArgument: Model diverged with loss = "));
  CHECK_THAT(r.err,
             Contains(" (fetched from tower_0/loss:0); lower the learning rate or change the "
                      "initialiser (--allow-nan keeps training)\n"));
  CHECK_THAT(r.out, !Contains("step 20/20"));
  ToolRun allowed = Train("--towers 1 --steps 20 --batch 16 --lr 1e30 --allow-nan");
  CHECK(allowed.status == 0);
  CHECK_THAT(allowed.out, Contains("step 20/20 loss="));
  CHECK_THAT(allowed.out, Contains("nan step_ms="));
}

TEST_CASE("pf-train: a data set smaller than the batch trains on clamped batches", "[cli]") {
  testing::TempDir dir("cli_small_data");
  WriteMnist(dir.path, 30, 10);
  const std::string data = "--model mnist_mlp --towers 1 --data " + dir.path.string();
  ToolRun r = Train(data + " --batch 100");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("data: " + dir.path.string() + " (30 train, 10 test examples)"));
  CHECK_THAT(r.out, Contains("batch 100 is larger than the 30 training examples: batches of 30\n"));
  CHECK_THAT(r.out, Contains("epoch 1 loss="));
  // The documented --train-limit, and the largest batch the flag takes.
  CHECK_THAT(Train(data + " --train-limit 5").out,
             Contains("batch 100 is larger than the 5 training examples: batches of 5\n"));
  CHECK(Train(data + " --batch 10000000").status == 0);
  // Two towers need two examples per step at least; 30 examples are enough.
  CHECK(
      Train("--model mnist_mlp --towers 2 --data " + dir.path.string() + " --batch 1000").status ==
      0);
}

TEST_CASE("pf-train --steps with a classifier stops there: evaluated and saved", "[cli]") {
  testing::TempDir dir("cli_classifier_steps");
  WriteMnist(dir.path, 300, 20);
  const std::string ckpt = (dir.path / "ckpt").string();
  // 300 examples in batches of 10: 30 steps an epoch, two epochs; --steps 7 ends at step 7.
  ToolRun r = Train("--model mnist_mlp --towers 1 --batch 10 --epochs 2 --steps 7 --data " +
                    dir.path.string() + " --checkpoint " + ckpt);
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("epoch 1 loss="));
  CHECK_THAT(r.out, Contains("test_accuracy="));
  CHECK_THAT(r.out, !Contains("epoch 2 "));
  CHECK_THAT(r.out, Contains("saved " + ckpt + "/model-7"));
  // Without --steps the epochs run in full: 60 steps.
  ToolRun full = Train("--model mnist_mlp --towers 1 --batch 10 --epochs 2 --data " +
                       dir.path.string() + " --checkpoint " + ckpt);
  CHECK(full.status == 0);
  CHECK_THAT(full.out, Contains("epoch 2 loss="));
  CHECK_THAT(full.out, Contains("saved " + ckpt + "/model-60"));
}

TEST_CASE("pf-train: IDX files with no examples are an error and not a crash", "[cli]") {
  testing::TempDir dir("cli_empty_data");
  WriteMnist(dir.path, 0, 10);
  ToolRun r = Train("--model mnist_mlp --towers 1 --data " + dir.path.string());
  CHECK(r.status == 1);
  CHECK(r.err == "pf-train: InvalidArgument: The training set has no examples\n");
  WriteMnist(dir.path, 10, 0);
  ToolRun t = Train("--model mnist_mlp --towers 1 --data " + dir.path.string());
  CHECK(t.status == 1);
  CHECK(t.err == "pf-train: InvalidArgument: The test set has no examples\n");
}

TEST_CASE("pf-train checks the --checkpoint directory before training", "[cli]") {
  testing::TempDir dir("cli_checkpoint");
  const fs::path file = dir.path / "a_file";
  std::ofstream(file) << "x";
  auto expect_error = [](const std::string& path, const std::string& why) {
    ToolRun r = Train("--towers 1 --steps 3 --batch 8 --checkpoint " + path);
    INFO(r.out);
    CHECK(r.status == 1);
    CHECK(r.err ==
          "pf-train: FailedPrecondition: Cannot save checkpoints in '" + path + "': " + why + "\n");
    CHECK(r.out.empty());  // checked before the data, the graph and the training
  };
  expect_error(file.string(), "it is not a directory");
  expect_error((file / "ckpt").string(), "'" + file.string() + "' is not a directory");
  // Read-only even for root: sysfs takes no new files.
  if (fs::is_directory("/sys/kernel") && access("/sys/kernel", W_OK) == 0) {
    std::FILE* probe = std::fopen("/sys/kernel/pf_probe", "w");
    if (probe == nullptr) {
      expect_error("/sys/kernel", "it is not writable: Permission denied");
    } else {
      std::fclose(probe);
      WARN("skipped the read-only case: /sys/kernel is writable here");
    }
  }
  // A good directory is created and used.
  ToolRun ok =
      Train("--towers 1 --steps 3 --batch 8 --checkpoint " + (dir.path / "new/ckpt").string());
  CHECK(ok.status == 0);
  CHECK(fs::exists(dir.path / "new/ckpt/checkpoint"));
}

// The last "loss=" of pf-train's output.
std::string LastLoss(const std::string& out) {
  const size_t at = out.rfind("loss=");
  return at == std::string::npos ? "" : out.substr(at, out.find_first_of(" \n", at) - at);
}

TEST_CASE("pf-train --placement auto trains within a device's memory to the rules' loss",
          "[cli][auto_session]") {
  const std::string common =
      "--model mlp_seed000 --steps 5 --batch 200 --quiet --cpu-devices 2 "
      "--device-threads 1 ";
  ToolRun rules = Train(common);
  REQUIRE(rules.status == 0);
  // 600x512 weights (1.2 MB) do not fit in 1 MB: the rules fail, auto moves them to /cpu:1.
  ToolRun tight = Train(common + "--device-memory cpu:0=1MB");
  CHECK(tight.status != 0);
  CHECK_THAT(tight.err, Contains("ResourceExhausted"));
  ToolRun automatic = Train(common + "--placement auto --device-memory cpu:0=1MB");
  REQUIRE(automatic.status == 0);
  CHECK_THAT(automatic.out, Contains("placement: m-sct") && Contains("predicted"));
  CHECK(LastLoss(automatic.out) == LastLoss(rules.out));
  CHECK(!LastLoss(rules.out).empty());
  // Profiled first: three traced steps placed by the rules (a session of their own), then the
  // training from the start: the same losses. Where the rules cannot run, estimates.
  ToolRun profiled = Train(common + "--placement auto --profile-steps 3");
  REQUIRE(profiled.status == 0);
  CHECK_THAT(profiled.out, Contains("placement: profiled") && Contains("over 3 steps"));
  CHECK(LastLoss(profiled.out) == LastLoss(rules.out));
  ToolRun unprofiled =
      Train(common + "--placement auto --profile-steps 3 --device-memory cpu:0=1MB");
  REQUIRE(unprofiled.status == 0);
  CHECK_THAT(unprofiled.out, Contains("profiling with the rules' placement failed") &&
                                 Contains("ResourceExhausted") &&
                                 Contains("planning from estimates"));
  CHECK(LastLoss(unprofiled.out) == LastLoss(rules.out));
  ToolRun cluster = Train("--placement auto --job-name worker --ps-hosts a:1 --worker-hosts b:2");
  CHECK(cluster.status == 2);
  CHECK_THAT(cluster.err, Contains("for one process"));
}

TEST_CASE("pf-place plans a model for a simulated machine and flags what does not fit",
          "[cli][auto]") {
  ToolRun r = RunTool(PF_PLACE_BINARY,
                      "--model wide --devices cpu:2 --place "
                      "'branch_[0-3]/=/cpu:0,branch_[4-7]/=/cpu:1'");
  REQUIRE(r.status == 0);
  for (const char* row : {"rules", "experts", "m-sct", "m-etf", "m-topo"})
    CHECK_THAT(r.out, Contains(std::string("\n") + row));
  ToolRun small = RunTool(PF_PLACE_BINARY, "--model mnist_mlp --devices 'cpu:2x100KB'");
  REQUIRE(small.status == 0);
  CHECK_THAT(small.out, Contains("EXCEEDS cpu:0") && Contains("no plan"));
  ToolRun bad = RunTool(PF_PLACE_BINARY, "--devices 'tpu:4'");
  CHECK(bad.status != 0);
  CHECK_THAT(bad.err, Contains("unknown device type 'tpu'"));
}
// The step pf-place predicts on the row of `plan` ("experts", "m-sct", ...), in ms.
double PredictedMs(const std::string& out, const std::string& plan) {
  const size_t row = out.find("\n" + plan + " ");
  REQUIRE(row != std::string::npos);
  const size_t step = out.find("step", row);
  return std::stod(out.substr(step + 4));
}

TEST_CASE("pf-place: m-sct gives each LSTM layer a GPU, as fast as the experts' split",
          "[cli][auto]") {
  // Seed 003's model, small: 4 layers of 512 units over 8 steps on 4 GPUs.
  ToolRun r = RunTool(PF_PLACE_BINARY,
                      "--model lstm_lm --devices 'gpu:4x16GB,nvlink=450GB/s' --algorithm m-sct "
                      "--layers 4 --steps 8 --hidden 512 --vocab 2000 --batch 64 --print-plan");
  REQUIRE(r.status == 0);
  CHECK(PredictedMs(r.out, "m-sct") <= 1.10 * PredictedMs(r.out, "experts"));
  // Per layer (its ops and their gradients), the nodes on each GPU in m-sct's plan.
  std::map<std::string, std::map<std::string, int>> count;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  m-sct ", 0) != 0) continue;
    std::string name = line.substr(8, line.find(' ', 8) - 8);
    if (name.rfind("gradients/", 0) == 0) name = name.substr(10);
    if (name.rfind("lstm_", 0) != 0) continue;
    count[name.substr(0, name.find('/'))][line.substr(line.rfind(':') - 3)]++;
  }
  REQUIRE(count.size() == 4);
  std::set<std::string> homes;
  for (const auto& [layer, on] : count) {
    auto home = std::max_element(on.begin(), on.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    int total = 0;
    for (const auto& [device, n] : on) total += n;
    CAPTURE(layer, home->first, home->second, total);
    CHECK(home->second >= 0.95 * total);  // the layer's ops stay together
    homes.insert(home->first);
  }
  CHECK(homes.size() == 4);  // and no two layers share a GPU
}

}  // namespace
}  // namespace pf::cli_test
