// ./mcdl_estimate_k DATASET [options]: the number of classes of a GCD dataset when it is
// unknown, estimated as GCD does (mcdl/run/estimate_k.h), printed with the curve it came from.
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops/linalg.h"
#include "engine/settings.h"
#include "mcdl/run/estimate_k.h"
#include "mcdl/run/train_config.h"
#include "mcdl/run/training_data.h"
#include "tools/common/cli.h"
#include "tools/common/config_arguments.h"

namespace {

void print_help() {
  std::printf(
      "usage: ./mcdl_estimate_k DATASET [--k-min N] [--k-max N] [--restarts N] [mcdl_train's options]\n\n"
      "Estimates the number of classes K as GCD does: k-means with K clusters over the frozen\n"
      "backbone's features of every training image, scored by the clustering accuracy on the\n"
      "labelled images (their classes are known), K searched by Brent's bounded method.\n"
      "The unlabelled images' labels are never read.\n\n"
      "  --k-min N      smallest K tried (default and at least: the labelled classes)\n"
      "  --k-max N      largest K tried (default 1000, GCD's; at most the number of images)\n"
      "  --restarts N   k-means restarts per K (default 10, sklearn's)\n"
      "  and the data, backbone and device options of ./mcdl_train (--data-root, --weights or\n"
      "  --model, --max-train, --prop-labelled, --image-size, --device, --precision, --seed, ...)\n\n"
      "example:\n  ./mcdl_estimate_k cub --data-root ~/datasets --weights dino_vitb16.safetensors --k-max 400\n");
}

int run(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_help();
    return argc < 2 ? 2 : 0;
  }
  mcdl::TrainConfig config;
  config.dataset = argv[1];
  int64_t k_min = 1, k_max = 1000, restarts = 10;
  for (int i = 2; i < argc; ++i) {
    const auto [name, value] = mcdl::tools::read_option_argument(mcdl::config_options(config), argc, argv, i);
    if (name == "k-min") k_min = std::stoll(value);
    else if (name == "k-max") k_max = std::stoll(value);
    else if (name == "restarts") restarts = std::stoll(value);
    else mcdl::set_config_option(config, name, value);
  }
  mcdl::check(restarts >= 1 && k_min >= 1 && k_max >= k_min, "--restarts and --k-min must be at least 1 and ",
              "--k-max at least --k-min");
  mcdl::validate_config(config);
  config.eval_on = mcdl::EvalOn::unlabelled;  // the estimate reads the training images only
  const mcdl::Device device = mcdl::select_device(mcdl::device_choice_name(config.device));
  const mcdl::ScopedEngineSettings precision(&mcdl::EngineSettings::matmul_precision,
                                             mcdl::select_matmul_precision(mcdl::precision_request(config.precision), device));
  const mcdl::TrainingData data = mcdl::load_training_data(config);
  const mcdl::KEstimate estimate = mcdl::estimate_num_classes_for(config, data, device, k_min, k_max, restarts);
  std::printf("estimated K = %lld (labelled accuracy %.4f; %zu values of K tried)\n",
              static_cast<long long>(estimate.k), estimate.labelled_accuracy.at(estimate.k),
              estimate.labelled_accuracy.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mcdl::tools::run_tool(argc, argv, run); }
