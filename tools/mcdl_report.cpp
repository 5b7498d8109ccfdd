// ./mcdl_report RUN_DIR: pictures of a training run (tools/common/run_report.h) written into its
// directory: curves.svg, confusion.svg, embedding.svg and report.html.
#include <cstdio>
#include <cstring>

#include "tools/common/cli.h"
#include "tools/common/run_report.h"

namespace {

int run(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::printf(
        "usage: mcdl_report RUN_DIR\n\n"
        "Writes into RUN_DIR:\n"
        "  curves.svg      All / Old / New (%%), every loss term, bucket sizes and their pseudo-label\n"
        "                  accuracy per epoch\n"
        "  confusion.svg   the last evaluation's classes against its clusters, by name (needs labels)\n"
        "  embedding.svg   a t-SNE map of the evaluated images, coloured by cluster (needs features.npy)\n"
        "  report.html     one page, viewable offline: the method and dataset, the final accuracies,\n"
        "                  the last epoch's numbers, the pictures, a table per class and every setting\n"
        "./mcdl_train writes them at the end of a run.\n");
    return argc == 2 ? 0 : 2;
  }
  std::printf("mcdl_report: %s\n", mcdl::tools::write_run_report(argv[1]).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mcdl::tools::run_tool(argc, argv, run); }
