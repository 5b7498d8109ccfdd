// The deterministic front of the pipeline, done once: every training image decoded and resized
// (shorter side to the transform's resize size, Pillow bicubic) and kept as uint8, in memory up
// to a budget and beyond it in a memory-mapped file. Datasets stored as arrays whose images are
// smaller than the resize size (CIFAR, Fashion-MNIST) are kept at native size and resized on
// access instead (cheap, and it keeps the cache small).
//
// With a cache directory the file part persists, keyed by dataset, image count and size, so a
// later run skips decoding; the key also covers the list of file paths, so a changed dataset
// is never read from a stale cache.
//
// A file that is missing, unreadable or corrupt is never a crash: it is recorded (path and
// reason) and the caller decides (stop with the list, or drop those images).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image.h"

namespace mcdl {

struct ImageCacheOptions {
  int64_t resize_size = 256;          // shorter side after the resize
  int64_t memory_budget_bytes = 0;    // 0: a quarter of the machine's RAM
  std::string cache_dir;              // empty: the overflow file is temporary
  int64_t threads = 0;                // decoding threads; 0: hardware concurrency
  bool progress = false;              // print decoding progress to stderr
  // Decode and resize each image when it is read (get), keeping nothing: no start-up pass, no
  // memory or file for the decoded images (a training set too big to keep decoded). With no
  // start-up pass no image is known bad: a file that cannot be decoded throws when read.
  bool decode_on_access = false;
};

struct BadImage {
  int64_t train_index;
  std::string path;
  std::string reason;
};

class ImageCache {
 public:
  // Decodes and resizes train[i] for every i in `train_indices` (the others are never read).
  ImageCache(const Dataset& dataset, const std::vector<int64_t>& train_indices, const ImageCacheOptions& options);
  ~ImageCache();
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;

  // The resized image of train[train_index] (throws for an index that was not cached or is bad).
  Image get(int64_t train_index) const;
  bool is_bad(int64_t train_index) const;
  const std::vector<BadImage>& bad_images() const { return bad_; }
  int64_t memory_bytes() const { return memory_bytes_; }
  int64_t file_bytes() const { return file_bytes_; }
  bool loaded_from_disk() const { return loaded_from_disk_; }
  bool decodes_on_access() const { return decode_on_access_; }
  int64_t channels() const { return channels_; }

 private:
  struct Entry {
    int32_t height = 0, width = 0;
    bool in_file = false;
    bool bad = false;
    int64_t offset = 0;  // into memory_ or into the mapped file
  };
  void build(const Dataset& dataset, const std::vector<int64_t>& train_indices, const ImageCacheOptions& options);
  bool try_load(const std::string& path, const std::vector<int64_t>& train_indices);
  void map_file(const std::string& path);

  const Dataset* dataset_;
  int64_t resize_size_;
  int64_t channels_;
  bool resize_on_access_ = false;
  bool decode_on_access_ = false;
  std::vector<int64_t> slot_of_;  // train index → entry slot, −1 if not cached
  std::vector<Entry> entries_;
  std::vector<uint8_t> memory_;
  uint8_t* mapped_ = nullptr;
  int64_t mapped_size_ = 0;
  std::vector<BadImage> bad_;
  int64_t memory_bytes_ = 0, file_bytes_ = 0;
  bool loaded_from_disk_ = false;
};

// A quarter of the machine's physical memory (the default budget).
int64_t default_cache_budget_bytes();

}  // namespace mcdl
