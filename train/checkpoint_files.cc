#include "placeflow/train/checkpoint_files.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace pf {
namespace {

namespace fs = std::filesystem;

std::mutex& HookMutex() {
  static std::mutex mu;
  return mu;
}
std::function<Status(const std::string&)>& Hook() {
  static std::function<Status(const std::string&)> hook;
  return hook;
}

Status RunHook(const std::string& path) {
  std::lock_guard<std::mutex> lock(HookMutex());
  return Hook() ? Hook()(path) : Status::OK();
}

// A full disk is ResourceExhausted; permissions and read-only filesystems are
// FailedPrecondition (the user must change something before trying again).
Status FromErrno(int err, const std::string& what) {
  const std::string msg = fmt::format("{}: {}", what, std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return errors::ResourceExhausted(msg);
  if (err == EACCES || err == EPERM || err == EROFS || err == ENOTDIR || err == EISDIR)
    return errors::FailedPrecondition(msg);
  return errors::Internal(msg);
}

Status WriteAll(int fd, std::string_view bytes, const std::string& tmp) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FromErrno(n < 0 ? errno : EIO, "Write to '" + tmp + "' failed");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

// Makes a completed rename durable. Some filesystems cannot fsync a directory (EINVAL): the
// rename is then as durable as they make it.
Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FromErrno(errno, "Cannot open directory '" + dir + "' to sync it");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return FromErrno(err, "Cannot sync directory '" + dir + "'");
  return Status::OK();
}

Status WriteTemporary(int fd, const std::string& path, const std::string& tmp,
                      const std::vector<std::string_view>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    PF_RETURN_IF_ERROR(WriteAll(fd, parts[i], tmp));
    if (i == 0) PF_RETURN_IF_ERROR(RunHook(path));  // part-way through, as a disk filling up
  }
  if (parts.empty()) PF_RETURN_IF_ERROR(RunHook(path));
  if (::fsync(fd) != 0) return FromErrno(errno, "Cannot sync '" + tmp + "'");
  return Status::OK();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& parts) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FromErrno(errno, "Cannot open '" + tmp + "' for writing");
  Status s = WriteTemporary(fd, path, tmp, parts);
  if (::close(fd) != 0 && s.ok()) s = FromErrno(errno, "Cannot close '" + tmp + "'");
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    s = FromErrno(errno, "Cannot rename '" + tmp + "' to '" + path + "'");
  if (!s.ok()) {
    ::unlink(tmp.c_str());  // never leave an orphan behind
    return s;
  }
  const std::string dir = fs::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? "." : dir);
}

Status CheckCheckpointDirectory(const std::string& dir) {
  try {
    const fs::path p(dir.empty() ? "." : dir);
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (fs::exists(st) && !fs::is_directory(st)) {
      return errors::FailedPrecondition("Checkpoint directory '", dir,
                                        "' is a file, not a directory");
    }
    if (!fs::exists(st)) {
      fs::create_directories(p, ec);
      if (ec) {
        return errors::FailedPrecondition("Cannot create checkpoint directory '", dir,
                                          "': ", ec.message());
      }
    }
    // Permission bits do not tell (root, read-only mounts): try it.
    const std::string probe = (p / fmt::format(".pf_write_check.{}", ::getpid())).string();
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return errors::FailedPrecondition("Checkpoint directory '", dir,
                                        "' is not writable: ", std::strerror(errno));
    }
    ::close(fd);
    ::unlink(probe.c_str());
    return Status::OK();
  } catch (const std::exception& e) {  // bad_alloc from the path library
    return errors::Internal("Cannot check checkpoint directory '", dir, "': ", e.what());
  }
}

std::vector<std::string> CheckpointFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (name.ends_with(".safetensors") && it->is_regular_file(type_ec)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<std::vector<std::string>> ReadCheckpointIndex(const std::string& dir) {
  const std::string index = (fs::path(dir.empty() ? "." : dir) / "checkpoint").string();
  const std::vector<std::string> files = CheckpointFilesIn(dir);
  auto lost = [&](const std::string& why) -> Status {
    std::vector<std::string> shown(files.begin(),
                                   files.begin() + std::min<size_t>(files.size(), 3));
    return errors::FailedPrecondition(
        "Checkpoint index '", index, "' ", why, ", but '", dir, "' holds ", files.size(),
        " checkpoint file(s) (", fmt::join(shown, ", "), files.size() > 3 ? ", ..." : "",
        "): restore one by its path, or move them away to start afresh");
  };
  std::error_code ec;
  const bool exists = fs::exists(index, ec);
  if (!exists) {
    if (files.empty()) return std::vector<std::string>{};
    return lost(ec ? "cannot be read (" + ec.message() + ")" : "is missing");
  }
  std::ifstream in(index);
  if (!in) return lost(fmt::format("cannot be read ({})", std::strerror(errno)));
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    // The index lists file names in its own directory; anything else is not one of ours.
    if (line.find('/') != std::string::npos || !line.ends_with(".safetensors"))
      return lost(
          fmt::format("is corrupt (line {} is not a checkpoint file name)", names.size() + 1));
    names.push_back(line);
  }
  if (in.bad()) return lost("cannot be read (read error)");
  if (names.empty() && !files.empty()) return lost("is empty");
  return names;
}

void SetCheckpointWriteHookForTesting(std::function<Status(const std::string& path)> hook) {
  std::lock_guard<std::mutex> lock(HookMutex());
  Hook() = std::move(hook);
}

}  // namespace pf
