// What a session does to a request before placing it, shared by the in-process Session and the
// cluster runtime's master: prune to what the call needs, key the signature cache, and refuse a
// call that would run only part of a collective group.
//
//   std::vector<pf::Node*> nodes = pf::Prune(fed, fetches, targets);
//   PF_RETURN_IF_ERROR(pf::CheckCollectivesComplete(nodes));
//   std::string key = pf::SignatureKey(feeds, fetches, targets);
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/devices/device.h"
#include "placeflow/executor/session.h"
#include "placeflow/graph/graph.h"
#include "placeflow/placer/placer.h"

namespace pf {

// Nodes needed for the fetches and targets, not walking into fed tensors.
std::vector<Node*> Prune(const std::vector<Output>& feeds, const std::vector<Output>& fetches,
                         const std::vector<Operation>& targets);

// The cache key of a call: node ids of feeds, fetches and targets.
std::string SignatureKey(const FeedDict& feeds, const std::vector<Output>& fetches,
                         const std::vector<Operation>& targets);

// A collective whose participants are not all in this call would wait forever.
Status CheckCollectivesComplete(const std::vector<Node*>& nodes);

// The variable whose buffer `o` may be a view of (a later step updates it in place): a
// variable, an op that updates one in place, either seen through ops that forward their
// input's buffer. nullptr when none.
const Node* AliasedVariable(const Output& o);

// Whether a feed entering a partition on `d` through `arg` (an _Arg node) is used in host
// memory: always on a device whose memory is the host's, else only when every consumer reads it
// as HostMemory. Other feeds are copied to the device before the step.
bool FeedStaysOnHost(const Node& arg, const Device& d);

// "Device mapping:" and a line per device (TensorFlow's log_device_placement header).
std::string DeviceMappingText(const DeviceSet& devices);
// Writes the device mapping to stderr through the logger, as TensorFlow's LOG(INFO) does.
void LogDeviceMapping(const DeviceSet& devices);

// The placement log, split where TensorFlow splits it: a line per node not in `logged`, in graph
// order (TensorFlow's format, printed on stdout), and our summary (nodes per device, Send/Recv
// pairs, soft fallbacks, then the fallback lines; logged on stderr).
struct PlacementLog {
  std::string node_lines;
  std::string summary;
};
PlacementLog PlacementLogText(const std::vector<Node*>& nodes, const Placement& placement,
                              int send_recv_pairs,
                              const std::map<std::string, std::string>& logged);
// Node lines to stdout at once, the summary through the logger.
void EmitPlacementLog(const PlacementLog& log);

}  // namespace pf
