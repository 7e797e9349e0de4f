#include "placeflow/executor/trace.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <vector>

#include "placeflow/core/strings.h"

namespace pf {

std::string ChromeTraceJson(const RunMetadata& md) {
  // Processes numbered by device name, so CPU:0 is always above CPU:1.
  std::map<std::string, int> pid;
  std::vector<const NodeExecStats*> events;
  for (const auto* list : {&md.step_stats, &md.session_phases}) {
    for (const NodeExecStats& s : *list) {
      pid[s.device] = 0;
      events.push_back(&s);
    }
  }
  int next = 0;
  for (auto& [device, id] : pid) id = next++;
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& event) {
    out += (first ? "  " : ",\n  ") + event;
    first = false;
  };
  for (const auto& [device, id] : pid) {
    add(
        fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": "
                    "{{\"name\": \"{}\"}}}}",
                    id, EscapeQuoted(device)));
  }
  for (const NodeExecStats* e : events) {
    const NodeExecStats& s = *e;
    const std::string label =
        s.label.empty() ? "" : fmt::format(", \"label\": \"{}\"", EscapeQuoted(s.label));
    add(fmt::format(
        "{{\"ph\": \"X\", \"name\": \"{}\", \"cat\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, "
        "\"dur\": {}, "
        "\"args\": {{\"op\": \"{}\", \"output_bytes\": {}{}}}}}",
        EscapeQuoted(s.node), EscapeQuoted(s.op), pid[s.device], s.thread, s.start_us,
        std::max<int64_t>(s.end_us - s.start_us, 1), EscapeQuoted(s.op), s.output_bytes, label));
  }
  return out + "\n]}\n";
}

Status WriteChromeTrace(const RunMetadata& md, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return errors::NotFound("Cannot open '", path, "' for writing");
  f << ChromeTraceJson(md);
  if (!f) return errors::Internal("Write to '", path, "' failed");
  return Status::OK();
}

}  // namespace pf
