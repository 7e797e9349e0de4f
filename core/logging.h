// Logging through spdlog. The level comes from PF_LOG_LEVEL (trace, debug, info, warn, error,
// off; default warn) the first time Logger() is called.
//
//   PF_LOG_INFO("placed {} nodes", n);
//   pf::SetLogLevel("debug");
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace pf {

spdlog::logger& Logger();
void SetLogLevel(std::string_view level);
// Writes `text` as one info record through the logger's sinks (stderr) even when the level is
// above info: output the user asked for (log_device_placement), which TensorFlow writes with
// LOG(INFO) at its default level. Nothing when the level is off.
void LogRequested(std::string_view text);

}  // namespace pf

#define PF_LOG_DEBUG(...) ::pf::Logger().debug(__VA_ARGS__)
#define PF_LOG_INFO(...) ::pf::Logger().info(__VA_ARGS__)
#define PF_LOG_WARN(...) ::pf::Logger().warn(__VA_ARGS__)
#define PF_LOG_ERROR(...) ::pf::Logger().error(__VA_ARGS__)
