// Reads the whitespace-separated fixtures of tools/make_eval_fixtures.py (tests/fixtures/eval/):
// a first comment line, then records whose fields the caller reads in order.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mcdl::testing {

class EvalFixture {
 public:
  explicit EvalFixture(const std::string& name)
      : in_((std::filesystem::path(__FILE__).parent_path().parent_path() / "fixtures" / "eval" / name).string()) {
    std::string comment;
    std::getline(in_, comment);
  }
  bool good() { return static_cast<bool>(in_ >> std::ws) && !in_.eof(); }
  template <class T>
  T next() {
    T value{};
    in_ >> value;
    return value;
  }
  template <class T>
  std::vector<T> next(int64_t count) {
    std::vector<T> values(static_cast<size_t>(count));
    for (T& v : values) in_ >> v;
    return values;
  }

 private:
  std::ifstream in_;
};

}  // namespace mcdl::testing
