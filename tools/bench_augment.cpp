// Benchmark: images per second of the CPU data pipeline on synthetic images, one thread and all
// OpenMP threads (one image per task):
//   - per-epoch augmentation from the cached resized uint8 image (256×341): RandomCrop(224) +
//     flip, with and without RandAugment(2, 9), then ToTensor + Normalize into float32 CHW;
//   - decode + resize: a 500×375 JPEG (quality 90) decoded with stb_image, resized to shorter
//     side 256 with the Pillow bicubic filter (the once-per-image cost, cacheable);
//   - then each RandAugment op alone on a 224×224 crop (microseconds per image, one thread).
// tools/bench_augment_torch.py times torchvision/Pillow on the same sizes.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <stb/stb_image_write.h>

#include "data/decode.h"
#include "data/randaugment.h"
#include "data/resize.h"
#include "data/transforms.h"
#include "engine/random.h"

using namespace mcdl;

namespace {

// Smooth structure plus noise, so that JPEG sizes and op costs are those of a photo-like image.
Image synthetic_image(int64_t height, int64_t width, uint64_t seed) {
  RandomStream stream(seed, stream_id("bench_augment_image"));
  Image im(height, width, 3);
  const double fx = stream.uniform(0.02, 0.1), fy = stream.uniform(0.02, 0.1);
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < 3; ++c) {
        const double v = 128 + 80 * std::sin(fx * x * (c + 1) + fy * y) + 30 * (stream.uniform_float() - 0.5);
        im.at(y, x, c) = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
  return im;
}

// Images per second of body(i) over i < count, median of `repeats` runs, on `threads` threads.
double images_per_second(int64_t count, int threads, int repeats, const std::function<void(int64_t)>& body) {
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t i = 0; i < count; ++i) body(i);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(count) / seconds);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const int all = omp_get_max_threads();
  const int64_t size = 224, num_images = 32;
  std::vector<Image> cached;
  for (int64_t i = 0; i < num_images; ++i) cached.push_back(synthetic_image(256, 341, static_cast<uint64_t>(i)));
  const Normalization norm = Normalization::imagenet();
  std::vector<std::vector<float>> outputs(static_cast<size_t>(std::max(all, 1)),
                                          std::vector<float>(static_cast<size_t>(3 * size * size)));

  const auto augment = [&](bool strong) {
    return [&, strong](int64_t i) {
      RandomStream stream(1, stream_id("bench_augment", {i}));
      const Image& src = cached[static_cast<size_t>(i % num_images)];
      Image out = apply_crop_flip(src, draw_random_crop_flip(stream, src.height, src.width, size), size);
      if (strong) out = apply_randaugment(out, draw_randaugment(stream, size, size));
      to_tensor_normalize(out, norm, outputs[static_cast<size_t>(omp_get_thread_num())].data());
    };
  };

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mcdl_bench_augment_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int64_t num_files = 16;
  for (int64_t i = 0; i < num_files; ++i) {
    const Image im = synthetic_image(375, 500, static_cast<uint64_t>(100 + i));
    const std::string path = (dir / (std::to_string(i) + ".jpg")).string();
    stbi_write_jpg(path.c_str(), 500, 375, 3, im.pixels.data(), 90);
  }
  const auto decode_resize = [&](int64_t i) {
    const Image im = decode_image((dir / (std::to_string(i % num_files) + ".jpg")).string(), 3);
    const Image resized = resize_shorter_side(im, 256);
    if (resized.width != 341) std::abort();
  };

  std::printf("CPU data pipeline, images/s (median of %d runs; %d threads available)\n", repeats, all);
  std::printf("%-52s %10s %10s\n", "stage", "1 thread", "all");
  struct Stage {
    const char* name;
    int64_t count;
    std::function<void(int64_t)> body;
  };
  const Stage stages[] = {
      {"crop224+flip+normalize (from cached 256x341 uint8)", 512, augment(false)},
      {"crop224+flip+RandAugment(2,9)+normalize", 256, augment(true)},
      {"decode 500x375 JPEG + resize shorter side to 256", 64, decode_resize},
  };
  for (const Stage& s : stages) {
    const double one = images_per_second(s.count, 1, repeats, s.body);
    const double many = images_per_second(s.count, all, repeats, s.body);
    std::printf("%-52s %10.0f %10.0f\n", s.name, one, many);
  }

  // Each op alone on a 224×224 crop at RandAugment(2, 9)'s magnitude (positive sign), one thread:
  // where the strong view's time goes.
  std::printf("\nRandAugment ops on a 224x224 RGB crop, microseconds per image (one thread, median of %d)\n",
              repeats);
  RandomStream crop_stream(2, stream_id("bench_augment_ops"));
  const Image crop = apply_crop_flip(cached[0], draw_random_crop_flip(crop_stream, 256, 341, size), size);
  for (int op = 0; op < num_augment_ops; ++op) {
    const auto kind = static_cast<AugmentOp>(op);
    const AugmentStep step{kind, augment_magnitude(kind, 9, 31, size, size)};
    const double rate = images_per_second(64, 1, repeats, [&](int64_t) { (void)apply_augment(crop, step); });
    std::printf("  %-14s %8.1f\n", std::string(augment_op_name(kind)).c_str(), 1e6 / rate);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
