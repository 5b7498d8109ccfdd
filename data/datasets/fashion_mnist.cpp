// Fashion-MNIST (not in the reference; a small grayscale set for CPU runs):
// train-images-idx3-ubyte(.gz) and train-labels-idx1-ubyte(.gz), images held in memory in file
// order, old classes 0-4, new 5-9. Subsets are ordered as the reference's torchvision-array
// datasets (CIFAR) order them. The test split: t10k-images-idx3-ubyte(.gz) and
// t10k-labels-idx1-ubyte(.gz) in the same folder (10,000 images).
#include <filesystem>

#include "data/datasets/common.h"
#include "data/datasets/fashion_mnist_idx.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kHowToObtain =
    "Fashion-MNIST expects ROOT/train-images-idx3-ubyte.gz and ROOT/train-labels-idx1-ubyte.gz (or the "
    "files unpacked, without .gz): `apt install dataset-fashion-mnist` puts them in "
    "/usr/share/datasets/fashion-mnist, or download them from https://github.com/zalandoresearch/fashion-mnist";

uint32_t big_endian_u32(const std::vector<uint8_t>& bytes, size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) | bytes[at + 3];
}

// An idx file of unsigned bytes: checks the magic (0x0000 08 <dims>) and the size; returns the
// dimensions, the data starting at header_bytes.
std::vector<int64_t> idx_dims(const std::vector<uint8_t>& bytes, int dims, const std::string& path,
                              size_t& header_bytes) {
  header_bytes = 4 + 4 * static_cast<size_t>(dims);
  check(bytes.size() >= header_bytes, path, ": ", bytes.size(), " bytes, shorter than the idx header");
  const uint32_t magic = big_endian_u32(bytes, 0);
  check(magic == 0x0800u + static_cast<uint32_t>(dims), path, ": idx magic 0x", std::hex, magic, ", expected 0x",
        0x0800 + dims, " (unsigned bytes, ", std::dec, dims, " dimensions)");
  std::vector<int64_t> shape;
  int64_t total = 1;
  for (int i = 0; i < dims; ++i) {
    shape.push_back(big_endian_u32(bytes, 4 + 4 * static_cast<size_t>(i)));
    total *= shape.back();
    check(total <= static_cast<int64_t>(bytes.size()), path, ": the header's dimensions need more than the file's ",
          bytes.size(), " bytes (truncated?)");
  }
  check(static_cast<int64_t>(bytes.size() - header_bytes) == total, path, ": ", bytes.size() - header_bytes,
        " data bytes at offset ", header_bytes, ", the header's dimensions need ", total);
  return shape;
}

std::string idx_file(const std::string& dataset, const fs::path& root, const std::string& stem) {
  const fs::path gz = root / (stem + ".gz");
  if (fs::is_regular_file(root / stem) && !fs::is_regular_file(gz)) return (root / stem).string();
  require_file(dataset, gz.string(), kHowToObtain);
  return gz.string();
}

}  // namespace

const char* fashion_mnist_how_to_obtain() { return kHowToObtain; }

void read_fashion_mnist_idx(const std::string& dataset, const std::string& root, const std::string& prefix,
                            std::vector<DatasetItem>& items, std::vector<Image>& pixels) {
  const std::string images_path = idx_file(dataset, root, prefix + "-images-idx3-ubyte");
  const std::string labels_path = idx_file(dataset, root, prefix + "-labels-idx1-ubyte");
  const std::vector<uint8_t> images = read_maybe_gzipped(images_path);
  const std::vector<uint8_t> labels = read_maybe_gzipped(labels_path);
  size_t image_offset = 0, label_offset = 0;
  const std::vector<int64_t> image_shape = idx_dims(images, 3, images_path, image_offset);
  const std::vector<int64_t> label_shape = idx_dims(labels, 1, labels_path, label_offset);
  check(image_shape[0] == label_shape[0], dataset, ": ", image_shape[0], " images in ", images_path, " but ",
        label_shape[0], " labels in ", labels_path);
  const int64_t n = image_shape[0], height = image_shape[1], width = image_shape[2];
  items.reserve(static_cast<size_t>(n));
  pixels.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t label = labels[label_offset + static_cast<size_t>(i)];
    check(label < 10, labels_path, ": label ", int{label}, " at offset ", label_offset + static_cast<size_t>(i),
          " outside 0..9");
    items.push_back({"", label});
    Image image(height, width, 1);
    const auto* start = images.data() + image_offset + static_cast<size_t>(i * height * width);
    std::copy(start, start + height * width, image.pixels.begin());
    pixels.push_back(std::move(image));
  }
}

Dataset read_fashion_mnist(const std::string& root, bool with_test) {
  require_dir("fmnist", root, kHowToObtain);
  Dataset d;
  d.name = "fmnist";
  d.root = root;
  d.num_classes = 10;
  d.channels = 1;
  read_fashion_mnist_idx("fmnist", root, "train", d.train, d.train_pixels);
  const bool test_present = fs::exists(fs::path(root) / "t10k-images-idx3-ubyte.gz") ||
                            fs::exists(fs::path(root) / "t10k-images-idx3-ubyte");
  if (with_test && test_present) read_fashion_mnist_idx("fmnist", root, "t10k", d.test, d.test_pixels);
  d.old_classes = iota_classes(0, 5);
  d.new_classes = iota_classes(5, 10);
  d.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"};
  d.subset_order = Dataset::SubsetOrder::index_arrays;
  return d;
}

}  // namespace mcdl::dataset_io
