// Dataset readers on tiny synthetic copies of each layout written to a temp dir (plus the
// real Fashion-MNIST files when installed), the reference class lists against
// data/splits/ssb_splits.json, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "data/class_splits.h"
#include "data/datasets.h"
#include "data/decode.h"
#include "data/gcd_split.h"
#include "data/numpy_random.h"
#include "engine/error.h"
#include "tests/data/layout_writers.h"
#include "tests/data/mat_writer.h"

namespace fs = std::filesystem;
using namespace mcdl;
using namespace mcdl::test;

namespace {

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

std::string tests_dir() { return fs::path(__FILE__).parent_path().parent_path().string(); }

}  // namespace

// ---- CUB -----------------------------------------------------------------------------------

TEST_CASE("cub: metadata merged on img_id, train rows, labels 0-based, SSB classes") {
  TempDir dir("cub");
  write_cub(dir.path);
  const Dataset d = load_dataset("cub", dir.str());
  REQUIRE(d.size() == 3);
  CHECK(d.train[0].path == (dir.path / "CUB_200_2011/images/151.A/a1.jpg").string());
  CHECK(d.train[2].path == (dir.path / "CUB_200_2011/images/001.C/c 1.jpg").string());
  CHECK(d.train[0].class_id == 150);
  CHECK(d.train[1].class_id == 29);
  CHECK(d.train[2].class_id == 0);
  CHECK(d.num_classes == 200);
  CHECK(d.old_classes.size() == 100);
  CHECK(d.new_classes.size() == 100);
  CHECK(d.new_classes[0] == 29);  // Hard first
  CHECK(decode_image(d.train[0].path).width == 4);
  const GcdSplit split = make_gcd_split(d);
  CHECK(split.label == std::vector<int64_t>{0, 100, 46});  // 0 is the 47th known class
  CHECK(split.labelled == std::vector<int64_t>{2});          // int(0.5 * 2) = 1 of the two old images
  CHECK(split.unlabelled == std::vector<int64_t>{0, 1});
}

TEST_CASE("cub: missing and malformed files give one clear message") {
  TempDir dir("cub_bad");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()),
                    contains("cub: missing folder " + (dir.path / "CUB_200_2011").string()));
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()), doctest::Contains("https://www.vision.caltech.edu/datasets/cub_200_2011/"));
  write_cub(dir.path);
  fs::remove(dir.path / "CUB_200_2011/train_test_split.txt");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()), contains("missing file " + (dir.path / "CUB_200_2011/train_test_split.txt").string()));
  write_cub(dir.path);
  write_text(dir.path / "CUB_200_2011/images.txt", "1 151.A/a1.jpg\nx2 030.B/b1.png\n");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()), doctest::Contains("images.txt:2: 'x2' is not a non-negative integer"));
  write_cub(dir.path);
  write_text(dir.path / "CUB_200_2011/image_class_labels.txt", "1 151\n2 201\n3 151\n4 1\n");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()), doctest::Contains("class 201 of img_id 2 outside 1..200"));
  write_cub(dir.path);
  fs::remove(dir.path / "CUB_200_2011/images/030.B/b1.png");
  CHECK_THROWS_WITH(load_dataset("cub", dir.str()), doctest::Contains("1 of 3 listed training images are missing"));
}

// ---- Stanford Cars ---------------------------------------------------------------------------
TEST_CASE("scars: annotations struct in file order, class - 1, index-array subset order") {
  TempDir dir("scars");
  write_cars(dir.path, {{"00001.jpg", 1}, {"00002.jpg", 196}, {"00003.jpg", 2}, {"00004.jpg", 1}}, true);
  const Dataset d = load_dataset("scars", dir.str());
  REQUIRE(d.size() == 4);
  CHECK(d.train[1].path == (dir.path / "cars_train/00002.jpg").string());
  std::vector<int64_t> classes;
  for (const DatasetItem& item : d.train) classes.push_back(item.class_id);
  CHECK(classes == std::vector<int64_t>{0, 195, 1, 0});
  CHECK(d.num_classes == 196);
  CHECK(d.old_classes.size() == 98);
  CHECK(d.new_classes.size() == 98);
  CHECK(d.subset_order == Dataset::SubsetOrder::index_arrays);
}

TEST_CASE("scars: bad annotations") {
  TempDir dir("scars_bad");
  CHECK_THROWS_WITH(load_dataset("scars", dir.str()), contains("missing file " + (dir.path / "devkit/cars_train_annos.mat").string()));
  CHECK_THROWS_WITH(load_dataset("scars", dir.str()), doctest::Contains("pytorch/vision/issues/7545"));
  write_cars(dir.path, {{"00001.jpg", 197}}, false);
  CHECK_THROWS_WITH(load_dataset("scars", dir.str()), doctest::Contains("has class 197, expected an integer in 1..196"));
  write_cars(dir.path, {{"00001.jpg", 3}, {"00002.jpg", 4}}, true);
  const fs::path mat = dir.path / "devkit/cars_train_annos.mat";
  fs::resize_file(mat, fs::file_size(mat) - 12);
  CHECK_THROWS_WITH(load_dataset("scars", dir.str()), contains("mat file " + mat.string()));
}

// ---- FGVC-Aircraft ---------------------------------------------------------------------------
TEST_CASE("aircraft: class = position of the variant name in sorted order") {
  TempDir dir("aircraft");
  write_aircraft(dir.path, 100);
  const Dataset d = load_dataset("aircraft", dir.str());
  REQUIRE(d.size() == 101);
  // Sorted: "A320", "A320-200", "V 002", ..., "V 099".
  CHECK(d.train[0].class_id == 99);   // V 099
  CHECK(d.train[98].class_id == 0);   // A320
  CHECK(d.train[99].class_id == 1);   // A320-200
  CHECK(d.train[100].class_id == 0);  // A320 again
  CHECK(d.train[100].path == (dir.path / "data/images/0034309.jpg").string());
  CHECK(d.old_classes.size() == 50);
  CHECK(d.old_classes[5] == 5);
  CHECK(d.new_classes.size() == 50);
}

TEST_CASE("aircraft: wrong class count and malformed lines") {
  TempDir dir("aircraft_bad");
  CHECK_THROWS_WITH(load_dataset("aircraft", dir.str()), doctest::Contains("fgvc-aircraft-2013b.tar.gz"));
  write_aircraft(dir.path, 99);
  CHECK_THROWS_WITH(load_dataset("aircraft", dir.str()), doctest::Contains("99 variant names, expected 100"));
  write_text(dir.path / "data/images_variant_trainval.txt", "1000001 A320\n1000002\n");
  CHECK_THROWS_WITH(load_dataset("aircraft", dir.str()), doctest::Contains("images_variant_trainval.txt:2: expected '<image_id> <variant name>'"));
}

// ---- Herbarium19 -----------------------------------------------------------------------------
TEST_CASE("herbarium19: ImageFolder order over small-train, 683 classes, balanced accuracy") {
  TempDir dir("herb");
  const fs::path train = dir.path / "small-train";
  for (int c = 0; c < 683; ++c) touch(train / std::to_string(c) / "x.jpg");
  write_image(train / "2" / "b.png", 1);
  write_image(train / "2" / "a.jpg", 2);
  touch(train / "2" / "notes.txt");  // not an image: skipped
  touch(train / "2" / "sub" / "c.JPG");
  const Dataset d = load_dataset("herbarium19", dir.str());
  REQUIRE(d.size() == 683 + 3);
  CHECK(d.balanced_accuracy);
  // Folders sorted as strings: "0", "1", "10", "100", "101", ... so "2" is class 1 + 1 + 10 + 100 = 112.
  CHECK(d.train[0].path == (train / "0/x.jpg").string());
  CHECK(d.train[1].class_id == 1);
  CHECK(d.train[1].path == (train / "1/x.jpg").string());
  std::vector<std::string> class2;
  for (const DatasetItem& item : d.train)
    if (item.class_id == 112) class2.push_back(fs::relative(item.path, train).string());
  CHECK(class2 == std::vector<std::string>{"2/a.jpg", "2/b.png", "2/x.jpg", "2/sub/c.JPG"});
  CHECK(d.old_classes.size() == 341);
  CHECK(d.new_classes.size() == 342);
  CHECK(make_gcd_split(d).num_old_classes == 341);

  fs::remove_all(train / "682");
  CHECK_THROWS_WITH(load_dataset("herbarium19", dir.str()), doctest::Contains("682 class folders, expected 683"));
}

// ---- CIFAR -----------------------------------------------------------------------------------
TEST_CASE("cifar10 / cifar100 binary version: batches in order, planar pixels to HWC") {
  TempDir dir("cifar_bin");
  for (int b = 1; b <= 5; ++b)
    write_bytes(dir.path / "cifar-10-batches-bin" / ("data_batch_" + std::to_string(b) + ".bin"),
                cifar_records({{static_cast<uint8_t>(b)}, {static_cast<uint8_t>(9 - b)}}, b));
  const Dataset d = load_dataset("cifar10", dir.str());
  REQUIRE(d.size() == 10);
  REQUIRE(d.in_memory());
  CHECK(d.train[0].class_id == 1);
  CHECK(d.train[1].class_id == 8);
  CHECK(d.train[9].class_id == 4);
  CHECK(d.train[0].path.empty());
  const Image& image = d.train_pixels[2];  // batch 2, record 0
  CHECK(image.height == 32);
  CHECK(image.channels == 3);
  CHECK(image.at(0, 0, 0) == 2);
  CHECK(image.at(0, 1, 2) == 1 + 14 + 2);
  CHECK(image.at(1, 0, 1) == 32 + 7 + 2);
  CHECK(d.old_classes == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(d.new_classes == std::vector<int64_t>{5, 6, 7, 8, 9});

  write_bytes(dir.path / "cifar-100-binary/train.bin", cifar_records({{19, 99}, {3, 42}}, 0));
  const Dataset c100 = load_dataset("cifar100", dir.str());
  REQUIRE(c100.size() == 2);
  CHECK(c100.train[0].class_id == 99);  // the fine label
  CHECK(c100.train[1].class_id == 42);
  CHECK(c100.old_classes.size() == 80);

  write_bytes(dir.path / "cifar-100-binary/train.bin", cifar_records({{19, 100}}, 0));
  CHECK_THROWS_WITH(load_dataset("cifar100", dir.str()), doctest::Contains("label 100 at byte 1 outside 0..99"));
  std::vector<uint8_t> truncated = cifar_records({{1, 2}}, 0);
  truncated.pop_back();
  write_bytes(dir.path / "cifar-100-binary/train.bin", truncated);
  CHECK_THROWS_WITH(load_dataset("cifar100", dir.str()), doctest::Contains("not a whole number of 3074-byte records"));
  fs::remove(dir.path / "cifar-10-batches-bin/data_batch_4.bin");
  CHECK_THROWS_WITH(load_dataset("cifar10", dir.str()), contains("missing file " + (dir.path / "cifar-10-batches-bin/data_batch_4.bin").string()));
  TempDir empty("cifar_none");
  CHECK_THROWS_WITH(load_dataset("cifar10", empty.str()), doctest::Contains("https://www.cs.toronto.edu/~kriz/cifar.html"));
}

TEST_CASE("cifar10 / cifar100 python version (tests/fixtures/cifar, tools/make_cifar_pickle_fixtures.py)") {
  const std::string root = tests_dir() + "/fixtures/cifar";
  const Dataset d = load_dataset("cifar10", root);
  REQUIRE(d.size() == 5);
  for (int b = 0; b < 5; ++b) CHECK(d.train[static_cast<size_t>(b)].class_id == (3 * b + 1) % 10);
  // data[0, j] = (7 j + 13 b) mod 128, planar: pixel (y, x) of channel c is j = 1024 c + 32 y + x.
  const Image& image = d.train_pixels[1];
  CHECK(image.at(0, 0, 0) == 13);
  CHECK(image.at(2, 3, 1) == (7 * (1024 + 64 + 3) + 13) % 128);
  const Dataset c100 = load_dataset("cifar100", root + "/cifar-100-python");  // the batch folder itself
  REQUIRE(c100.size() == 2);
  CHECK(c100.train[0].class_id == 99);
  CHECK(c100.train[1].class_id == 42);
  CHECK(c100.train_pixels[1].at(0, 0, 0) == (7 * 3072) % 128);
}

// ---- ImageNet-100 ----------------------------------------------------------------------------
TEST_CASE("imagenet100: the seed-0 classes among 1000 sorted synsets, relabelled 0..99") {
  TempDir dir("imagenet");
  std::vector<int64_t> chosen = numpy_legacy_choice_without_replacement(0, 1000, 100);
  std::sort(chosen.begin(), chosen.end());
  char name[16];
  for (int s = 0; s < 1000; ++s) {
    std::snprintf(name, sizeof(name), "n%08d", s);
    fs::create_directories(dir.path / "train" / name);
  }
  for (int64_t s : chosen) {
    std::snprintf(name, sizeof(name), "n%08d", static_cast<int>(s));
    touch(dir.path / "train" / name / "img_b.JPEG");
  }
  touch(dir.path / "train/n00000001/img_a.JPEG");
  const Dataset d = load_dataset("imagenet100", dir.str());
  REQUIRE(d.size() == 101);
  CHECK(d.train[0].path == (dir.path / "train/n00000001/img_a.JPEG").string());  // synset index 1 = class 0
  CHECK(d.train[1].class_id == 0);
  CHECK(d.train[2].path == (dir.path / "train/n00000014/img_b.JPEG").string());
  CHECK(d.train[2].class_id == 1);
  CHECK(d.train[100].class_id == 99);
  CHECK(d.old_classes.size() == 50);
  CHECK(d.new_classes.front() == 50);

  fs::remove_all(dir.path / "train/n00000014");
  CHECK_THROWS_WITH(load_dataset("imagenet100", dir.str()), doctest::Contains("999 class folders, expected the 1000"));
}

// ---- Fashion-MNIST ---------------------------------------------------------------------------
TEST_CASE("fmnist: gzipped idx files, grayscale in memory, old classes 0-4, max_train subset") {
  TempDir dir("fmnist");
  write_fmnist(dir.path, {9, 0, 5, 3});
  const Dataset d = load_dataset("fmnist", dir.str());
  REQUIRE(d.size() == 4);
  CHECK(d.channels == 1);
  CHECK(d.train[0].class_id == 9);
  CHECK(d.train[2].class_id == 5);
  CHECK(d.train_pixels[1].height == 2);
  CHECK(d.train_pixels[1].pixels == std::vector<uint8_t>{12, 15, 18, 21});
  CHECK(d.old_classes == std::vector<int64_t>{0, 1, 2, 3, 4});
  DatasetOptions options;
  options.max_train = 2;
  const Dataset small = load_dataset("fmnist", dir.str(), options);
  CHECK(small.size() == 2);
  CHECK(small.train_pixels.size() == 2);
}

TEST_CASE("fmnist: truncated and inconsistent idx files") {
  TempDir dir("fmnist_bad");
  CHECK_THROWS_WITH(load_dataset("fmnist", dir.str()), contains("missing file " + (dir.path / "train-images-idx3-ubyte.gz").string()));
  write_fmnist(dir.path, {1, 2, 3});
  write_gz(dir.path / "train-labels-idx1-ubyte.gz", idx_bytes(0x801, {2}, {1, 2}));
  CHECK_THROWS_WITH(load_dataset("fmnist", dir.str()), doctest::Contains("3 images in"));
  write_gz(dir.path / "train-labels-idx1-ubyte.gz", idx_bytes(0x801, {3}, {1, 2}));
  CHECK_THROWS_WITH(load_dataset("fmnist", dir.str()), doctest::Contains("train-labels-idx1-ubyte.gz: 2 data bytes at offset 8, the header's dimensions need 3"));
  write_gz(dir.path / "train-labels-idx1-ubyte.gz", idx_bytes(0x803, {3}, {1, 2, 3}));
  CHECK_THROWS_WITH(load_dataset("fmnist", dir.str()), doctest::Contains("idx magic 0x803, expected 0x801"));
  write_fmnist(dir.path, {1, 2, 3});
  const fs::path images = dir.path / "train-images-idx3-ubyte.gz";
  fs::resize_file(images, fs::file_size(images) - 10);  // cut inside the gzip stream
  CHECK_THROWS_WITH(load_dataset("fmnist", dir.str()), doctest::Contains("corrupt or truncated gzip data"));
}

TEST_CASE("fmnist: the real files of dataset-fashion-mnist") {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root + "/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST is not installed in " << root);
    return;
  }
  const Dataset d = load_dataset("fmnist", "");
  REQUIRE(d.size() == 60000);
  std::vector<int64_t> first;
  for (int i = 0; i < 10; ++i) first.push_back(d.train[static_cast<size_t>(i)].class_id);
  CHECK(first == std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
  const Image& image = d.train_pixels[0];
  CHECK(image.height == 28);
  CHECK(image.width == 28);
  CHECK(image.at(14, 12, 0) == 237);
  int64_t sum = 0;
  for (uint8_t v : image.pixels) sum += v;
  CHECK(sum == 76247);  // numpy: images[0].sum()
  const GcdSplit split = make_gcd_split(d);
  CHECK(split.labelled.size() == 15000);  // 30000 old-class images, half labelled
  CHECK(split.unlabelled.size() == 45000);
}

// ---- folder ----------------------------------------------------------------------------------
TEST_CASE("folder: labelled class folders, unlabelled images, optional ground truth") {
  TempDir dir("folder");
  write_image(dir.path / "labelled/dog/d1.png", 1);
  write_image(dir.path / "labelled/cat/c2.jpg", 2);
  write_image(dir.path / "labelled/cat/c1.png", 3);
  write_image(dir.path / "unlabelled/u2.png", 4);
  write_image(dir.path / "unlabelled/u1.png", 5);
  write_image(dir.path / "unlabelled/more/u3.jpg", 6);

  DatasetOptions options;
  options.num_classes = 4;
  const Dataset d = load_dataset("folder", dir.str(), options);
  REQUIRE(d.size() == 6);
  CHECK(fs::path(d.train[0].path).filename() == "c1.png");
  CHECK(d.train[0].class_id == 0);  // cat
  CHECK(d.train[2].class_id == 1);  // dog
  CHECK(fs::path(d.train[3].path).filename() == "u1.png");
  CHECK(fs::path(d.train[5].path).filename() == "u3.jpg");
  CHECK(d.train[3].class_id == -1);
  CHECK(d.num_classes == 4);
  CHECK(d.new_classes == std::vector<int64_t>{2, 3});
  const GcdSplit split = make_gcd_split(d);
  CHECK(split.labelled == std::vector<int64_t>{0, 1, 2});
  CHECK(split.unlabelled == std::vector<int64_t>{3, 4, 5});

  write_text(dir.path / "unlabelled_labels.csv", "file,class_name\nu1.png,owl\nu2.png,dog\nmore/u3.jpg,bat\n");
  const Dataset labelled = load_dataset("folder", dir.str());  // K inferred: cat, dog + bat, owl
  CHECK(labelled.num_classes == 4);
  CHECK(labelled.train[3].class_id == 3);  // owl
  CHECK(labelled.train[4].class_id == 1);  // dog
  CHECK(labelled.train[5].class_id == 2);  // bat

  options.num_classes = 3;
  CHECK_THROWS_WITH(load_dataset("folder", dir.str(), options), doctest::Contains("K = 3 but there are 2 known classes and 2 novel"));
  write_text(dir.path / "unlabelled_labels.csv", "u1.png,owl\nu2.png dog\n");
  CHECK_THROWS_WITH(load_dataset("folder", dir.str()), doctest::Contains("unlabelled_labels.csv:2: expected 'file,class_name'"));
  write_text(dir.path / "unlabelled_labels.csv", "u1.png,owl\n");
  CHECK_THROWS_WITH(load_dataset("folder", dir.str()), doctest::Contains("has no class for unlabelled/u2.png"));
  fs::remove(dir.path / "unlabelled_labels.csv");
  CHECK_THROWS_WITH(load_dataset("folder", dir.str()), doctest::Contains("give the number of classes K"));
  fs::remove_all(dir.path / "unlabelled");
  CHECK_THROWS_WITH(load_dataset("folder", dir.str(), options), contains("missing folder " + (dir.path / "unlabelled").string()));
}

TEST_CASE("load_dataset: names, unknown names, missing root") {
  CHECK(dataset_names().size() == 12);
  CHECK_THROWS_WITH(load_dataset("mnist", "/tmp"), doctest::Contains("unknown dataset 'mnist' (known: cub scars"));
  CHECK_THROWS_WITH(load_dataset("cub", ""), doctest::Contains("needs its data root"));
}

// ---- reference class lists -------------------------------------------------------------------
namespace {

// Just enough JSON for ssb_splits.json: objects, arrays, integers, strings (no escapes needed).
struct Json {
  std::map<std::string, Json> object;
  std::vector<Json> array;
  int64_t number = 0;
  std::string text;
};

Json parse_json(const std::string& s, size_t& at) {
  auto skip = [&] { while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at; };
  skip();
  Json value;
  if (s[at] == '{' || s[at] == '[') {
    const char close = s[at] == '{' ? '}' : ']';
    ++at;
    skip();
    while (s[at] != close) {
      if (close == '}') {
        const std::string key = parse_json(s, at).text;
        skip();
        ++at;  // ':'
        value.object[key] = parse_json(s, at);
      } else {
        value.array.push_back(parse_json(s, at));
      }
      skip();
      if (s[at] == ',') ++at;
      skip();
    }
    ++at;
  } else if (s[at] == '"') {
    const size_t end = s.find('"', at + 1);
    value.text = s.substr(at + 1, end - at - 1);
    at = end + 1;
  } else {
    size_t used = 0;
    value.number = std::stoll(s.substr(at, 24), &used);
    at += used;
  }
  return value;
}

std::vector<int64_t> numbers(const Json& array) {
  std::vector<int64_t> out;
  for (const Json& v : array.array) out.push_back(v.number);
  return out;
}

}  // namespace

TEST_CASE("class split constants equal data/splits/ssb_splits.json") {
  // The JSON copy of the split pickles lives in the repository (docs/reference-facts.md §2.2),
  // so this test always runs: a missing file fails it.
  const std::string path = (fs::path(tests_dir()).parent_path() / "data" / "splits" / "ssb_splits.json").string();
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::stringstream text;
  text << in.rdbuf();
  size_t at = 0;
  const Json json = parse_json(text.str(), at);
  for (const std::string name : {"cub", "scars", "aircraft"}) {
    CAPTURE(name);
    const Json& entry = json.object.at(name);
    const SsbClassSplit& split = ssb_class_split(name);
    CHECK(split.known == numbers(entry.object.at("known_classes")));
    const Json& unknown = entry.object.at("unknown_classes");
    CHECK(split.hard == numbers(unknown.object.at("Hard")));
    CHECK(split.medium == numbers(unknown.object.at("Medium")));
    CHECK(split.easy == numbers(unknown.object.at("Easy")));
  }
  CHECK(herbarium19_old_classes() == numbers(json.object.at("herbarium_19").object.at("Old")));
  CHECK(herbarium19_new_classes() == numbers(json.object.at("herbarium_19").object.at("New")));
  // Sizes from docs/reference-facts.md §2.2: CUB 100 + 34/34/32, SCars 98 + 7/15/76, Aircraft 50 + 13/17/20.
  CHECK(ssb_class_split("scars").hard.size() == 7);
  CHECK(ssb_class_split("scars").easy.size() == 76);
  CHECK(ssb_class_split("aircraft").medium.size() == 17);
  CHECK_THROWS_WITH(ssb_class_split("cifar10"), doctest::Contains("no SSB split for 'cifar10'"));
}

// ---- ImageNet-1K ----------------------------------------------------------------------------
TEST_CASE("imagenet1k: the 1000 sorted synsets with their index as the label, old classes 0..499") {
  TempDir dir("imagenet1k");
  for (int s = 0; s < 1000; ++s) touch(dir.path / "train" / synset(s) / "img_b.JPEG");
  touch(dir.path / "train/n00000007/img_a.JPEG");
  const Dataset d = load_dataset("imagenet1k", dir.str());
  REQUIRE(d.size() == 1001);
  CHECK(d.num_classes == 1000);
  CHECK(d.train[0].path == (dir.path / "train/n00000000/img_b.JPEG").string());
  CHECK(d.train[7].path == (dir.path / "train/n00000007/img_a.JPEG").string());  // ImageFolder order
  CHECK(d.train[7].class_id == 7);
  CHECK(d.train[8].class_id == 7);
  CHECK(d.train[1000].class_id == 999);
  CHECK(d.old_classes.size() == 500);
  CHECK(d.old_classes.back() == 499);
  CHECK(d.new_classes.size() == 500);
  CHECK(d.new_classes.front() == 500);
  CHECK(d.subset_order == Dataset::SubsetOrder::index_arrays);

  fs::remove_all(dir.path / "train/n00000500");
  CHECK_THROWS_WITH(load_dataset("imagenet1k", dir.str()), doctest::Contains("999 class folders, expected the 1000"));
  CHECK_THROWS_WITH(load_dataset("imagenet1k", (dir.path / "missing").string()), doctest::Contains("ILSVRC2012_img_train.tar"));
}
