// The paper's configuration end to end, at a bounded number of iterations: ./mcdl_train's run on
// a synthetic copy of the CUB-200-2011 layout (200 classes, small JPEGs drawn by the test) with a
// random-weight ViT-B/16 (224 px, the SimGCD head, blocks.11 trained), SimGCD + MCDL, on the
// CPU backend and through the emulated CUDA kernels (at 32 px). Suite "slow" (ViT-B/16 on 2 cores).
#include <doctest/doctest.h>
#include <stb/stb_image_write.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/image.h"
#include "engine/random.h"
#include "layers/backbone_file.h"
#include "mcdl/harness/run.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

// ROOT/CUB_200_2011/{images.txt, image_class_labels.txt, train_test_split.txt, images/}: three
// images per class, two of them training images, each a 60×45 JPEG of the class's colour.
fs::path make_synthetic_cub() {
  const fs::path root = fs::temp_directory_path() / ("mcdl-cub-" + std::to_string(::getpid()));
  const fs::path base = root / "CUB_200_2011";
  fs::create_directories(base / "images");
  std::ofstream images(base / "images.txt"), labels(base / "image_class_labels.txt"),
      split(base / "train_test_split.txt");
  RandomStream stream(2, stream_id("synthetic-cub"));
  int id = 1;
  for (int cls = 1; cls <= 200; ++cls) {
    const std::string folder = std::to_string(cls) + ".Bird_" + std::to_string(cls);
    fs::create_directories(base / "images" / folder);
    for (int i = 0; i < 3; ++i, ++id) {
      Image image(45, 60, 3);
      for (size_t p = 0; p < image.pixels.size(); ++p)
        image.pixels[p] = static_cast<uint8_t>((cls * (37 + 50 * (p % 3)) + stream.randint(0, 30)) % 256);
      const std::string file = folder + "/Bird_" + std::to_string(id) + ".jpg";
      stbi_write_jpg((base / "images" / file).string().c_str(), 60, 45, 3, image.pixels.data(), 90);
      images << id << " " << file << "\n";
      labels << id << " " << cls << "\n";
      split << id << " " << (i < 2 ? 1 : 0) << "\n";
    }
  }
  return root;
}

}  // namespace

TEST_CASE("e2e: ./mcdl_train cub with ViT-B/16, SimGCD + MCDL, bounded iterations, CPU and emulated CUDA" *
          doctest::test_suite("slow")) {
  const fs::path root = make_synthetic_cub();
  for (const std::string device : {"cpu", "cuda"}) {
    INFO(device);
    TrainConfig c;
    c.dataset = "cub";
    c.data_root = root.string();
    c.model = "vit_base_patch16";  // random weights: no pretrained file here
    c.method = parse_method("simgcd+mcdl");
    set_config_option(c, "device", device);
    c.epochs = 200;
    c.batch_size = 4;
    c.mcdl_start = 0;  // the MCDL losses from the first step
    c.mu = 1;
    c.max_iters = 2;
    c.eval_batch_size = 32;
    c.eval_subset = device == "cpu" ? 16 : 4;
    // The emulator runs every CUDA thread as a fiber: there ViT-B/16 sees 32 px crops (2 × 2
    // patches, DINO's position-embedding interpolation), the full width and depth all the same.
    c.image_size = device == "cpu" ? 224 : 32;
    c.progress = false;
    c.out = (root / ("run-" + device)).string();
    const RunSummary summary = run_training(c, false);
    CHECK(summary.iterations == 2);
    CHECK(fs::exists(fs::path(c.out) / "predictions.csv"));
    CHECK(fs::exists(fs::path(c.out) / "metrics.csv"));
  }
  fs::remove_all(root);
}
