#include "data/datasets/common.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>

#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {

void require_dir(const std::string& dataset, const std::string& path, const std::string& how_to_obtain) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) fail(dataset, ": missing folder ", path, ".\n", how_to_obtain);
}

void require_file(const std::string& dataset, const std::string& path, const std::string& how_to_obtain) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(dataset, ": missing file ", path, ".\n", how_to_obtain);
}

void require_item_files(const std::string& dataset, const std::vector<DatasetItem>& items, const std::string& split) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (const DatasetItem& item : items)
    if (!fs::is_regular_file(item.path, ec)) missing.push_back(item.path);
  if (missing.empty()) return;
  std::string shown;
  for (size_t i = 0; i < std::min<size_t>(3, missing.size()); ++i) shown += "\n  " + missing[i];
  fail(dataset, ": ", missing.size(), " of ", items.size(), " listed ", split, " images are missing, e.g.", shown,
       split == "test" ? "\n(to train without the test split, pass --eval-on unlabelled)" : "");
}

std::vector<TextLine> read_text_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open ", path);
  std::vector<TextLine> lines;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (!text.empty()) lines.push_back({number, text});
  }
  return lines;
}

void fail_line(const std::string& path, const TextLine& line, const std::string& problem) {
  fail(path, ":", line.number, ": ", problem, " (line: '", line.text.substr(0, 200), "')");
}

int64_t parse_index(const std::string& text, const std::string& path, const TextLine& line) {
  if (text.empty() || text.size() > 15 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail_line(path, line, "'" + text + "' is not a non-negative integer");
  return std::stoll(text);
}

FolderClasses list_class_folders(const std::string& root) {
  FolderClasses classes;
  for (const fs::directory_entry& entry : fs::directory_iterator(root))
    if (entry.is_directory()) classes.names.push_back(entry.path().filename().string());
  std::sort(classes.names.begin(), classes.names.end());
  for (const std::string& name : classes.names) classes.paths.push_back((fs::path(root) / name).string());
  return classes;
}

bool has_image_extension(const std::string& file_name) {
  static const char* const extensions[] = {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};
  std::string lower = file_name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(std::begin(extensions), std::end(extensions), [&](const char* ext) { return lower.ends_with(ext); });
}

std::vector<std::string> image_files_under(const std::string& folder) {
  // sorted(os.walk(folder)): directories ordered by their path string, files by name in each.
  std::vector<std::string> dirs{folder};
  for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink);
       it != fs::recursive_directory_iterator(); ++it)
    if (it->is_directory()) dirs.push_back(it->path().string());
  std::sort(dirs.begin(), dirs.end());
  std::vector<std::string> files;
  for (const std::string& dir : dirs) {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir))
      if (!entry.is_directory() && has_image_extension(entry.path().filename().string()))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) files.push_back((fs::path(dir) / name).string());
  }
  return files;
}

std::vector<uint8_t> read_maybe_gzipped(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot open ", path);
  std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!path.ends_with(".gz")) return raw;
  z_stream z{};
  check(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, path, ": zlib initialisation failed");
  // zlib counts bytes in 32 bits: a larger file would be silently cut short.
  check(raw.size() <= std::numeric_limits<uInt>::max(), path, ": gzip files over 4 GiB are not supported");
  z.next_in = raw.data();
  z.avail_in = static_cast<uInt>(raw.size());
  std::vector<uint8_t> out;
  int status = Z_OK;
  while (status == Z_OK) {
    const size_t have = out.size();
    if (have > max_bytes) break;
    // At most 1 GiB at a time, so that the chunk fits avail_out (twice the input need not), and
    // at most max_bytes + 1 in all: one byte past the limit shows that the data exceeds it.
    const size_t chunk = std::min({std::max<size_t>(1 << 20, raw.size() * 2), size_t{1} << 30, max_bytes + 1 - have});
    out.resize(have + chunk);
    z.next_out = out.data() + have;
    z.avail_out = static_cast<uInt>(chunk);
    status = inflate(&z, Z_NO_FLUSH);
    // Drops the unwritten tail (erase: the vector only shrinks here).
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(have + chunk - std::min<size_t>(z.avail_out, chunk)), out.end());
    if (status == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  check(out.size() <= max_bytes, path, ": decompresses to more than ", max_bytes,
        " bytes, the limit (a corrupt or hostile file?)");
  check(status == Z_STREAM_END, path, ": corrupt or truncated gzip data (zlib status ", status, " after ", out.size(),
        " bytes)");
  return out;
}

std::vector<int64_t> iota_classes(int64_t begin, int64_t end) {
  std::vector<int64_t> classes(static_cast<size_t>(end - begin));
  std::iota(classes.begin(), classes.end(), begin);
  return classes;
}

}  // namespace mcdl::dataset_io
