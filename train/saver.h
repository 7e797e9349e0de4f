// Checkpoints in the safetensors format (an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then raw little-endian data), readable by
// Python's `safetensors` package.
//
//   pf::Saver saver(&g);                                   // all global variables, keep 5
//   std::string path = saver.Save(sess, "ckpt/model", step);   // ckpt/model-<step>.safetensors
//   saver.Restore(sess, pf::Saver::LatestCheckpoint("ckpt"));
//
// Restore reads and checks the whole file first (names, dtypes, shapes, byte ranges); a
// corrupt or truncated file throws pf::Error and leaves every variable untouched. The
// assignments are colocated with the variables, wherever those are placed now. A mirrored
// replica ("w/replica_1", "w/replica_1/Momentum") missing from the file restores from its
// primary ("w", "w/Momentum"), so a checkpoint saved without towers loads into all-reduce towers.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "placeflow/executor/session.h"
#include "placeflow/train/variables.h"

namespace pf {

class Saver {
 public:
  explicit Saver(Graph* graph, std::vector<Variable> vars = {}, int max_to_keep = 5);

  // Writes "<prefix>-<global_step>.safetensors" ("<prefix>.safetensors" when global_step < 0),
  // records it in "<dir>/checkpoint" and deletes the oldest beyond max_to_keep. Returns the path.
  std::string Save(Session& session, const std::string& prefix, int64_t global_step = -1);
  void Restore(Session& session, const std::string& path);
  // The newest checkpoint recorded in "<dir>/checkpoint", or "" when there is none.
  static std::string LatestCheckpoint(const std::string& dir);

 private:
  std::vector<Variable> vars_;
  std::vector<Output> restore_values_;  // placeholders fed from the file
  std::vector<Operation> restore_ops_;
  int max_to_keep_;
  std::deque<std::string> kept_;
};

// The tensors of a safetensors file, checked for consistency; errors name the file.
StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path);
Status WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors);

}  // namespace pf
