// A generic GCD layout for one's own data (not in the reference):
//   ROOT/labelled/<class name>/<images>   the known classes (ImageFolder order: folders sorted,
//                                         files sorted); all of these are the labelled set
//   ROOT/unlabelled/<images>              the images to discover (files sorted; subfolders too)
//   ROOT/unlabelled_labels.csv            optional ground truth "file,class_name" per unlabelled
//                                         image (file relative to ROOT/unlabelled), for accuracy
//   ROOT/test/<class name>/<images>       optional test split (inductive evaluation): known class
//                                         names, or novel ones
// Known classes get ids 0..K_old-1 in folder order; novel names in the labels file or among the
// test folders get K_old.. in sorted order. K comes from the caller (or, with a labels file, defaults to K_old
// plus the novel names). Unlabelled images without ground truth have class -1.
#include <filesystem>
#include <map>
#include <set>

#include "data/datasets/common.h"
#include "data/datasets/readers.h"
#include "engine/error.h"

namespace fs = std::filesystem;

namespace mcdl::dataset_io {
namespace {

constexpr const char* kLayout =
    "The folder layout is ROOT/labelled/<class name>/*.png|jpg (known classes), ROOT/unlabelled/*.png|jpg "
    "and optionally ROOT/unlabelled_labels.csv with lines 'file,class_name' and ROOT/test/<class name>/*.png|jpg.";

// file (relative to unlabelled/) -> class name
std::map<std::string, std::string> read_labels_file(const std::string& path) {
  std::map<std::string, std::string> labels;
  for (const TextLine& line : read_text_lines(path)) {
    if (line.number == 1 && line.text == "file,class_name") continue;  // optional header
    const size_t comma = line.text.rfind(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 >= line.text.size())
      fail_line(path, line, "expected 'file,class_name'");
    if (!labels.emplace(line.text.substr(0, comma), line.text.substr(comma + 1)).second)
      fail_line(path, line, "file listed twice");
  }
  return labels;
}

}  // namespace

Dataset read_folder(const std::string& root, int64_t num_classes, bool with_test) {
  const std::string labelled_dir = (fs::path(root) / "labelled").string();
  const std::string unlabelled_dir = (fs::path(root) / "unlabelled").string();
  const std::string labels_path = (fs::path(root) / "unlabelled_labels.csv").string();
  require_dir("folder", labelled_dir, kLayout);
  require_dir("folder", unlabelled_dir, kLayout);
  check(num_classes >= 0, "folder: number of classes ", num_classes, " is negative");

  Dataset d;
  d.name = "folder";
  d.root = root;
  const FolderClasses known = list_class_folders(labelled_dir);
  check(!known.names.empty(), "folder: no class folders in ", labelled_dir, ".\n", kLayout);
  const auto num_old = static_cast<int64_t>(known.names.size());
  std::map<std::string, int64_t> class_of;
  for (int64_t c = 0; c < num_old; ++c) {
    class_of[known.names[static_cast<size_t>(c)]] = c;
    const std::vector<std::string> files = image_files_under(known.paths[static_cast<size_t>(c)]);
    check(!files.empty(), "folder: class folder ", known.paths[static_cast<size_t>(c)], " has no images");
    for (const std::string& file : files) {
      d.given_labelled.push_back(d.size());
      d.train.push_back({file, c});
    }
  }

  const bool has_labels = fs::is_regular_file(labels_path);
  std::map<std::string, std::string> labels = has_labels ? read_labels_file(labels_path) : std::map<std::string, std::string>{};
  std::set<std::string> novel;
  for (const auto& entry : labels)
    if (!class_of.count(entry.second)) novel.insert(entry.second);
  int64_t next_id = num_old;
  for (const std::string& name : novel) class_of.emplace(name, next_id++);
  if (num_classes == 0) {
    check(has_labels, "folder: give the number of classes K (known + novel); without ", labels_path,
          " it cannot be inferred");
    num_classes = next_id;
  }
  check(num_classes >= next_id, "folder: K = ", num_classes, " but there are ", num_old, " known classes and ",
        novel.size(), " novel class names in ", labels_path);
  // Test folders of classes the training images do not name take the next ids, within K (which
  // they never change: K is the training data's).
  const std::string test_dir = (fs::path(root) / "test").string();
  const FolderClasses test_classes =
      with_test && fs::is_directory(test_dir) ? list_class_folders(test_dir) : FolderClasses{};
  for (const std::string& name : test_classes.names)
    if (class_of.emplace(name, next_id).second) {
      check(next_id < num_classes, "folder: ", test_dir, "/", name, " is a class that neither ", labelled_dir,
            " nor ", labels_path, " names, and K = ", num_classes, " leaves no room for it; give --num-classes");
      ++next_id;
    }
  const int64_t num_seen = next_id;
  d.num_classes = num_classes;

  const std::vector<std::string> files = image_files_under(unlabelled_dir);
  check(!files.empty(), "folder: no images in ", unlabelled_dir, ".\n", kLayout);
  for (const std::string& file : files) {
    const std::string relative = fs::relative(file, unlabelled_dir).generic_string();
    int64_t class_id = -1;
    if (has_labels) {
      const auto label = labels.find(relative);
      check(label != labels.end(), "folder: ", labels_path, " has no class for unlabelled/", relative);
      class_id = class_of.at(label->second);
      labels.erase(label);
    }
    d.train.push_back({file, class_id});
  }
  check(labels.empty(), "folder: ", labels_path, " names ", labels.size(), " files not in ", unlabelled_dir, ", e.g. ",
        labels.empty() ? std::string() : labels.begin()->first);
  for (size_t f = 0; f < test_classes.names.size(); ++f) {
    const std::vector<std::string> test_files = image_files_under(test_classes.paths[f]);
    check(!test_files.empty(), "folder: class folder ", test_classes.paths[f], " has no images");
    for (const std::string& file : test_files) d.test.push_back({file, class_of.at(test_classes.names[f])});
  }
  d.old_classes = iota_classes(0, num_old);
  d.class_names.resize(static_cast<size_t>(num_seen));
  for (const auto& [name, id] : class_of) d.class_names[static_cast<size_t>(id)] = name;
  d.new_classes = iota_classes(num_old, num_classes);
  return d;
}

}  // namespace mcdl::dataset_io
