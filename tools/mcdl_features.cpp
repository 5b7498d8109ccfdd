// mcdl_features: the backbone's CLS features of image files as a NumPy .npy matrix, for
// analysis in Python (clustering, t-SNE, nearest neighbours). The work is mcdl/evaluation/features.h; this
// is argument parsing and the two output files.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops/linalg.h"
#include "engine/settings.h"
#include "io/durable_file.h"
#include "io/npy.h"
#include "mcdl/run/trained_model.h"
#include "mcdl/evaluation/features.h"
#include "mcdl/run/progress_bar.h"
#include "tools/common/cli.h"

using namespace mcdl;

namespace {

constexpr const char* kUsage =
    "usage: mcdl_features (--weights FILE | --checkpoint RUN_DIR) IMAGE_OR_DIR... -o FEATURES.npy\n"
    "\n"
    "Runs each image through the test transform (shorter side to int(S/0.875) with Pillow's bicubic\n"
    "filter, center crop S, ImageNet normalisation; Fashion-MNIST's for 1-channel models) and the\n"
    "backbone, and writes the CLS features, one row per image, as a float32 array of shape (N, D)\n"
    "that numpy.load reads, plus the image paths in the same order, one per line, in a .txt file\n"
    "next to it (FEATURES.txt).\n"
    "\n"
    "  --weights FILE        a backbone weights file (./mcdl_convert or ./mcdl_pretrain output)\n"
    "  --config SPEC         the backbone configuration, overriding the file's (needed for a file\n"
    "                        without one), e.g. \"img=28,patch=7,dim=64,depth=4,heads=4,chans=1\"\n"
    "  --checkpoint RUN_DIR  the backbone trained by ./mcdl_train: RUN_DIR/checkpoints/last.safetensors\n"
    "                        (or a checkpoint file); instead of --weights\n"
    "  IMAGE_OR_DIR          image files, taken in the order given, and directories, walked\n"
    "                        recursively for .jpg/.jpeg/.png/.bmp/.gif/.tga/.psd/.pnm/.ppm/.pgm\n"
    "                        files in sorted order\n"
    "  -o, --output FILE     the .npy file to write\n"
    "  --image-size S        the crop size (default: the model's img_size)\n"
    "  --raw                 the features as they are (default: each row L2-normalised)\n"
    "  --batch-size N        images per forward pass (default 64)\n"
    "  --device D            auto, cpu or cuda (default auto)\n"
    "  --precision P         auto (default: bf16 on a GPU, fp32 on the CPU), fp32, tf32 or bf16\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 done, 1 error (one line \"error: ...\" on stderr, naming the file), 2 bad usage.\n";

struct Arguments {
  std::string weights, config, checkpoint, output, device = "auto", precision = "auto";
  std::vector<std::string> inputs;
  int64_t image_size = 0, batch_size = 64;
  bool raw = false;
};

// FEATURES.npy → FEATURES.txt (FEATURES → FEATURES.txt).
std::string list_path(const std::string& output) {
  return std::filesystem::path(output).replace_extension(".txt").string();
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return tools::option_value(argc, argv, i); };
    if (arg == "--weights") {
      args.weights = value();
    } else if (arg == "--config") {
      args.config = value();
    } else if (arg == "--checkpoint") {
      args.checkpoint = value();
    } else if (arg == "-o" || arg == "--output") {
      args.output = value();
    } else if (arg == "--image-size") {
      args.image_size = tools::positive_integer(value(), arg);
    } else if (arg == "--batch-size") {
      args.batch_size = tools::positive_integer(value(), arg);
    } else if (arg == "--device") {
      args.device = value();
    } else if (arg == "--precision") {
      args.precision = value();
    } else if (arg == "--raw") {
      args.raw = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw tools::UsageError{"unknown option '" + arg + "'"};
    } else {
      args.inputs.push_back(arg);
    }
  }
  if (args.weights.empty() == args.checkpoint.empty())
    throw tools::UsageError{"give either --weights FILE or --checkpoint RUN_DIR"};
  if (!args.config.empty() && args.weights.empty())
    throw tools::UsageError{"--config goes with --weights (a checkpoint stores its configuration)"};
  if (args.inputs.empty()) throw tools::UsageError{"no images given"};
  if (args.output.empty()) throw tools::UsageError{"no output file (-o FEATURES.npy)"};
  if (list_path(args.output) == args.output)
    throw tools::UsageError{"-o " + args.output + ": the image list goes to the .txt file of that name; name the output .npy"};
  return args;
}

void write_list(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + '\n';
  write_file_atomically(path, text);
}

int run(int argc, char** argv) {
  Arguments args;
  if (const auto stop = tools::parse_tool_arguments(argc, argv, "mcdl_features", kUsage, parse_arguments, args)) return *stop;
  const Device device = select_device(args.device);
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision,
                                       select_matmul_precision(args.precision, device));
  const std::vector<std::string> images = list_image_files(args.inputs);
  for (const std::string& image : images)
    check(image.find('\n') == std::string::npos, image, ": a path with a newline cannot be listed one per line");
  VisionTransformer backbone = args.checkpoint.empty() ? load_backbone_weights(args.weights, args.config)
                                                       : load_checkpoint_backbone(args.checkpoint);
  // Extraction trains nothing: every block but the last runs as a frozen block (in bf16 with
  // --precision bf16, VisionTransformer's frozen path).
  backbone.set_requires_grad(false);
  backbone.to(device);

  FeatureOptions options;
  options.image_size = args.image_size > 0 ? args.image_size : backbone.config().img_size;
  options.batch_size = args.batch_size;
  options.normalise = !args.raw;
  ProgressBar progress("features", static_cast<int64_t>(images.size()), true);  // on a terminal only
  options.on_batch = [&](int64_t done) { progress.update(done, done, ""); };
  Tensor features;
  try {
    features = extract_features(backbone, images, options);
  } catch (...) {
    progress.finish();  // so that the error line starts on a clean line
    throw;
  }
  progress.finish();

  write_npy(args.output, features);
  const std::string list = list_path(args.output);
  write_list(list, images);
  std::printf("mcdl_features: %zu images, %lld features each (%s, %lldx%lld crops, %s) -> %s, %s\n", images.size(),
              static_cast<long long>(features.size(1)), args.raw ? "raw" : "L2-normalised",
              static_cast<long long>(options.image_size), static_cast<long long>(options.image_size),
              device.str().c_str(), args.output.c_str(), list.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tools::run_tool(argc, argv, run); }
