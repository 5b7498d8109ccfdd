#include "data/image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "data/decode.h"
#include "data/resize.h"
#include "engine/error.h"
#include "io/durable_file.h"

namespace mcdl {
namespace {

constexpr char kMagic[8] = {'M', 'C', 'D', 'L', 'I', 'M', 'G', '1'};
constexpr int64_t kChunk = 256;  // images decoded in parallel before they are stored in order

// FNV-1a over everything that determines the cached bytes.
uint64_t cache_key(const Dataset& dataset, const std::vector<int64_t>& indices, int64_t resize_size) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(&resize_size, sizeof resize_size);
  mix(&dataset.channels, sizeof dataset.channels);
  for (int64_t i : indices) {
    const std::string& path = dataset.train[static_cast<size_t>(i)].path;
    mix(path.data(), path.size());
    mix("\n", 1);
  }
  return h;
}

struct Trailer {
  int64_t count;
  int64_t index_offset;
  uint64_t key;
  char magic[8];
};

struct IndexRecord {
  int32_t height, width;
  int64_t offset;
};

}  // namespace

int64_t default_cache_budget_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return int64_t{4} << 30;
  return static_cast<int64_t>(pages) * page / 4;
}

ImageCache::ImageCache(const Dataset& dataset, const std::vector<int64_t>& train_indices,
                       const ImageCacheOptions& options)
    : dataset_(&dataset), resize_size_(options.resize_size), channels_(dataset.channels) {
  check(options.resize_size > 0, "image cache: resize size must be positive");
  slot_of_.assign(dataset.train.size(), -1);
  for (size_t s = 0; s < train_indices.size(); ++s) {
    const int64_t i = train_indices[s];
    check(i >= 0 && i < dataset.size(), "image cache: train index ", i, " out of range [0, ", dataset.size(), ")");
    slot_of_[static_cast<size_t>(i)] = static_cast<int64_t>(s);
  }
  entries_.resize(train_indices.size());
  if (dataset.in_memory()) {
    // Array datasets: the pixels are already in memory; resize per access.
    resize_on_access_ = true;
    return;
  }
  if (options.decode_on_access) {
    decode_on_access_ = true;
    return;
  }
  build(dataset, train_indices, options);
}

ImageCache::~ImageCache() {
  if (mapped_) munmap(mapped_, static_cast<size_t>(mapped_size_));
}

void ImageCache::build(const Dataset& dataset, const std::vector<int64_t>& train_indices,
                       const ImageCacheOptions& options) {
  const uint64_t key = cache_key(dataset, train_indices, resize_size_);
  std::string file_path;
  bool persistent = !options.cache_dir.empty();
  if (persistent) {
    std::filesystem::create_directories(options.cache_dir);
    char name[96];
    std::snprintf(name, sizeof name, "%s-%zu-%lld-%016llx.imgcache", dataset.name.c_str(), train_indices.size(),
                  static_cast<long long>(resize_size_), static_cast<unsigned long long>(key));
    file_path = (std::filesystem::path(options.cache_dir) / name).string();
    if (try_load(file_path, train_indices)) return;
  } else {
    file_path = (std::filesystem::temp_directory_path() / ("mcdl-imgcache-" + std::to_string(getpid()))).string();
  }
  const int64_t budget = persistent ? 0 : (options.memory_budget_bytes > 0 ? options.memory_budget_bytes
                                                                           : default_cache_budget_bytes());
  // Written through AtomicFile: a persistent cache appears under its name only whole and on disk
  // (a crash leaves no half cache for the next run to map); a scratch one is mapped unnamed.
  std::optional<AtomicFile> file;
  int64_t file_offset = sizeof kMagic;
  const int64_t threads = options.threads > 0 ? options.threads
                                              : std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t n = static_cast<int64_t>(train_indices.size());
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t end = std::min(n, start + kChunk);
    std::vector<Image> images(static_cast<size_t>(end - start));
    std::vector<std::string> errors(images.size());
    std::atomic<int64_t> next{start};
    auto work = [&] {
      for (int64_t s; (s = next.fetch_add(1)) < end;) {
        const DatasetItem& item = dataset.train[static_cast<size_t>(train_indices[static_cast<size_t>(s)])];
        try {
          images[static_cast<size_t>(s - start)] = resize_shorter_side(decode_image(item.path, channels_), resize_size_);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(s - start)] = e.what();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < std::min(threads, end - start); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    for (int64_t s = start; s < end; ++s) {
      Entry& entry = entries_[static_cast<size_t>(s)];
      const Image& image = images[static_cast<size_t>(s - start)];
      if (!errors[static_cast<size_t>(s - start)].empty()) {
        entry.bad = true;
        const int64_t index = train_indices[static_cast<size_t>(s)];
        bad_.push_back({index, dataset.train[static_cast<size_t>(index)].path, errors[static_cast<size_t>(s - start)]});
        continue;
      }
      entry.height = static_cast<int32_t>(image.height);
      entry.width = static_cast<int32_t>(image.width);
      const int64_t bytes = static_cast<int64_t>(image.pixels.size());
      if (memory_bytes_ + bytes <= budget) {
        entry.offset = memory_bytes_;
        memory_.insert(memory_.end(), image.pixels.begin(), image.pixels.end());
        memory_bytes_ += bytes;
      } else {
        if (!file) {
          // Each process its own temporary file: the processes of a run (or several runs) may
          // build the same persistent cache at once; their bytes are the same, their renames atomic.
          file.emplace(file_path, "image cache: " + file_path, TemporaryName::per_writer);
          file->write(kMagic, sizeof kMagic);
        }
        entry.in_file = true;
        entry.offset = file_offset;
        file->write(image.pixels.data(), image.pixels.size());
        file_offset += bytes;
        file_bytes_ += bytes;
      }
    }
    if (options.progress)
      std::fprintf(stderr, "\rdecoding and resizing images: %lld / %lld", static_cast<long long>(end),
                   static_cast<long long>(n));
  }
  if (options.progress) std::fprintf(stderr, "\n");
  if (!file) return;
  // Index and trailer, so that a persistent file can be reopened without decoding.
  std::vector<IndexRecord> index;
  for (const Entry& e : entries_) index.push_back({e.height, e.width, e.offset});
  Trailer trailer{n, file_offset, key, {}};
  std::memcpy(trailer.magic, kMagic, sizeof kMagic);
  file->write(index.data(), index.size() * sizeof(IndexRecord));
  file->write(&trailer, sizeof trailer);
  // A cache with bad images is not kept: the next run must report them again.
  if (persistent && bad_.empty()) {
    file->commit();
    map_file(file_path);
  } else {
    map_file(file->temporary_path());  // the mapping outlives the file, which AtomicFile removes
  }
}

bool ImageCache::try_load(const std::string& path, const std::vector<int64_t>& train_indices) {
  std::error_code ec;
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec || size < static_cast<int64_t>(sizeof kMagic + sizeof(Trailer))) return false;
  map_file(path);
  Trailer trailer;
  std::memcpy(&trailer, mapped_ + size - sizeof trailer, sizeof trailer);
  const int64_t n = static_cast<int64_t>(train_indices.size());
  const bool valid = std::memcmp(trailer.magic, kMagic, sizeof kMagic) == 0 &&
                     std::memcmp(mapped_, kMagic, sizeof kMagic) == 0 && trailer.count == n &&
                     trailer.index_offset >= static_cast<int64_t>(sizeof kMagic) &&
                     trailer.index_offset + n * static_cast<int64_t>(sizeof(IndexRecord)) + static_cast<int64_t>(sizeof trailer) == size;
  std::vector<Entry> entries(static_cast<size_t>(n));
  bool records_ok = valid;
  for (int64_t s = 0; records_ok && s < n; ++s) {
    IndexRecord r;
    std::memcpy(&r, mapped_ + trailer.index_offset + s * static_cast<int64_t>(sizeof r), sizeof r);
    const int64_t bytes = int64_t{r.height} * r.width * channels_;
    records_ok = r.height > 0 && r.width > 0 && r.offset >= static_cast<int64_t>(sizeof kMagic) &&
                 r.offset + bytes <= trailer.index_offset;
    entries[static_cast<size_t>(s)] = {r.height, r.width, true, false, r.offset};
  }
  if (!records_ok) {
    munmap(mapped_, static_cast<size_t>(mapped_size_));
    mapped_ = nullptr;
    std::fprintf(stderr, "warning: ignoring the damaged image cache %s; decoding again\n", path.c_str());
    return false;
  }
  entries_ = std::move(entries);
  file_bytes_ = trailer.index_offset - static_cast<int64_t>(sizeof kMagic);
  loaded_from_disk_ = true;
  return true;
}

void ImageCache::map_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  check(fd >= 0, "image cache: cannot open ", path, ": ", std::strerror(errno));
  struct stat st;
  check(fstat(fd, &st) == 0, "image cache: cannot stat ", path);
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  check(p != MAP_FAILED, "image cache: cannot map ", path, ": ", std::strerror(errno));
  mapped_ = static_cast<uint8_t*>(p);
  mapped_size_ = st.st_size;
}

bool ImageCache::is_bad(int64_t train_index) const {
  check(train_index >= 0 && train_index < static_cast<int64_t>(slot_of_.size()) &&
            slot_of_[static_cast<size_t>(train_index)] >= 0,
        "image cache: image ", train_index, " was not cached");
  return entries_[static_cast<size_t>(slot_of_[static_cast<size_t>(train_index)])].bad;
}

Image ImageCache::get(int64_t train_index) const {
  check(!is_bad(train_index), "image cache: image ", train_index, " (",
        dataset_->train[static_cast<size_t>(train_index)].path, ") could not be decoded");
  if (resize_on_access_) return resize_shorter_side(dataset_->train_pixels[static_cast<size_t>(train_index)], resize_size_);
  if (decode_on_access_) {
    const std::string& path = dataset_->train[static_cast<size_t>(train_index)].path;
    try {
      return resize_shorter_side(decode_image(path, channels_), resize_size_);
    } catch (const std::exception& e) {
      fail("image cache: ", path, " could not be read when a batch needed it: ", e.what(),
           " (images are decoded as they are read, with no check of every image at the start; fix or remove the "
           "file)");
    }
  }
  const Entry& e = entries_[static_cast<size_t>(slot_of_[static_cast<size_t>(train_index)])];
  Image image(e.height, e.width, channels_);
  const uint8_t* src = (e.in_file ? mapped_ : memory_.data()) + e.offset;
  std::memcpy(image.pixels.data(), src, image.pixels.size());
  return image;
}

}  // namespace mcdl
