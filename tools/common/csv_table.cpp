#include "tools/common/csv_table.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <unordered_set>

#include "engine/error.h"

namespace mcdl::tools {
namespace {

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> split_fields(const std::string& line, const std::string& path, int64_t line_number) {
  std::vector<std::string> fields;
  std::string field;
  size_t i = 0;
  while (true) {
    // Skip leading spaces, then read one quoted or plain field.
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    field.clear();
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (true) {
        check(i < line.size(), path, ":", line_number, ": field ", fields.size() + 1, " has an unterminated quote");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      check(i == line.size() || line[i] == ',', path, ":", line_number, ": field ", fields.size() + 1,
            " has text after its closing quote");
      fields.push_back(field);
    } else {
      const size_t end = std::min(line.find(',', i), line.size());
      fields.push_back(trim(line.substr(i, end - i)));
      i = end;
    }
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return fields;
}

}  // namespace

int64_t CsvTable::column(const std::string& name) const {
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int64_t>(c);
  return -1;
}

int64_t CsvTable::require_column(const std::string& name) const {
  const int64_t c = column(name);
  if (c < 0) {
    std::string names;
    for (const std::string& h : header) names += (names.empty() ? "" : ",") + h;
    fail(path, ": no column '", name, "' in the header (", names, ")");
  }
  return c;
}

std::string CsvTable::where(int64_t row, int64_t c) const {
  return path + ":" + std::to_string(line_numbers[row]) + ": column '" + header[c] + "': ";
}

int64_t CsvTable::integer(int64_t row, int64_t c, int64_t min_value) const {
  const std::string& text = rows[row][c];
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  check(!text.empty() && *end == '\0' && errno == 0 && value >= min_value, where(row, c), "'", text,
        "' is not an integer ≥ ", min_value);
  return value;
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), path, ": cannot open the file");
  CsvTable table;
  table.path = path;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line_number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte order mark
    if (trim(line).empty()) continue;
    std::vector<std::string> fields = split_fields(line, path, line_number);
    if (table.header.empty()) {
      std::unordered_set<std::string> names;  // linear in the header's width, however wide
      for (size_t c = 0; c < fields.size(); ++c) {
        check(!fields[c].empty(), path, ":", line_number, ": header column ", c + 1, " has no name");
        check(names.insert(fields[c]).second, path, ":", line_number, ": header names column '", fields[c], "' twice");
      }
      table.header = std::move(fields);
      continue;
    }
    check(fields.size() == table.header.size(), path, ":", line_number, ": ", fields.size(), " fields, but the header has ",
          table.header.size());
    table.rows.push_back(std::move(fields));
    table.line_numbers.push_back(line_number);
  }
  check(!table.header.empty(), path, ": the file is empty (no header line)");
  return table;
}

}  // namespace mcdl::tools
