// ./mcdl_pretrain DATASET [options] -o BACKBONE.safetensors: self-supervised (SimCLR)
// pretraining of a ViT backbone on a dataset's training images, labels unused.
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/collective.h"
#include "engine/error.h"
#include "tools/common/cli.h"
#include "mcdl/harness/pretrain.h"
#include "tools/common/config_arguments.h"

namespace {

void print_help() {
  mcdl::PretrainConfig defaults;
  std::printf(
      "usage: ./mcdl_pretrain DATASET [options] -o BACKBONE.safetensors\n\n"
      "Self-supervised pretraining (SimCLR: InfoNCE on two augmented views) of a ViT backbone on the\n"
      "training images of DATASET, every label ignored. The output loads with ./mcdl_train --weights.\n\n"
      "options:\n%s\nexample (the demo's backbone):\n"
      "  ./mcdl_pretrain fmnist --model img=28,patch=7,dim=64,depth=4,heads=4,chans=1 -o fmnist_vit.safetensors\n",
      mcdl::options_help(mcdl::pretrain_options(defaults)).c_str());
}

int run(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  mcdl::PretrainConfig config;
  config.dataset = argv[1];
  mcdl::check(config.dataset[0] != '-', "the first argument must be the dataset name (see --help)");
  const auto options = mcdl::pretrain_options(config);
  for (int i = 2; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "--help") {
      print_help();
      return 0;
    }
    if (name == "-o") {
      mcdl::check(i + 1 < argc, "option -o needs a value (see --help)");
      mcdl::set_option(options, "out", argv[++i]);
      continue;
    }
    const auto [option, value] = mcdl::tools::read_option_argument(options, argc, argv, i);
    mcdl::set_option(options, option, value);
  }
  // Each copy would train alone and write the same files: one process only.
  mcdl::check(mcdl::launcher_world_size() == 1, "mcdl_pretrain runs in one process, but a launcher started ",
              mcdl::launcher_world_size(), ": start it without mpirun or srun (only mcdl_train runs on several)");
  mcdl::tools::stop_runs_on_interrupt();
  if (mcdl::run_pretraining(config).interrupted) {
    std::fprintf(stderr, "stopped; %s is rewritten after every whole epoch: it holds the last one that ended\n",
                 config.out.c_str());
    return mcdl::tools::interrupted_status;
  }
  std::printf("wrote %s\n", config.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mcdl::tools::run_tool(argc, argv, run); }
