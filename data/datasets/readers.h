// One reader per layout (data/datasets/<name>.cpp); load_dataset (data/datasets/load.cpp)
// dispatches by name. Each fills Dataset in the reference's order with its class lists.
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace mcdl::dataset_io {

Dataset read_cub(const std::string& root);
Dataset read_scars(const std::string& root);
Dataset read_aircraft(const std::string& root);
Dataset read_herbarium19(const std::string& root);
Dataset read_cifar(const std::string& root, int64_t num_classes);  // 10 or 100
Dataset read_imagenet100(const std::string& root);
Dataset read_fashion_mnist(const std::string& root);
Dataset read_folder(const std::string& root, int64_t num_classes);

}  // namespace mcdl::dataset_io
