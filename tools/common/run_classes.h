// What the labels of a run's predictions.csv are called, for mcdl_report's pictures: the run
// directory's labels.csv (data/label_names.h), or for a run from before that file, classes.csv's
// names of the old classes. A label without a name is "class <label>".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mcdl::tools {

// The name of each label 0..count-1 of the run in `run_dir`.
std::vector<std::string> run_class_names(const std::string& run_dir, int64_t count);

}  // namespace mcdl::tools
