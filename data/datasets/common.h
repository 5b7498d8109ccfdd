// Shared pieces of the dataset readers (data/datasets/*.cpp): clear errors for missing files,
// line-oriented text files, torchvision's ImageFolder scan, gzip files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace mcdl::dataset_io {

// Throws "<dataset>: missing <what> <path>.\n<how to obtain>" unless `path` is an existing
// directory (is_dir) or regular file.
void require_dir(const std::string& dataset, const std::string& path, const std::string& how_to_obtain);
void require_file(const std::string& dataset, const std::string& path, const std::string& how_to_obtain);
// Throws naming how many of the items' files are missing and the first few; `split` names the
// items in the message ("training" or "test").
void require_item_files(const std::string& dataset, const std::vector<DatasetItem>& items,
                        const std::string& split = "training");

struct TextLine {
  int64_t number;  // 1-based
  std::string text;  // without the line ending ("\n" or "\r\n")
};
// The non-empty lines of a text file.
std::vector<TextLine> read_text_lines(const std::string& path);
[[noreturn]] void fail_line(const std::string& path, const TextLine& line, const std::string& problem);
// A whole non-negative integer (digits only), or fails naming the file and line.
int64_t parse_index(const std::string& text, const std::string& path, const TextLine& line);

// torchvision.datasets.ImageFolder (0.11): class folders sorted by name (code point order),
// then in each class `sorted(os.walk(folder))` with `sorted(fnames)`, keeping files whose lower-cased
// name ends with an image extension. A class folder without any image is an error, as there.
struct FolderClasses {
  std::vector<std::string> names;  // sorted
  std::vector<std::string> paths;  // root/name
};
FolderClasses list_class_folders(const std::string& root);
std::vector<std::string> image_files_under(const std::string& folder);  // ImageFolder's order
bool has_image_extension(const std::string& file_name);

// The bytes of a file, gunzipped when its name ends in ".gz". Decompressed data beyond
// `max_bytes` is an error naming the limit, so a small hostile .gz cannot demand gigabytes
// (1 GiB by default; Fashion-MNIST's images are 47 MB).
inline constexpr size_t kMaxGunzippedBytes = size_t{1} << 30;
std::vector<uint8_t> read_maybe_gzipped(const std::string& path, size_t max_bytes = kMaxGunzippedBytes);

std::vector<int64_t> iota_classes(int64_t begin, int64_t end);  // begin, ..., end - 1

}  // namespace mcdl::dataset_io
