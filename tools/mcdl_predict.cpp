// ./mcdl_predict --checkpoint RUN_DIR IMAGE_OR_DIR... -o predictions.csv: the trained model of a
// run applied to new images (mcdl/evaluation/predict.h), one CSV row per image: a simgcd or simgcd+mcdl
// run's classifier, or a gcd or gcd+mcdl run's backbone and final k-means centres.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/error.h"
#include "engine/ops/linalg.h"
#include "engine/settings.h"
#include "io/csv_field.h"
#include "io/durable_file.h"
#include "mcdl/run/trained_model.h"
#include "mcdl/run/cluster_centres.h"
#include "mcdl/evaluation/predict.h"
#include "tools/common/cli.h"
#include "tools/common/csv_table.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

const char* const kUsage =
    "usage: mcdl_predict --checkpoint RUN_DIR IMAGE_OR_DIR... -o predictions.csv [options]\n"
    "\n"
    "Applies the model trained by ./mcdl_train to images and writes path,cluster,class,probability\n"
    "per image. Clusters 0..K_old-1 are the known classes (class: the name, or class-<id> where the\n"
    "dataset names none); the others were discovered (new-<k>).\n"
    "simgcd, simgcd+mcdl runs: the cluster is the argmax of the head's logits; probability: their\n"
    "softmax at the training temperature 0.1, at the cluster.\n"
    "gcd, gcd+mcdl runs: the cluster is the nearest of the run's final k-means centres to the\n"
    "L2-normalised feature; probability: the softmax over the centres of cosine similarity / 0.1,\n"
    "at the cluster.\n"
    "\n"
    "  --checkpoint RUN_DIR  the run (RUN_DIR/checkpoints/last.safetensors, RUN_DIR/classes.csv, and\n"
    "                      for a gcd run RUN_DIR/centres.safetensors)\n"
    "  IMAGE_OR_DIR          image files and directories (walked recursively, sorted)\n"
    "  -o, --output FILE     the CSV to write\n"
    "  --image-size S        the crop size (default: the model's img_size)\n"
    "  --batch-size N        images per forward pass (default 64)\n"
    "  --device D            auto, cpu or cuda (default auto)\n"
    "  --precision P         auto (bf16 on a GPU, fp32 on the CPU), fp32, tf32 or bf16\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 done, 1 error (one line \"error: ...\" on stderr), 2 bad usage.\n";

struct Arguments {
  std::string checkpoint, output, device = "auto", precision = "auto";
  std::vector<std::string> inputs;
  int64_t image_size = 0, batch_size = 64;
};

Arguments parse_arguments(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return tools::option_value(argc, argv, i); };
    if (arg == "--checkpoint") args.checkpoint = value();
    else if (arg == "-o" || arg == "--output") args.output = value();
    else if (arg == "--image-size") args.image_size = tools::positive_integer(value(), arg);
    else if (arg == "--batch-size") args.batch_size = tools::positive_integer(value(), arg);
    else if (arg == "--device") args.device = value();
    else if (arg == "--precision") args.precision = value();
    else if (arg.size() > 1 && arg[0] == '-') throw tools::UsageError{"unknown option '" + arg + "'"};
    else args.inputs.push_back(arg);
  }
  if (args.checkpoint.empty()) throw tools::UsageError{"give --checkpoint RUN_DIR"};
  if (args.inputs.empty()) throw tools::UsageError{"no images given"};
  if (args.output.empty()) throw tools::UsageError{"no output file (-o predictions.csv)"};
  return args;
}

// Cluster → class column for the known classes, from RUN_DIR/classes.csv (mcdl_train writes it).
std::map<int64_t, std::string> known_classes(const std::string& run_dir) {
  const fs::path path = fs::path(run_dir) / "classes.csv";
  std::map<int64_t, std::string> names;
  if (!fs::exists(path)) {
    std::fprintf(stderr, "mcdl_predict: %s is missing (a run older than mcdl_predict): the class column gives "
                 "cluster-<k> for every cluster\n", path.c_str());
    return names;
  }
  const tools::CsvTable table = tools::read_csv(path.string());
  const int64_t cluster = table.require_column("cluster"), id = table.require_column("class_id"),
                name = table.require_column("name");
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& given = table.rows[r][static_cast<size_t>(name)];
    names[table.integer(static_cast<int64_t>(r), cluster, 0)] =
        given.empty() ? "class-" + table.rows[r][static_cast<size_t>(id)] : given;
  }
  return names;
}

int run(int argc, char** argv) {
  Arguments args;
  if (const auto stop = tools::parse_tool_arguments(argc, argv, "mcdl_predict", kUsage, parse_arguments, args)) return *stop;
  const Device device = select_device(args.device);
  const ScopedEngineSettings precision(&EngineSettings::matmul_precision,
                                       select_matmul_precision(args.precision, device));
  const std::vector<std::string> images = list_image_files(args.inputs);
  const std::string run_dir = run_directory_of(args.checkpoint);
  const TrainedModel trained = load_trained_model(args.checkpoint);
  // A GCD run predicts through its centres: read (and checked) before any image is processed.
  const Tensor centres = trained.model ? Tensor() : load_cluster_centres(run_dir, trained.iterations);
  const std::map<int64_t, std::string> classes = known_classes(run_dir);
  Module& model = trained.model ? static_cast<Module&>(*trained.model) : *trained.backbone;
  VisionTransformer& backbone = trained.model ? trained.model->backbone : *trained.backbone;
  model.set_requires_grad(false);
  model.to(device);

  FeatureOptions options;
  options.image_size = args.image_size > 0 ? args.image_size : backbone.config().img_size;
  options.batch_size = args.batch_size;
  const std::vector<ImagePrediction> predictions =
      trained.model ? predict_images(*trained.model, images, options)
                    : predict_images_by_centres(backbone, centres, images, options);

  std::string text = "path,cluster,class,probability\n";
  char probability[32];
  for (size_t i = 0; i < images.size(); ++i) {
    const ImagePrediction& p = predictions[i];
    const auto known = classes.find(p.cluster);
    const std::string label = known != classes.end() ? known->second
                              : classes.empty()      ? "cluster-" + std::to_string(p.cluster)
                                                     : "new-" + std::to_string(p.cluster);
    std::snprintf(probability, sizeof probability, "%.6f", p.probability);
    text += csv_field(images[i]) + "," + std::to_string(p.cluster) + "," + csv_field(label) + "," + probability + "\n";
  }
  write_file_atomically(args.output, text);
  std::printf("mcdl_predict: %zu images, %zu known classes (%s) -> %s\n", images.size(), classes.size(),
              device.str().c_str(), args.output.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return tools::run_tool(argc, argv, run); }
