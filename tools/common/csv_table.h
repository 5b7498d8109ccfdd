// A small CSV reader for the command-line tools: a header line of column names, then one
// record per line. Fields are separated by commas; a field may be double-quoted ("" inside
// quotes is a quote; a quoted field does not span lines); spaces around fields and a
// trailing \r are dropped; blank lines are skipped. Errors throw mcdl::Error with a message
// "FILE:LINE: ..." that names the column where one is involved.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl::tools {

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each has header.size() fields
  std::vector<int64_t> line_numbers;           // 1-based line of each row in the file

  // The position of a column, or −1 when the header lacks it.
  int64_t column(const std::string& name) const;
  // The position of a column that must exist (throws "FILE: no column 'name' in the header ...").
  int64_t require_column(const std::string& name) const;
  // "FILE:LINE: column 'name': " for messages about row r, column c.
  std::string where(int64_t row, int64_t column) const;
  // The field as an integer ≥ min_value, or an error naming line, column and value.
  int64_t integer(int64_t row, int64_t column, int64_t min_value) const;
};

CsvTable read_csv(const std::string& path);

}  // namespace mcdl::tools
