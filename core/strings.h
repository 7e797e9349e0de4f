// Small string helpers shared by the writers of JSON and DOT text.
//
//   pf::EscapeQuoted("say \"hi\"\n") == "say \\\"hi\\\"\\n"
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

}  // namespace pf
