// The readers under fuzz take a path: the input goes to an in-memory file (memfd) that they open
// as /proc/self/fd/N, so no disk is touched per execution.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace pf::fuzz {

class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(memfd_create(name, 0)) {
    if (fd_ < 0) __builtin_trap();
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the contents with `data`; returns the path to open.
  std::string Write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) __builtin_trap();
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) __builtin_trap();
      done += static_cast<size_t>(n);
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

// A fresh folder under the temporary directory, removed at exit, for readers that want a real
// directory (LoadMnist) or writers that rename (WriteSafetensors).
inline const std::string& ScratchDir(const char* tag) {
  struct Dir {
    std::string path;
    explicit Dir(const char* tag) {
      path = std::filesystem::temp_directory_path() / (std::string("pf_fuzz_") + tag + "_XXXXXX");
      if (mkdtemp(path.data()) == nullptr) __builtin_trap();
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir(tag);
  return dir.path;
}

}  // namespace pf::fuzz
