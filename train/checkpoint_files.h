// The files of a checkpoint directory: atomic writes, the "checkpoint" index, directory checks.
// Used by Saver (train/saver.cc); nothing here throws, std::filesystem errors included.
//
//   PF_RETURN_IF_ERROR(pf::CheckCheckpointDirectory("ckpt"));   // before training starts
//   PF_RETURN_IF_ERROR(pf::WriteFileAtomically("ckpt/checkpoint", {"model-3.safetensors\n"}));
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

// The file names the index "<dir>/checkpoint" lists, oldest first. An absent index in a
// directory without checkpoint files is an empty list (a fresh start); an absent, empty or
// unreadable index next to checkpoint files is a FailedPrecondition error naming them.
StatusOr<std::vector<std::string>> ReadCheckpointIndex(const std::string& dir);

// Testing: called while each file is written, with its final path; an error makes that write
// fail part-way, as a full disk would. An empty function removes the hook.
void SetCheckpointWriteHookForTesting(std::function<Status(const std::string& path)> hook);

}  // namespace pf
