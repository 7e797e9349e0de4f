// Step traces: per-node start/end times, device, thread and output bytes, written in the
// Chrome trace format that chrome://tracing and Perfetto open (one process per device, one
// track per thread).
//
//   pf::RunOptions ro;  ro.trace = true;
//   pf::RunMetadata md;
//   sess.Run(ro, {{x, batch}}, {loss}, {train_op}, &md);
//   pf::WriteChromeTrace(md, "step.json");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

struct RunOptions {
  bool trace = false;  // fill RunMetadata::step_stats
  // > 0: the step fails with DeadlineExceeded after this long, waking every waiting kernel
  // (queues, accumulators, Recvs); TensorFlow's RunOptions.timeout_in_ms.
  int64_t timeout_in_ms = 0;
};

struct NodeExecStats {
  std::string node;
  std::string op;
  std::string device;
  uint64_t thread = 0;   // a small id per OS thread, in order of first appearance
  int64_t start_us = 0;  // since the step began
  int64_t end_us = 0;
  int64_t output_bytes = 0;
  // How the kernel ran, when it says (OpKernelContext::SetTraceLabel): e.g. "conv backward data:
  // cudnn NCHW via transpose algo=ALGO_1". Empty for most kernels.
  std::string label = {};
};

struct RunMetadata {
  std::vector<NodeExecStats> step_stats;
  int64_t step_us = 0;
  // The session's own work around the executors (device "session"): staging the feeds onto
  // their devices, waiting for the devices at the end of the step (a GPU's queued kernels), and
  // copying the fetched values back. Shown as one more process in the Chrome trace.
  std::vector<NodeExecStats> session_phases;
};

std::string ChromeTraceJson(const RunMetadata& metadata);
Status WriteChromeTrace(const RunMetadata& metadata, const std::string& path);

}  // namespace pf
