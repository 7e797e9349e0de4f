// Checkpoints: round trip, retention, and corrupt files that leave variables untouched.
#include <filesystem>
#include <fstream>

#include "tests/testing/test_util.h"

namespace pf::saver_test {
namespace {

using Catch::Matchers::Contains;

struct Model {
  Graph g;
  Variable w, b, step;
  Operation train;
  explicit Model(const char* device = "") {
    Scope root = Scope::Root(&g);
    Scope vs = root.WithVariableScope("dense");
    if (*device) vs = vs.WithDevice(device);
    w = GetVariable(vs, "w", {3, 2}, init::RandomNormal(0, 1, 4));
    b = GetVariable(vs, "b", {2}, init::Zeros());
    step = train::GetOrCreateGlobalStep(root);
    Output x = ops::Const(root, Tensor::FromVector<float>({1, 2, 3}, {1, 3}));
    Output loss = ops::Sum(
        root, ops::Square(root, ops::Add(root, ops::MatMul(root, x, w.value()), b.value())));
    train::Adam opt(0.1);
    train = opt.Minimize(root, loss, &step);
  }
};

std::filesystem::path TempDir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("pf_saver_{}_{}", name, getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST_CASE("Saver round trip includes slots and global_step, on any placement", "[saver]") {
  auto dir = TempDir("roundtrip");
  Model a;
  Session sa(a.g);
  sa.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&a.g))});
  for (int i = 0; i < 3; ++i) sa.Run({}, {}, {a.train});
  Saver saver(&a.g);
  std::string path = saver.Save(sa, (dir / "model").string(), 3);
  CHECK(path == (dir / "model-3.safetensors").string());
  CHECK(Saver::LatestCheckpoint(dir.string()) == path);
  auto tensors = ReadSafetensors(path).ValueOrThrow();
  CHECK(tensors.count("dense/w/Adam_1") == 1);
  CHECK(tensors.count("beta1_power") == 1);
  CHECK(tensors.at("global_step").scalar<int64_t>() == 3);

  // A fresh session on a graph whose variables live on /cpu:1 of a 2-CPU session.
  Model c("/cpu:1");
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sc(c.g, opts);
  Saver restorer(&c.g);
  restorer.Restore(sc, path);
  CHECK(sc.DevicePlacement().at("dense/w") == "/job:localhost/replica:0/task:0/device:CPU:1");
  auto before = sa.Run({a.w.value(), a.b.value(), a.step.value()});
  auto after = sc.Run({c.w.value(), c.b.value(), c.step.value()});
  for (int i = 0; i < 3; ++i) CHECK(after[i].BitwiseEqual(before[i]));
  // Training continues identically from the restored state (slots included).
  sa.Run({}, {}, {a.train});
  sc.Run({}, {}, {c.train});
  CHECK(sc.Run({c.w.value()})[0].BitwiseEqual(sa.Run({a.w.value()})[0]));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Saver keeps the last K checkpoints", "[saver]") {
  auto dir = TempDir("keep");
  Model m;
  Session s(m.g);
  s.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))});
  Saver saver(&m.g, {}, 2);
  for (int step = 1; step <= 4; ++step) saver.Save(s, (dir / "ckpt").string(), step);
  CHECK_FALSE(std::filesystem::exists(dir / "ckpt-1.safetensors"));
  CHECK_FALSE(std::filesystem::exists(dir / "ckpt-2.safetensors"));
  CHECK(std::filesystem::exists(dir / "ckpt-3.safetensors"));
  CHECK(std::filesystem::exists(dir / "ckpt-4.safetensors"));
  CHECK(Saver::LatestCheckpoint(dir.string()) == (dir / "ckpt-4.safetensors").string());
  std::filesystem::remove_all(dir);
}

TEST_CASE("Corrupt, truncated or mismatched checkpoints fail clearly and change nothing",
          "[saver]") {
  auto dir = TempDir("corrupt");
  Model m;
  Session s(m.g);
  s.Run({}, {}, {GlobalVariablesInitializer(Scope::Root(&m.g))});
  Saver saver(&m.g);
  std::string good = saver.Save(s, (dir / "good").string());
  std::string bytes;
  {
    std::ifstream f(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  };
  // Change the variables after saving, so a partial restore would show.
  for (int i = 0; i < 2; ++i) s.Run({}, {}, {m.train});
  auto snapshot = s.Run({m.w.value(), m.b.value(), m.step.value()});
  auto unchanged = [&] {
    auto now = s.Run({m.w.value(), m.b.value(), m.step.value()});
    for (int i = 0; i < 3; ++i) REQUIRE(now[i].BitwiseEqual(snapshot[i]));
  };
  CHECK_THROWS_WITH(
      saver.Restore(s, write("truncated.safetensors", bytes.substr(0, bytes.size() - 5))),
      Contains("truncated?"));
  unchanged();
  CHECK_THROWS_WITH(saver.Restore(s, write("tiny.safetensors", "abc")),
                    Contains("shorter than the 8-byte header length"));
  unchanged();
  std::string broken = bytes;
  broken[12] = '#';
  CHECK_THROWS_WITH(saver.Restore(s, write("header.safetensors", broken)),
                    Contains("bad safetensors header"));
  unchanged();
  CHECK_THROWS_WITH(saver.Restore(s, (dir / "missing.safetensors").string()),
                    Contains("not found"));
  // A checkpoint of a different model: same names, other shapes.
  Graph other;
  Scope root = Scope::Root(&other);
  GetVariable(root.WithVariableScope("dense"), "w", {4, 2});
  Session so(other);
  so.Run({}, {}, {GlobalVariablesInitializer(root)});
  std::string wrong = Saver(&other).Save(so, (dir / "other").string());
  CHECK_THROWS_WITH(saver.Restore(s, wrong),
                    Contains("holds dense/w as float [4,2] but the variable is float [3,2]"));
  unchanged();
  saver.Restore(s, good);  // the good file still restores
  CHECK_FALSE(s.Run({m.w.value()})[0].BitwiseEqual(snapshot[0]));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pf::saver_test
