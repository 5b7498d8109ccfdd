#include "mcdl/evaluation/evaluation_set.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cstring>

#include "data/loader.h"
#include "engine/all_gather.h"
#include "engine/autograd.h"
#include "engine/device.h"
#include "engine/ops.h"

namespace mcdl {

EvaluationSet::EvaluationSet(const ImageCache& cache, std::vector<int64_t> train_indices, EvaluationOptions options)
    : cache_(cache), train_indices_(std::move(train_indices)), options_(std::move(options)) {}

namespace {

// The batches of ranks [0, world): a contiguous block each, [first, last) of `batches`.
std::pair<size_t, size_t> rank_block(size_t batches, int rank, int ranks) {
  return {batches * static_cast<size_t>(rank) / static_cast<size_t>(ranks),
          batches * static_cast<size_t>(rank + 1) / static_cast<size_t>(ranks)};
}

int ranks_of(const Collective* world) { return world ? world->size() : 1; }

// True when every value is finite and bf16 holds it exactly (its low 16 bits are zero). One pass
// without an early exit, so that it vectorises.
bool exact_in_bf16(const Tensor& host) {
  if (host.dtype() != DType::f32) return false;
  constexpr uint32_t exponent = 0x7F800000u;  // all ones: infinity or NaN
  const float* values = host.data<float>();
  uint32_t low_bits = 0, non_finite = 0;
  for (int64_t i = 0; i < host.numel(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
    low_bits |= bits & 0xFFFFu;
    non_finite |= (bits & exponent) == exponent ? 1u : 0u;
  }
  return low_bits == 0 && non_finite == 0;
}

// The frozen tokens as the cache keeps them on the host: in bf16 where that holds them exactly
// (under bf16 products the frozen blocks end in bf16, so their f32 values are bf16 values), which
// halves the memory and the bytes uploaded each epoch; as they are otherwise.
Tensor host_tokens(const Tensor& tokens) {
  Tensor host = tokens.to(Device::cpu());
  return exact_in_bf16(host) ? host.to(DType::bf16) : host;
}

// Batch results kept on the device, read to the host in one copy at the end: a read per batch
// would make the host wait for the device before it queues the next batch.
Tensor rows_on_host(const std::vector<Tensor>& parts, const Tensor& none) {
  return parts.empty() ? none : concat(parts, 0).to(Device::cpu());
}

}  // namespace

std::vector<std::vector<int64_t>> EvaluationSet::all_batches() const {
  std::vector<std::vector<int64_t>> all;
  for (size_t start = 0; start < train_indices_.size(); start += static_cast<size_t>(options_.batch_size)) {
    const size_t end = std::min(train_indices_.size(), start + static_cast<size_t>(options_.batch_size));
    all.emplace_back(train_indices_.begin() + static_cast<std::ptrdiff_t>(start),
                     train_indices_.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return all;
}

std::vector<std::vector<int64_t>> EvaluationSet::batches() const {
  std::vector<std::vector<int64_t>> all = all_batches();
  if (ranks_of(options_.world) == 1) return all;
  const auto [first, last] = rank_block(all.size(), options_.world->rank(), options_.world->size());
  return {all.begin() + static_cast<std::ptrdiff_t>(first), all.begin() + static_cast<std::ptrdiff_t>(last)};
}

std::vector<int64_t> EvaluationSet::images_per_rank() const {
  const std::vector<std::vector<int64_t>> all = all_batches();
  std::vector<int64_t> images;
  for (int r = 0; r < ranks_of(options_.world); ++r) {
    const auto [first, last] = rank_block(all.size(), r, ranks_of(options_.world));
    int64_t count = 0;
    for (size_t b = first; b < last; ++b) count += static_cast<int64_t>(all[b].size());
    images.push_back(count);
  }
  return images;
}

EvaluationSet::~EvaluationSet() {
  if (mapped_) munmap(mapped_, static_cast<size_t>(mapped_bytes_));
}

// The cached tokens of batch b, on the evaluation device: uploaded as kept (bf16 or f32) unless
// kept there, then f32 there, the values forward_frozen gave.
Tensor EvaluationSet::cached_batch(size_t b) const {
  if (!frozen_tokens_.empty()) return frozen_tokens_[b].to(options_.device).to(DType::f32);
  const FileBatch& fb = file_batches_[b];
  Tensor tokens = empty(fb.shape, fb.dtype);
  std::memcpy(tokens.raw_data(), mapped_ + fb.offset, tokens.nbytes());
  return tokens.to(options_.device).to(DType::f32);
}

// Writes the batches' tokens to an unlinked temporary file and maps it; false when that fails
// (no space): the tokens are then recomputed every epoch.
bool EvaluationSet::spill_to_file(const std::vector<Tensor>& tokens) {
  char path[] = "/tmp/mcdl-eval-tokens-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return false;
  unlink(path);  // the file lives as long as the mapping
  int64_t offset = 0;
  bool ok = true;
  for (const Tensor& t : tokens) {
    file_batches_.push_back({offset, t.shape(), t.dtype()});
    const auto* p = static_cast<const char*>(t.raw_data());
    for (size_t done = 0; ok && done < t.nbytes();) {
      const ssize_t n = write(fd, p + done, t.nbytes() - done);
      ok = n > 0;
      done += ok ? static_cast<size_t>(n) : 0;
    }
    offset += static_cast<int64_t>(t.nbytes());
  }
  void* m = ok && offset > 0 ? mmap(nullptr, static_cast<size_t>(offset), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (m == MAP_FAILED) {
    file_batches_.clear();
    return false;
  }
  mapped_ = static_cast<char*>(m);
  mapped_bytes_ = offset;
  return true;
}

template <class Visit>
void EvaluationSet::for_each_frozen_batch(VisionTransformer& backbone, Visit visit) {
  NoGradGuard no_grad;
  if (!frozen_tokens_.empty() || mapped_) {
    const size_t count = batches().size();
    for (size_t b = 0; b < count; ++b) visit(b, cached_batch(b));
    return;
  }
  // The tokens (N · (1 + patches) · D values) are kept in memory within the budget, beyond it in
  // a memory-mapped file (read back each epoch instead of recomputing the frozen blocks).
  const bool keep = !cache_decided_ && backbone.frozen_depth() > 0;
  cache_decided_ = true;
  LoaderOptions loader_options;
  loader_options.image_size = options_.image_size;
  loader_options.normalization = options_.normalization;
  loader_options.views = {ViewKind::test};
  loader_options.workers = options_.workers;
  loader_options.device = options_.device;
  BatchLoader loader(cache_, loader_options);
  loader.start(0, batches());
  LoadedBatch batch;
  std::vector<Tensor> kept;
  while (loader.next(batch)) {
    Tensor tokens = backbone.forward_frozen(batch.views[0]);
    if (keep) kept.push_back(host_tokens(tokens));
    visit(static_cast<size_t>(batch.batch), tokens);
  }
  if (!keep) return;
  int64_t bytes = 0;
  for (const Tensor& t : kept) bytes += static_cast<int64_t>(t.nbytes());
  // On a GPU, tokens that take at most a quarter of its free memory stay there: no upload at all in
  // the later epochs (CUB's unlabelled images in bf16: 1.4 GB).
  if (options_.device.is_cuda() && bytes <= static_cast<int64_t>(device_memory_free(options_.device) / 4)) {
    for (Tensor& t : kept) t = t.to(options_.device);
    frozen_tokens_ = std::move(kept);
  } else if (bytes <= options_.memory_budget_bytes) {
    frozen_tokens_ = std::move(kept);
  } else {
    spill_to_file(kept);
  }
}

std::vector<int64_t> EvaluationSet::predict(SimGCDModel& model) {
  std::vector<Tensor> classes;
  for_each_frozen_batch(model.backbone, [&](size_t, const Tensor& tokens) {
    classes.push_back(argmax(model.head.forward(model.backbone.forward_from_frozen(tokens)).logits, 1));
  });
  const std::vector<int64_t> predictions =
      rows_on_host(classes, empty({0}, DType::i64, Device::cpu())).to_vector<int64_t>();
  if (ranks_of(options_.world) == 1) return predictions;
  return all_gather_values(*options_.world, predictions, images_per_rank());
}

Tensor EvaluationSet::features(VisionTransformer& backbone, bool normalise) {
  std::vector<Tensor> parts;
  for_each_frozen_batch(backbone, [&](size_t, const Tensor& tokens) {
    const Tensor cls = backbone.forward_from_frozen(tokens);
    parts.push_back(normalise ? l2_normalize(cls) : cls);
  });
  const Tensor local = rows_on_host(parts, empty({0, backbone.config().embed_dim}, DType::f32, Device::cpu()));
  if (ranks_of(options_.world) == 1) return local;
  return all_gather_rows(*options_.world, local, images_per_rank());
}

}  // namespace mcdl
