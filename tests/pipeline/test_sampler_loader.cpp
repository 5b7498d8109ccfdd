// The sampler's proportions and determinism, the loader's independence from its worker count,
// a process's own images of a batch, the pretrain views' crop scale, and the image cache (bad
// files, the memory-mapped overflow, the persistent cache, decoding on access and when auto
// chooses it).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <unistd.h>

#include "data/decode.h"
#include "data/image_cache.h"
#include "data/loader.h"
#include "data/randaugment.h"
#include "data/resize.h"
#include "data/sampler.h"
#include "engine/error.h"
#include "engine/random.h"
#include "mcdl/run/training_data.h"

using namespace mcdl;
namespace fs = std::filesystem;

namespace {

Image pattern_image(int64_t h, int64_t w, int64_t c, int seed) {
  Image image(h, w, c);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>((i * 37 + seed * 101) % 251);
  return image;
}

Dataset memory_dataset(int64_t n, int64_t size, int64_t channels) {
  Dataset d;
  d.name = "synthetic";
  d.channels = channels;
  d.num_classes = 2;
  for (int64_t i = 0; i < n; ++i) {
    d.train.push_back({"", i % 2});
    d.train_pixels.push_back(pattern_image(size, size, channels, static_cast<int>(i)));
  }
  return d;
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("mcdl-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// `n` RGB images written as dir/img<i>.png (image i: 20 + i rows, 30 columns), one class.
Dataset png_dataset(const fs::path& dir, int n) {
  Dataset d;
  d.name = "files";
  d.channels = 3;
  d.num_classes = 1;
  for (int i = 0; i < n; ++i) {
    const std::string path = (dir / ("img" + std::to_string(i) + ".png")).string();
    write_png(path, pattern_image(20 + i, 30, 3, i));
    d.train.push_back({path, 0});
  }
  return d;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

}  // namespace

TEST_CASE("sampler: half the draws are labelled, deterministic per epoch, drop_last batches") {
  const GcdSampler sampler(300, 700, 64, 7);
  CHECK(sampler.batches_per_epoch() == 1000 / 64);
  const auto a = sampler.draw_epoch(3), b = sampler.draw_epoch(3), c = sampler.draw_epoch(4);
  REQUIRE(a.size() == 1000);
  int64_t labelled = 0;
  bool same = true, differs = false;
  std::set<int64_t> seen_unlabelled;
  for (size_t i = 0; i < a.size(); ++i) {
    labelled += a[i].labelled;
    same = same && a[i].labelled == b[i].labelled && a[i].index == b[i].index;
    differs = differs || a[i].index != c[i].index;
    CHECK(a[i].index >= 0);
    CHECK(a[i].index < (a[i].labelled ? 300 : 700));
    if (!a[i].labelled) seen_unlabelled.insert(a[i].index);
  }
  CHECK(same);
  CHECK(differs);
  // Weight 1 per labelled and n_l/n_u per unlabelled sample: P(labelled) = 1/2 (σ ≈ 16 draws).
  CHECK(labelled > 500 - 80);
  CHECK(labelled < 500 + 80);
  // With replacement: about 1 − e^(−0.714) ≈ 51% of the unlabelled samples appear.
  CHECK(seen_unlabelled.size() > 300);
  CHECK(seen_unlabelled.size() < 420);
  CHECK_THROWS_WITH(GcdSampler(0, 10, 4, 0), doctest::Contains("labelled set is empty"));
  CHECK_THROWS_WITH(GcdSampler(3, 3, 16, 0), doctest::Contains("larger than the training set"));
}

TEST_CASE("loader: batches are identical for any number of workers and come in order") {
  const Dataset d = memory_dataset(24, 28, 1);
  ImageCacheOptions cache_options;
  cache_options.resize_size = 32;
  const ImageCache cache(d, iota(24), cache_options);
  std::vector<std::vector<int64_t>> batches = {{0, 1, 2, 3, 4}, {5, 5, 6, 7, 8}, {9, 10, 11, 12, 13}, {23, 22, 21, 20, 19}};
  auto run = [&](int64_t workers, int64_t prefetch) {
    LoaderOptions options;
    options.image_size = 28;
    options.normalization = Normalization::grayscale();
    options.views = {ViewKind::train, ViewKind::strong, ViewKind::test};
    options.workers = workers;
    options.prefetch = prefetch;
    options.seed = 11;
    BatchLoader loader(cache, options);
    loader.start(2, batches);
    std::vector<std::vector<float>> out;
    LoadedBatch batch;
    int64_t expected = 0;
    while (loader.next(batch)) {
      CHECK(batch.batch == expected++);
      for (const Tensor& v : batch.views) {
        CHECK(v.shape() == Shape{5, 1, 28, 28});
        out.push_back(v.to_vector<float>());
      }
    }
    CHECK(expected == 4);
    return out;
  };
  const auto one = run(1, 1), three = run(3, 5), inline_loading = run(0, 1);
  CHECK(one == three);
  CHECK(one == inline_loading);
  // Batch 1 holds sample 5 twice: its two draws differ (own streams), its test view does not.
  const size_t plane = 28 * 28;
  const std::vector<float>& train_view = one[3];
  CHECK(!std::equal(train_view.begin(), train_view.begin() + plane, train_view.begin() + plane));
  const std::vector<float>& test_view = one[5];
  CHECK(std::equal(test_view.begin(), test_view.begin() + plane, test_view.begin() + plane));
}

TEST_CASE("loader: pretrain views crop at least crop_scale_min of the image") {
  const Image image = pattern_image(32, 32, 1, 3);
  for (double scale_min : {0.08, 0.9}) {
    CAPTURE(scale_min);
    for (uint64_t seed = 0; seed < 20; ++seed) {
      RandomStream draw(seed, 7), view_stream(seed, 7);
      const ResizedCrop crop = draw_random_resized_crop(draw, 32, 32, scale_min);
      // Rounding each side to an integer moves the area by less than a side's length.
      REQUIRE(crop.height * crop.width + crop.height + crop.width >= scale_min * 32 * 32);
      Image expected = apply_resized_crop(image, crop, 28);
      if (draw.uniform_float() < 0.5f) expected = hflip(expected);
      expected = apply_randaugment(expected, draw_randaugment(draw, 28, 28));
      REQUIRE(make_view(image, ViewKind::pretrain, 28, view_stream, scale_min) == expected);
    }
  }
  // The loader passes its option on.
  Dataset d = memory_dataset(1, 32, 1);
  ImageCacheOptions cache_options;
  cache_options.resize_size = 32;
  const ImageCache cache(d, iota(1), cache_options);
  auto loaded = [&](double scale_min) {
    LoaderOptions options;
    options.image_size = 28;
    options.normalization = Normalization::grayscale();
    options.views = {ViewKind::pretrain};
    options.workers = 0;
    options.crop_scale_min = scale_min;
    BatchLoader loader(cache, options);
    loader.start(0, {{0}});
    LoadedBatch batch;
    REQUIRE(loader.next(batch));
    return batch.views[0].to_vector<float>();
  };
  RandomStream stream(0, stream_id("augment", {0, 0, 0, 0}));
  std::vector<float> expected(28 * 28);
  to_tensor_normalize(make_view(cache.get(0), ViewKind::pretrain, 28, stream, 0.9), Normalization::grayscale(),
                      expected.data());
  CHECK(loaded(0.9) == expected);
  CHECK(loaded(0.08) != expected);
}

TEST_CASE("loader: on a CUDA device the views equal the CPU's bit for bit (emulated kernels)") {
  const Dataset d = memory_dataset(10, 30, 3);
  ImageCacheOptions cache_options;
  cache_options.resize_size = 29;
  const ImageCache cache(d, iota(10), cache_options);
  auto run = [&](Device device) {
    LoaderOptions options;
    options.image_size = 25;
    options.normalization = Normalization::imagenet();
    options.views = {ViewKind::train, ViewKind::strong, ViewKind::test};
    options.workers = 2;
    options.seed = 5;
    options.device = device;
    BatchLoader loader(cache, options);
    loader.start(1, {{0, 1, 2, 3}, {4, 5, 6, 9}});
    std::vector<std::vector<float>> out;
    LoadedBatch batch;
    while (loader.next(batch))
      for (const Tensor& v : batch.views) {
        CHECK(v.device() == device);
        out.push_back(v.to(Device::cpu()).to_vector<float>());
      }
    return out;
  };
  CHECK(run(Device::cpu()) == run(Device::cuda()));
}

TEST_CASE("loader: a process prepares only its own images of a batch; the other rows are zeros, their images unread") {
  const Dataset d = memory_dataset(12, 30, 3);
  ImageCacheOptions cache_options;
  cache_options.resize_size = 29;
  const ImageCache cache(d, iota(10), cache_options);  // images 10 and 11 are not cached: reading them throws
  const std::vector<std::vector<int64_t>> whole_batches = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}};
  const std::vector<std::vector<int64_t>> with_uncached = {{10, 1, 2, 3, 11}, {11, 6, 7, 8, 10}};
  using Range = std::pair<int64_t, int64_t>;
  auto run = [&](Device device, const std::vector<std::vector<int64_t>>& batches,
                 std::function<Range(int64_t)> positions) {
    LoaderOptions options;
    options.image_size = 25;
    options.normalization = Normalization::imagenet();
    options.views = {ViewKind::train, ViewKind::strong, ViewKind::test};
    options.seed = 5;
    options.device = device;
    options.positions = std::move(positions);
    BatchLoader loader(cache, options);
    loader.start(1, batches);
    std::vector<LoadedBatch> out;
    LoadedBatch batch;
    while (loader.next(batch)) out.push_back(batch);
    return out;
  };
  const int64_t plane = 3 * 25 * 25;
  for (Device device : {Device::cpu(), Device::cuda()}) {
    INFO("on a CUDA device: ", device.is_cuda());
    const std::vector<LoadedBatch> whole = run(Device::cpu(), whole_batches, nullptr);
    const std::vector<LoadedBatch> part = run(device, with_uncached, [](int64_t b) { return Range{1, b - 1}; });
    REQUIRE(part.size() == 2);
    for (size_t k = 0; k < 2; ++k) {
      CHECK(part[k].prepared == Range{1, 4});
      CHECK(part[k].images == 5);
      for (size_t v = 0; v < 3; ++v) {
        const std::vector<float> got = part[k].views[v].to(Device::cpu()).to_vector<float>();
        const std::vector<float> expected = whole[k].views[v].to_vector<float>();
        REQUIRE(got.size() == static_cast<size_t>(5 * plane));
        CHECK(std::equal(got.begin() + plane, got.begin() + 4 * plane, expected.begin() + plane));
        CHECK(std::all_of(got.begin(), got.begin() + plane, [](float x) { return x == 0.0f; }));
        CHECK(std::all_of(got.begin() + 4 * plane, got.end(), [](float x) { return x == 0.0f; }));
      }
    }
    // A process with none of a batch's images: every row zeros.
    const std::vector<LoadedBatch> none = run(device, with_uncached, [](int64_t) { return Range{0, 0}; });
    for (const LoadedBatch& batch : none)
      for (const Tensor& view : batch.views) {
        CHECK(view.shape() == Shape{5, 3, 25, 25});
        const std::vector<float> got = view.to(Device::cpu()).to_vector<float>();
        CHECK(std::all_of(got.begin(), got.end(), [](float x) { return x == 0.0f; }));
      }
  }
  CHECK_THROWS_WITH(run(Device::cpu(), whole_batches, [](int64_t b) { return Range{2, b + 1}; }),
                    doctest::Contains("positions [2, 6) of a batch of 5"));
}

TEST_CASE("image cache: decoding on access gives the pixels decoding once does, keeps nothing and names a bad file when read") {
  const fs::path dir = temp_dir("on-access");
  const Dataset d = png_dataset(dir, 4);
  ImageCacheOptions options;
  options.resize_size = 16;
  options.cache_dir = (dir / "kept").string();
  const ImageCache once(d, iota(4), options);
  options.cache_dir = (dir / "on-access").string();
  options.decode_on_access = true;
  const ImageCache on_access(d, iota(4), options);
  CHECK(on_access.decodes_on_access());
  CHECK_FALSE(once.decodes_on_access());
  CHECK(on_access.memory_bytes() == 0);
  CHECK(on_access.file_bytes() == 0);
  CHECK_FALSE(fs::exists(dir / "on-access"));  // nothing written
  for (int64_t i = 0; i < 4; ++i) {
    const Image a = once.get(i), b = on_access.get(i);
    CHECK(a.height == b.height);
    CHECK(a.width == b.width);
    CHECK(a.pixels == b.pixels);
  }
  // A file broken after the start: found when a batch reads it, named, with what to do.
  { std::ofstream(dir / "img2.png", std::ios::trunc) << "not a png"; }
  CHECK_FALSE(on_access.is_bad(2));
  CHECK_THROWS_WITH(on_access.get(2), doctest::Contains("img2.png could not be read when a batch needed it"));
  CHECK_THROWS_WITH(on_access.get(2), doctest::Contains("fix or remove the file"));
  CHECK(on_access.get(3).pixels == once.get(3).pixels);
  fs::remove_all(dir);
}

TEST_CASE("--image-cache: auto decodes once up to 200,000 training images and on access above; all and off as said") {
  TrainConfig config;
  CHECK(config.image_cache == ImageCacheMode::automatic);
  CHECK_FALSE(decodes_on_access(config, 5994));                  // CUB
  CHECK_FALSE(decodes_on_access(config, kDecodeOnceMaxImages));  // 200,000
  CHECK(decodes_on_access(config, kDecodeOnceMaxImages + 1));
  CHECK(decodes_on_access(config, 1281167));  // ImageNet-1K
  config.image_cache = ImageCacheMode::all;
  CHECK_FALSE(decodes_on_access(config, 1281167));
  config.image_cache = ImageCacheMode::off;
  CHECK(decodes_on_access(config, 10));
  CHECK(kDecodeOnceMaxImages == 200000);  // the number the README and --help give
}

TEST_CASE("image cache: bad files are listed, not fatal; overflow goes to a mapped file; the cache persists") {
  const fs::path dir = temp_dir("cache");
  Dataset d = png_dataset(dir, 6);
  { std::ofstream(dir / "img2.png", std::ios::trunc) << "not a png"; }
  d.train[4].path = (dir / "missing.jpg").string();

  ImageCacheOptions options;
  options.resize_size = 16;
  options.memory_budget_bytes = 2000;  // about two images in memory, the rest in the file
  options.threads = 2;
  const ImageCache cache(d, iota(6), options);
  REQUIRE(cache.bad_images().size() == 2);
  CHECK(cache.bad_images()[0].train_index == 2);
  CHECK(cache.bad_images()[1].path.find("missing.jpg") != std::string::npos);
  CHECK(cache.is_bad(2));
  CHECK_FALSE(cache.is_bad(0));
  CHECK(cache.memory_bytes() > 0);
  CHECK(cache.file_bytes() > 0);
  CHECK_THROWS_WITH(cache.get(2), doctest::Contains("could not be decoded"));
  for (int64_t i : {0, 1, 3, 5}) {
    const Image expected = resize_shorter_side(decode_image(d.train[static_cast<size_t>(i)].path, 3), 16);
    CHECK(cache.get(i) == expected);
  }
  // The scratch file is mapped, then gone from the file system.
  CHECK_FALSE(fs::exists(fs::temp_directory_path() / ("mcdl-imgcache-" + std::to_string(getpid()) + ".tmp")));

  // Persistent: written once (only when every image decodes), then read back without decoding.
  d.train[2].path = d.train[0].path;
  d.train[4].path = d.train[1].path;
  options.cache_dir = (dir / "cache").string();
  {
    const ImageCache first(d, iota(6), options);
    CHECK_FALSE(first.loaded_from_disk());
  }
  // Committed whole under its final name (AtomicFile), with no temporary file left beside it.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir / "cache")) names.push_back(entry.path().filename().string());
  REQUIRE(names.size() == 1);
  CHECK(names[0].size() > 9);
  CHECK(names[0].substr(names[0].size() - 9) == ".imgcache");
  const ImageCache second(d, iota(6), options);
  CHECK(second.loaded_from_disk());
  for (int64_t i = 0; i < 6; ++i)
    CHECK(second.get(i) == resize_shorter_side(decode_image(d.train[static_cast<size_t>(i)].path, 3), 16));
  fs::remove_all(dir);
}
