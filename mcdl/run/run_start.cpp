#include "mcdl/run/run_start.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "data/gcd_split.h"
#include "data/label_names.h"
#include "engine/collective.h"
#include "engine/error.h"
#include "io/csv_field.h"
#include "layers/backbone_file.h"

namespace mcdl {

BackboneSource backbone_source(const TrainConfig& config) {
  BackboneSource source;
  if (!config.weights.empty()) {
    BackboneFile file = load_backbone_file(config.weights);
    source.config = file.config.backbone;
    source.tensors = std::move(file.tensors);
    // A weights file carries its architecture; a --model that says otherwise is a mistake.
    check(config.model.empty() || parse_model_config(config.model).backbone == source.config, "--model ",
          config.model, " does not describe the backbone in ", config.weights, " (",
          model_config_to_json(ModelConfig{source.config, HeadConfig{}}), "): the weights file carries its ",
          "architecture, so drop --model");
    return source;
  }
  check(!config.model.empty(), "no backbone weights: pass --weights FILE. Download DINO's ViT-B/16 from ",
        "https://dl.fbaipublicfiles.com/dino/dino_vitbase16_pretrain/dino_vitbase16_pretrain.pth and convert it ",
        "with ./mcdl_convert dino_vitbase16_pretrain.pth -o dino_vitb16.safetensors (see the README), or pass ",
        "--model SPEC for a randomly initialised backbone");
  source.config = parse_model_config(config.model).backbone;
  return source;
}

int64_t first_trained_block(const TrainConfig& config, int64_t depth) {
  const int64_t from = config.grad_from_block.value_or(depth - 1);
  check(from < depth, "--grad-from-block ", from, " is past the last block (the backbone has ", depth, ")");
  return from;
}

namespace {

// classes.csv: what the model's first K_old outputs mean (cluster k is old class k, trained on its
// labelled images): the dataset's class id and, where the layout names it, its name. The other
// clusters are discovered; mcdl_predict calls them new-<k>.
void write_known_classes(const RunDirectory& run, const Dataset& dataset) {
  std::string text = "cluster,class_id,name\n";
  for (size_t k = 0; k < dataset.old_classes.size(); ++k) {
    const int64_t id = dataset.old_classes[k];
    const std::string name =
        id >= 0 && static_cast<size_t>(id) < dataset.class_names.size() ? dataset.class_names[static_cast<size_t>(id)] : "";
    text += std::to_string(k) + "," + std::to_string(id) + "," + csv_field(name) + "\n";
  }
  run.write_text("classes.csv", text);
}

}  // namespace

void begin_run(const TrainConfig& config, const TrainingData& data, const RunDirectory& run, bool resume) {
  // The images the run reads: --skip-bad-images has dropped the unreadable ones from both sets.
  const size_t skipped = data.cache->bad_images().size();
  std::fprintf(stderr, "%s: %zu training images%s, %lld classes (%lld old): %zu labelled, %zu unlabelled%s\n",
               config.dataset.c_str(), data.labelled.size() + data.unlabelled.size(),
               skipped ? (" (" + std::to_string(skipped) + " unreadable skipped)").c_str() : "",
               static_cast<long long>(data.num_classes()), static_cast<long long>(data.num_old_classes()),
               data.labelled.size(), data.unlabelled.size(),
               data.evaluates_test() ? ("; " + std::to_string(data.test.size()) + " test images").c_str() : "");
  run.write_text("config.json", config_to_json(config));
  run.write_text("labels.csv", labels_csv(data.dataset));  // the class names of mcdl_report's pictures
  if (resume) return;
  if (run.writes()) write_split_csv(run.file("split.csv"), data.dataset, data.split);
  write_known_classes(run, data.dataset);
  // A new run in a directory where a run was killed before its first checkpoint: no stale rows.
  run.truncate_metrics(0);
}

int64_t loader_workers(const TrainConfig& config, Device device) {
  if (config.workers) return *config.workers;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  // On the CPU backend the model itself uses every core (a loader thread would only compete with
  // it: batches are prepared between steps); on a GPU the loader gets the cores.
  return device.is_cpu() ? 0 : std::max<int64_t>(1, cores - 1);
}

EvaluationOptions evaluation_options(const TrainConfig& config, const TrainingData& data, Device device) {
  EvaluationOptions options;
  options.image_size = config.image_size;
  options.normalization = data.normalization;
  options.batch_size = config.eval_batch_size;
  options.workers = loader_workers(config, device);
  options.device = device;
  options.world = &world();  // a run of several processes splits its evaluations
  return options;
}

LoaderOptions train_loader_options(const TrainConfig& config, const TrainingData& data, Device device,
                                   std::vector<ViewKind> views) {
  LoaderOptions options;
  options.image_size = config.image_size;
  options.normalization = data.normalization;
  options.views = std::move(views);
  options.workers = loader_workers(config, device);
  options.prefetch = std::max<int64_t>(1, 2 * options.workers);
  options.seed = config.seed;
  options.device = device;
  return options;
}

}  // namespace mcdl
