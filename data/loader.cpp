#include "data/loader.h"

#include <cstring>

#include "data/randaugment.h"
#include "engine/error.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "engine/random.h"

namespace mcdl {
namespace {

// `rows` [m, ...] between `before` and `after` rows of zeros (the images another process prepares).
Tensor with_zero_rows(const Tensor& rows, int64_t before, int64_t after) {
  if (before == 0 && after == 0) return rows;
  const auto zero_rows = [&rows](int64_t n) {
    Shape shape = rows.shape();
    shape[0] = n;
    return zeros(shape, rows.dtype(), rows.device());
  };
  std::vector<Tensor> parts;
  if (before > 0) parts.push_back(zero_rows(before));
  parts.push_back(rows);
  if (after > 0) parts.push_back(zero_rows(after));
  return concat(parts, 0);
}

}  // namespace

Image make_view(const Image& resized, ViewKind kind, int64_t image_size, RandomStream& stream,
                double crop_scale_min) {
  switch (kind) {
    case ViewKind::test:
      return center_crop(resized, image_size, image_size);
    case ViewKind::train:
    case ViewKind::strong: {
      const ViewParams params =
          draw_view_params(stream, resized.height, resized.width, image_size, kind == ViewKind::strong);
      return apply_randaugment(apply_crop_flip(resized, params.crop_flip, image_size), params.steps);
    }
    case ViewKind::pretrain: {
      Image view = apply_resized_crop(
          resized, draw_random_resized_crop(stream, resized.height, resized.width, crop_scale_min), image_size);
      if (stream.uniform_float() < 0.5f) view = hflip(view);
      return apply_randaugment(view, draw_randaugment(stream, view.height, view.width));
    }
  }
  fail("loader: unknown view kind");
}

BatchLoader::BatchLoader(const ImageCache& cache, LoaderOptions options) : cache_(cache), options_(std::move(options)) {
  check(!options_.views.empty(), "loader: no views requested");
  check(options_.workers >= 0 && options_.prefetch >= 1, "loader: workers must be >= 0 and prefetch >= 1");
  check(static_cast<int64_t>(options_.normalization.mean.size()) == cache.channels(),
        "loader: normalisation has ", options_.normalization.mean.size(), " channels, the images have ",
        cache.channels());
}

BatchLoader::~BatchLoader() { stop_workers(); }

void BatchLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  stopping_ = false;
}

void BatchLoader::start(int64_t epoch, std::vector<std::vector<int64_t>> batches) {
  stop_workers();
  batches_ = std::move(batches);
  epoch_ = epoch;
  next_to_build_ = next_to_return_ = 0;
  ready_.clear();
  error_ = nullptr;
  for (int64_t w = 0; w < options_.workers; ++w) workers_.emplace_back([this] { worker_loop(); });
}

void BatchLoader::worker_loop() {
  for (;;) {
    int64_t batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Bounded prefetch: never more than `prefetch` batches ahead of the consumer.
      cv_.wait(lock, [&] {
        return stopping_ || next_to_build_ >= static_cast<int64_t>(batches_.size()) ||
               next_to_build_ < next_to_return_ + options_.prefetch;
      });
      if (stopping_ || next_to_build_ >= static_cast<int64_t>(batches_.size())) return;
      batch = next_to_build_++;
    }
    try {
      LoadedBatch built = build_batch(epoch_, batch);
      std::lock_guard<std::mutex> lock(mutex_);
      ready_[batch] = std::move(built);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    cv_.notify_all();
  }
}

bool BatchLoader::next(LoadedBatch& out) {
  // A step's data phase: waiting for the workers, then the views' kernels on the device.
  const ProfileRange range(options_.device, "batch");
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_return_ >= static_cast<int64_t>(batches_.size())) return false;
  if (workers_.empty()) {
    out = build_batch(epoch_, next_to_return_++);
  } else {
    cv_.wait(lock, [&] { return error_ || ready_.count(next_to_return_) > 0; });
    if (error_) std::rethrow_exception(error_);
    out = std::move(ready_[next_to_return_]);
    ready_.erase(next_to_return_);
    ++next_to_return_;
  }
  lock.unlock();
  cv_.notify_all();
  // The device part of the batch, on this (the consumer's) thread: the images go up once for
  // every view made there (the views the workers left undefined).
  std::vector<size_t> device_made;
  std::vector<std::vector<ViewParams>> device_params;
  for (size_t v = 0; v < out.device_params.size(); ++v)
    if (!out.views[v].defined()) {
      device_made.push_back(v);
      device_params.push_back(std::move(out.device_params[v]));
    }
  if (!device_made.empty()) {
    const auto [begin, end] = out.prepared;
    const int64_t s = options_.image_size;
    if (begin == end) {  // none of this process's images: zeros
      for (size_t v : device_made)
        out.views[v] = zeros({out.images, cache_.channels(), s, s}, DType::f32, options_.device);
    } else {
      const std::vector<Tensor> made = augment_batch_views(out.resized, device_params, s, options_.normalization,
                                                           options_.device);
      for (size_t i = 0; i < device_made.size(); ++i)
        out.views[device_made[i]] = with_zero_rows(made[i], begin, out.images - end);
    }
  }
  out.resized.clear();
  out.device_params.clear();
  for (Tensor& view : out.views) view = view.to(options_.device);
  return true;
}

LoadedBatch BatchLoader::build_batch(int64_t epoch, int64_t batch) const {
  const std::vector<int64_t>& items = batches_[static_cast<size_t>(batch)];
  const int64_t b = static_cast<int64_t>(items.size()), s = options_.image_size, c = cache_.channels();
  const size_t num_views = options_.views.size();
  // Train and strong views go to the GPU kernels when the batch is for a CUDA device.
  std::vector<bool> on_device(num_views, false);
  bool any_on_device = false;
  for (size_t v = 0; v < num_views; ++v) {
    on_device[v] = options_.device.is_cuda() &&
                   (options_.views[v] == ViewKind::train || options_.views[v] == ViewKind::strong);
    any_on_device = any_on_device || on_device[v];
  }
  LoadedBatch out;
  out.batch = batch;
  out.images = b;
  out.prepared = options_.positions ? options_.positions(b) : std::pair<int64_t, int64_t>{0, b};
  const auto [begin, end] = out.prepared;
  check(0 <= begin && begin <= end && end <= b, "loader: positions [", begin, ", ", end, ") of a batch of ", b);
  const bool whole = begin == 0 && end == b;
  out.device_params.resize(any_on_device ? num_views : 0);
  for (size_t v = 0; v < num_views; ++v)
    out.views.push_back(on_device[v] ? Tensor() : whole ? empty({b, c, s, s}) : zeros({b, c, s, s}));
  for (int64_t i = begin; i < end; ++i) {
    Image resized = cache_.get(items[static_cast<size_t>(i)]);
    for (size_t v = 0; v < num_views; ++v) {
      RandomStream stream(options_.seed, stream_id("augment", {epoch, batch, i, static_cast<int64_t>(v)}));
      if (on_device[v]) {
        out.device_params[v].push_back(draw_view_params(stream, resized.height, resized.width, s,
                                                        options_.views[v] == ViewKind::strong));
        continue;
      }
      const Image view = make_view(resized, options_.views[v], s, stream, options_.crop_scale_min);
      to_tensor_normalize(view, options_.normalization, out.views[v].data<float>() + i * c * s * s);
    }
    if (any_on_device) out.resized.push_back(std::move(resized));
  }
  return out;
}

}  // namespace mcdl
