// Error reporting for the engine: every failed check throws mcdl::Error with a message
// that names the operation and the offending shapes, never aborts.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace mcdl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append_all(std::ostringstream&) {}
template <class First, class... Rest>
void append_all(std::ostringstream& os, const First& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
}  // namespace detail

// Builds a message from any streamable pieces: fail("matmul: ", a, " vs ", b, ...).
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append_all(os, parts...);
  throw Error(os.str());
}

// The parts are streamed only when the condition fails, so a passing check formats nothing:
// pass a Tensor or Device itself (it prints its str()), not a string built from it.
template <class... Parts>
void check(bool condition, const Parts&... parts) {
  if (!condition) fail(parts...);
}

}  // namespace mcdl
