// fmnist-pairs (data/datasets/fmnist_pairs.h): the documented old / new pairs, the plan's pools
// and splits on synthetic labels, the composition of a canvas, the readers on synthetic idx files
// (determinism, layout, the GCD split, bad roots) and on the real files of dataset-fashion-mnist.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/class_splits.h"
#include "data/datasets.h"
#include "data/datasets/fmnist_pairs.h"
#include "data/gcd_split.h"
#include "data/numpy_random.h"
#include "engine/error.h"
#include "tests/data/layout_writers.h"

namespace fs = std::filesystem;
using namespace mcdl;
using namespace mcdl::test;
namespace fp = mcdl::fmnist_pairs;

namespace {

constexpr int64_t kUsedPerGarment = fp::kTrainPoolPerGarment + fp::kTestPoolPerGarment;

// Garment i has class i % 10; `per_class` garments of each class.
std::vector<int64_t> interleaved_labels(int64_t per_class) {
  std::vector<int64_t> labels(static_cast<size_t>(per_class * fp::kGarmentClasses));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i) % fp::kGarmentClasses;
  return labels;
}

// Fashion-MNIST's training idx files, unpacked, with `labels`; garment g's pixel (y, x) is
// (7g + 28y + x) mod 251, so that garments differ. `side`: the images' height and width.
void write_garments(const fs::path& root, const std::vector<int64_t>& labels, uint32_t side = 28) {
  std::vector<uint8_t> pixels(labels.size() * side * side), label_bytes;
  for (size_t g = 0; g < labels.size(); ++g) {
    label_bytes.push_back(static_cast<uint8_t>(labels[g]));
    for (size_t p = 0; p < side * side; ++p) pixels[g * side * side + p] = static_cast<uint8_t>((7 * g + p) % 251);
  }
  const auto n = static_cast<uint32_t>(labels.size());
  write_bytes(root / "train-images-idx3-ubyte", idx_bytes(0x803, {n, side, side}, pixels));
  write_bytes(root / "train-labels-idx1-ubyte", idx_bytes(0x801, {n}, label_bytes));
}

std::vector<int64_t> garments_of(const std::vector<fp::PairImage>& images) {
  std::vector<int64_t> garments;
  for (const fp::PairImage& image : images) {
    garments.push_back(image.upper.garment);
    garments.push_back(image.lower.garment);
  }
  std::sort(garments.begin(), garments.end());
  return garments;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

bool disjoint(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const std::set<int64_t> in_a(a.begin(), a.end());
  return std::none_of(b.begin(), b.end(), [&](int64_t x) { return in_a.count(x) > 0; });
}

// Every garment inside the canvas, the upper one at the top, the lower one below it.
void check_placements(const std::vector<fp::PairImage>& images) {
  for (const fp::PairImage& image : images) {
    REQUIRE(image.upper.top >= 0);
    REQUIRE(image.upper.top <= fp::kMaxShiftY);
    REQUIRE(image.lower.top >= fp::kGarmentSide - fp::kMaxShiftY);
    REQUIRE(image.lower.top <= fp::kGarmentSide);
    for (const fp::Placement& at : {image.upper, image.lower}) {
      REQUIRE(at.left >= fp::kCentredLeft - fp::kShiftX);
      REQUIRE(at.left <= fp::kCentredLeft + fp::kShiftX);
    }
  }
}

uint64_t fnv1a(uint64_t hash, uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) hash = (hash ^ ((value >> (8 * byte)) & 0xff)) * 0x100000001b3ULL;
  return hash;
}

// A hash of a split's class ids and pixels: the benchmark's bytes, pinned.
uint64_t split_hash(const std::vector<DatasetItem>& items, const std::vector<Image>& pixels) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < items.size(); ++i) {
    hash = fnv1a(hash, static_cast<uint64_t>(items[i].class_id));
    for (uint8_t v : pixels[i].pixels) hash = fnv1a(hash, v);
  }
  return hash;
}

}  // namespace

TEST_CASE("fmnist-pairs: 50 old pairs from the documented draw, each garment 5 times upper and 5 times lower") {
  NumpyLegacyRandom random(0);
  const std::vector<int64_t> upper_rank = random.permutation(10), lower_rank = random.permutation(10);
  std::vector<int64_t> drawn;
  for (int64_t a = 0; a < 10; ++a)
    for (int64_t b = 0; b < 10; ++b)
      if ((upper_rank[static_cast<size_t>(a)] + lower_rank[static_cast<size_t>(b)]) % 10 < 5) drawn.push_back(10 * a + b);
  CHECK(fmnist_pairs_old_classes() == drawn);
  std::vector<int64_t> as_upper(10), as_lower(10);
  for (int64_t c : fmnist_pairs_old_classes()) {
    ++as_upper[static_cast<size_t>(c / 10)];
    ++as_lower[static_cast<size_t>(c % 10)];
  }
  CHECK(as_upper == std::vector<int64_t>(10, 5));
  CHECK(as_lower == std::vector<int64_t>(10, 5));
}

TEST_CASE("fmnist-pairs plan: three disjoint pools, every training and test garment used once, deterministic") {
  const int64_t per_class = kUsedPerGarment + 101;
  std::vector<int64_t> labels = interleaved_labels(per_class);
  std::swap(labels[3], labels[40]);  // classes not in a regular pattern
  const fp::Plan plan = fp::make_plan(labels);

  CHECK(plan.pools.train.size() == static_cast<size_t>(10 * fp::kTrainPoolPerGarment));
  CHECK(plan.pools.test.size() == static_cast<size_t>(10 * fp::kTestPoolPerGarment));
  CHECK(plan.pools.pretrain.size() == 10 * 101);
  CHECK(disjoint(plan.pools.train, plan.pools.test));
  CHECK(disjoint(plan.pools.train, plan.pools.pretrain));
  CHECK(disjoint(plan.pools.test, plan.pools.pretrain));
  std::vector<int64_t> all = plan.pools.train;
  all.insert(all.end(), plan.pools.test.begin(), plan.pools.test.end());
  all.insert(all.end(), plan.pools.pretrain.begin(), plan.pools.pretrain.end());
  std::vector<int64_t> every(labels.size());
  for (size_t i = 0; i < every.size(); ++i) every[i] = static_cast<int64_t>(i);
  CHECK(sorted(all) == every);

  // Each split shows exactly its own pool's garments, each once.
  CHECK(garments_of(plan.train) == sorted(plan.pools.train));
  CHECK(garments_of(plan.test) == sorted(plan.pools.test));
  CHECK(garments_of(plan.pretrain) == sorted(plan.pools.pretrain));  // 1010 garments: 505 images

  // Class by class, 30 images each, each showing its pair's garment classes.
  REQUIRE(plan.train.size() == static_cast<size_t>(100 * fp::kTrainPerClass));
  REQUIRE(plan.test.size() == static_cast<size_t>(100 * fp::kTestPerClass));
  for (const auto* split : {&plan.train, &plan.test})
    for (size_t i = 0; i < split->size(); ++i) {
      const fp::PairImage& image = (*split)[i];
      REQUIRE(image.class_id == static_cast<int64_t>(i) / 30);
      REQUIRE(labels[static_cast<size_t>(image.upper.garment)] == image.class_id / 10);
      REQUIRE(labels[static_cast<size_t>(image.lower.garment)] == image.class_id % 10);
    }
  for (const fp::PairImage& image : plan.pretrain)
    REQUIRE(image.class_id == 10 * labels[static_cast<size_t>(image.upper.garment)] +
                                  labels[static_cast<size_t>(image.lower.garment)]);
  check_placements(plan.train);
  check_placements(plan.test);
  check_placements(plan.pretrain);
  // The shifts vary over their whole range.
  std::set<int64_t> lefts, tops;
  for (const fp::PairImage& image : plan.train) {
    lefts.insert(image.upper.left);
    tops.insert(image.lower.top);
  }
  CHECK(lefts.size() == static_cast<size_t>(2 * fp::kShiftX + 1));
  CHECK(tops.size() == static_cast<size_t>(fp::kMaxShiftY + 1));

  const fp::Plan again = fp::make_plan(labels);
  CHECK(again.pools.pretrain == plan.pools.pretrain);
  for (size_t i = 0; i < plan.train.size(); ++i) {
    REQUIRE(again.train[i].upper.garment == plan.train[i].upper.garment);
    REQUIRE(again.train[i].lower.left == plan.train[i].lower.left);
  }
}

TEST_CASE("fmnist-pairs plan: a garment class with too few images") {
  std::vector<int64_t> labels = interleaved_labels(kUsedPerGarment + 1);
  labels[7] = 3;  // class 7 one short, so its pretraining pool is empty
  CHECK_THROWS_WITH(fp::make_plan(labels), doctest::Contains("garment class 7 has 1200 images, needs more than 1200"));
  labels[7] = 10;
  CHECK_THROWS_WITH(fp::make_plan(labels), doctest::Contains("garment 7 has class 10 outside 0..9"));
}

TEST_CASE("fmnist-pairs compose: garments at their places, the brighter pixel where they overlap") {
  Image upper(28, 28, 1), lower(28, 28, 1);
  std::fill(upper.pixels.begin(), upper.pixels.end(), uint8_t{100});
  std::fill(lower.pixels.begin(), lower.pixels.end(), uint8_t{200});
  upper.at(27, 27, 0) = 250;  // brighter than the lower garment over it
  fp::PairImage pair;
  pair.upper = {0, 2, 0};    // rows 2..29, columns 0..27
  pair.lower = {1, 26, 10};  // rows 26..53, columns 10..37
  const Image canvas = fp::compose(upper, lower, pair);
  REQUIRE(canvas.height == 56);
  REQUIRE(canvas.width == 56);
  CHECK(canvas.at(1, 0, 0) == 0);
  CHECK(canvas.at(2, 0, 0) == 100);
  CHECK(canvas.at(27, 5, 0) == 100);
  CHECK(canvas.at(27, 15, 0) == 200);
  CHECK(canvas.at(29, 27, 0) == 250);
  CHECK(canvas.at(53, 37, 0) == 200);
  CHECK(canvas.at(53, 38, 0) == 0);
  CHECK(canvas.at(54, 20, 0) == 0);
  CHECK_THROWS_WITH(fp::compose(Image(2, 2, 1), lower, pair), doctest::Contains("expected 28x28 grayscale"));
}

TEST_CASE("fmnist-pairs readers: composed in memory, deterministic, 100 classes, CUB's proportions") {
  TempDir dir("fmnist_pairs");
  const std::vector<int64_t> labels = interleaved_labels(kUsedPerGarment + 3);
  write_garments(dir.path, labels);
  DatasetOptions with_test;
  with_test.read_test = true;
  const Dataset d = load_dataset("fmnist-pairs", dir.str(), with_test);
  CHECK(d.name == "fmnist-pairs");
  CHECK(d.num_classes == 100);
  CHECK(d.channels == 1);
  CHECK(d.class_names[37] == "Dress over Sneaker");
  CHECK(d.old_classes == fmnist_pairs_old_classes());
  REQUIRE(d.new_classes.size() == 50);
  CHECK(sorted(d.new_classes) == d.new_classes);
  CHECK(disjoint(d.old_classes, d.new_classes));
  REQUIRE(d.size() == 3000);
  REQUIRE(d.test.size() == 3000);
  REQUIRE(d.train_pixels.size() == 3000);

  // Each image is the plan's composition of the file's garments.
  const fp::Plan plan = fp::make_plan(labels);
  auto garment = [](int64_t g) {
    Image image(28, 28, 1);
    for (size_t p = 0; p < image.pixels.size(); ++p) image.pixels[p] = static_cast<uint8_t>((7 * g + static_cast<int64_t>(p)) % 251);
    return image;
  };
  for (size_t i : {size_t{0}, size_t{1234}, size_t{2999}}) {
    const fp::PairImage& pair = plan.train[i];
    CHECK(d.train[i].class_id == pair.class_id);
    CHECK(d.train_pixels[i] == fp::compose(garment(pair.upper.garment), garment(pair.lower.garment), pair));
    CHECK(d.test_pixels[i] == fp::compose(garment(plan.test[i].upper.garment), garment(plan.test[i].lower.garment), plan.test[i]));
  }

  // Two loads give the same bytes.
  const Dataset again = load_dataset("fmnist-pairs", dir.str(), with_test);
  CHECK(again.train_pixels == d.train_pixels);
  CHECK(again.test_pixels == d.test_pixels);
  CHECK(split_hash(again.train, again.train_pixels) == split_hash(d.train, d.train_pixels));

  // Without the test split asked for, none is composed.
  CHECK(load_dataset("fmnist-pairs", dir.str()).test.empty());

  // The GCD split: half of the 1500 old-class images labelled, the rest unlabelled.
  const GcdSplit split = make_gcd_split(d, 0.5);
  CHECK(split.num_old_classes == 50);
  CHECK(split.labelled.size() == 750);
  CHECK(split.unlabelled.size() == 2250);

  // The pretraining set: the pretraining pool (3 garments per class: 30, so 15 images), no test.
  const Dataset pretrain = load_dataset("fmnist-pairs-pretrain", dir.str(), with_test);
  CHECK(pretrain.name == "fmnist-pairs-pretrain");
  CHECK(pretrain.size() == 15);
  CHECK(pretrain.test.empty());
  CHECK(pretrain.train_pixels[4] == fp::compose(garment(plan.pretrain[4].upper.garment),
                                                garment(plan.pretrain[4].lower.garment), plan.pretrain[4]));
}

TEST_CASE("fmnist-pairs readers: a bad root gives one clear message") {
  TempDir dir("fmnist_pairs_bad");
  const fs::path missing = dir.path / "nowhere";
  for (const std::string name : {"fmnist-pairs", "fmnist-pairs-pretrain"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH(load_dataset(name, missing.string()),
                      doctest::Contains((name + ": missing folder " + missing.string() + ".\nFashion-MNIST expects").c_str()));
    CHECK_THROWS_WITH(load_dataset(name, dir.str()),
                      doctest::Contains((name + ": missing file " + (dir.path / "train-images-idx3-ubyte.gz").string()).c_str()));
  }
  write_garments(dir.path, interleaved_labels(2), 2);
  CHECK_THROWS_WITH(load_dataset("fmnist-pairs", dir.str()), doctest::Contains("are 2x2, expected Fashion-MNIST's 28x28"));
  write_garments(dir.path, interleaved_labels(5));
  CHECK_THROWS_WITH(load_dataset("fmnist-pairs", dir.str()), doctest::Contains("garment class 0 has 5 images, needs more than 1200"));
  write_bytes(dir.path / "train-labels-idx1-ubyte", idx_bytes(0x801, {49}, std::vector<uint8_t>(49)));
  CHECK_THROWS_WITH(load_dataset("fmnist-pairs", dir.str()), doctest::Contains("fmnist-pairs: 50 images in"));
  write_bytes(dir.path / "train-labels-idx1-ubyte", idx_bytes(0x801, {0}, {}));
  write_bytes(dir.path / "train-images-idx3-ubyte", idx_bytes(0x803, {0, 28, 28}, {}));
  CHECK_THROWS_WITH(load_dataset("fmnist-pairs", dir.str()), doctest::Contains("fmnist-pairs: no images in"));
}

TEST_CASE("fmnist-pairs: the real files of dataset-fashion-mnist") {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root + "/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST is not installed in " << root);
    return;
  }
  DatasetOptions with_test;
  with_test.read_test = true;
  const Dataset d = load_dataset("fmnist-pairs", "", with_test);
  REQUIRE(d.size() == 3000);
  REQUIRE(d.test.size() == 3000);
  const Dataset pretrain = load_dataset("fmnist-pairs-pretrain", "");
  CHECK(pretrain.size() == 24000);  // 10 × 4800 pretraining garments, two per image
  std::set<int64_t> pretrain_pairs;
  for (const DatasetItem& item : pretrain.train) pretrain_pairs.insert(item.class_id);
  CHECK(pretrain_pairs.size() == 100);
  // The benchmark's bytes, pinned: a change to the plan, the shifts or the composition fails here.
  CHECK(split_hash(d.train, d.train_pixels) == 4747052209987907257ULL);
  CHECK(split_hash(d.test, d.test_pixels) == 8146585706996106938ULL);
  CHECK(split_hash(pretrain.train, pretrain.train_pixels) == 14160742386949910411ULL);
}
