// The shared outer shell of the command-line tools: any error ends the program with one line
// "error: <message>" on stderr and exit status 1, never an uncaught exception or a crash.
#pragma once

namespace mcdl::tools {

int run_tool(int argc, char** argv, int (*run)(int argc, char** argv));

}  // namespace mcdl::tools
