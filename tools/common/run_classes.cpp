#include "tools/common/run_classes.h"

#include <filesystem>

#include "tools/common/csv_table.h"

namespace fs = std::filesystem;

namespace mcdl::tools {

std::vector<std::string> run_class_names(const std::string& run_dir, int64_t count) {
  std::vector<std::string> names(static_cast<size_t>(count));
  const fs::path labels = fs::path(run_dir) / "labels.csv", classes = fs::path(run_dir) / "classes.csv";
  if (fs::exists(labels)) {  // label,class_id,name,group
    const CsvTable table = read_csv(labels.string());
    const int64_t label = table.require_column("label"), name = table.require_column("name");
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const int64_t y = table.integer(static_cast<int64_t>(r), label, 0);
      if (y < count) names[static_cast<size_t>(y)] = table.rows[r][static_cast<size_t>(name)];
    }
  } else if (fs::exists(classes)) {  // cluster,class_id,name: cluster k is old class k
    const CsvTable table = read_csv(classes.string());
    const int64_t cluster = table.require_column("cluster"), name = table.require_column("name");
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const int64_t y = table.integer(static_cast<int64_t>(r), cluster, 0);
      if (y < count) names[static_cast<size_t>(y)] = table.rows[r][static_cast<size_t>(name)];
    }
  }
  for (int64_t y = 0; y < count; ++y)
    if (names[static_cast<size_t>(y)].empty()) names[static_cast<size_t>(y)] = "class " + std::to_string(y);
  return names;
}

}  // namespace mcdl::tools
