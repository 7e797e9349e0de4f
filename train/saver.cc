#include "placeflow/train/saver.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "placeflow/core/logging.h"
#include "placeflow/core/strings.h"
#include "placeflow/ops/debug/debug_ops.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/checkpoint_files.h"

namespace pf {
namespace {

const std::map<DType, std::string>& DTypeCodes() {
  static const std::map<DType, std::string> codes = {
      {DT_FLOAT, "F32"}, {DT_DOUBLE, "F64"}, {DT_INT32, "I32"},     {DT_INT64, "I64"},
      {DT_BOOL, "BOOL"}, {DT_HALF, "F16"},   {DT_BFLOAT16, "BF16"}, {DT_UINT8, "U8"},
      {DT_INT8, "I8"},   {DT_INT16, "I16"}};
  return codes;
}

// Just enough JSON for a safetensors header: objects, arrays, strings and integers.
class HeaderParser {
 public:
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<int64_t> offsets;
  };
  explicit HeaderParser(std::string_view text) : s_(text) {}

  Status Parse(std::map<std::string, Entry>* out) {
    PF_RETURN_IF_ERROR(Expect('{'));
    if (Peek() == '}') return Expect('}');
    for (;;) {
      std::string name;
      PF_RETURN_IF_ERROR(String(&name));
      PF_RETURN_IF_ERROR(Expect(':'));
      if (name == "__metadata__") {
        PF_RETURN_IF_ERROR(SkipStringMap());
      } else {
        Entry e;
        PF_RETURN_IF_ERROR(ParseEntry(&e));
        if (out->count(name)) return Error("duplicate tensor '" + name + "'");
        (*out)[name] = std::move(e);
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect('}');
    }
  }

 private:
  Status ParseEntry(Entry* e) {
    PF_RETURN_IF_ERROR(Expect('{'));
    for (;;) {
      std::string key;
      PF_RETURN_IF_ERROR(String(&key));
      PF_RETURN_IF_ERROR(Expect(':'));
      if (key == "dtype")
        PF_RETURN_IF_ERROR(String(&e->dtype));
      else if (key == "shape")
        PF_RETURN_IF_ERROR(IntArray(&e->shape));
      else if (key == "data_offsets")
        PF_RETURN_IF_ERROR(IntArray(&e->offsets));
      else
        return Error("unexpected key '" + key + "'");
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect('}');
    }
  }
  Status SkipStringMap() {
    PF_RETURN_IF_ERROR(Expect('{'));
    if (Peek() == '}') return Expect('}');
    for (;;) {
      std::string k, v;
      PF_RETURN_IF_ERROR(String(&k));
      PF_RETURN_IF_ERROR(Expect(':'));
      PF_RETURN_IF_ERROR(String(&v));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect('}');
    }
  }
  Status IntArray(std::vector<int64_t>* out) {
    PF_RETURN_IF_ERROR(Expect('['));
    if (Peek() == ']') return Expect(']');
    for (;;) {
      SkipSpace();
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_ || pos_ - start > 18) return Error("expected a non-negative integer");
      out->push_back(std::stoll(std::string(s_.substr(start, pos_ - start))));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      return Expect(']');
    }
  }
  Status String(std::string* out) {
    PF_RETURN_IF_ERROR(Expect('"'));
    out->clear();
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size()) break;
        char c = s_[pos_];
        if (c == 'u') return Error("\\u escapes are not supported in tensor names");
        out->push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
      } else {
        out->push_back(s_[pos_]);
      }
      ++pos_;
    }
    return Expect('"');
  }
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  Status Expect(char c) {
    if (Peek() != c) return Error(fmt::format("expected '{}' at byte {}", c, pos_));
    ++pos_;
    return Status::OK();
  }
  Status Error(const std::string& what) const {
    return errors::InvalidArgument("bad safetensors header: ", what);
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Status WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"placeflow\"}";
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    auto code = DTypeCodes().find(t.dtype());
    if (code == DTypeCodes().end())
      return errors::InvalidArgument("Cannot save dtype ", DTypeName(t.dtype()));
    std::vector<std::string> dims;
    for (int64_t d : t.shape().dims()) dims.push_back(std::to_string(d));
    header += fmt::format(",\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          EscapeQuoted(name), code->second, fmt::join(dims, ","), offset,
                          offset + t.TotalBytes());
    offset += t.TotalBytes();
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  uint64_t n = header.size();
  char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(static_cast<unsigned char>(n >> (8 * i)));
  std::vector<std::string_view> parts = {std::string_view(le, 8), header};
  for (const auto& [name, t] : tensors)
    parts.emplace_back(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  return WriteFileAtomically(path, parts);
}

StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return errors::NotFound("Checkpoint '", path, "' not found");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return errors::InvalidArgument("Corrupt checkpoint '", path, "': ", why);
  };
  if (bytes.size() < 8)
    return bad(fmt::format("{} bytes is shorter than the 8-byte header length", bytes.size()));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  if (n > bytes.size() - 8)
    return bad(fmt::format("header length {} exceeds the file size {}", n, bytes.size()));
  std::map<std::string, HeaderParser::Entry> entries;
  Status parsed = HeaderParser(std::string_view(bytes).substr(8, n)).Parse(&entries);
  if (!parsed.ok()) return bad(parsed.message());
  const uint64_t data_size = bytes.size() - 8 - n;
  std::map<std::string, Tensor> out;
  for (const auto& [name, e] : entries) {
    DType t = DT_INVALID;
    for (const auto& [d, code] : DTypeCodes()) {
      if (code == e.dtype) t = d;
    }
    if (t == DT_INVALID) return bad("tensor '" + name + "' has unknown dtype '" + e.dtype + "'");
    if (e.offsets.size() != 2 || e.offsets[0] > e.offsets[1])
      return bad("tensor '" + name + "' has bad data_offsets");
    auto shape = Shape::FromDims(e.shape);
    if (!shape.ok()) return bad("tensor '" + name + "': " + shape.status().message());
    // Checked: a product that wraps could match the range and describe memory it does not have.
    if (shape->num_elements() < 0) {
      return bad(fmt::format("tensor '{}' of shape {} has more than {} elements", name,
                             shape->ToString(), std::numeric_limits<int64_t>::max()));
    }
    uint64_t want = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(shape->num_elements()), DTypeSize(t), &want)) {
      return bad(fmt::format("tensor '{}' of shape {} needs more than {} bytes", name,
                             shape->ToString(), std::numeric_limits<uint64_t>::max()));
    }
    if (static_cast<uint64_t>(e.offsets[1] - e.offsets[0]) != want) {
      return bad(fmt::format("tensor '{}' of shape {} needs {} bytes but its range holds {}", name,
                             shape->ToString(), want, e.offsets[1] - e.offsets[0]));
    }
    if (static_cast<uint64_t>(e.offsets[1]) > data_size) {
      return bad(
          fmt::format("tensor '{}' ends at byte {} but the file has {} data bytes (truncated?)",
                      name, e.offsets[1], data_size));
    }
    PF_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), t, *shape));
    if (want > 0) std::memcpy(tensor.raw_data(), bytes.data() + 8 + n + e.offsets[0], want);
    out[name] = tensor;
  }
  return out;
}

Saver::VarList::VarList(const std::map<std::string, Variable>& by_name) {
  for (const auto& [name, v] : by_name) {
    names_.push_back(name);
    vars_.push_back(v);
  }
}

Saver::Saver(Graph* graph, VarList vars, int max_to_keep)
    : vars_(std::move(vars.vars_)), names_(std::move(vars.names_)), max_to_keep_(max_to_keep) {
  if (vars_.empty()) vars_ = GlobalVariables(graph);
  // TensorFlow's tf.train.Saver() raises the same: a Saver of nothing would "restore" silently.
  if (vars_.empty()) throw Error(errors::InvalidArgument("No variables to save"));
  if (names_.empty()) {
    for (const Variable& v : vars_) names_.push_back(v.name());
  }
  Scope root = Scope::Root(graph).NewSubScope("save");
  for (const Variable& v : vars_) {
    if (!v.valid()) throw Error(errors::InvalidArgument("Saver: an invalid (null) Variable"));
    Scope at = root.ColocateWith(v.ref());
    Output value = ops::Placeholder(at.WithOpName("restore_value"), v.dtype(), v.shape());
    restore_values_.push_back(value);
    restore_ops_.push_back(ops::Assign(at.WithOpName("restore"), v.ref(), value));
  }
}

namespace {

namespace fs = std::filesystem;

// The directory part of a checkpoint path, "" for a bare file name.
std::string DirOf(const std::string& path) { return fs::path(path).parent_path().string(); }
std::string OrDot(const std::string& dir) { return dir.empty() ? "." : dir; }
std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : (fs::path(dir) / name).string();
}

// Removes what a crashed or failed earlier save left: "<file>.tmp" beside checkpoint files.
void RemoveStaleTemporaries(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(OrDot(dir), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "checkpoint.tmp" || name.ends_with(".safetensors.tmp")) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

Status WriteIndex(const std::string& dir, const std::deque<std::string>& kept) {
  std::vector<std::string> names;
  for (const std::string& p : kept) names.push_back(fs::path(p).filename().string());
  return WriteFileAtomically(JoinPath(dir, "checkpoint"), {FormatCheckpointIndex(names)});
}

}  // namespace

std::deque<std::string>& Saver::Kept(const std::string& dir) {
  auto it = kept_.find(dir);
  if (it != kept_.end()) return it->second;
  // First save into `dir`: the checkpoints earlier runs left count towards max_to_keep
  // (TensorFlow's recover_last_checkpoints). A lost index is rebuilt from the files, oldest
  // first, rather than orphaning them.
  std::deque<std::string> kept;
  RemoveStaleTemporaries(dir);
  StatusOr<std::vector<std::string>> index = ReadCheckpointIndex(OrDot(dir));
  if (index.ok()) {
    for (const std::string& name : *index) {
      std::error_code ec;
      if (fs::is_regular_file(JoinPath(OrDot(dir), name), ec)) kept.push_back(JoinPath(dir, name));
    }
  } else {
    std::vector<std::pair<fs::file_time_type, std::string>> files;
    for (const std::string& name : CheckpointFilesIn(OrDot(dir))) {
      std::error_code ec;
      auto when = fs::last_write_time(JoinPath(OrDot(dir), name), ec);
      files.emplace_back(ec ? fs::file_time_type::min() : when, name);
    }
    std::sort(files.begin(), files.end());
    for (const auto& [when, name] : files) kept.push_back(JoinPath(dir, name));
    PF_LOG_WARN("{}; rebuilding it from the {} checkpoint file(s) there", index.status().message(),
                files.size());
  }
  return kept_.emplace(dir, std::move(kept)).first->second;
}

std::string Saver::Save(Session& session, const std::string& prefix, int64_t global_step) {
  std::vector<Output> reads;
  for (const Variable& v : vars_) reads.push_back(v.value());
  std::vector<Tensor> values = session.Run(reads);
  std::map<std::string, Tensor> tensors;
  for (size_t i = 0; i < vars_.size(); ++i) tensors[names_[i]] = values[i];
  const std::string path = global_step >= 0 ? fmt::format("{}-{}.safetensors", prefix, global_step)
                                            : prefix + ".safetensors";
  const std::string dir = DirOf(path);
  ThrowIfError(CheckCheckpointDirectory(OrDot(dir)));
  std::deque<std::string>& kept = Kept(dir);
  const bool replaces_kept = std::find(kept.begin(), kept.end(), path) != kept.end();
  ThrowIfError(WriteSafetensors(path, tensors));
  std::deque<std::string> next = kept;
  next.erase(std::remove(next.begin(), next.end(), path), next.end());
  next.push_back(path);
  std::vector<std::string> evicted;
  while (max_to_keep_ > 0 && static_cast<int>(next.size()) > max_to_keep_) {
    evicted.push_back(next.front());
    next.pop_front();
  }
  // The old checkpoints go only once the index no longer lists them.
  Status indexed = WriteIndex(dir, next);
  if (!indexed.ok()) {
    std::error_code ec;
    if (!replaces_kept) fs::remove(path, ec);  // no index lists it: it would be an orphan
    throw Error(Status(indexed.code(),
                       fmt::format("Checkpoint {} not saved: {}", path, indexed.message())));
  }
  kept = std::move(next);
  for (const std::string& old : evicted) {
    std::error_code ec;
    fs::remove(old, ec);
    if (ec) PF_LOG_WARN("Cannot delete old checkpoint '{}': {}", old, ec.message());
  }
  return path;
}

StatusOr<std::string> Saver::TryLatestCheckpoint(const std::string& dir) {
  PF_ASSIGN_OR_RETURN(std::vector<std::string> index, ReadCheckpointIndex(dir));
  if (index.empty()) return std::string();
  const std::string latest = (fs::path(dir) / index.back()).string();
  std::error_code ec;
  if (!fs::is_regular_file(latest, ec)) {
    return errors::FailedPrecondition("Checkpoint index '", (fs::path(dir) / "checkpoint").string(),
                                      "' names '", index.back(),
                                      "' as the latest checkpoint, but there is no such file");
  }
  return latest;
}

std::string Saver::LatestCheckpoint(const std::string& dir) {
  return TryLatestCheckpoint(dir).ValueOrThrow();
}

Status Saver::CheckDirectory(const std::string& dir) { return CheckCheckpointDirectory(dir); }

namespace {
// "affine0/w/replica_1/Momentum" -> "affine0/w/Momentum": the name a mirrored replica (or its
// slot) has in a checkpoint of a model without replicas; "" when `name` is not a replica's.
std::string PrimaryName(const std::string& name) {
  static const std::regex replica("/replica_[0-9]+(/|$)");
  std::smatch m;
  if (!std::regex_search(name, m, replica)) return "";
  return m.prefix().str() + (m[1].length() ? "/" : "") + m.suffix().str();
}
}  // namespace

void Saver::Restore(Session& session, const std::string& path, const RestoreOptions& options) {
  std::map<std::string, Tensor> tensors = ReadSafetensors(path).ValueOrThrow();
  // Check everything before assigning anything.
  FeedDict feeds;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    const std::string& key = names_[i];
    auto it = tensors.find(key);
    // Replicas restore from their primary when the checkpoint has none (saved without towers).
    if (it == tensors.end() && !PrimaryName(key).empty()) it = tensors.find(PrimaryName(key));
    if (it == tensors.end())
      throw Error(errors::NotFound("Key ", key, " not found in checkpoint '", path, "'"));
    const std::string var = key == v.name() ? "" : " " + v.name();
    if (it->second.dtype() != v.dtype() || it->second.shape() != v.shape()) {
      throw Error(errors::InvalidArgument("Checkpoint '", path, "' holds ", key, " as ",
                                          DTypeName(it->second.dtype()), " ",
                                          it->second.shape().ToString(), " but the variable", var,
                                          " is ", DTypeName(v.dtype()), " ", v.shape().ToString()));
    }
    std::string_view bad = NonFiniteKind(it->second);
    if (!bad.empty()) {
      const std::string what = fmt::format("Checkpoint '{}' holds {} values in {}{}", path, bad,
                                           it->first, key == v.name() ? "" : " (for" + var + ")");
      if (options.check_numerics)
        throw Error(errors::InvalidArgument(what, ": not restored (check_numerics)"));
      PF_LOG_WARN("{}: restored anyway", what);
    }
    feeds.emplace_back(restore_values_[i], it->second);
  }
  session.Run(feeds, {}, restore_ops_);
}

}  // namespace pf
