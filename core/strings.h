// Small string helpers shared by the writers of JSON and DOT text and by the logs.
//
//   pf::EscapeQuoted("say \"hi\"\n") == "say \\\"hi\\\"\\n"
//   pf::FirstLine("a\nb") == "a"
#pragma once

#include <string>
#include <string_view>

namespace pf {

// Escapes backslashes, double quotes and newlines for a double-quoted JSON or DOT string.
inline std::string EscapeQuoted(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The text up to its first newline (all of it when there is none): a one-line log of a message.
inline std::string FirstLine(std::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

}  // namespace pf
