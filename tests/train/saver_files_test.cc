// Checkpoint files under failure: the index is written atomically and checked, a lost index is
// an error rather than a fresh start, failed saves leave no orphans, max_to_keep counts what is
// on disk, directories are checked up front, and NaN weights are noticed on restore.
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "placeflow/train/checkpoint_files.h"
#include "tests/testing/test_util.h"

namespace pf::saver_files_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace std::chrono_literals;

struct Model {
  Graph g;
  Variable w, b;
  Model() {
    Scope vs = Scope::Root(&g).WithVariableScope("dense");
    w = GetVariable(vs, "w", {2, 2}, init::RandomNormal(0, 1, 3));
    b = GetVariable(vs, "b", {2}, init::Zeros());
  }
};

fs::path TempDir(const char* name) {
  auto dir = fs::temp_directory_path() / fmt::format("pf_saverfiles_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> Files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Fails every write of a file whose name ends with `suffix`, part-way, as a full disk does.
struct FailWrites {
  explicit FailWrites(std::string suffix) {
    SetCheckpointWriteHookForTesting([suffix](const std::string& path) {
      if (!path.ends_with(suffix)) return Status::OK();
      return errors::ResourceExhausted("No space left on device (injected)");
    });
  }
  ~FailWrites() { SetCheckpointWriteHookForTesting(nullptr); }
};

struct Trained {
  Model m;
  Session sess{m.g};
  Trained() { sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))}); }
};

TEST_CASE("A failed index write keeps the previous index and leaves no file behind",
          "[train][saver]") {
  auto dir = TempDir("index");
  Trained t;
  Saver saver(&t.m.g, {}, 2);
  saver.Save(t.sess, (dir / "model").string(), 1);
  saver.Save(t.sess, (dir / "model").string(), 2);
  {
    FailWrites full("/checkpoint");
    Code code = Code::kOk;
    try {
      saver.Save(t.sess, (dir / "model").string(), 3);
    } catch (const Error& e) {
      code = e.code();
      CHECK_THAT(e.status().message(),
                 StartsWith("Checkpoint " + (dir / "model-3.safetensors").string() +
                            " not saved: No space left on device (injected)"));
    }
    CHECK(code == Code::kResourceExhausted);
  }
  // Nothing half-written, no orphan, and the oldest checkpoint was not deleted for it.
  CHECK(Files(dir) ==
        std::vector<std::string>{"checkpoint", "model-1.safetensors", "model-2.safetensors"});
  CHECK(ReadText(dir / "checkpoint") ==
        FormatCheckpointIndex({"model-1.safetensors", "model-2.safetensors"}));
  CHECK(Saver::LatestCheckpoint(dir.string()) == (dir / "model-2.safetensors").string());
  // The next save succeeds and retention goes on from the same list.
  saver.Save(t.sess, (dir / "model").string(), 3);
  CHECK(Files(dir) ==
        std::vector<std::string>{"checkpoint", "model-2.safetensors", "model-3.safetensors"});
  fs::remove_all(dir);
}

TEST_CASE("A failed data write removes its temporary file and changes nothing", "[train][saver]") {
  auto dir = TempDir("data");
  Trained t;
  Saver saver(&t.m.g);
  saver.Save(t.sess, (dir / "model").string(), 1);
  {
    FailWrites full(".safetensors");
    CHECK_THROWS_WITH(saver.Save(t.sess, (dir / "model").string(), 2),
                      Contains("No space left on device (injected)"));
  }
  CHECK(Files(dir) == std::vector<std::string>{"checkpoint", "model-1.safetensors"});
  CHECK(ReadText(dir / "checkpoint") == FormatCheckpointIndex({"model-1.safetensors"}));
  // What a killed process leaves is cleaned up by the next Saver's first save there.
  std::ofstream(dir / "model-9.safetensors.tmp") << "partial";
  std::ofstream(dir / "checkpoint.tmp") << "partial";
  Saver(&t.m.g).Save(t.sess, (dir / "model").string(), 2);
  CHECK(Files(dir) ==
        std::vector<std::string>{"checkpoint", "model-1.safetensors", "model-2.safetensors"});
  fs::remove_all(dir);
}

TEST_CASE("A lost index next to checkpoints is an error, not a fresh start", "[train][saver]") {
  auto dir = TempDir("lost");
  CHECK(Saver::LatestCheckpoint((dir / "absent").string()).empty());  // fresh: no directory
  CHECK(Saver::LatestCheckpoint(dir.string()).empty());               // fresh: empty directory
  Trained t;
  Saver saver(&t.m.g);
  saver.Save(t.sess, (dir / "model").string(), 1);
  saver.Save(t.sess, (dir / "model").string(), 2);
  const std::string index = (dir / "checkpoint").string();
  const std::string holds =
      "' holds 2 checkpoint file(s) (model-1.safetensors, "
      "model-2.safetensors): restore one by its path, or move them away "
      "to start afresh";
  auto failure = [&] {
    auto latest = Saver::TryLatestCheckpoint(dir.string());
    REQUIRE_FALSE(latest.ok());
    CHECK(latest.status().code() == Code::kFailedPrecondition);
    CHECK_THROWS_AS(Saver::LatestCheckpoint(dir.string()), Error);
    return latest.status().message();
  };
  std::ofstream(index, std::ios::trunc).close();  // what Ctrl-C or a full disk used to leave
  CHECK(failure() == "Checkpoint index '" + index + "' is empty, but '" + dir.string() + holds);
  fs::remove(index);
  CHECK(failure() == "Checkpoint index '" + index + "' is missing, but '" + dir.string() + holds);
  std::ofstream(index) << "\x01\x02garbage\n";
  CHECK_THAT(failure(), StartsWith("Checkpoint index '" + index +
                                   "' is corrupt (line 1: expected a field name at '\\001')"));
  std::ofstream(index, std::ios::trunc) << "model-1.safetensors\nmodel-7.safetensors\n";
  CHECK(failure() == "Checkpoint index '" + index +
                         "' names 'model-7.safetensors' as the latest checkpoint, but there is "
                         "no such file");
  fs::remove_all(dir);
}

TEST_CASE("max_to_keep counts the checkpoints already on disk", "[train][saver]") {
  auto dir = TempDir("keep");
  Trained t;
  {
    Saver first(&t.m.g, {}, 3);
    for (int step = 1; step <= 3; ++step) first.Save(t.sess, (dir / "model").string(), step);
  }
  // A new run (a new Saver) over the same directory.
  Saver second(&t.m.g, {}, 3);
  second.Save(t.sess, (dir / "model").string(), 4);
  CHECK(Files(dir) == std::vector<std::string>{"checkpoint", "model-2.safetensors",
                                               "model-3.safetensors", "model-4.safetensors"});
  CHECK(
      ReadText(dir / "checkpoint") ==
      FormatCheckpointIndex({"model-2.safetensors", "model-3.safetensors", "model-4.safetensors"}));
  // A lost index is rebuilt from the files (oldest first) instead of orphaning them.
  fs::remove(dir / "checkpoint");
  fs::last_write_time(dir / "model-2.safetensors", fs::file_time_type::clock::now() - 1h);
  Saver third(&t.m.g, {}, 2);
  third.Save(t.sess, (dir / "model").string(), 5);
  CHECK(Files(dir) ==
        std::vector<std::string>{"checkpoint", "model-4.safetensors", "model-5.safetensors"});
  fs::remove_all(dir);
}

TEST_CASE("Checkpoint directories are checked before training, without filesystem exceptions",
          "[train][saver]") {
  auto dir = TempDir("dircheck");
  CHECK(Saver::CheckDirectory((dir / "new" / "deeper").string()).ok());
  CHECK(fs::is_directory(dir / "new" / "deeper"));
  CHECK(Files(dir / "new" / "deeper").empty());  // the probe file is gone
  std::ofstream(dir / "file") << "x";
  Status file = Saver::CheckDirectory((dir / "file").string());
  CHECK(file.code() == Code::kFailedPrecondition);
  CHECK(file.message() ==
        "Checkpoint directory '" + (dir / "file").string() + "' is a file, not a directory");
  Status under = Saver::CheckDirectory((dir / "file" / "ckpt").string());
  CHECK(under.message() == "Cannot create checkpoint directory '" +
                               (dir / "file" / "ckpt").string() + "': Not a directory");
  // Save reports the same as pf::Error (it used to throw std::filesystem::filesystem_error).
  Trained t;
  Saver saver(&t.m.g);
  CHECK_THROWS_AS(saver.Save(t.sess, (dir / "file" / "ckpt" / "model").string(), 1), Error);
  CHECK_THROWS_WITH(saver.Save(t.sess, (dir / "file" / "ckpt" / "model").string(), 1),
                    Contains(under.message()));
  if (geteuid() != 0) {  // root writes through permission bits
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    CHECK_THAT(Saver::CheckDirectory((dir / "ro").string()).message(),
               Contains("' is not writable: Permission denied"));
    fs::permissions(dir / "ro", fs::perms::owner_all);
  }
  fs::remove_all(dir);
}

class LogCapture {
 public:
  LogCapture()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_st>(text_)), level_(Logger().level()) {
    sink_->set_pattern("%v");
    Logger().sinks().push_back(sink_);
    Logger().set_level(spdlog::level::warn);
  }
  ~LogCapture() {
    auto& sinks = Logger().sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), sink_));
    Logger().set_level(level_);
  }
  std::string Text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
  spdlog::level::level_enum level_;
};

TEST_CASE("A checkpoint with NaN weights warns, and check_numerics refuses it", "[train][saver]") {
  auto dir = TempDir("nan");
  Trained t;
  Tensor bad = Tensor::FromVector<float>({1, std::nanf(""), 3, 4}, {2, 2});
  std::map<std::string, Tensor> tensors = {{"dense/w", bad},
                                           {"dense/b", Tensor::FromVector<float>({0, 0})}};
  const std::string path = (dir / "nan.safetensors").string();
  REQUIRE(WriteSafetensors(path, tensors).ok());
  Saver saver(&t.m.g);
  auto before = t.sess.Run({t.m.w.value()})[0];
  RestoreOptions strict;
  strict.check_numerics = true;
  CHECK_THROWS_WITH(saver.Restore(t.sess, path, strict),
                    Contains("Checkpoint '" + path +
                             "' holds NaN values in dense/w: not restored (check_numerics)"));
  CHECK(t.sess.Run({t.m.w.value()})[0].BitwiseEqual(before));  // nothing assigned
  LogCapture log;
  saver.Restore(t.sess, path);
  CHECK_THAT(log.Text(),
             Contains("Checkpoint '" + path + "' holds NaN values in dense/w: restored anyway"));
  CHECK(t.sess.Run({t.m.w.value()})[0].BitwiseEqual(bad));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pf::saver_files_test
