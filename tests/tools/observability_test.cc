// pf-train as a user watches it: --logdir writes what TensorBoard shows (read back by the
// project's reader), the progress bar on a terminal (a pseudo-terminal here) and plain lines in a
// pipe, and Ctrl-C (SIGINT) leaving a complete checkpoint, a readable event file and status 130.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "placeflow/io/event_file.h"
#include "placeflow/io/proto/graph.pb.h"
#include "tests/testing/test_util.h"

namespace pf::observability_test {
namespace {

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

void WriteIdx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims) {
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
  for (size_t i = 0; i < n; ++i)
    s.push_back(static_cast<char>((i * 37) % (magic == 0x801 ? 10 : 256)));
  std::ofstream f(path, std::ios::binary);
  f << s;
  REQUIRE(f.good());
}

void WriteMnist(const fs::path& dir, uint32_t train, uint32_t test) {
  fs::create_directories(dir);
  WriteIdx(dir / "train-images-idx3-ubyte", 0x803, {train, 28, 28});
  WriteIdx(dir / "train-labels-idx1-ubyte", 0x801, {train});
  WriteIdx(dir / "t10k-images-idx3-ubyte", 0x803, {test, 28, 28});
  WriteIdx(dir / "t10k-labels-idx1-ubyte", 0x801, {test});
}

// A pf-train child whose stdout and stderr go to a pipe or to a pseudo-terminal.
class Child {
 public:
  Child(const std::vector<std::string>& args, bool tty) {
    int out_fd = -1;
    if (tty) {
      struct winsize ws = {};
      ws.ws_col = 120;
      ws.ws_row = 40;
      pid_ = forkpty(&out_fd, nullptr, nullptr, &ws);
    } else {
      int fds[2];
      REQUIRE(pipe(fds) == 0);
      pid_ = fork();
      if (pid_ == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
      } else {
        close(fds[1]);
        out_fd = fds[0];
      }
    }
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setenv("CUDA_VISIBLE_DEVICES", "", 1);
      unsetenv("PF_PROGRESS");
      std::vector<char*> argv = {const_cast<char*>(PF_TRAIN_BINARY)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(PF_TRAIN_BINARY, argv.data());
      _exit(127);
    }
    fd_ = out_fd;
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  // Reads what is there within `ms` (a pty reports EIO once the child is gone).
  bool Pump(int ms) {
    struct pollfd p = {fd_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    out_.append(buf, n);
    return true;
  }
  // Reads until `text` appears (or the output ends, or `seconds` pass).
  bool WaitFor(const std::string& text, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (out_.find(text) == std::string::npos && std::chrono::steady_clock::now() < end) {
      if (!Pump(100)) break;
    }
    return out_.find(text) != std::string::npos;
  }
  int Wait() {
    while (Pump(100)) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string out_;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

TEST_CASE("pf-train --logdir writes scalars, histograms, the placed graph and a traced step",
          "[observability]") {
  testing::TempDir dir("obs_logdir");
  WriteMnist(dir.path / "data", 400, 100);
  const fs::path logdir = dir.path / "logs";
  // 2 epochs of 4 steps on two CPU towers; histograms every 3 steps.
  Child c(Split("--model mnist_mlp --data " + (dir.path / "data").string() +
                " --batch 100 --epochs 2 --cpu-devices 2 --histogram-every 3 --logdir " +
                logdir.string()),
          false);
  const int status = c.Wait();
  INFO(c.out());
  REQUIRE(status == 0);
  CHECK_THAT(c.out(), Contains("summaries: " + logdir.string()));
  const auto files = io::ListEventFiles(logdir.string());
  REQUIRE(files.size() == 1);
  auto events = io::ReadEventFile(files[0]).value();
  REQUIRE(!events.empty());
  CHECK(events[0].file_version == "brain.Event:2");
  std::map<std::string, std::vector<int64_t>> steps_of;
  std::set<int64_t> histogram_steps;
  std::set<std::string> histogram_tags;
  std::string graph_def;
  int traced = 0;
  for (const auto& e : events) {
    for (const auto& v : e.values) {
      if (v.kind == io::SummaryValue::Kind::kScalar) steps_of[v.tag].push_back(e.step);
      if (v.kind == io::SummaryValue::Kind::kHistogram) {
        histogram_steps.insert(e.step);
        histogram_tags.insert(v.tag);
        CHECK(v.num > 0);
      }
      if (v.kind == io::SummaryValue::Kind::kScalar && v.tag == "loss") {
        CHECK(std::isfinite(v.scalar));
        CHECK(v.scalar > 0);
      }
    }
    if (!e.graph_def.empty()) graph_def = e.graph_def;
    if (!e.run_metadata.empty()) {
      ++traced;
      CHECK(e.run_metadata_tag == "step_3");
    }
  }
  const std::vector<int64_t> every_step = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(steps_of["loss"] == every_step);
  CHECK(steps_of["learning_rate"] == every_step);
  CHECK(steps_of["step_time_ms"] == every_step);
  CHECK(steps_of["examples_per_sec"] == every_step);
  CHECK(steps_of["accuracy"] == std::vector<int64_t>{4, 8});
  CHECK(histogram_steps == std::set<int64_t>{1, 3, 6});
  CHECK(histogram_tags.count("layer1/w") == 1);
  CHECK(histogram_tags.count("layer1/w/gradient") == 1);
  CHECK(traced == 1);
  tensorflow::GraphDef def;
  REQUIRE(def.ParseFromString(graph_def));
  std::set<std::string> devices;
  for (const auto& n : def.node()) devices.insert(n.device());
  CHECK(devices.count("/job:localhost/replica:0/task:0/device:CPU:0") == 1);
  CHECK(devices.count("/job:localhost/replica:0/task:0/device:CPU:1") == 1);
}

TEST_CASE("pf-train --mixed-precision float16 --logdir adds the loss scale and skipped steps",
          "[observability][mixed_precision]") {
  testing::TempDir dir("obs_loss_scale");
  WriteMnist(dir.path / "data", 400, 100);
  const fs::path logdir = dir.path / "logs";
  Child c(Split("--model mnist_mlp --data " + (dir.path / "data").string() +
                " --batch 100 --epochs 1 --cpu-devices 2 --mixed-precision float16 --logdir " +
                logdir.string()),
          false);
  const int status = c.Wait();
  INFO(c.out());
  REQUIRE(status == 0);
  const auto files = io::ListEventFiles(logdir.string());
  REQUIRE(files.size() == 1);
  std::map<std::string, std::vector<double>> values;
  const auto events = io::ReadEventFile(files[0]).value();
  for (const auto& e : events) {
    for (const auto& v : e.values)
      if (v.kind == io::SummaryValue::Kind::kScalar) values[v.tag].push_back(v.scalar);
  }
  REQUIRE(values["loss_scale"].size() == 4);
  REQUIRE(values["skipped_steps"].size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    // A power of two from 2^15 down (halved per skipped step), skipped steps counting up.
    const double scale = values["loss_scale"][i], skipped = values["skipped_steps"][i];
    int exponent = 0;
    CHECK(std::frexp(scale, &exponent) == 0.5);
    CHECK(scale >= 1);
    CHECK(scale <= 32768);
    CHECK(skipped >= (i == 0 ? 0 : values["skipped_steps"][i - 1]));
    CHECK(skipped <= 4);
  }
}

TEST_CASE("pf-train's progress: a bar redrawn on a terminal, plain lines in a pipe, none quiet",
          "[observability][progress]") {
  testing::TempDir dir("obs_progress");
  WriteMnist(dir.path / "data", 500, 100);
  const std::string args =
      "--model mnist_mlp --towers 1 --batch 50 --epochs 2 --data " + (dir.path / "data").string();
  Child tty(Split(args), true);
  REQUIRE(tty.Wait() == 0);
  const std::string t = tty.out();
  INFO(t);
  CHECK_THAT(t, Contains("Epoch 1/2") && Contains("Epoch 2/2"));
  CHECK_THAT(t, Contains("\r[") && Contains(" - ETA ") && Contains(" ex/s"));
  // Each epoch ends its line once, with the elapsed time and the test accuracy.
  CHECK_THAT(t, Contains("[==============================] 10/10 - "));
  CHECK_THAT(t, Contains(" - test_accuracy "));
  CHECK(t.find("epoch 1 step") == std::string::npos);

  Child pipe(Split(args + " --print-every 5"), false);
  REQUIRE(pipe.Wait() == 0);
  INFO(pipe.out());
  CHECK(pipe.out().find('\r') == std::string::npos);
  CHECK_THAT(pipe.out(), Contains("epoch 1 step 5/10 loss=") && Contains("epoch 2 loss=") &&
                             Contains("test_accuracy="));

  Child quiet(Split(args + " --quiet"), true);
  REQUIRE(quiet.Wait() == 0);
  INFO(quiet.out());
  CHECK(quiet.out().find("\r[") == std::string::npos);
  CHECK(quiet.out().find(" step ") == std::string::npos);
  CHECK_THAT(quiet.out(), Contains("epoch 2 loss="));
}

TEST_CASE(
    "Ctrl-C stops pf-train after the step: a complete checkpoint, a readable event file, "
    "exit 130",
    "[observability][sigint]") {
  testing::TempDir dir("obs_sigint");
  WriteMnist(dir.path / "data", 200, 100);
  const std::string common = "--model mnist_mlp --towers 1 --batch 100 --data " +
                             (dir.path / "data").string() + " --checkpoint " +
                             (dir.path / "ckpt").string();
  Child c(
      Split(common + " --epochs 100000 --print-every 1 --logdir " + (dir.path / "logs").string()),
      false);
  REQUIRE(c.WaitFor("epoch 3 ", 120));
  kill(c.pid(), SIGINT);
  const int status = c.Wait();
  INFO(c.out());
  CHECK(status == 130);
  CHECK_THAT(c.out(), Contains("pf-train: interrupted (SIGINT) at step") &&
                          Contains("checkpoint saved") && Contains("summaries flushed"));
  // The interrupted step, from the message.
  const size_t at = c.out().find("interrupted (SIGINT) at step ");
  const int64_t step = std::stoll(c.out().substr(at + 29));
  CHECK(step >= 5);
  // The checkpoint restores (pf-train reads and checks it whole before assigning).
  Child restore(Split(common + " --epochs 1 --restore"), false);
  CHECK(restore.Wait() == 0);
  CHECK_THAT(restore.out(), Contains(fmt::format("(global_step={})", step)));
  // The event file reads to its end with every CRC right, and has the last step's loss.
  const auto files = io::ListEventFiles((dir.path / "logs").string());
  REQUIRE(files.size() == 1);
  auto events = io::ReadEventFile(files[0]);
  REQUIRE(events.ok());
  int64_t last_loss_step = 0;
  for (const auto& e : events.value())
    for (const auto& v : e.values)
      if (v.tag == "loss") last_loss_step = std::max(last_loss_step, e.step);
  CHECK(last_loss_step == step);
}

}  // namespace
}  // namespace pf::observability_test
