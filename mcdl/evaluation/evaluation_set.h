// The per-epoch evaluation: the unlabelled training images through the test transform
// (resize, center crop, normalise), predictions = argmax of the logits. Several processes split
// its batches and gather the results (EvaluationOptions::world).
//
// The frozen part of the backbone and the test transform never change during a run, so the
// tokens after the frozen blocks are computed once and reused every epoch (exact: the same
// numbers as a full forward pass). They are kept in bf16 where that holds them exactly
// (--precision bf16): on the GPU when they take at most a quarter of its free memory, else on the
// host (in memory within the budget, in a mapped file beyond it), uploaded batch by batch each
// epoch.
#pragma once
#include <cstdint>
#include <vector>

#include "data/image_cache.h"
#include "data/transforms.h"
#include "engine/collective.h"
#include "engine/tensor.h"
#include "layers/simgcd_model.h"

namespace mcdl {

struct EvaluationOptions {
  int64_t image_size = 224;
  Normalization normalization;
  int64_t batch_size = 256;
  int64_t workers = 1;
  int64_t memory_budget_bytes = int64_t{2} << 30;  // for the cached frozen tokens
  Device device = Device::cpu();
  // The processes that share the evaluation (null: this one alone): each computes a contiguous
  // block of the batches, and every rank receives all predictions, batch for batch the numbers one
  // process computes.
  Collective* world = nullptr;
};

class EvaluationSet {
 public:
  EvaluationSet(const ImageCache& cache, std::vector<int64_t> train_indices, EvaluationOptions options);
  ~EvaluationSet();
  EvaluationSet(const EvaluationSet&) = delete;
  EvaluationSet& operator=(const EvaluationSet&) = delete;
  int64_t size() const { return static_cast<int64_t>(train_indices_.size()); }
  // Argmax class per image, in train_indices order.
  std::vector<int64_t> predict(SimGCDModel& model);
  // The backbone's CLS features [N, D] on the CPU (L2-normalised when `normalise`).
  Tensor features(VisionTransformer& backbone, bool normalise);
  bool tokens_in_memory() const { return !frozen_tokens_.empty(); }  // on the GPU or the host
  bool tokens_on_device() const { return tokens_in_memory() && frozen_tokens_[0].device().is_cuda(); }
  bool tokens_in_file() const { return mapped_ != nullptr; }

 private:
  // Every batch of the set; this process's contiguous block of them (all in one process); each
  // rank's number of images.
  std::vector<std::vector<int64_t>> all_batches() const;
  std::vector<std::vector<int64_t>> batches() const;
  std::vector<int64_t> images_per_rank() const;
  // Calls visit(batch number, tokens after the frozen blocks on the device) for every batch.
  template <class Visit>
  void for_each_frozen_batch(VisionTransformer& backbone, Visit visit);

  const ImageCache& cache_;
  std::vector<int64_t> train_indices_;
  EvaluationOptions options_;
  Tensor cached_batch(size_t batch) const;
  bool spill_to_file(const std::vector<Tensor>& tokens);

  std::vector<Tensor> frozen_tokens_;  // per batch (bf16 or f32), on the GPU or the host, when cached in memory
  struct FileBatch {
    int64_t offset;
    Shape shape;
    DType dtype;
  };
  std::vector<FileBatch> file_batches_;  // per batch, when cached in the mapped file
  char* mapped_ = nullptr;
  int64_t mapped_bytes_ = 0;
  bool cache_decided_ = false;
};

}  // namespace mcdl
