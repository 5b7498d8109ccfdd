// Reads tests/fixtures/augment/ (written by tools/make_augment_fixtures.py with Pillow 9.4 and
// torchvision 0.14): index.txt lines split into words, images decoded losslessly from PNG.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data/decode.h"

namespace mcdl::testing {

inline std::string augment_fixture(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "augment" / name).string();
}

// The index lines whose first word is `kind`, each as its words.
inline std::vector<std::vector<std::string>> augment_cases(const std::string& kind) {
  std::ifstream in(augment_fixture("index.txt"));
  REQUIRE_MESSAGE(in.good(), "missing fixture index ", augment_fixture("index.txt"));
  std::vector<std::vector<std::string>> cases;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (!w.empty() && w[0] == kind) cases.push_back(w);
  }
  return cases;
}

inline Image fixture_image(const std::string& name, int64_t channels) {
  return decode_image(augment_fixture(name), channels);
}

// Number of bytes that differ (0 for identical images of the same shape; −1 for a shape mismatch).
inline int64_t differing_bytes(const Image& a, const Image& b) {
  if (a.height != b.height || a.width != b.width || a.channels != b.channels) return -1;
  int64_t n = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) n += a.pixels[i] != b.pixels[i];
  return n;
}

}  // namespace mcdl::testing
