// Writers of tiny synthetic dataset layouts for the reader tests (tests/data/test_datasets.cpp,
// tests/data/test_test_splits.cpp): a temp folder, text / byte / image files, and each layout's
// metadata files.
#pragma once
#include <doctest/doctest.h>
#include <stb/stb_image_write.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "data/decode.h"
#include "data/image.h"
#include "tests/data/mat_writer.h"

namespace mcdl::test {

namespace fs = std::filesystem;

// A fresh temporary folder, removed with the object; in memory (/dev/shm) where there is one,
// since the ImageNet and Herbarium layouts need 1000 folders and disk file systems under load
// take seconds for that.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm")
                                                                                               : fs::temp_directory_path();
    path = base / ("mcdl_ds_" + std::to_string(::getpid()) + "_" + tag);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str() const { return path.string(); }
};

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A real 4x3 image file: PNG (write_png) or JPEG (stb_image_write), by extension.
inline void write_image(const fs::path& path, uint8_t shade) {
  fs::create_directories(path.parent_path());
  Image image(3, 4, 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(shade + i);
  if (path.extension() == ".png") {
    write_png(path.string(), image);
  } else {
    REQUIRE(stbi_write_jpg(path.string().c_str(), 4, 3, 3, image.pixels.data(), 90) != 0);
  }
}

inline void touch(const fs::path& path) { write_text(path, ""); }

// ImageNet's layouts: a synset folder name, sorted as its index ("n00000007" for 7).
inline std::string synset(int index) {
  char name[16];
  std::snprintf(name, sizeof(name), "n%08d", index);
  return name;
}

// Images: 1 -> class 151 (id 150, first known), 2 -> class 30 (id 29, first Hard),
// 3 -> test split, 4 -> class 1 (id 0, known).
inline void write_cub(const fs::path& root) {
  const fs::path base = root / "CUB_200_2011";
  write_text(base / "images.txt", "1 151.A/a1.jpg\n2 030.B/b1.png\n3 151.A/a2.jpg\n4 001.C/c 1.jpg\n");
  write_text(base / "image_class_labels.txt", "1 151\n2 30\n3 151\n4 1\n");
  write_text(base / "train_test_split.txt", "1 1\n2 1\n3 0\n4 1\n");
  write_image(base / "images/151.A/a1.jpg", 10);
  write_image(base / "images/030.B/b1.png", 20);
  write_image(base / "images/151.A/a2.jpg", 30);
  write_image(base / "images/001.C/c 1.jpg", 40);
}

// devkit/cars_train_annos.mat and cars_train/ (split "test": devkit/cars_test_annos_withlabels.mat
// and cars_test/).
inline void write_cars(const fs::path& root, const std::vector<std::pair<std::string, double>>& annos, bool compressed,
                       const std::string& split = "train") {
  std::vector<std::vector<MatValue>> rows;
  for (const auto& [fname, cls] : annos) {
    rows.push_back({MatValue::number(1), MatValue::number(2), MatValue::number(30), MatValue::number(40), MatValue::number(cls),
                    MatValue::string(fname)});
    write_image(root / ("cars_" + split) / fname, 5);
  }
  MatWriter writer;
  writer.add("annotations", MatValue::structs({"bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname"}, rows), compressed);
  fs::create_directories(root / "devkit");
  writer.save((root / "devkit" / (split == "train" ? "cars_train_annos.mat" : "cars_test_annos_withlabels.mat")).string());
}

// 100 variants named "V 099" .. "V 000" listed in reverse, plus "A320" and "A320-200" edge names
// replacing two; each image is an empty file except the first (a JPEG).
inline void write_aircraft(const fs::path& root, int num_variants) {
  std::ostringstream list;
  for (int v = num_variants - 1; v >= 0; --v) {
    char name[16];
    std::snprintf(name, sizeof(name), "V %03d", v);
    const std::string variant = v == 0 ? "A320-200" : v == 1 ? "A320" : name;
    list << 1000000 + v << ' ' << variant << '\n';
    touch(root / "data/images" / (std::to_string(1000000 + v) + ".jpg"));
  }
  list << "0034309 A320\n";
  write_image(root / "data/images/0034309.jpg", 3);
  write_text(root / "data/images_variant_trainval.txt", list.str());
}

// Binary records: [labels..., 1024 R, 1024 G, 1024 B]; pixel p of channel c = (p + 7c + seed) mod 256.
inline std::vector<uint8_t> cifar_records(const std::vector<std::vector<uint8_t>>& labels, int seed) {
  std::vector<uint8_t> bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    bytes.insert(bytes.end(), labels[r].begin(), labels[r].end());
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; ++p) bytes.push_back(static_cast<uint8_t>(p + 7 * c + seed + static_cast<int>(r)));
  }
  return bytes;
}

inline std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  for (uint32_t word : std::vector<uint32_t>{magic}) for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(word >> s));
  for (uint32_t word : dims) for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(word >> s));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline void write_gz(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  gzFile f = gzopen(path.string().c_str(), "wb");
  REQUIRE(f != nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// 2x2 images (pixel i of the file = 3i mod 256) with `labels`; prefix "train" or "t10k" (the test split).
inline void write_fmnist(const fs::path& root, const std::vector<uint8_t>& labels, const std::string& prefix = "train") {
  std::vector<uint8_t> pixels(labels.size() * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 3);
  write_gz(root / (prefix + "-images-idx3-ubyte.gz"), idx_bytes(0x803, {static_cast<uint32_t>(labels.size()), 2, 2}, pixels));
  write_gz(root / (prefix + "-labels-idx1-ubyte.gz"), idx_bytes(0x801, {static_cast<uint32_t>(labels.size())}, labels));
}

}  // namespace mcdl::test
