// Turns lists of training images into batches of normalised views, on worker threads with a
// bounded prefetch queue, in order.
//
// On a CUDA device the train and strong views are cropped, flipped, augmented and normalised by
// the GPU kernels (data/device_augment.h) from parameters the workers draw on the host, bit for
// bit the CPU's result; the other views are prepared on the CPU.
//
// Each view of each sample is drawn from its own generator stream
// ("augment", epoch, batch, position, view) of the run's seed, so a batch's pixels depend only
// on (seed, epoch, batch, position, view): never on the number of workers, on timing, or on
// whether the run was resumed.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "data/device_augment.h"
#include "data/image_cache.h"
#include "data/transforms.h"
#include "engine/tensor.h"

namespace mcdl {

enum class ViewKind {
  test,      // center crop (the test transform after the cached resize)
  train,     // random crop + horizontal flip (SimGCD's train transform)
  strong,    // train, then RandAugment(2, 9, 31) on the crop (MCDL's strong view)
  pretrain,  // random resized crop + flip + RandAugment (self-supervised pretraining views)
};

struct LoaderOptions {
  int64_t image_size = 224;      // S: the crop fed to the model
  Normalization normalization;   // per-channel mean and std
  std::vector<ViewKind> views;   // one output tensor per entry
  // Threads preparing batches; 0: the consumer prepares each batch itself in next() (on the CPU
  // backend, where the model's own threads use every core, a worker thread only competes with them).
  int64_t workers = 1;
  int64_t prefetch = 4;          // batches prepared ahead at most
  uint64_t seed = 0;
  Device device = Device::cpu();  // where the views are returned
  // The pretrain view's random resized crop: smallest area fraction (torchvision's default 0.08).
  double crop_scale_min = 0.08;
  // The images [begin, end) of a batch of the given size that this process prepares (each process
  // of a data-parallel run, its own: Shards::own_positions); the other rows of every view are
  // zeros, and their images are not read. Unset: every image.
  std::function<std::pair<int64_t, int64_t>(int64_t batch_size)> positions;
};

// The views of one batch: views[v] is [B, C, S, S] f32 on options.device.
struct LoadedBatch {
  int64_t batch = 0;
  std::vector<Tensor> views;
  int64_t images = 0;  // the batch's size
  // The images prepared, [begin, end) of the batch's positions (LoaderOptions::positions); the
  // other rows of every view are zeros.
  std::pair<int64_t, int64_t> prepared{0, 0};
  // Work left for the consumer thread on a CUDA device: the resized images and, per view, the
  // drawn parameters (empty for views already prepared on the CPU).
  std::vector<Image> resized;
  std::vector<std::vector<ViewParams>> device_params;
};

// One view of one image, as the loader computes it (exposed for tools and tests); crop_scale_min
// as LoaderOptions' (pretrain views only).
Image make_view(const Image& resized, ViewKind kind, int64_t image_size, RandomStream& stream,
                double crop_scale_min = 0.08);

class BatchLoader {
 public:
  BatchLoader(const ImageCache& cache, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts preparing `batches` (train indices per batch) of `epoch`, skipping none; a previous
  // epoch's unfinished work is abandoned.
  void start(int64_t epoch, std::vector<std::vector<int64_t>> batches);
  // The next batch in order; false when the epoch's batches are exhausted. Rethrows a worker's
  // error (e.g. an image that fails to load).
  bool next(LoadedBatch& out);

 private:
  void stop_workers();
  void worker_loop();
  LoadedBatch build_batch(int64_t epoch, int64_t batch) const;

  const ImageCache& cache_;
  LoaderOptions options_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::vector<std::vector<int64_t>> batches_;
  int64_t epoch_ = 0;
  int64_t next_to_build_ = 0, next_to_return_ = 0;
  std::map<int64_t, LoadedBatch> ready_;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace mcdl
