// ./mcdl_train DATASET [options]: trains SimGCD + MCDL (or the SimGCD, GCD and k-means
// baselines) on a GCD dataset and writes a run directory. See --help and the README.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "engine/collective.h"
#include "engine/error.h"
#include "layers/frozen_graphs.h"
#include "tools/common/cli.h"
#include "tools/common/config_arguments.h"
#include "tools/common/mpi_launch.h"
#include "tools/common/run_report.h"
#include "mcdl/run/train_config.h"
#include "mcdl/harness/run.h"

namespace {

std::string dataset_list() {
  std::string list;
  for (const std::string& name : mcdl::dataset_names()) list += (list.empty() ? "" : " ") + name;
  return list;
}

void print_help() {
  std::printf(
      "usage: ./mcdl_train DATASET [options]\n"
      "       ./mcdl_train --resume RUN_DIR\n"
      "       ./mcdl_train --config RUN_DIR/config.json [options]\n\n"
      "Trains SimGCD + MCDL (Memory Consistency Guided Divide-and-Conquer Learning) for Generalized\n"
      "Category Discovery, or the baselines (--method simgcd, gcd, kmeans), or MCDL on GCD (--method\n"
      "gcd+mcdl), and reports All / Old / New clustering accuracy on the unlabelled training images\n"
      "(transductive) and on the dataset's test split where its layout has one (inductive; see --eval-on).\n\n"
      "DATASET: %s\n\n"
      "options (defaults are the paper's / SimGCD's):\n",
      dataset_list().c_str());
  mcdl::TrainConfig defaults;
  std::printf("%s", mcdl::options_help(mcdl::config_options(defaults)).c_str());
  std::printf(
      "  --%-22s continue the run in RUN_DIR from its last checkpoint\n"
      "  --%-22s read every option from a saved config.json (later options override it)\n"
      "  --%-22s start N processes on this machine through OpenMPI's mpirun, each running --shards S / N\n"
      "  %-24s of every batch (--shards defaults to N; docs/scaling.md)\n\n"
      "example:\n  ./mcdl_train cub --data-root ~/datasets --weights dino_vitb16.safetensors --out runs/cub\n"
      "  (~/datasets/CUB_200_2011/images.txt, ...; see the README for every dataset's layout)\n",
      "resume RUN_DIR", "config FILE", "nproc N", "");
}

bool is_dataset(const std::string& name) {
  const auto& names = mcdl::dataset_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

int run(int argc_in, char** argv_in) {
  // --nproc N starts mpirun with N copies of this program; the copies (and a plain run) go on here.
  std::vector<std::string> args = mcdl::tools::start_processes_if_asked(argc_in, argv_in);
  mcdl::tools::assign_gpu_to_local_rank();  // before anything starts CUDA
  std::vector<char*> arg_pointers;
  for (std::string& a : args) arg_pointers.push_back(a.data());
  const int argc = static_cast<int>(arg_pointers.size());
  char** argv = arg_pointers.data();
  mcdl::TrainConfig config;
  bool resume = false;
  int first = 1;
  // --resume RUN_DIR first: the saved config, then any other option overrides it (e.g. --epochs).
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--resume") == 0) {
      config = mcdl::resume_config(argv[i + 1]);
      resume = true;
    }
  if (argc < 2) {
    print_help();
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_help();
    return 0;
  }
  if (argv[1][0] != '-') {
    mcdl::check(!resume, "--resume takes no dataset: the run directory's config.json names it");
    config.dataset = argv[1];
    mcdl::check(is_dataset(config.dataset), "unknown dataset '", config.dataset,
                "'; expected one of: ", dataset_list());
    first = 2;
  }
  for (int i = first; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      print_help();
      return 0;
    }
    const auto [name, value] = mcdl::tools::read_option_argument(mcdl::config_options(config), argc, argv, i);
    if (name == "resume") {
      continue;  // read above
    } else if (name == "config") {
      const std::string dataset = config.dataset;
      config = mcdl::config_from_json_file(value);
      if (!dataset.empty()) config.dataset = dataset;
    } else {
      mcdl::set_config_option(config, name, value);
    }
  }
  if (!resume) {
    mcdl::check(!config.dataset.empty(), "no dataset given; usage: ./mcdl_train DATASET [options] (see --help)");
    if (config.out.empty()) config.out = "runs/" + config.dataset + "-" + mcdl::method_name(config.method);
    mcdl::check(!std::filesystem::exists(std::filesystem::path(config.out) / "checkpoints" / "last.safetensors"),
                "run directory ", config.out, " already holds a run; continue it with --resume ", config.out,
                " or choose another --out");
  }
  mcdl::tools::stop_runs_on_interrupt();
  // Several processes: rank 0 alone prints and writes (the others compute the same, in step).
  const bool rank_zero = mcdl::world().rank() == 0;
  if (!rank_zero) {
    config.progress = false;
    mcdl::check(std::freopen("/dev/null", "w", stdout) != nullptr, "cannot silence rank ", mcdl::world().rank());
  }
  const mcdl::RunSummary summary = mcdl::run_training(config, resume);
  if (summary.interrupted) {
    std::fprintf(stderr, "stopped; continue with ./mcdl_train --resume %s\n", config.out.c_str());
    return mcdl::tools::interrupted_status;
  }
  // The last epoch, never a selected one: transductive (the unlabelled training images) and
  // inductive (the test split), each where scored.
  std::string line = "final";
  char part[96];
  for (const auto& [label, acc] : {std::pair{"", summary.accuracy}, std::pair{"test ", summary.test_accuracy}}) {
    if (std::isnan(acc.all)) continue;
    std::snprintf(part, sizeof part, "  %sAll %.2f  Old %.2f  New %.2f", label, 100 * acc.all, 100 * acc.old_classes,
                  100 * acc.new_classes);
    line += part;
  }
  if (line == "final") line += "  no labels for the evaluated images: nothing to score";
  std::printf("%s  (%.0f s)\n", line.c_str(), summary.seconds);
  // With MCDL_CUDA_GRAPHS=frozen on a GPU: whether the graphs were recorded and replayed.
  if (rank_zero && mcdl::FrozenGraphs::process_recordings() + mcdl::FrozenGraphs::process_refusals() > 0)
    std::fprintf(stderr, "%s\n", mcdl::FrozenGraphs::process_summary().c_str());
  // The pictures of the run: curves.svg, confusion.svg, embedding.svg and report.html (config.out is
  // the run directory, resumed too).
  if (rank_zero) std::fprintf(stderr, "report: %s\n", mcdl::tools::write_run_report(config.out).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mcdl::tools::run_tool(argc, argv, run); }
