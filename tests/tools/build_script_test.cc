// tools/build.sh's stages, with stand-ins for dpkg-query, cmake, ninja, ctest and pf-train on
// PATH that record how they are called: `train` builds the pf-train target only and says what
// each stage does; `test` builds everything and runs ctest.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/test_util.h"

namespace pf::build_script_test {
namespace {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

void WriteScript(const fs::path& path, const std::string& body) {
  std::ofstream(path) << "#!/usr/bin/env bash\n" << body;
  fs::permissions(path, fs::perms::owner_all);
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs tools/build.sh `mode` with the stand-ins; returns its output, the calls in `calls`.
std::string RunBuildScript(const testing::TempDir& dir, const std::string& mode,
                           std::string* calls) {
  const fs::path bin = dir.path / "bin", build = dir.path / "build", log = dir.path / "calls";
  fs::create_directories(bin);
  fs::create_directories(build / "tools");
  const std::string record = "echo \"$(basename \"$0\") $*\" >> " + log.string() + "\n";
  WriteScript(bin / "dpkg-query", "echo 'install ok installed'\n");
  WriteScript(bin / "cmake", record + "echo '-- placeflow: CUDA backend OFF'\n");
  WriteScript(bin / "ninja", record + "printf 'cc a\\ncc b\\nlink c\\n'\n");
  WriteScript(bin / "ctest", record);
  WriteScript(bin / "nproc", "echo 2\n");
  WriteScript(build / "tools" / "pf-train", record + "echo trained\n");
  const std::string out = testing::CaptureStdout([&] {
    const std::string cmd = "PATH=" + bin.string() + ":/usr/bin:/bin BUILD_DIR=" + build.string() +
                            " bash " + PF_SOURCE_DIR + "/tools/build.sh " + mode +
                            " --steps 5 2>&1";
    CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 0);
  });
  *calls = ReadAll(log);
  return out;
}

TEST_CASE("build.sh train builds only pf-train and says what each stage does", "[tools][build]") {
  testing::TempDir dir("build_sh_train");
  std::string calls;
  const std::string out = RunBuildScript(dir, "train", &calls);
  INFO(out << calls);
  CHECK_THAT(out, Contains("==> [1/4] packages: checking "));
  CHECK_THAT(out, Contains("==> [2/4] configure: cmake in "));
  CHECK_THAT(out, Contains("-- placeflow: CUDA backend OFF"));
  CHECK_THAT(out, Contains("==> [3/4] build: pf-train and the library it needs: 3 compile/link "
                           "steps in all"));
  CHECK_THAT(out, Contains("==> [4/4] train: "));
  CHECK_THAT(out, Contains("trained"));
  // The build names the pf-train target; nothing builds everything; no ctest.
  CHECK_THAT(calls, Contains("cmake --build " + (dir.path / "build").string() +
                             " --target pf-train -j 2"));
  CHECK_THAT(calls, !Contains("ctest"));
  CHECK_THAT(calls, Contains("pf-train --log-device-placement --steps 5"));
  CHECK(out.find("[1/4]") < out.find("[2/4]"));
  CHECK(out.find("[3/4]") < out.find("[4/4]"));
}

TEST_CASE("build.sh test builds everything and runs ctest", "[tools][build]") {
  testing::TempDir dir("build_sh_test");
  std::string calls;
  RunBuildScript(dir, "test", &calls);
  INFO(calls);
  CHECK_THAT(calls, Contains("cmake --build " + (dir.path / "build").string() + " -j 2\n"));
  CHECK_THAT(calls, !Contains("--target"));
  CHECK_THAT(calls, Contains("ctest --test-dir " + (dir.path / "build").string() +
                             " --output-on-failure -j 2 --steps 5"));
  CHECK_THAT(calls, !Contains("pf-train"));
}

}  // namespace
}  // namespace pf::build_script_test
