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
#include <sstream>

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

// protobuf's CEscape (text_encoding.py, as_utf8=False): what TF's text_format writes.
std::string CEscape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 32 || c >= 127) {
          out += fmt::format("\\{:03o}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// A reader of protobuf text format, as much of it as a CheckpointState needs.
class TextReader {
 public:
  explicit TextReader(std::string_view text) : text_(text) {}

  // Skips whitespace, separators and # comments; false at the end.
  bool More() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c)) || c == ';' || c == ',') {
        ++pos_;
      } else {
        return true;
      }
    }
    return false;
  }
  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  // An identifier, a number (TF's timestamps) or a keyword such as inf: a run of these chars.
  std::string_view Token() {
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::string_view("_.+-").find(text_[pos_]) != npos)) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  // One or more adjacent quoted strings, unescaped and concatenated.
  StatusOr<std::string> String() {
    std::string out;
    do {
      PF_RETURN_IF_ERROR(Quoted(&out));
      SkipBlanks();
    } while (At('"') || At('\''));
    return out;
  }
  Status Expect(char c) {
    SkipBlanks();
    if (!At(c)) return Error(fmt::format("expected '{}'", c));
    ++pos_;
    SkipBlanks();
    return Status::OK();
  }
  Status Error(const std::string& what) const {
    return errors::InvalidArgument(
        "line ", line_, ": ", what,
        pos_ < text_.size() ? fmt::format(" at '{}'", CEscape(text_.substr(pos_, 1))) : " at end");
  }

 private:
  static constexpr size_t npos = std::string_view::npos;
  void SkipBlanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  // Up to `max` digits of `base` (8 or 16) as one byte.
  int Digits(int base, int max) {
    int v = 0, n = 0;
    for (; n < max && pos_ < text_.size(); ++n, ++pos_) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_])));
      const int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : 99);
      if (d >= base) break;
      v = v * base + d;
    }
    return n == 0 ? -1 : v;
  }
  Status Quoted(std::string* out) {
    if (!At('"') && !At('\'')) return Error("expected a quoted string");
    const char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != quote) {
      const char c = text_[pos_++];
      if (c == '\n') return Error("a string ends at the line's end");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_];
      static constexpr std::string_view kFrom = "ntr\"'\\abfv?", kTo = "\n\t\r\"'\\\a\b\f\v?";
      int byte = -1;
      if (const size_t k = kFrom.find(e); k != npos) {
        ++pos_;
        byte = static_cast<unsigned char>(kTo[k]);
      } else if (e >= '0' && e <= '7') {
        byte = Digits(8, 3);
      } else if (e == 'x' || e == 'X') {
        ++pos_;
        byte = Digits(16, 2);
      }
      if (byte < 0 || byte > 255) return Error("an unsupported escape in a string");
      *out += static_cast<char>(byte);
    }
    if (!At(quote)) return Error("a string is not closed");
    ++pos_;
    return Status::OK();
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
};

// placeflow's index before TensorFlow's format: one checkpoint file name a line.
bool ParseOldIndex(std::string_view text, std::vector<std::string>* names) {
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.find_first_of("/:\"'") != std::string::npos || !line.ends_with(".safetensors"))
      return false;
    names->push_back(line);
  }
  return true;
}

// An index entry as a file name in `dir`: a relative name, or an absolute path into `dir` (TF's
// Saver writes the prefix it was given). It must be one of ours: a "*.safetensors" file.
Status CheckIndexEntry(const std::string& dir, const std::string& index, std::string* name,
                       const std::function<Status(const std::string&)>& lost) {
  const fs::path p(*name);
  if (p.has_parent_path()) {
    std::error_code ec;
    if (!p.is_absolute() || !fs::equivalent(p.parent_path(), dir.empty() ? "." : dir, ec)) {
      return errors::FailedPrecondition("Checkpoint index '", index, "' names '", *name,
                                        "', which is not a file in '", dir, "'");
    }
    *name = p.filename().string();
  }
  if (name->empty() || *name == "." || *name == "..")
    return lost(fmt::format("is corrupt (it names '{}')", *name));
  if (!name->ends_with(".safetensors")) {
    return errors::FailedPrecondition(
        "Checkpoint index '", index, "' names '", *name,
        "', which is not a placeflow checkpoint (*.safetensors): a TensorFlow checkpoint cannot "
        "be restored here");
  }
  return Status::OK();
}

}  // namespace

std::string FormatCheckpointIndex(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string out = fmt::format("model_checkpoint_path: \"{}\"\n", CEscape(names.back()));
  for (const std::string& n : names)
    out += fmt::format("all_model_checkpoint_paths: \"{}\"\n", CEscape(n));
  return out;
}

StatusOr<CheckpointState> ParseCheckpointState(std::string_view text) {
  CheckpointState state;
  TextReader r(text);
  while (r.More()) {
    const std::string field(r.Token());
    if (field.empty()) return r.Error("expected a field name");
    PF_RETURN_IF_ERROR(r.Expect(':'));
    if (field == "model_checkpoint_path") {
      PF_ASSIGN_OR_RETURN(state.model_checkpoint_path, r.String());
    } else if (field == "all_model_checkpoint_paths") {
      PF_ASSIGN_OR_RETURN(std::string path, r.String());
      state.all_model_checkpoint_paths.push_back(std::move(path));
    } else if (field == "all_model_checkpoint_timestamps" || field == "last_preserved_timestamp") {
      const std::string number(r.Token());
      char* end = nullptr;
      std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0') return r.Error("expected a number for " + field);
    } else {
      return r.Error(
          fmt::format("Message type \"tensorflow.CheckpointState\" has no field "
                      "named \"{}\"",
                      field));
    }
  }
  return state;
}

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
  std::ifstream in(index, std::ios::binary);
  if (!in) return lost(fmt::format("cannot be read ({})", std::strerror(errno)));
  const std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) return lost("cannot be read (read error)");
  std::vector<std::string> names;
  if (!ParseOldIndex(text, &names)) {
    StatusOr<CheckpointState> state = ParseCheckpointState(text);
    if (!state.ok()) return lost(fmt::format("is corrupt ({})", state.status().message()));
    names = std::move(state->all_model_checkpoint_paths);
    for (std::string& name : names) PF_RETURN_IF_ERROR(CheckIndexEntry(dir, index, &name, lost));
    std::string latest = state->model_checkpoint_path;
    if (!latest.empty()) {
      PF_RETURN_IF_ERROR(CheckIndexEntry(dir, index, &latest, lost));
      if (names.empty() || names.back() != latest) {
        names.erase(std::remove(names.begin(), names.end(), latest), names.end());
        names.push_back(latest);
      }
    }
  }
  if (names.empty() && !files.empty()) return lost("is empty");
  return names;
}

void SetCheckpointWriteHookForTesting(std::function<Status(const std::string& path)> hook) {
  std::lock_guard<std::mutex> lock(HookMutex());
  Hook() = std::move(hook);
}

}  // namespace pf
