// Just enough JSON for the TensorFlow fixtures' expectation files (tests/data/*.json, written by
// the fixture scripts): objects, arrays, strings without escapes, numbers.
//
//   pf::testing::Json j = pf::testing::JsonParser(text).Parse();
//   j["inputs"].array()[0].number();
#pragma once

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace pf::testing {

struct Json {
  std::variant<double, std::string, std::vector<Json>, std::map<std::string, Json>> v;
  const Json& operator[](const std::string& k) const { return object().at(k); }
  const std::map<std::string, Json>& object() const {
    return std::get<std::map<std::string, Json>>(v);
  }
  const std::vector<Json>& array() const { return std::get<std::vector<Json>>(v); }
  double number() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
};

class JsonParser {
 public:
  explicit JsonParser(std::string text) : s_(std::move(text)) {}
  Json Parse() {
    Skip();
    const char c = s_.at(i_);
    if (c == '{' || c == '[') {
      ++i_;
      std::map<std::string, Json> m;
      std::vector<Json> a;
      for (Skip(); s_.at(i_) != (c == '{' ? '}' : ']'); Skip()) {
        if (c == '{') {
          std::string key = Parse().str();
          Skip();
          ++i_;  // ':'
          m[key] = Parse();
        } else {
          a.push_back(Parse());
        }
        Skip();
        if (s_.at(i_) == ',') ++i_;
      }
      ++i_;
      return c == '{' ? Json{std::move(m)} : Json{std::move(a)};
    }
    if (c == '"') {
      const size_t end = s_.find('"', i_ + 1);
      std::string v = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
      return Json{std::move(v)};
    }
    size_t used = 0;
    const double d = std::stod(s_.substr(i_, 40), &used);
    i_ += used;
    return Json{d};
  }

 private:
  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string s_;
  size_t i_ = 0;
};

// The JSON in the file at `path`.
inline Json ParseJsonFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return JsonParser(ss.str()).Parse();
}

}  // namespace pf::testing
