// Where the tests find the command-line tools they run: ./mcdl_<name> at the repository root
// (`make` builds them there; default_dir when a test names the root otherwise), or $MCDL_TOOL_DIR/mcdl_<name> when that is set: `make test-asan`
// points it at the AddressSanitizer builds, so the tools' own runs are checked too. And running a
// command line with its standard error kept.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace mcdl::testing {

inline std::string tool_binary(const std::string& name, const std::string& default_dir = ".") {
  const char* dir = std::getenv("MCDL_TOOL_DIR");
  return (dir != nullptr && *dir != '\0' ? std::string(dir) : default_dir) + "/" + name;
}

struct CommandOutcome {
  int status;       // the exit status
  std::string err;  // what it wrote to standard error
};

// `command` through the shell, its standard output dropped and its standard error kept in
// `err_file`; a command ended by a signal (a crash) fails the test.
inline CommandOutcome run_command(const std::string& command, const std::filesystem::path& err_file) {
  const int status = std::system((command + " > /dev/null 2> '" + err_file.string() + "'").c_str());
  REQUIRE(WIFEXITED(status));  // never a signal (segfault, abort)
  std::ifstream in(err_file);
  std::stringstream err;
  err << in.rdbuf();
  return {WEXITSTATUS(status), err.str()};
}

}  // namespace mcdl::testing
