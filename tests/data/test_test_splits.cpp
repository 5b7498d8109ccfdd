// The test splits of the dataset layouts (DatasetOptions::read_test), for the inductive
// evaluation: which files each layout reads, class ids as in its training split, the same
// remapping in the GCD split, the evenly spaced max_test subset, and clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "data/gcd_split.h"
#include "data/numpy_random.h"
#include "tests/data/layout_writers.h"

namespace fs = std::filesystem;
using namespace mcdl;
using namespace mcdl::test;

namespace {

DatasetOptions with_test(int64_t max_test = 0) {
  DatasetOptions options;
  options.read_test = true;
  options.max_test = max_test;
  return options;
}

std::vector<int64_t> class_ids(const std::vector<DatasetItem>& items) {
  std::vector<int64_t> ids;
  for (const DatasetItem& item : items) ids.push_back(item.class_id);
  return ids;
}

}  // namespace

TEST_CASE("test split: CUB's is_training_img == 0 rows, only when asked for, remapped as the training labels") {
  TempDir dir("cub_test");
  write_cub(dir.path);
  CHECK(load_dataset("cub", dir.str()).test.empty());
  const Dataset d = load_dataset("cub", dir.str(), with_test());
  CHECK(d.size() == 3);
  REQUIRE(d.test.size() == 1);
  CHECK(d.test[0].path == (dir.path / "CUB_200_2011/images/151.A/a2.jpg").string());
  CHECK(d.test[0].class_id == 150);
  CHECK(make_gcd_split(d).test_label == std::vector<int64_t>{0});  // class id 150 is the first known class

  fs::remove(dir.path / "CUB_200_2011/images/151.A/a2.jpg");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str(), with_test()),
                    doctest::Contains("1 of 1 listed test images are missing"));
  CHECK_THROWS_WITH(load_dataset("cub", dir.str(), with_test()), doctest::Contains("--eval-on unlabelled"));
  CHECK(load_dataset("cub", dir.str()).size() == 3);  // without the test split the layout still reads
}

TEST_CASE("test split: Stanford Cars' cars_test_annos_withlabels.mat and cars_test/") {
  TempDir dir("scars_test");
  write_cars(dir.path, {{"00001.jpg", 1}, {"00002.jpg", 196}}, true);
  CHECK(load_dataset("scars", dir.str(), with_test()).test.empty());  // no test annotations: no test split
  write_cars(dir.path, {{"00001.jpg", 5}, {"00002.jpg", 2}, {"00003.jpg", 196}}, false, "test");
  const Dataset d = load_dataset("scars", dir.str(), with_test());
  REQUIRE(d.test.size() == 3);
  CHECK(d.test[1].path == (dir.path / "cars_test/00002.jpg").string());
  CHECK(class_ids(d.test) == std::vector<int64_t>{4, 1, 195});
}

TEST_CASE("test split: FGVC-Aircraft's images_variant_test.txt with the trainval classes") {
  TempDir dir("aircraft_test");
  write_aircraft(dir.path, 100);
  write_text(dir.path / "data/images_variant_test.txt", "1000005 V 005\n0034309 A320\n");
  const Dataset d = load_dataset("aircraft", dir.str(), with_test());
  REQUIRE(d.test.size() == 2);
  CHECK(class_ids(d.test) == std::vector<int64_t>{5, 0});  // sorted: A320, A320-200, V 002, ...
  CHECK(d.test[1].path == (dir.path / "data/images/0034309.jpg").string());
  write_text(dir.path / "data/images_variant_test.txt", "1000005 Concorde\n");
  CHECK_THROWS_WITH(load_dataset("aircraft", dir.str(), with_test()),
                    doctest::Contains("has the variant 'Concorde', not one of"));
}

TEST_CASE("test split: Herbarium19's small-validation, folders matched to small-train's by name") {
  TempDir dir("herb_test");
  for (int c = 0; c < 683; ++c) touch(dir.path / "small-train" / std::to_string(c) / "x.jpg");
  touch(dir.path / "small-validation/2/v.jpg");  // folder "2" is class 112 in sorted order
  touch(dir.path / "small-validation/0/v.jpg");
  const Dataset d = load_dataset("herbarium19", dir.str(), with_test());
  CHECK(class_ids(d.test) == std::vector<int64_t>{0, 112});
  touch(dir.path / "small-validation/9999/v.jpg");
  CHECK_THROWS_WITH(load_dataset("herbarium19", dir.str(), with_test()),
                    doctest::Contains("9999 is not one of small-train's categories"));
}

TEST_CASE("test split: ImageNet-100's val/<synset>/ for the 100 chosen synsets") {
  TempDir dir("imagenet_test");
  std::vector<int64_t> chosen = numpy_legacy_choice_without_replacement(0, 1000, 100);
  std::sort(chosen.begin(), chosen.end());
  char name[16];
  for (int s = 0; s < 1000; ++s) {
    std::snprintf(name, sizeof(name), "n%08d", s);
    touch(dir.path / "train" / name / "t.JPEG");
  }
  fs::create_directories(dir.path / "val");
  CHECK_THROWS_WITH(load_dataset("imagenet100", dir.str(), with_test()),
                    doctest::Contains("must be sorted into synset folders"));
  for (int s = 0; s < 1000; ++s) {
    std::snprintf(name, sizeof(name), "n%08d", s);
    touch(dir.path / "val" / name / "v.JPEG");
  }
  const Dataset d = load_dataset("imagenet100", dir.str(), with_test());
  REQUIRE(d.test.size() == 100);
  std::snprintf(name, sizeof(name), "n%08d", static_cast<int>(chosen[1]));
  CHECK(d.test[1].path == (dir.path / "val" / name / "v.JPEG").string());
  CHECK(d.test[99].class_id == 99);
}

TEST_CASE("test split: CIFAR's test batch, binary and python names") {
  TempDir dir("cifar_test");
  for (int b = 1; b <= 5; ++b)
    write_bytes(dir.path / "cifar-10-batches-bin" / ("data_batch_" + std::to_string(b) + ".bin"), cifar_records({{1}}, b));
  write_bytes(dir.path / "cifar-10-batches-bin/test_batch.bin", cifar_records({{7}, {3}}, 9));
  const Dataset d = load_dataset("cifar10", dir.str(), with_test());
  CHECK(d.size() == 5);
  REQUIRE(d.test.size() == 2);
  REQUIRE(d.test_pixels.size() == 2);
  CHECK(class_ids(d.test) == std::vector<int64_t>{7, 3});
  CHECK(d.test_pixels[1].at(0, 0, 0) == 9 + 1);  // record 1 of seed 9
  write_bytes(dir.path / "cifar-100-binary/train.bin", cifar_records({{1, 2}}, 0));
  write_bytes(dir.path / "cifar-100-binary/test.bin", cifar_records({{1, 42}}, 0));
  CHECK(class_ids(load_dataset("cifar100", dir.str(), with_test()).test) == std::vector<int64_t>{42});
}

TEST_CASE("test split: Fashion-MNIST's t10k files; max_test keeps evenly spaced images") {
  TempDir dir("fmnist_test");
  write_fmnist(dir.path, {9, 0, 5, 3});
  CHECK(load_dataset("fmnist", dir.str(), with_test()).test.empty());
  write_fmnist(dir.path, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "t10k");
  const Dataset d = load_dataset("fmnist", dir.str(), with_test());
  CHECK(d.size() == 4);
  REQUIRE(d.test.size() == 10);
  CHECK(d.test_pixels[1].pixels == std::vector<uint8_t>{12, 15, 18, 21});
  const Dataset spaced = load_dataset("fmnist", dir.str(), with_test(4));
  CHECK(class_ids(spaced.test) == std::vector<int64_t>{0, 2, 5, 7});  // k · 10 / 4
  REQUIRE(spaced.test_pixels.size() == 4);
  CHECK(spaced.test_pixels[1].pixels == std::vector<uint8_t>{24, 27, 30, 33});
  const GcdSplit split = make_gcd_split(spaced);
  CHECK(split.test_label == std::vector<int64_t>{0, 2, 5, 7});
}

TEST_CASE("test split: the folder layout's test/<class name>/, known or novel names within K") {
  TempDir dir("folder_test");
  write_image(dir.path / "labelled/dog/d1.png", 1);
  write_image(dir.path / "labelled/cat/c1.png", 2);
  write_image(dir.path / "unlabelled/u1.png", 3);
  write_text(dir.path / "unlabelled_labels.csv", "u1.png,owl\n");
  write_image(dir.path / "test/dog/t1.png", 4);
  write_image(dir.path / "test/owl/t3.png", 6);
  const Dataset d = load_dataset("folder", dir.str(), with_test());
  CHECK(d.num_classes == 3);  // cat, dog + owl: the training data's K
  REQUIRE(d.test.size() == 2);
  CHECK(class_ids(d.test) == std::vector<int64_t>{1, 2});  // dog, owl: folders in sorted order
  write_image(dir.path / "test/bat/t2.png", 5);
  CHECK_THROWS_WITH(load_dataset("folder", dir.str(), with_test()), doctest::Contains("leaves no room for it"));
  DatasetOptions k4 = with_test();
  k4.num_classes = 4;
  const Dataset wider = load_dataset("folder", dir.str(), k4);
  CHECK(class_ids(wider.test) == std::vector<int64_t>{3, 1, 2});  // bat takes the next id
  CHECK(wider.class_names[3] == "bat");
  CHECK(load_dataset("folder", dir.str()).test.empty());
  fs::remove(dir.path / "test/owl/t3.png");
  CHECK_THROWS_WITH(load_dataset("folder", dir.str(), k4), doctest::Contains("has no images"));
}

TEST_CASE("test split: ImageNet-1K's val/<synset>/ for all 1000 synsets") {
  TempDir dir("imagenet1k_test");
  for (int s = 0; s < 1000; ++s) {
    touch(dir.path / "train" / synset(s) / "t.JPEG");
    if (s != 3) touch(dir.path / "val" / synset(s) / "v.JPEG");
  }
  CHECK_THROWS_WITH(load_dataset("imagenet1k", dir.str(), with_test()),
                    doctest::Contains("must be sorted into synset folders"));
  touch(dir.path / "val/n00000003/v.JPEG");
  const Dataset d = load_dataset("imagenet1k", dir.str(), with_test());
  REQUIRE(d.test.size() == 1000);
  CHECK(d.test[3].path == (dir.path / "val/n00000003/v.JPEG").string());
  CHECK(d.test[999].class_id == 999);
}
