#include "tools/common/cli.h"

#include <cstdio>
#include <exception>

namespace mcdl::tools {

int run_tool(int argc, char** argv, int (*run)(int argc, char** argv)) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace mcdl::tools
