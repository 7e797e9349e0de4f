// The files of a checkpoint directory: atomic writes, the "checkpoint" index, directory checks.
// Used by Saver (train/saver.cc); nothing here throws, std::filesystem errors included.
//
//   PF_RETURN_IF_ERROR(pf::CheckCheckpointDirectory("ckpt"));   // before training starts
//   std::string index = pf::FormatCheckpointIndex({"model-2.safetensors", "model-3.safetensors"});
//   PF_RETURN_IF_ERROR(pf::WriteFileAtomically("ckpt/checkpoint", {index}));
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

// Writes the concatenation of `parts` to `path` so that `path` holds either its old content or
// all of the new: "<path>.tmp" is written (every write checked), fsynced, renamed over `path`,
// and the directory fsynced. On any failure the temporary file is removed.
Status WriteFileAtomically(const std::string& path, const std::vector<std::string_view>& parts);

// Creates `dir` if needed and checks that files can be created in it. An error names the
// directory and the reason: a path that is a file, one under a file, a read-only directory.
Status CheckCheckpointDirectory(const std::string& dir);

// The checkpoint files ("*.safetensors") in `dir`, by name, sorted; none if there is no `dir`.
std::vector<std::string> CheckpointFilesIn(const std::string& dir);

// TensorFlow's CheckpointState (tensorflow/core/protobuf/checkpoint_state.proto): what the
// "checkpoint" index file holds, in protobuf text format, so that TF's
// tf.train.latest_checkpoint and get_checkpoint_state read ours and we read theirs.
struct CheckpointState {
  std::string model_checkpoint_path;                    // the latest checkpoint
  std::vector<std::string> all_model_checkpoint_paths;  // oldest first, the latest last
};

// The index text TF writes (text_format.MessageToString of a CheckpointState): for
// names {"m-1", "m-2"}
//   model_checkpoint_path: "m-2"
//   all_model_checkpoint_paths: "m-1"
//   all_model_checkpoint_paths: "m-2"
// Strings are C-escaped as protobuf's CEscape does (\" \\ \' \n \r \t, other bytes below 32
// or above 126 as 3-digit octal). No names: an empty text.
std::string FormatCheckpointIndex(const std::vector<std::string>& names);
// Parses CheckpointState text: fields in any order, either quote, adjacent strings
// concatenated, C escapes (octal, \x hex), # comments; the timestamp fields TF 2 adds are
// read and ignored. InvalidArgument naming the line for anything else.
StatusOr<CheckpointState> ParseCheckpointState(std::string_view text);

// The file names the index "<dir>/checkpoint" lists, oldest first, the latest last (TF's rule:
// model_checkpoint_path is appended when all_model_checkpoint_paths does not end with it). The
// index is TF's CheckpointState text, or the one-name-a-line list placeflow wrote before. A path
// in the index must name a "*.safetensors" file in `dir` (relative, or absolute into `dir`). An
// absent index in a directory without checkpoint files is an empty list (a fresh start); an
// absent, empty, corrupt or unreadable index next to checkpoint files is a FailedPrecondition
// error naming them.
StatusOr<std::vector<std::string>> ReadCheckpointIndex(const std::string& dir);

// Testing: called while each file is written, with its final path; an error makes that write
// fail part-way, as a full disk would. An empty function removes the hook.
void SetCheckpointWriteHookForTesting(std::function<Status(const std::string& path)> hook);

}  // namespace pf
