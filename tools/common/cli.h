// The shared outer shell of the command-line tools: any error ends the program with one line
// "error: <message>" on stderr and exit status 1, never an uncaught exception or a crash.
#pragma once

#include <cstdint>
#include <string>

namespace mcdl::tools {

int run_tool(int argc, char** argv, int (*run)(int argc, char** argv));

// A bad command line: the tools print "error: <message>" and the usage hint, and exit with 2.
struct UsageError {
  std::string message;
};

// The value of `option` as a positive integer, or a UsageError naming it.
int64_t positive_integer(const std::string& text, const std::string& option);

}  // namespace mcdl::tools
