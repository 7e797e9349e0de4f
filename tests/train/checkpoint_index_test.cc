// The "checkpoint" index is TensorFlow's CheckpointState in text format (issue 33, item 11):
// written as TF's text_format writes it, read back, read from files TF's text_format wrote
// (tests/train/make_checkpoint_index_fixture.py), and the one-name-a-line index of earlier
// placeflow versions still reads.
#include <filesystem>
#include <fstream>

#include "placeflow/train/checkpoint_files.h"
#include "tests/testing/test_util.h"

namespace pf::checkpoint_index_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(PF_SOURCE_DIR) + "/tests/train/" + name, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path TempDir(const char* name) {
  auto dir = fs::temp_directory_path() / fmt::format("pf_ckindex_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Touch(const fs::path& p) { std::ofstream(p) << "x"; }

// The awkward names of the fixtures: quotes, a backslash, a tab, control bytes, UTF-8.
const std::vector<std::string> kOdd = {"plain-1.safetensors",
                                       "it's \"odd\"\\ \t\x01\x7f \xc3\xb1.safetensors"};

TEST_CASE("The checkpoint index is written byte for byte as TensorFlow's text_format writes it",
          "[train][saver][checkpoint_index]") {
  CHECK(FormatCheckpointIndex({"model-2.safetensors", "model-3.safetensors"}) ==
        "model_checkpoint_path: \"model-3.safetensors\"\n"
        "all_model_checkpoint_paths: \"model-2.safetensors\"\n"
        "all_model_checkpoint_paths: \"model-3.safetensors\"\n");
  // protobuf's CEscape with as_utf8=False, as the fixture's text_format wrote it.
  CHECK(FormatCheckpointIndex(kOdd) == ReadFixture("tf_checkpoint_escapes.txt"));
  CHECK(FormatCheckpointIndex({}).empty());
}

TEST_CASE("CheckpointState text round-trips and reads what TensorFlow wrote",
          "[train][saver][checkpoint_index]") {
  // Every byte but NUL and '/' (which a file name cannot hold) survives the round trip.
  std::string all;
  for (int c = 1; c < 256; ++c)
    if (c != '/') all += static_cast<char>(c);
  const std::vector<std::string> names = {"a-1.safetensors", all + ".safetensors"};
  auto back = ParseCheckpointState(FormatCheckpointIndex(names));
  REQUIRE(back.ok());
  CHECK(back->all_model_checkpoint_paths == names);
  CHECK(back->model_checkpoint_path == names.back());
  for (const char* fixture : {"tf_checkpoint_escapes.txt", "tf_checkpoint_escapes_utf8.txt"}) {
    auto odd = ParseCheckpointState(ReadFixture(fixture));
    REQUIRE(odd.ok());
    CHECK(odd->all_model_checkpoint_paths == kOdd);
    CHECK(odd->model_checkpoint_path == kOdd.back());
  }
  auto tf = ParseCheckpointState(ReadFixture("tf_checkpoint_index.txt"));
  REQUIRE(tf.ok());  // its timestamps are read and ignored
  CHECK(tf->model_checkpoint_path == "model-3.safetensors");
  CHECK(tf->all_model_checkpoint_paths ==
        std::vector<std::string>{"model-2.safetensors", "model-3.safetensors"});
  // What else text format allows: single quotes, adjacent strings, hex and octal escapes,
  // comments, separators, any field order.
  auto loose = ParseCheckpointState(
      "# a comment\nall_model_checkpoint_paths: 'a\\x2d1' \"\\056safetensors\";\n"
      "model_checkpoint_path : \"b-2.safetensors\" , last_preserved_timestamp: 1e9\n");
  REQUIRE(loose.ok());
  CHECK(loose->all_model_checkpoint_paths == std::vector<std::string>{"a-1.safetensors"});
  CHECK(loose->model_checkpoint_path == "b-2.safetensors");
}

TEST_CASE("Malformed CheckpointState text is InvalidArgument naming the line",
          "[train][saver][checkpoint_index]") {
  auto error = [](std::string_view text) {
    auto s = ParseCheckpointState(text);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Code::kInvalidArgument);
    return std::string(s.status().message());
  };
  CHECK_THAT(error("model: \"x\"\n"),
             Contains("Message type \"tensorflow.CheckpointState\" has no field named \"model\""));
  CHECK_THAT(error("\nmodel_checkpoint_path: \"x\n\""), Contains("line 2: a string ends"));
  CHECK_THAT(error("model_checkpoint_path: \"x"), Contains("line 1: a string is not closed"));
  CHECK_THAT(error("model_checkpoint_path \"x\""), Contains("line 1: expected ':'"));
  CHECK_THAT(error("model_checkpoint_path: x"), Contains("expected a quoted string"));
  CHECK_THAT(error("model_checkpoint_path: \"\\q\""), Contains("unsupported escape"));
  CHECK_THAT(error("last_preserved_timestamp: \"1\""), Contains("expected a number"));
  CHECK_THAT(error("\x01"), Contains("line 1: expected a field name at '\\001'"));
}

TEST_CASE("Saver writes TensorFlow's index and reads TensorFlow's and its own old one",
          "[train][saver][checkpoint_index]") {
  auto dir = TempDir("saver");
  Graph g;
  Variable w = GetVariable(Scope::Root(&g), "w", {2}, init::Zeros());
  Session sess(g);
  sess.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&g))});
  Saver saver(&g, {}, 2);
  for (int step = 1; step <= 3; ++step) saver.Save(sess, (dir / "model").string(), step);
  std::ifstream in(dir / "checkpoint");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) ==
        FormatCheckpointIndex({"model-2.safetensors", "model-3.safetensors"}));
  CHECK(Saver::LatestCheckpoint(dir.string()) == (dir / "model-3.safetensors").string());

  // The index TF's text_format wrote (with its timestamps).
  fs::copy_file(fs::path(PF_SOURCE_DIR) / "tests/train/tf_checkpoint_index.txt", dir / "checkpoint",
                fs::copy_options::overwrite_existing);
  CHECK(ReadCheckpointIndex(dir.string()).value() ==
        std::vector<std::string>{"model-2.safetensors", "model-3.safetensors"});
  // TF's rule: a latest checkpoint missing from the list goes last; absolute paths into the
  // directory are its files (TF 1's Saver writes the prefix it was given).
  std::ofstream(dir / "checkpoint", std::ios::trunc)
      << "model_checkpoint_path: \"" << (dir / "model-2.safetensors").string()
      << "\"\nall_model_checkpoint_paths: \"model-2.safetensors\"\n"
      << "all_model_checkpoint_paths: \"model-3.safetensors\"\n";
  CHECK(ReadCheckpointIndex(dir.string()).value() ==
        std::vector<std::string>{"model-3.safetensors", "model-2.safetensors"});
  CHECK(Saver::LatestCheckpoint(dir.string()) == (dir / "model-2.safetensors").string());

  // placeflow's index before this format: one name a line.
  std::ofstream(dir / "checkpoint", std::ios::trunc)
      << "model-2.safetensors\nmodel-3.safetensors\n";
  CHECK(ReadCheckpointIndex(dir.string()).value() ==
        std::vector<std::string>{"model-2.safetensors", "model-3.safetensors"});
  // The next save writes TF's format again, keeping max_to_keep over the old list.
  Saver(&g, {}, 2).Save(sess, (dir / "model").string(), 4);
  std::ifstream again(dir / "checkpoint");
  CHECK(std::string(std::istreambuf_iterator<char>(again), {}) ==
        FormatCheckpointIndex({"model-3.safetensors", "model-4.safetensors"}));
  fs::remove_all(dir);
}

TEST_CASE("An index naming what is not a placeflow checkpoint in the directory is an error",
          "[train][saver][checkpoint_index]") {
  auto dir = TempDir("foreign");
  Touch(dir / "model-1.safetensors");
  const std::string index = (dir / "checkpoint").string();
  auto error = [&](const std::string& text) {
    std::ofstream(index, std::ios::trunc) << text;
    auto names = ReadCheckpointIndex(dir.string());
    REQUIRE_FALSE(names.ok());
    CHECK(names.status().code() == Code::kFailedPrecondition);
    return std::string(names.status().message());
  };
  CHECK_THAT(error("model_checkpoint_path: \"model.ckpt-3\"\n"),
             Contains("names 'model.ckpt-3', which is not a placeflow checkpoint (*.safetensors)"));
  CHECK_THAT(error("model_checkpoint_path: \"/elsewhere/model-1.safetensors\"\n"),
             Contains("names '/elsewhere/model-1.safetensors', which is not a file in '" +
                      dir.string() + "'"));
  CHECK_THAT(error("model_checkpoint_path: \"sub/model-1.safetensors\"\n"),
             Contains("which is not a file in"));
  CHECK_THAT(error("model_checkpoint_path: 7\n"),
             Contains("Checkpoint index '" + index + "' is corrupt (line 1: expected a quoted"));
  CHECK_THAT(error("# nothing but a comment\n"), Contains("' is empty, but '"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pf::checkpoint_index_test
