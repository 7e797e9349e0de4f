// pf-train's --place rules and what soft placement made of the devices the user named.
//
//   auto rules = pf::app::ParsePlacementRules("affine0=/cpu:1,affine_last=/cpu:0");
//   pf::app::ApplyPlacementRules(graph, rules);   // every matching node asks for that device
//
// --place "affine0=/cpu:1,affine_last=/cpu:0": every node whose name matches a regex (searched,
// not anchored) asks for that device; later rules win. Model parallelism as in seed article 003.
#pragma once

#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/graph/graph.h"

namespace pf {
class Session;
}  // namespace pf

namespace pf::app {

struct PlaceRule {
  std::string text, device;
  std::regex re;
};

// Throws UsageError (tools/train_flags.h) for a rule without '=', a bad device or a bad regex.
std::vector<PlaceRule> ParsePlacementRules(const std::string& rules);
// Returns the rules that match no node of `g`, after printing a warning for each (with a few of
// the graph's node names): a typo in a regex would otherwise do nothing without a word. A
// warning, not an error: one --place may serve several models, and an unmatched rule is harmless.
std::vector<std::string> ApplyPlacementRules(Graph& g, const std::vector<PlaceRule>& rules);

// A device the user named (each a pair: what the user wrote, the device) that the session does
// not have falls back under soft placement: prints where it went, log or no log, since the user
// asked for it. Placed here with the session's own devices, as its first Run will place them.
// Returns, for each such device, where its nodes went ("/job:localhost/.../device:CPU:0").
using Fallbacks = std::map<std::string, std::string>;
Fallbacks ReportFallbacks(const Graph& g, const Session& sess,
                          const std::vector<std::pair<std::string, std::string>>& named);
// `summary` ("..., variables on /cpu:5)") with each fallen-back device replaced by where its
// nodes went: "variables on /job:localhost/replica:0/task:0/device:CPU:0 (no /cpu:5)".
std::string NoteFallbacks(std::string summary, const Fallbacks& fallbacks);

}  // namespace pf::app
