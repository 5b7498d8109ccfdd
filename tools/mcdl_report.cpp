// ./mcdl_report RUN_DIR: pictures of a training run (tools/common/run_report.h) written into its
// directory: curves.svg and report.html.
#include <cstdio>
#include <cstring>

#include "tools/common/cli.h"
#include "tools/common/run_report.h"

namespace {

int run(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::printf(
        "usage: mcdl_report RUN_DIR\n\n"
        "Writes RUN_DIR/curves.svg (All / Old / New, every loss term, bucket sizes and their pseudo-label\n"
        "accuracy per epoch) and RUN_DIR/report.html (the charts, the last epoch's numbers and every\n"
        "setting, viewable offline). ./mcdl_train writes both at the end of a run.\n");
    return argc == 2 ? 0 : 2;
  }
  std::printf("mcdl_report: %s\n", mcdl::tools::write_run_report(argv[1]).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mcdl::tools::run_tool(argc, argv, run); }
