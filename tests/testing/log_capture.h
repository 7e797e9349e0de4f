// Collects what the placeflow logger writes (records at info level and above, and records
// written with LogRequested) while it lives, one line per text line, without the prefix.
#pragma once

#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "placeflow/core/logging.h"

namespace pf::testing {

class LogCapture {
 public:
  LogCapture()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)), level_(Logger().level()) {
    sink_->set_pattern("%v");
    Logger().sinks().push_back(sink_);
    Logger().set_level(spdlog::level::info);
  }
  ~LogCapture() {
    auto& sinks = Logger().sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), sink_));
    Logger().set_level(level_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string Text() const { return text_.str(); }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(text_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum level_;
};

}  // namespace pf::testing
