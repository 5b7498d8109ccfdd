// One reader per layout (data/datasets/<name>.cpp); load_dataset (data/datasets/load.cpp)
// dispatches by name. Each fills Dataset in the reference's order with its class lists, and with
// `with_test` also its test split where the layout has one.
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace mcdl::dataset_io {

Dataset read_cub(const std::string& root, bool with_test);
Dataset read_scars(const std::string& root, bool with_test);
Dataset read_aircraft(const std::string& root, bool with_test);
Dataset read_herbarium19(const std::string& root, bool with_test);
Dataset read_cifar(const std::string& root, int64_t num_classes, bool with_test);  // 10 or 100
Dataset read_imagenet100(const std::string& root, bool with_test);
Dataset read_imagenet1k(const std::string& root, bool with_test);
Dataset read_fashion_mnist(const std::string& root, bool with_test);
Dataset read_fmnist_pairs(const std::string& root, bool with_test);
Dataset read_fmnist_pairs_pretrain(const std::string& root);  // no test split
Dataset read_folder(const std::string& root, int64_t num_classes, bool with_test);

}  // namespace mcdl::dataset_io
