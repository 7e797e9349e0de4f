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
//
// Evaluating with moving averages (tf.train.Saver(ema.variables_to_restore())): a name ->
// variable map restores "w/ExponentialMovingAverage" from the file into the plain variable w.
//
//   pf::train::ExponentialMovingAverage ema(0.99);
//   pf::Saver eval_saver(&eval_graph, ema.VariablesToRestore(&eval_graph));
//   eval_saver.Restore(sess, pf::Saver::LatestCheckpoint("ckpt"));
//
// Files: every file (data and index) is written to "<name>.tmp", fsynced and renamed, so a crash
// or a full disk leaves the previous checkpoint and index intact and no ".tmp" behind. An index
// that is missing, empty or unreadable next to checkpoint files is an error (LatestCheckpoint),
// never a fresh start. No std::filesystem exception leaves the Saver: errors are pf::Error.
#pragma once

#include <deque>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/executor/session.h"
#include "placeflow/train/variables.h"

namespace pf {

struct RestoreOptions {
  // Refuse a checkpoint holding NaN or Inf in any restored variable (an error naming it);
  // otherwise such a checkpoint restores with a warning naming each variable.
  bool check_numerics = false;
};

class Saver {
 public:
  // The variables to save: a list (saved under their names; empty: all global variables) or a
  // map from checkpoint name to variable (TensorFlow's var_list dict).
  class VarList {
   public:
    VarList() = default;
    VarList(std::vector<Variable> vars) : vars_(std::move(vars)) {}  // NOLINT: implicit
    VarList(std::initializer_list<Variable> vars) : vars_(vars) {}   // NOLINT
    VarList(const std::map<std::string, Variable>& by_name);         // NOLINT
    VarList(std::initializer_list<std::pair<const std::string, Variable>> by_name)  // NOLINT
        : VarList(std::map<std::string, Variable>(by_name)) {}

   private:
    friend class Saver;
    std::vector<Variable> vars_;
    std::vector<std::string> names_;  // checkpoint names, parallel to vars_; empty: var names
  };

  // Throws pf::Error (InvalidArgument "No variables to save", as TensorFlow) when the list is
  // empty and the graph has no global variables.
  explicit Saver(Graph* graph, VarList vars = {}, int max_to_keep = 5);

  const std::vector<Variable>& variables() const { return vars_; }
  int max_to_keep() const { return max_to_keep_; }

  // Writes "<prefix>-<global_step>.safetensors" ("<prefix>.safetensors" when global_step < 0),
  // records it in "<dir>/checkpoint" and deletes the oldest beyond max_to_keep, counting the
  // checkpoints the index already lists (from earlier runs). Returns the path. A failed write
  // leaves the previous files and index as they were and throws.
  std::string Save(Session& session, const std::string& prefix, int64_t global_step = -1);
  void Restore(Session& session, const std::string& path, const RestoreOptions& options = {});
  // The newest checkpoint recorded in "<dir>/checkpoint", or "" when the directory holds no
  // checkpoint. Throws pf::Error (FailedPrecondition) when the index is missing, empty or
  // unreadable next to checkpoint files, or names a file that does not exist.
  static std::string LatestCheckpoint(const std::string& dir);
  static StatusOr<std::string> TryLatestCheckpoint(const std::string& dir);
  // Creates `dir` if needed and checks that checkpoints can be written there (a tool calls it
  // before training): an error for a path that is a file, sits under a file, or is read-only.
  static Status CheckDirectory(const std::string& dir);

 private:
  std::deque<std::string>& Kept(const std::string& dir);

  std::vector<Variable> vars_;
  std::vector<std::string> names_;      // the checkpoint key of each variable
  std::vector<Output> restore_values_;  // placeholders fed from the file
  std::vector<Operation> restore_ops_;
  int max_to_keep_;
  std::map<std::string, std::deque<std::string>> kept_;  // by directory, oldest first
};

// The tensors of a safetensors file, checked for consistency; errors name the file.
StatusOr<std::map<std::string, Tensor>> ReadSafetensors(const std::string& path);
Status WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors);

// tf.train.Saver's namespace (docs/api.md, "Names").
namespace train {
using Saver = ::pf::Saver;
}  // namespace train

}  // namespace pf
