// One field of a CSV line as the project's CSV files write it (RFC 4180): as it is, or
// double-quoted with quotes doubled when it holds a comma, a quote or a line break.
#pragma once
#include <string>

namespace mcdl {

inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

}  // namespace mcdl
