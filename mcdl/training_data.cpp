#include "mcdl/training_data.h"

#include <algorithm>
#include <cstdio>

#include "data/datasets.h"
#include "engine/error.h"

namespace mcdl {

std::vector<int64_t> TrainingData::unlabelled_labels() const {
  std::vector<int64_t> out;
  for (int64_t i : unlabelled) out.push_back(label(i));
  return out;
}

std::vector<bool> TrainingData::unlabelled_is_old() const {
  std::vector<bool> out;
  for (int64_t i : unlabelled) out.push_back(label(i) >= 0 && label(i) < num_old_classes());
  return out;
}

TrainingData load_training_data(const TrainConfig& config) {
  TrainingData data;
  DatasetOptions options;
  options.max_train = config.max_train;
  options.num_classes = config.num_classes;
  data.dataset = load_dataset(config.dataset, config.data_root, options);
  data.split = make_gcd_split(data.dataset, config.prop_labelled);
  data.normalization = data.dataset.channels == 1 ? Normalization::grayscale() : Normalization::imagenet();

  std::vector<int64_t> all = data.split.labelled;
  all.insert(all.end(), data.split.unlabelled.begin(), data.split.unlabelled.end());
  ImageCacheOptions cache_options;
  cache_options.resize_size = TransformSizes{config.image_size}.resize_size();
  cache_options.memory_budget_bytes = config.cache_mem_mb * (int64_t{1} << 20);
  cache_options.cache_dir = config.cache_dir;
  cache_options.progress = config.progress;
  data.cache = std::make_unique<ImageCache>(data.dataset, all, cache_options);

  const auto& bad = data.cache->bad_images();
  if (!bad.empty()) {
    std::string list;
    for (size_t i = 0; i < bad.size() && i < 20; ++i) list += "\n  " + bad[i].path + ": " + bad[i].reason;
    if (bad.size() > 20) list += "\n  ... and " + std::to_string(bad.size() - 20) + " more";
    if (!config.skip_bad_images)
      fail(bad.size(), " image(s) could not be read:", list,
           "\nfix or remove them, or pass --skip-bad-images to train without them");
    std::fprintf(stderr, "warning: skipping %zu unreadable image(s):%s\n", bad.size(), list.c_str());
  }
  auto keep = [&](const std::vector<int64_t>& in) {
    std::vector<int64_t> out;
    for (int64_t i : in)
      if (!data.cache->is_bad(i)) out.push_back(i);
    return out;
  };
  data.labelled = keep(data.split.labelled);
  data.unlabelled = keep(data.split.unlabelled);
  return data;
}

}  // namespace mcdl
