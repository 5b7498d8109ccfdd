#include "mcdl/run/training_data.h"

#include <algorithm>
#include <cstdio>

#include "data/datasets.h"
#include "engine/collective.h"
#include "engine/error.h"

namespace mcdl {

std::vector<int64_t> TrainingData::unlabelled_labels() const {
  std::vector<int64_t> out;
  for (size_t p = 0; p < unlabelled.size(); ++p) out.push_back(p < first_validation ? label(unlabelled[p]) : -1);
  return out;
}

std::vector<bool> TrainingData::unlabelled_is_old() const {
  std::vector<bool> out;
  for (int64_t y : unlabelled_labels()) out.push_back(y >= 0 && y < num_old_classes());
  return out;
}

std::vector<int64_t> TrainingData::validation_labels() const {
  std::vector<int64_t> out;
  for (size_t p = 0; p < unlabelled.size(); ++p) out.push_back(p >= first_validation ? label(unlabelled[p]) : -1);
  return out;
}

std::vector<bool> TrainingData::validation_is_old() const {
  std::vector<bool> out;
  for (int64_t y : validation_labels())
    out.push_back(y >= 0 && std::find(validation_classes.begin(), validation_classes.end(), y) == validation_classes.end());
  return out;
}

std::vector<int64_t> TrainingData::test_labels() const {
  std::vector<int64_t> out;
  for (int64_t i : test) out.push_back(split.test_label[static_cast<size_t>(i)]);
  return out;
}

std::vector<bool> TrainingData::test_is_old() const {
  std::vector<bool> out;
  for (int64_t y : test_labels()) out.push_back(y < num_old_classes());
  return out;
}

namespace {

// A miniature GCD problem inside the labelled set, whose answers the user knows: the last
// `count` known classes lose all their labelled images ("validation new"), the other known
// classes every second one ("validation old", the benchmark's half); those images join the
// unlabelled pool after the benchmark's unlabelled images.
void hold_out_validation(TrainingData& data, int64_t count) {
  const int64_t num_old = data.num_old_classes();
  check(count < num_old, "--val-classes ", count, ": must leave at least one of the ", num_old,
        " known classes with labels (use at most ", num_old - 1, ")");
  for (int64_t c = num_old - count; c < num_old; ++c) data.validation_classes.push_back(c);
  std::vector<int64_t> kept, held_out;
  std::vector<int64_t> seen(static_cast<size_t>(num_old), 0);
  for (int64_t i : data.labelled) {
    const int64_t y = data.label(i);
    const bool whole_class = y >= num_old - count;
    (whole_class || seen[static_cast<size_t>(y)]++ % 2 == 1 ? held_out : kept).push_back(i);
  }
  data.labelled = kept;
  data.first_validation = data.unlabelled.size();
  data.unlabelled.insert(data.unlabelled.end(), held_out.begin(), held_out.end());
  std::fprintf(stderr,
               "validation: known classes %lld-%lld held out whole, %zu labelled images moved to the unlabelled pool\n",
               static_cast<long long>(num_old - count), static_cast<long long>(num_old - 1), held_out.size());
}

// Stops with the list of the cache's unreadable images, or with --skip-bad-images warns.
void report_bad_images(const ImageCache& cache, const TrainConfig& config, const std::string& split) {
  const auto& bad = cache.bad_images();
  if (bad.empty()) return;
  std::string list;
  for (size_t i = 0; i < bad.size() && i < 20; ++i) list += "\n  " + bad[i].path + ": " + bad[i].reason;
  if (bad.size() > 20) list += "\n  ... and " + std::to_string(bad.size() - 20) + " more";
  if (!config.skip_bad_images)
    fail(bad.size(), " ", split, " image(s) could not be read:", list,
         "\nfix or remove them, or pass --skip-bad-images to go on without them");
  std::fprintf(stderr, "warning: skipping %zu unreadable %s image(s):%s\n", bad.size(), split.c_str(), list.c_str());
}

// The indices whose images decoded.
std::vector<int64_t> readable(const ImageCache& cache, const std::vector<int64_t>& indices) {
  std::vector<int64_t> out;
  for (int64_t i : indices)
    if (!cache.is_bad(i)) out.push_back(i);
  return out;
}

// --eval-on auto as what it means for this dataset; test or both need a test split.
EvalOn resolved_eval_on(const TrainConfig& config, const Dataset& dataset) {
  if (config.eval_on == EvalOn::automatic) return dataset.has_test() ? EvalOn::both : EvalOn::unlabelled;
  check(config.eval_on == EvalOn::unlabelled || dataset.has_test(), "--eval-on ", eval_on_name(config.eval_on),
        ": the ", config.dataset,
        " layout", dataset.root.empty() ? std::string() : " in " + dataset.root,
        " has no test split (the README's dataset table lists each layout's test files); pass --eval-on unlabelled");
  return config.eval_on;
}

// The test split as a dataset of its own, so that it gets an image cache of its own.
Dataset test_split_dataset(Dataset& dataset) {
  Dataset test;
  test.name = dataset.name + "-test";  // keys the persistent cache apart from the training images'
  test.root = dataset.root;
  test.num_classes = dataset.num_classes;
  test.channels = dataset.channels;
  test.train = dataset.test;
  test.train_pixels = std::move(dataset.test_pixels);
  dataset.test_pixels.clear();
  return test;
}

}  // namespace

bool decodes_on_access(const TrainConfig& config, int64_t images) {
  if (config.image_cache != ImageCacheMode::automatic) return config.image_cache == ImageCacheMode::off;
  if (images <= kDecodeOnceMaxImages) return false;
  if (world().rank() == 0)  // said once for a run of several processes
    std::fprintf(stderr,
                 "note: %lld training images are too many to keep decoded: each is decoded when a batch reads it "
                 "(--image-cache all decodes them all once at the start instead)\n",
                 static_cast<long long>(images));
  return true;
}

TrainingData load_training_data(const TrainConfig& config) {
  TrainingData data;
  DatasetOptions options;
  options.max_train = config.max_train;
  options.num_classes = config.num_classes;
  options.read_test = config.eval_on != EvalOn::unlabelled;
  options.max_test = config.max_test;
  data.dataset = load_dataset(config.dataset, config.data_root, options);
  data.split = make_gcd_split(data.dataset, config.prop_labelled);
  data.normalization = data.dataset.channels == 1 ? Normalization::grayscale() : Normalization::imagenet();
  data.eval_on = resolved_eval_on(config, data.dataset);

  std::vector<int64_t> all = data.split.labelled;
  all.insert(all.end(), data.split.unlabelled.begin(), data.split.unlabelled.end());
  ImageCacheOptions cache_options;
  cache_options.resize_size = TransformSizes{config.image_size}.resize_size();
  cache_options.memory_budget_bytes = config.cache_mem_mb * (int64_t{1} << 20);
  cache_options.cache_dir = config.cache_dir;
  cache_options.progress = config.progress;
  cache_options.decode_on_access = decodes_on_access(config, static_cast<int64_t>(all.size()));
  data.cache = std::make_unique<ImageCache>(data.dataset, all, cache_options);
  report_bad_images(*data.cache, config, "training");
  data.labelled = readable(*data.cache, data.split.labelled);
  data.unlabelled = readable(*data.cache, data.split.unlabelled);
  data.first_validation = data.unlabelled.size();
  if (config.val_classes > 0) hold_out_validation(data, config.val_classes);

  if (data.evaluates_test()) {
    data.test_set = test_split_dataset(data.dataset);
    std::vector<int64_t> indices(data.test_set.train.size());
    for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
    data.test_cache = std::make_unique<ImageCache>(data.test_set, indices, cache_options);
    report_bad_images(*data.test_cache, config, "test");
    data.test = readable(*data.test_cache, indices);
  }
  return data;
}

}  // namespace mcdl
