// Where the tests find the command-line tools they run: ./mcdl_<name> at the repository root
// (`make` builds them there; default_dir when a test names the root otherwise), or $MCDL_TOOL_DIR/mcdl_<name> when that is set: `make test-asan`
// points it at the AddressSanitizer builds, so the tools' own runs are checked too.
#pragma once
#include <cstdlib>
#include <string>

namespace mcdl::testing {

inline std::string tool_binary(const std::string& name, const std::string& default_dir = ".") {
  const char* dir = std::getenv("MCDL_TOOL_DIR");
  return (dir != nullptr && *dir != '\0' ? std::string(dir) : default_dir) + "/" + name;
}

}  // namespace mcdl::testing
