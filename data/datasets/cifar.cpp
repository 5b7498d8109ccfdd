// CIFAR-10 / CIFAR-100 training sets, images in memory in torchvision's order (the batches in
// order, rows in order), from either distribution of the data:
// - python (what torchvision's CIFAR10/100(root) read): ROOT/cifar-10-batches-py/data_batch_1..5
//   (dicts with b'data' uint8 [10000, 3072] and b'labels'), ROOT/cifar-100-python/train
//   (b'data', b'fine_labels'); read with the allowlisted unpickler;
// - binary: ROOT/cifar-10-batches-bin/data_batch_1..5.bin (records: label byte, 3072 pixel
//   bytes), ROOT/cifar-100-binary/train.bin (coarse label, fine label, 3072 bytes).
// ROOT may also be the batch folder itself. Pixels are planar R, G, B of 32x32. The test split:
// test_batch / test (python) or test_batch.bin / test.bin (binary) in the same folder.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "engine/error.h"
#include "io/numpy_pickle.h"
#include "io/pickle.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr int64_t kSide = 32;
constexpr int64_t kPixels = 3 * kSide * kSide;

struct Layout {
  bool python = false;
  std::vector<std::string> files;
  std::string test_file;  // empty when the folder has none
};

std::string how_to_obtain(int64_t num_classes) {
  const std::string name = num_classes == 10 ? "cifar-10" : "cifar-100";
  return "CIFAR-" + std::to_string(num_classes) + " expects ROOT/" +
         (num_classes == 10 ? "cifar-10-batches-py/data_batch_1..5" : "cifar-100-python/train") + " (python version) or ROOT/" +
         (num_classes == 10 ? "cifar-10-batches-bin/data_batch_1..5.bin" : "cifar-100-binary/train.bin") +
         " (binary version): download " + name + "-python.tar.gz or " + name +
         "-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html and extract it into ROOT.";
}

Layout find_layout(const std::string& root, int64_t num_classes) {
  const std::vector<std::string> python_names =
      num_classes == 10 ? std::vector<std::string>{"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"}
                        : std::vector<std::string>{"train"};
  const std::string python_dir = num_classes == 10 ? "cifar-10-batches-py" : "cifar-100-python";
  const std::string binary_dir = num_classes == 10 ? "cifar-10-batches-bin" : "cifar-100-binary";
  const std::string dataset = "cifar" + std::to_string(num_classes);
  for (const fs::path& dir : {fs::path(root) / python_dir, fs::path(root) / binary_dir, fs::path(root)}) {
    const bool python = fs::is_regular_file(dir / python_names[0]);
    if (!python && !fs::is_regular_file(dir / (python_names[0] + ".bin"))) continue;
    Layout layout{python, {}, {}};
    for (const std::string& name : python_names) {
      layout.files.push_back((dir / (python ? name : name + ".bin")).string());
      require_file(dataset, layout.files.back(), how_to_obtain(num_classes));
    }
    const fs::path test = dir / ((num_classes == 10 ? "test_batch" : "test") + std::string(python ? "" : ".bin"));
    if (fs::is_regular_file(test)) layout.test_file = test.string();
    return layout;
  }
  fail(dataset, ": no ", python_dir, "/", python_names[0], " or ", binary_dir, "/", python_names[0], ".bin under ", root,
       ".\n", how_to_obtain(num_classes));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open ", path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One split's images and their items (the training or the test split of a Dataset).
struct Split {
  std::vector<DatasetItem>& items;
  std::vector<Image>& pixels;
};

void add_image(Split d, const uint8_t* planar, int64_t label) {
  Image image(kSide, kSide, 3);
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t p = 0; p < kSide * kSide; ++p) image.pixels[static_cast<size_t>(p * 3 + c)] = planar[c * kSide * kSide + p];
  d.items.push_back({"", label});
  d.pixels.push_back(std::move(image));
}

void read_binary_batch(Split d, const std::string& path, int64_t num_classes) {
  const std::vector<uint8_t> bytes = read_file(path);
  const int64_t label_bytes = num_classes == 10 ? 1 : 2;  // CIFAR-100: coarse then fine label
  const int64_t record = label_bytes + kPixels;
  check(!bytes.empty() && static_cast<int64_t>(bytes.size()) % record == 0, path, ": ", bytes.size(),
        " bytes is not a whole number of ", record, "-byte records (truncated?)");
  for (size_t at = 0; at < bytes.size(); at += static_cast<size_t>(record)) {
    const int64_t label = bytes[at + static_cast<size_t>(label_bytes) - 1];
    check(label < num_classes, path, ": label ", label, " at byte ", at + static_cast<size_t>(label_bytes) - 1,
          " outside 0..", num_classes - 1);
    add_image(d, bytes.data() + at + label_bytes, label);
  }
}

void read_python_batch(Split d, const std::string& path, int64_t num_classes) {
  const std::vector<uint8_t> bytes = read_file(path);
  PickleOptions options;
  options.globals = numpy_array_globals();
  options.what = path;
  const PickleValue batch = unpickle(bytes, options);
  const Tensor data = numpy_array_from_pickle(batch.at("data"));
  const std::vector<PickleValue>& labels = batch.at(num_classes == 10 ? "labels" : "fine_labels").items();
  check(data.dtype() == DType::u8 && data.dim() == 2 && data.shape()[1] == kPixels, path, ": 'data' is ", data.str(),
        ", expected u8 [N, ", kPixels, "]");
  check(data.shape()[0] == static_cast<int64_t>(labels.size()), path, ": ", data.shape()[0], " images but ",
        labels.size(), " labels");
  const uint8_t* pixels = data.data<uint8_t>();
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t label = labels[i].as_int();
    check(label >= 0 && label < num_classes, path, ": label ", label, " of image ", i, " outside 0..", num_classes - 1);
    add_image(d, pixels + i * kPixels, label);
  }
}

void read_batch(Split d, const std::string& path, bool python, int64_t num_classes) {
  if (python) read_python_batch(d, path, num_classes);
  else read_binary_batch(d, path, num_classes);
}

}  // namespace

Dataset read_cifar(const std::string& root, int64_t num_classes, bool with_test) {
  check(num_classes == 10 || num_classes == 100, "read_cifar: ", num_classes, " classes (10 or 100)");
  const Layout layout = find_layout(root, num_classes);
  Dataset d;
  d.name = "cifar" + std::to_string(num_classes);
  d.root = root;
  d.num_classes = num_classes;
  for (const std::string& file : layout.files) read_batch({d.train, d.train_pixels}, file, layout.python, num_classes);
  if (with_test && !layout.test_file.empty())
    read_batch({d.test, d.test_pixels}, layout.test_file, layout.python, num_classes);
  const int64_t num_old = num_classes == 10 ? 5 : 80;  // get_class_splits: range(5) / range(80)
  d.old_classes = iota_classes(0, num_old);
  d.new_classes = iota_classes(num_old, num_classes);
  d.subset_order = Dataset::SubsetOrder::index_arrays;  // cifar.py indexes with the arrays
  return d;
}

}  // namespace mcdl::dataset_io
