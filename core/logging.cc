#include "placeflow/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

namespace pf {

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("placeflow");
    l->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ placeflow] %v");
    const char* env = std::getenv("PF_LOG_LEVEL");
    l->set_level(env ? spdlog::level::from_str(env) : spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void SetLogLevel(std::string_view level) {
  Logger().set_level(spdlog::level::from_str(std::string(level)));
}

void LogRequested(std::string_view text) {
  spdlog::logger& logger = Logger();
  if (logger.level() == spdlog::level::off) return;
  spdlog::details::log_msg msg(logger.name(), spdlog::level::info,
                               spdlog::string_view_t(text.data(), text.size()));
  for (const auto& sink : logger.sinks()) {
    if (!sink->should_log(spdlog::level::info)) continue;
    sink->log(msg);
    sink->flush();
  }
}

}  // namespace pf
