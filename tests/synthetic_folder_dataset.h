// A tiny GCD dataset in the folder layout, drawn by the tests: 6 classes of coloured squares on
// a noisy grey background (the colour is the class), 36 images each. ROOT/labelled/class<k>/
// holds half of each old class (0–2); everything else is in ROOT/unlabelled/ with its class in
// ROOT/unlabelled_labels.csv; with test_per_class > 0 also a test split, ROOT/test/class<k>/ with
// that many new images of every class. Made once per process (and name) under the temp directory,
// and removed when the process exits.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "data/decode.h"
#include "data/image.h"
#include "engine/random.h"
#include "mcdl/run/train_config.h"

namespace mcdl::testing {

constexpr int kSquareClasses = 6, kSquareOldClasses = 3, kSquaresPerClass = 36, kSquareImageSize = 16;

inline Image coloured_square(int cls, RandomStream& stream) {
  static const uint8_t colours[kSquareClasses][3] = {{220, 40, 40}, {40, 200, 40},  {40, 60, 220},
                                                     {230, 220, 40}, {40, 210, 220}, {210, 40, 210}};
  const int64_t size = kSquareImageSize;
  Image image(size, size, 3);
  for (auto& p : image.pixels) p = static_cast<uint8_t>(100 + stream.randint(0, 40));
  const int64_t side = stream.randint(7, 12), top = stream.randint(0, size - side), left = stream.randint(0, size - side);
  for (int64_t y = top; y < top + side; ++y)
    for (int64_t x = left; x < left + side; ++x)
      for (int c = 0; c < 3; ++c)
        image.at(y, x, c) = static_cast<uint8_t>(std::clamp<int64_t>(colours[cls][c] + stream.randint(-20, 20), 0, 255));
  return image;
}

// The datasets this process made, removed when it exits; not by a child it forked (whose exit
// runs the same destructors), so the owner's pid is checked.
class MadeDatasets {
 public:
  void add(const std::filesystem::path& root) { roots_.push_back(root); }
  ~MadeDatasets() {
    if (::getpid() != owner_) return;
    std::error_code ignored;
    for (const std::filesystem::path& root : roots_) std::filesystem::remove_all(root, ignored);
  }

 private:
  const pid_t owner_ = ::getpid();
  std::vector<std::filesystem::path> roots_;
};
inline MadeDatasets& made_datasets() {
  static MadeDatasets made;
  return made;
}

inline std::filesystem::path coloured_squares_dataset(const std::string& name = "squares", int test_per_class = 0) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("mcdl-" + name + "-" + std::to_string(::getpid()));
  if (fs::exists(root / "unlabelled_labels.csv")) return root;
  made_datasets().add(root);
  fs::create_directories(root / "unlabelled");
  std::ofstream labels(root / "unlabelled_labels.csv");
  RandomStream stream(1, stream_id("e2e-images"));
  for (int cls = 0; cls < kSquareClasses; ++cls) {
    const std::string class_name = "class" + std::to_string(cls);
    if (cls < kSquareOldClasses) fs::create_directories(root / "labelled" / class_name);
    for (int i = 0; i < kSquaresPerClass; ++i) {
      const std::string file = class_name + "_" + std::to_string(i) + ".png";
      if (cls < kSquareOldClasses && i % 2 == 0) {
        write_png((root / "labelled" / class_name / file).string(), coloured_square(cls, stream));
      } else {
        write_png((root / "unlabelled" / file).string(), coloured_square(cls, stream));
        labels << file << "," << class_name << "\n";
      }
    }
    for (int i = 0; i < test_per_class; ++i) {
      fs::create_directories(root / "test" / class_name);
      write_png((root / "test" / class_name / ("t" + std::to_string(i) + ".png")).string(), coloured_square(cls, stream));
    }
  }
  return root;
}

// A small run on that dataset (a 2-block ViT at 16 px, every block trained, on the CPU) that
// writes to `out` (emptied first); tests set the method and schedule on top.
inline TrainConfig squares_run_config(const std::filesystem::path& dataset, const std::filesystem::path& out) {
  TrainConfig c;
  c.dataset = "folder";
  c.data_root = dataset.string();
  c.num_classes = kSquareClasses;
  c.model = "img=16,patch=4,dim=32,depth=2,heads=2,chans=3";
  c.head_hidden = 64;
  c.head_bottleneck = 32;
  // SimGCD's 0.02 suits 768 → 2048-wide heads; at these widths it starts the projections near
  // zero, where the first steps collapse them onto the last bias.
  c.head_init_std = 0.1;
  c.grad_from_block = 0;
  c.device = DeviceChoice::cpu;
  c.image_size = kSquareImageSize;
  c.batch_size = 32;
  c.lr = 0.1;
  c.workers = 2;
  c.progress = false;
  c.seed = 3;
  c.out = out.string();
  std::filesystem::remove_all(out);
  return c;
}

// The GCD baseline's run on the squares (`method` gcd or gcd+mcdl): a narrow head, 8 epochs,
// 10 k-means restarts.
inline TrainConfig squares_gcd_config(const std::filesystem::path& dataset, const std::filesystem::path& out,
                                      const std::string& method) {
  TrainConfig c = squares_run_config(dataset, out);
  c.gcd_head_out = 256;
  c.method = parse_method(method);
  c.epochs = 8;
  c.kmeans_restarts = 10;
  return c;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace mcdl::testing
