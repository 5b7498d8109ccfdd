// Reads tests/fixtures/splits/*.txt (written by tools/make_split_fixtures.py): lines
// `<key words> : <count> <fnv1a64> <first values...>`, and hashes a C++ list the same way.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace mcdl::test {

struct ListSummary {
  int64_t count = 0;
  uint64_t hash = 0;
  std::vector<int64_t> first;
};

struct FixtureLine {
  std::string key;  // the words before " : "
  std::string rest;
};

inline std::string split_fixture_path(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "splits" / name).string();
}

inline std::vector<FixtureLine> read_split_fixture(const std::string& name) {
  std::ifstream in(split_fixture_path(name));
  std::vector<FixtureLine> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(" : ");
    if (colon == std::string::npos) continue;
    lines.push_back({line.substr(0, colon), line.substr(colon + 3)});
  }
  return lines;
}

inline std::vector<int64_t> parse_ints(const std::string& text) {
  std::istringstream in(text);
  std::vector<int64_t> values;
  int64_t v;
  while (in >> v) values.push_back(v);
  return values;
}

inline ListSummary parse_summary(const std::string& text) {
  std::istringstream in(text);
  ListSummary s;
  in >> s.count >> s.hash;
  int64_t v;
  while (in >> v) s.first.push_back(v);
  return s;
}

// FNV-1a 64 over the little-endian int64 bytes of every value.
inline uint64_t fnv1a64(const std::vector<int64_t>& values) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int64_t v : values) {
    auto u = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) {
      h ^= (u >> (8 * b)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

inline bool matches(const std::vector<int64_t>& values, const ListSummary& s) {
  if (static_cast<int64_t>(values.size()) != s.count || fnv1a64(values) != s.hash) return false;
  for (size_t i = 0; i < s.first.size(); ++i)
    if (values[i] != s.first[i]) return false;
  return true;
}

}  // namespace mcdl::test
