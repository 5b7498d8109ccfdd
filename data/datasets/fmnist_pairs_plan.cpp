// fmnist-pairs' plan (data/datasets/fmnist_pairs.h): the three pools, which garments each image
// shows and where, as a function of the garment labels alone; and the composition of a canvas.
#include <algorithm>
#include <string>
#include <utility>

#include "data/datasets/fmnist_pairs.h"
#include "engine/error.h"
#include "engine/random.h"

namespace mcdl::fmnist_pairs {
namespace {

// Each garment class's indices in file order, shuffled once, cut into train | test | pretrain.
Pools make_pools(const std::vector<int64_t>& labels) {
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(kGarmentClasses));
  for (size_t i = 0; i < labels.size(); ++i) {
    check(labels[i] >= 0 && labels[i] < kGarmentClasses, "fmnist-pairs: garment ", i, " has class ", labels[i],
          " outside 0..9");
    by_class[static_cast<size_t>(labels[i])].push_back(static_cast<int64_t>(i));
  }
  Pools pools;
  for (int64_t c = 0; c < kGarmentClasses; ++c) {
    const std::vector<int64_t>& garments = by_class[static_cast<size_t>(c)];
    const auto n = static_cast<int64_t>(garments.size());
    check(n > kTrainPoolPerGarment + kTestPoolPerGarment, "fmnist-pairs: garment class ", c, " has ", n,
          " images, needs more than ", kTrainPoolPerGarment + kTestPoolPerGarment, " (", kTrainPoolPerGarment,
          " for the training split, ", kTestPoolPerGarment, " for the test split, the rest for pretraining)");
    RandomStream stream(kSeed, stream_id("fmnist-pairs pool", {c}));
    const std::vector<int64_t> order = stream.permutation(n);
    for (int64_t k = 0; k < n; ++k) {
      std::vector<int64_t>& pool = k < kTrainPoolPerGarment                         ? pools.train
                                   : k < kTrainPoolPerGarment + kTestPoolPerGarment ? pools.test
                                                                                      : pools.pretrain;
      pool.push_back(garments[static_cast<size_t>(order[static_cast<size_t>(k)])]);
    }
  }
  return pools;
}

// The shifts of image `index` of a split: its own stream, so no image's draw depends on another's.
PairImage place(int64_t class_id, int64_t upper, int64_t lower, const char* split, int64_t index) {
  RandomStream stream(kSeed, stream_id(std::string("fmnist-pairs placement ") + split, {index}));
  PairImage pair;
  pair.class_id = class_id;
  pair.upper.garment = upper;
  pair.upper.top = stream.randint(0, kMaxShiftY + 1);
  pair.upper.left = kCentredLeft + stream.randint(-kShiftX, kShiftX + 1);
  pair.lower.garment = lower;
  pair.lower.top = kGarmentSide - stream.randint(0, kMaxShiftY + 1);
  pair.lower.left = kCentredLeft + stream.randint(-kShiftX, kShiftX + 1);
  return pair;
}

// A labelled split: class by class, `per_class` images each, every garment of `pool` (grouped by
// class, 2 · 10 · per_class each) used once: the first half of a class's garments fill, in order,
// the images where it is the upper garment, the second half those where it is the lower one.
std::vector<PairImage> make_split(const std::vector<int64_t>& pool, int64_t per_class, const char* split) {
  const int64_t half = kGarmentClasses * per_class;
  std::vector<int64_t> next_upper(static_cast<size_t>(kGarmentClasses)), next_lower(next_upper.size());
  for (int64_t c = 0; c < kGarmentClasses; ++c) {
    next_upper[static_cast<size_t>(c)] = 2 * c * half;
    next_lower[static_cast<size_t>(c)] = 2 * c * half + half;
  }
  std::vector<PairImage> images;
  images.reserve(static_cast<size_t>(kClasses * per_class));
  for (int64_t class_id = 0; class_id < kClasses; ++class_id) {
    const auto a = static_cast<size_t>(class_id / kGarmentClasses), b = static_cast<size_t>(class_id % kGarmentClasses);
    for (int64_t k = 0; k < per_class; ++k) {
      const int64_t upper = pool[static_cast<size_t>(next_upper[a]++)];
      const int64_t lower = pool[static_cast<size_t>(next_lower[b]++)];
      images.push_back(place(class_id, upper, lower, split, static_cast<int64_t>(images.size())));
    }
  }
  return images;
}

}  // namespace

Plan make_plan(const std::vector<int64_t>& garment_labels) {
  Plan plan;
  plan.pools = make_pools(garment_labels);
  plan.train = make_split(plan.pools.train, kTrainPerClass, "train");
  plan.test = make_split(plan.pools.test, kTestPerClass, "test");
  const std::vector<int64_t>& pool = plan.pools.pretrain;
  RandomStream stream(kSeed, stream_id("fmnist-pairs pretrain pairing"));
  const std::vector<int64_t> order = stream.permutation(static_cast<int64_t>(pool.size()));
  for (size_t k = 0; k + 1 < order.size(); k += 2) {
    const int64_t upper = pool[static_cast<size_t>(order[k])], lower = pool[static_cast<size_t>(order[k + 1])];
    const int64_t class_id = garment_labels[static_cast<size_t>(upper)] * kGarmentClasses +
                             garment_labels[static_cast<size_t>(lower)];
    plan.pretrain.push_back(place(class_id, upper, lower, "pretrain", static_cast<int64_t>(k / 2)));
  }
  return plan;
}

Image compose(const Image& upper, const Image& lower, const PairImage& pair) {
  Image canvas(kCanvasSide, kCanvasSide, 1);
  for (const auto& [garment, at] : {std::pair{&upper, pair.upper}, std::pair{&lower, pair.lower}}) {
    check(garment->height == kGarmentSide && garment->width == kGarmentSide && garment->channels == 1,
          "fmnist-pairs: garment ", at.garment, " is ", garment->height, "x", garment->width, "x", garment->channels,
          ", expected 28x28 grayscale");
    for (int64_t y = 0; y < kGarmentSide; ++y)
      for (int64_t x = 0; x < kGarmentSide; ++x) {
        uint8_t& out = canvas.at(at.top + y, at.left + x, 0);
        out = std::max(out, garment->at(y, x, 0));
      }
  }
  return canvas;
}

std::vector<std::string> class_names() {
  static const char* const garments[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  std::vector<std::string> names;
  for (int64_t id = 0; id < kClasses; ++id)
    names.push_back(std::string(garments[id / kGarmentClasses]) + " over " + garments[id % kGarmentClasses]);
  return names;
}

}  // namespace mcdl::fmnist_pairs
